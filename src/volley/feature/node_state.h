// volley/feature/node_state.h — writable per-node rows: read, write, and sparse optimizer steps.
//
// A NodeState is an [N, D] table of float32, float16 or bfloat16 rows that trainers read and
// write while they train (learnable node embeddings, the history of a layer's activations),
// with room for up to two float32 optimizer-state rows beside each value row (SparseAdagrad's
// sum of squares; SparseAdam's two moments). It lives in host memory, or in an anonymous shared
// segment (memfd) that other processes of the machine attach to by handle: a write by one
// process is seen by every other.
//
//   NodeState emb = NodeState::create({.rows = n, .dim = 64, .state_slots = 2, .shared = true});
//   emb.initialize(Init::kNormal, 0.1, seed);
//   emb.pull(ids, DType::kFloat32, out);                     // out[i, :] = emb[ids[i], :]
//   emb.push(ids, values, WriteOp::kAdd);                    // emb[ids[i], :] += values[i, :]
//   emb.step(ids, grads, {.kind = OptimizerKind::kAdam, .lr = 0.01});
//   NodeState other = NodeState::attach(Buffer::attach_shared(emb.buffer().shared_name()));
//
// Contracts:
//   - Repeated ids in one call: push() applies positions in order (kAssign keeps the value at
//     the last position; kAdd adds each position's values in turn, as torch's index_add_ on one
//     thread); step() sums an id's gradients first, in position order, then applies the sum
//     once (the coalesced sparse gradient). Results never depend on the thread count.
//   - Atomicity per row: a reader never sees a row (with its optimizer state) half written, even
//     while another thread or process writes it, and a writer killed mid-row (kill -9) leaves the
//     row as it was before that write (the next process to touch the row's stripe restores it
//     from the stripe's undo copy; only shared tables keep one, the cost of a row copy per write).
//     Rows are guarded in stripes (row id mod stripes): a robust process-shared mutex for writers,
//     a sequence counter readers check (they retry, never block, unless a writer holds the stripe
//     across their read).
//   - Concurrent writes to the same row are serialised (each applied whole, in some order);
//     writes to different rows of one call are applied in parallel. A call is not atomic as a
//     whole: a reader may see some of its rows written and others not yet.
//   - Optimizer steps follow torch.optim.Adagrad (sparse, no lr decay, zero initial sum) and
//     torch.optim.SparseAdam on the coalesced gradient, in float32 whatever the row dtype; the
//     step count of SparseAdam's bias correction is one per step() call, kept in the table
//     (shared across processes).
//   - Errors: ValueError for a bad shape, dtype, option or handle (the offending value named);
//     IndexError naming the first out-of-range id and its position, before anything is written.
#pragma once

#include <cstdint>
#include <span>

#include "volley/core/array.h"

namespace volley {

enum class WriteOp { kAssign, kAdd };
enum class OptimizerKind { kAdagrad, kAdam };
enum class Init { kZeros, kNormal, kUniform };

struct NodeStateOptions {
  int64_t rows = 0;               // N >= 0
  int64_t dim = 1;                // D >= 1
  DType dtype = DType::kFloat32;  // kFloat32, kFloat16 or kBFloat16
  int state_slots = 0;            // float32 optimizer-state rows per row: 0, 1 or 2
  bool shared = false;            // an anonymous shared segment instead of host memory
};

struct OptimizerStep {
  OptimizerKind kind = OptimizerKind::kAdagrad;
  float lr = 0.01f;
  float eps = 1e-10f;  // torch's defaults: 1e-10 (Adagrad), 1e-8 (SparseAdam)
  float beta1 = 0.9f;
  float beta2 = 0.999f;
  // 0: the table's next step (its count advances by one); > 0: this step number, the count
  // unchanged (one logical step applied in several calls, as the service splits one).
  int64_t step_number = 0;
};

// Everything a NodeState holds, in plain arrays (checkpoints): values [N, D] in the row dtype,
// state [N, slots, D] float32, and SparseAdam's step count.
struct NodeStateSnapshot {
  Array values;
  Array state;
  int64_t steps = 0;
};

// The rows of a node table, wherever they live: in this process or shared memory (NodeState
// below) or on the partition servers (dist/node_state_client.h, RemoteNodeState). Every
// implementation keeps the contracts above.
class NodeTable {
 public:
  virtual ~NodeTable() = default;

  virtual int64_t rows() const = 0;
  virtual int64_t dim() const = 0;
  virtual DType dtype() const = 0;
  virtual int state_slots() const = 0;
  virtual int64_t steps() const = 0;

  // out[i, :] = row ids[i], as `out_dtype` (the row dtype or float32); out holds ids.size() × D.
  virtual void pull(std::span<const int64_t> ids, DType out_dtype, std::byte* out) const = 0;
  // Writes float32 values [ids.size(), D] to the rows (see the contracts for repeated ids).
  virtual void push(std::span<const int64_t> ids, std::span<const float> values, WriteOp op) = 0;
  // Applies one optimizer step for float32 gradients [ids.size(), D]; returns its step number
  // (OptimizerStep::step_number). ValueError when the table has fewer state slots than the
  // optimizer needs (Adagrad 1, Adam 2).
  virtual int64_t step(std::span<const int64_t> ids, std::span<const float> grads,
                       const OptimizerStep& step) = 0;
  // A copy of rows [begin, end) (end -1: every row) with their state, and the step count
  // (row-consistent: each row as some completed write left it). IndexError for a bad range.
  virtual NodeStateSnapshot snapshot(int64_t begin = 0, int64_t end = -1) const = 0;
  // Replaces rows [first_row, first_row + snapshot rows) and their state with a snapshot of the
  // same dim, dtype and slots, and the step count with snapshot.steps unless it is negative (not
  // atomic against concurrent writers: restore before training resumes). ValueError for a
  // snapshot that does not fit, IndexError for rows past the end.
  virtual void restore(const NodeStateSnapshot& snapshot, int64_t first_row = 0) = 0;
};

// A table in this process's memory or in a shared segment.
class NodeState final : public NodeTable {
 public:
  NodeState() = default;

  // A new table, every row and state zero. ValueError for a negative N, D < 1, a dtype other
  // than float32 / float16 / bfloat16, or state_slots outside [0, 2].
  static NodeState create(const NodeStateOptions& options);
  // The table in `buffer` (one made by create, attached from another process). ValueError when
  // the bytes are not a NodeState of this version.
  static NodeState attach(Buffer buffer);

  int64_t rows() const override;
  int64_t dim() const override;
  DType dtype() const override;
  int state_slots() const override;
  int64_t steps() const override;
  // The bytes (kSharedMemory with a handle when created shared; attach() takes them).
  const Buffer& buffer() const { return buffer_; }

  // Fills every value row (the state stays zero): zeros, normal(0, scale) or uniform(-scale,
  // scale), from Philox keyed by `seed` and the id `first_id` + row (the same table for any
  // thread count; a table of the rows [first_id, first_id + N) of a larger one gets those rows
  // of it). Not atomic against concurrent readers: initialise before sharing.
  void initialize(Init init, double scale, uint64_t seed, int64_t first_id = 0);

  void pull(std::span<const int64_t> ids, DType out_dtype, std::byte* out) const override;
  void push(std::span<const int64_t> ids, std::span<const float> values, WriteOp op) override;
  int64_t step(std::span<const int64_t> ids, std::span<const float> grads,
               const OptimizerStep& step) override;
  NodeStateSnapshot snapshot(int64_t begin = 0, int64_t end = -1) const override;
  void restore(const NodeStateSnapshot& snapshot, int64_t first_row = 0) override;

 private:
  explicit NodeState(Buffer buffer);

  Buffer buffer_;
};

namespace internal {
// Test hook: starts writing `values` to row `id` as push(kAssign) would, and stops after
// `bytes` bytes of the row, holding the stripe's lock: what a writer killed mid-row leaves.
// Called in a forked child that then exits without unlocking.
void node_state_write_partially(NodeState& state, int64_t id, std::span<const float> values,
                                size_t bytes);
}  // namespace internal

}  // namespace volley
