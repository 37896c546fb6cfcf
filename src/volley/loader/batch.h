// volley/loader/batch.h — one mini-batch, and the epoch that delivers batches in order.
//
// A Batch is the same type on every device: its arrays live where the loader built them (host
// memory for the CPU loader, device memory for the CUDA loader; Batch::location() says which).
// An Epoch is the one ordered, bounded queue between the producers of an epoch's batches and
// its consumer: the CPU loader runs several worker threads that each build whole batches, the
// CUDA loader one thread that queues each batch's work on a CUDA stream of its own. Either way
// the consumer receives batch 0, 1, 2, ... in order, with at most `prefetch` batches claimed
// or ready ahead of it.
//
//   auto epoch = loader.start_epoch(0);               // NeighborLoader or CudaNeighborLoader
//   while (auto batch = epoch->next_on(stream)) { ... batch->x ... }   // stream: see below
//
// Device batches and streams: a device batch's last kernel is followed by an event; next_on(s)
// makes stream `s` (a cudaStream_t as void*; nullptr = the legacy default stream) wait for
// that event (no host wait) and frees the batch's memory in s's order once no one holds its
// arrays. Host batches ignore the stream (next() is next_on(nullptr)).
// Failure: an exception while building batch b is rethrown by next() for batch b, after which
// the epoch is over. Destroying the epoch (or stop()) stops the producers and joins them; a
// producer mid-batch finishes that batch first.
// Thread safety: one consumer per epoch.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "volley/core/array.h"
#include "volley/loader/batch_source.h"

namespace volley {

namespace loader_internal {
class DeviceEvent;
class DeviceBlock;
}  // namespace loader_internal

// The part of a typed batch (a heterogeneous graph's) that belongs to one node type.
struct NodeTypeBatch {
  Array nodes;                         // int64 [n]: global ids of the type, seeds first (n_id)
  std::vector<int64_t> nodes_per_hop;  // PyG num_sampled_nodes
  Array batch_ids;  // disjoint / temporal sampling: int64 [n], each node's tree (PyG batch)
  std::vector<std::pair<std::string, Array>> attrs;  // the type's node tables, rows of `nodes`
};

// ... and to one edge type.
struct EdgeTypeBatch {
  Array edge_index;  // int64 [2, E]: row 0 local ids in the source type's nodes, row 1 in the
                     // destination type's (targets)
  Array edge_ids;    // int64 [E] (PyG e_id)
  std::vector<int64_t> edges_per_hop;                // PyG num_sampled_edges
  std::vector<std::pair<std::string, Array>> attrs;  // the type's edge tables, rows of edge_ids
};

// One mini-batch.
struct Batch {
  int64_t index = 0;       // position of the batch in its epoch
  int64_t batch_size = 0;  // number of seeds
  Array nodes;             // int64 [n]: global ids, seeds first (PyG n_id)
  Array input_ids;         // int64 [batch_size]: positions of the seeds in input_nodes
  Array edge_index;        // int64 [2, E]: local ids, row 0 = sources (neighbors), row 1 = targets
  Array edge_ids;          // int64 [E] (PyG e_id)
  Array x;                 // [n, D] in options.feature_dtype, when the loader has features
  Array y;                 // int64 [n], when the loader has labels
  std::vector<int64_t> nodes_per_hop;  // PyG num_sampled_nodes
  std::vector<int64_t> edges_per_hop;  // PyG num_sampled_edges
  Array batch_ids;  // disjoint sampling: int64 [n], each node's seed position (PyG batch)
  // Link batches (LinkLoader, link_loader.h) only; undefined otherwise. batch_size is then the
  // number of positive supervision edges B and input_ids their positions in edge_label_index.
  Array edge_label_index;  // int64 [2, L]: local ids (into nodes) of the scored pairs
  Array edge_label;        // [L]: labels of those pairs (binary negatives: 0)
  Array src_index;         // triplet: int64 [B], local id of each positive's source
  Array dst_pos_index;     // triplet: int64 [B], local id of each positive's destination
  Array dst_neg_index;     // triplet: int64 [B, amount], local ids of its negative destinations
  int64_t negatives_kept_existing = 0;  // negatives that are edges despite reject_existing
  // Further attributes (NeighborLoader's LoaderAttributes), in their stored dtype and width:
  // node attributes hold the rows of `nodes`, edge attributes the rows of `edge_ids`.
  std::vector<std::pair<std::string, Array>> node_attrs;
  std::vector<std::pair<std::string, Array>> edge_attrs;
  // Typed batches (a NeighborLoader over a HeteroNeighborSampler): one part per node type and
  // one per edge type, in graph order. batch_size and input_ids then count the input type's
  // seeds, and the untyped arrays above stay undefined.
  std::vector<NodeTypeBatch> node_types;
  std::vector<EdgeTypeBatch> edge_types;

  // Device batches only (null for host batches): the event recorded after the batch's last
  // work, and the one device allocation holding its arrays.
  std::shared_ptr<loader_internal::DeviceEvent> ready;
  std::shared_ptr<loader_internal::DeviceBlock> memory;

  // Where the arrays live (kCuda for a device batch).
  Location location() const {
    return nodes.defined() ? nodes.buffer().location() : Location::kHost;  // typed: host
  }
  // Device batches: makes `consumer_stream` wait for the batch (no host wait) and frees the
  // batch's memory in its stream order. Call once, before queuing work on the arrays
  // (Epoch::next_on calls it). Host batches: nothing.
  void hand_over(void* consumer_stream);
  // Device batches: waits on the host until the batch is complete. Host batches: nothing.
  void synchronize() const;
};

class Epoch final : public BatchStream {
 public:
  // Builds batch `index` on a producer thread.
  using BuildBatch = std::function<Batch(int64_t index)>;
  struct Producers {
    int threads = 1;       // producer threads (at most one per batch is started)
    int64_t prefetch = 1;  // batches claimed or ready ahead of the consumer (>= 1)
    // Called once on each producer thread, first: that thread's builder (its own scratch,
    // stream, ...). An exception it throws fails the first batch the thread would build.
    std::function<BuildBatch()> make_builder;
    // Kept alive until every batch not handed out is gone (e.g. the stream their memory is
    // released on).
    std::shared_ptr<const void> context;
  };

  // Starts the producers of an epoch of `num_batches` batches (a loader's start_epoch does),
  // from batch `first_batch` on: a resumed epoch yields batches [first_batch, num_batches)
  // (ValueError unless 0 <= first_batch <= num_batches).
  Epoch(int64_t num_batches, Producers producers, int64_t first_batch = 0);
  ~Epoch() override;
  Epoch(const Epoch&) = delete;
  Epoch& operator=(const Epoch&) = delete;

  // The next batch in order, handed over to `consumer_stream` (see above), or nullopt after the
  // last. Blocks until it is ready (for a device batch: until its work is queued). Rethrows the
  // exception of the batch that failed.
  std::optional<Batch> next_on(void* consumer_stream) override;
  std::optional<Batch> next() override { return next_on(nullptr); }
  // Stops the producers (idempotent); next() then returns nullopt.
  void stop() override;
  // Asks the producers to stop and wakes a consumer waiting in next() (which returns nullopt),
  // without waiting for a producer to finish its batch: callable from any thread, also while
  // another thread is in next(). stop() or the destructor joins the producers.
  void request_stop();
  int64_t num_batches() const override { return num_batches_; }

 private:
  void producer_loop();

  std::shared_ptr<const void> context_;  // declared first: destroyed after the batches
  int64_t num_batches_;
  int64_t prefetch_;
  std::function<BuildBatch()> make_builder_;

  std::mutex mutex_;
  std::condition_variable ready_changed_;
  std::condition_variable space_changed_;
  int64_t next_to_claim_ = 0;
  int64_t next_to_deliver_ = 0;
  std::map<int64_t, Batch> ready_;
  std::map<int64_t, std::exception_ptr> failed_;
  bool stopping_ = false;
  std::vector<std::thread> producers_;
};

}  // namespace volley
