// volley/feature/node_state.cc — see node_state.h.
//
// Layout of the table's one buffer: a header; `stripes` stripe records (a robust process-shared
// mutex, a sequence counter, the row id its undo slot holds or -1); one undo slot per stripe; the
// N records. A record is the value row (padded to 16 bytes) followed by the float32 state rows.
//
// A write of row r (under stripe r % stripes): copy the record to the undo slot, publish
// undo_row = r, make the sequence odd, write the record, set undo_row = -1, make the sequence
// even. Tables in process-private memory skip the undo copy (no other process can outlive a
// writer there). A process that locks the mutex after its owner died (EOWNERDEAD) restores the
// record from the undo slot when undo_row is set, and makes the sequence even. A reader copies the
// record between two equal even sequence values; on an odd one it waits for the writer (by locking
// the mutex, which repairs a dead writer's stripe) and retries.
#include "volley/feature/node_state.h"

#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <numeric>
#include <vector>

#include "volley/core/error.h"
#include "volley/core/half.h"
#include "volley/core/parallel.h"
#include "volley/core/philox.h"
#include "volley/feature/internal/row_kernels.h"

namespace volley {
namespace {

using internal::adagrad;
using internal::adam;
using internal::adam_step_size;
using internal::add_row;

constexpr uint64_t kMagic = 0x6574617473646f6eULL;  // "nodstate"
constexpr uint32_t kVersion = 1;
constexpr size_t kHeaderBytes = 256;
constexpr size_t kStripeBytes = 128;

struct Header {
  uint64_t magic;
  uint32_t version;
  uint32_t state_slots;
  int64_t rows;
  int64_t dim;
  int64_t stripes;
  int64_t value_bytes;   // the value row, padded to 16
  int64_t record_bytes;  // value row + state rows
  uint8_t dtype;
  uint8_t undo;  // writes keep an undo copy (shared tables: another process may outlive a writer)
  std::atomic<int64_t> steps;
};
static_assert(sizeof(Header) <= kHeaderBytes);

struct Stripe {
  pthread_mutex_t mutex;
  std::atomic<uint64_t> sequence;
  std::atomic<int64_t> undo_row;
  int64_t undo_bytes;  // the record prefix the undo slot holds (set before undo_row)
};
static_assert(sizeof(Stripe) <= kStripeBytes);

struct Table {
  Header* header;
  std::byte* base;

  int64_t record_bytes() const { return header->record_bytes; }
  Stripe& stripe(int64_t index) const {
    return *reinterpret_cast<Stripe*>(base + kHeaderBytes + index * kStripeBytes);
  }
  std::byte* undo(int64_t index) const {
    return base + kHeaderBytes + header->stripes * kStripeBytes + index * record_bytes();
  }
  std::byte* record(int64_t row) const {
    return base + kHeaderBytes + header->stripes * (kStripeBytes + record_bytes()) +
           row * record_bytes();
  }
  float* state(std::byte* record, int slot) const {
    return reinterpret_cast<float*>(record + header->value_bytes) + slot * header->dim;
  }
  DType dtype() const { return static_cast<DType>(header->dtype); }
};

Table table_of(const Buffer& buffer) {
  VOLLEY_REQUIRE(!buffer.empty(), ValueError, "an empty NodeState");
  return {reinterpret_cast<Header*>(buffer.data()), buffer.data()};
}

size_t total_bytes(int64_t stripes, int64_t rows, int64_t record_bytes) {
  return kHeaderBytes + static_cast<size_t>(stripes) * (kStripeBytes + record_bytes) +
         static_cast<size_t>(rows) * record_bytes;
}

float load(const std::byte* row, DType dtype, int64_t k) {
  switch (dtype) {
    case DType::kFloat16:
      return half_to_float(reinterpret_cast<const uint16_t*>(row)[k]);
    case DType::kBFloat16:
      return bfloat16_to_float(reinterpret_cast<const uint16_t*>(row)[k]);
    default:
      return reinterpret_cast<const float*>(row)[k];
  }
}

void store(std::byte* row, DType dtype, int64_t k, float value) {
  switch (dtype) {
    case DType::kFloat16:
      reinterpret_cast<uint16_t*>(row)[k] = float_to_half(value);
      break;
    case DType::kBFloat16:
      reinterpret_cast<uint16_t*>(row)[k] = float_to_bfloat16(value);
      break;
    default:
      reinterpret_cast<float*>(row)[k] = value;
  }
}

// A dead owner's stripe made whole: the undo copy back, the sequence even.
void repair(const Table& table, int64_t index) {
  Stripe& stripe = table.stripe(index);
  const int64_t row = stripe.undo_row.load(std::memory_order_acquire);
  if (row >= 0) {
    std::memcpy(table.record(row), table.undo(index), static_cast<size_t>(stripe.undo_bytes));
    stripe.undo_row.store(-1, std::memory_order_release);
  }
  if (stripe.sequence.load(std::memory_order_relaxed) & 1) {
    stripe.sequence.fetch_add(1, std::memory_order_release);
  }
}

void lock(const Table& table, int64_t index) {
  Stripe& stripe = table.stripe(index);
  const int rc = pthread_mutex_lock(&stripe.mutex);
  if (rc == EOWNERDEAD) {
    repair(table, index);
    pthread_mutex_consistent(&stripe.mutex);
    return;
  }
  VOLLEY_REQUIRE(rc == 0, RuntimeError, "NodeState: locking stripe {} failed: {}", index,
                 std::strerror(rc));
}

void unlock(const Table& table, int64_t index) { pthread_mutex_unlock(&table.stripe(index).mutex); }

// Runs update(record) on row `row` under its stripe, with the undo protocol of the file comment;
// update changes at most the first `bytes` bytes of the record (what the undo slot saves).
template <typename Update>
void write_row(const Table& table, int64_t row, int64_t bytes, Update&& update) {
  const int64_t index = row % table.header->stripes;
  Stripe& stripe = table.stripe(index);
  if (table.header->undo == 0) {  // process-private: the sequence is the writers' lock too
    uint64_t sequence = stripe.sequence.load(std::memory_order_relaxed);
    while ((sequence & 1) != 0 ||
           !stripe.sequence.compare_exchange_weak(sequence, sequence + 1, std::memory_order_acq_rel,
                                                  std::memory_order_relaxed)) {
      if ((sequence & 1) != 0) sequence = stripe.sequence.load(std::memory_order_relaxed);
    }
    update(table.record(row));
    stripe.sequence.store(sequence + 2, std::memory_order_release);
    return;
  }
  lock(table, index);
  std::byte* record = table.record(row);
  const bool undo = table.header->undo != 0;
  if (undo) {
    std::memcpy(table.undo(index), record, static_cast<size_t>(bytes));
    stripe.undo_bytes = bytes;
    stripe.undo_row.store(row, std::memory_order_release);
  }
  stripe.sequence.fetch_add(1, std::memory_order_acq_rel);
  update(record);
  if (undo) stripe.undo_row.store(-1, std::memory_order_release);
  stripe.sequence.fetch_add(1, std::memory_order_release);
  unlock(table, index);
}

// The value row as float32: the record itself for float32 rows, else a converted copy that
// commit() writes back.
class FloatRow {
 public:
  FloatRow(const Table& table, std::byte* record, std::vector<float>& scratch)
      : record_(record), dtype_(table.dtype()), dim_(table.header->dim) {
    if (dtype_ == DType::kFloat32) {
      data_ = reinterpret_cast<float*>(record);
      return;
    }
    data_ = scratch.data();
    for (int64_t k = 0; k < dim_; ++k) data_[k] = load(record, dtype_, k);
  }
  float* data() const { return data_; }
  void commit() const {
    if (dtype_ == DType::kFloat32) return;
    for (int64_t k = 0; k < dim_; ++k) store(record_, dtype_, k, data_[k]);
  }

 private:
  std::byte* record_;
  DType dtype_;
  int64_t dim_;
  float* data_;
};

// Calls read(record) until it ran between two equal even sequence values of the row's stripe.
template <typename Read>
void read_row(const Table& table, int64_t row, Read&& read) {
  const int64_t index = row % table.header->stripes;
  Stripe& stripe = table.stripe(index);
  for (int attempt = 0;; ++attempt) {
    const uint64_t before = stripe.sequence.load(std::memory_order_acquire);
    if (before & 1) {
      // A writer holds the stripe: wait for it (a shared table's writer may have died holding
      // it: locking repairs the stripe).
      if (attempt > 64 && table.header->undo != 0) {
        lock(table, index);
        unlock(table, index);
      } else if (attempt > 64) {
        sched_yield();
      }
      continue;
    }
    read(table.record(row));
    std::atomic_thread_fence(std::memory_order_acquire);
    if (stripe.sequence.load(std::memory_order_relaxed) == before) return;
  }
}

// Asks for the cache lines of [data, data + bytes) ahead of use (for writing when `write`).
template <bool write>
void prefetch(const std::byte* data, int64_t bytes) {
  for (int64_t offset = 0; offset < bytes; offset += 64) __builtin_prefetch(data + offset, write);
}

// Rows are touched in id order, at random in memory: the record and the values of the group
// `kPrefetchGroups` ahead are requested while this one is written.
constexpr int64_t kPrefetchGroups = 6;

void check_ids(std::span<const int64_t> ids, int64_t rows) {
  for (size_t i = 0; i < ids.size(); ++i) {
    VOLLEY_REQUIRE(ids[i] >= 0 && ids[i] < rows, IndexError,
                   "NodeState: id {} at position {} out of range for {} rows", ids[i], i, rows);
  }
}

// Positions grouped by id (ids ascending, positions ascending within an id): `order` and the
// start of each id's group in it (with a final end).
struct Groups {
  std::vector<int64_t> order;
  std::vector<int64_t> starts;
};

Groups group_ids(std::span<const int64_t> ids) {
  Groups groups;
  std::vector<std::pair<int64_t, int64_t>> keyed(ids.size());  // (id, position): sorts stably
  for (size_t i = 0; i < ids.size(); ++i) keyed[i] = {ids[i], static_cast<int64_t>(i)};
  if (!std::is_sorted(keyed.begin(), keyed.end())) std::sort(keyed.begin(), keyed.end());
  groups.order.resize(ids.size());
  for (size_t i = 0; i < keyed.size(); ++i) {
    groups.order[i] = keyed[i].second;
    if (i == 0 || keyed[i].first != keyed[i - 1].first) {
      groups.starts.push_back(static_cast<int64_t>(i));
    }
  }
  groups.starts.push_back(static_cast<int64_t>(groups.order.size()));
  return groups;
}

// The sum of the group's rows of `values`, in position order, into `sum`.
void group_sum(const Groups& groups, int64_t group, std::span<const float> values, int64_t dim,
               float* sum) {
  std::fill(sum, sum + dim, 0.0f);
  for (int64_t i = groups.starts[group]; i < groups.starts[group + 1]; ++i) {
    const float* row = values.data() + groups.order[i] * dim;
    for (int64_t k = 0; k < dim; ++k) sum[k] += row[k];
  }
}

void check_values(std::span<const int64_t> ids, std::span<const float> values, int64_t dim,
                  const char* what) {
  VOLLEY_REQUIRE(values.size() == ids.size() * static_cast<size_t>(dim), ValueError,
                 "NodeState: {} holds {} values, {} ids × dim {} need {}", what, values.size(),
                 ids.size(), dim, ids.size() * static_cast<size_t>(dim));
}

// The loop of step: ids grouped (sorted, repeats together), the groups split over the pool,
// the records, stripes and gradient rows of the group kPrefetchGroups ahead requested, then
// update(record, its float32 value row, the group's gradient sum) under the row's stripe.
template <typename Update>
void for_each_group(const Table& table, std::span<const int64_t> ids, std::span<const float> grads,
                    Update&& update) {
  const int64_t dim = table.header->dim;
  const Groups groups = group_ids(ids);
  const int64_t count = static_cast<int64_t>(groups.starts.size()) - 1;
  parallel_for(0, count, 256, [&](int64_t begin, int64_t end) {
    std::vector<float> sum(dim), scratch(dim);
    for (int64_t group = begin; group < end; ++group) {
      if (group + kPrefetchGroups < end) {
        const int64_t ahead = groups.order[groups.starts[group + kPrefetchGroups]];
        prefetch<true>(table.record(ids[ahead]), table.record_bytes());
        prefetch<true>(
            reinterpret_cast<std::byte*>(&table.stripe(ids[ahead] % table.header->stripes)), 64);
        prefetch<false>(reinterpret_cast<const std::byte*>(grads.data() + ahead * dim), dim * 4);
      }
      group_sum(groups, group, grads, dim, sum.data());
      write_row(table, ids[groups.order[groups.starts[group]]], table.record_bytes(),
                [&](std::byte* record) {
                  const FloatRow value(table, record, scratch);
                  update(record, value.data(), sum.data());
                  value.commit();
                });
    }
  });
}

}  // namespace

NodeState::NodeState(Buffer buffer) : buffer_(std::move(buffer)) {}

NodeState NodeState::create(const NodeStateOptions& options) {
  VOLLEY_REQUIRE(options.rows >= 0, ValueError, "NodeState: rows must be >= 0, got {}",
                 options.rows);
  VOLLEY_REQUIRE(options.dim >= 1, ValueError, "NodeState: dim must be >= 1, got {}", options.dim);
  VOLLEY_REQUIRE(options.dtype == DType::kFloat32 || options.dtype == DType::kFloat16 ||
                     options.dtype == DType::kBFloat16,
                 ValueError, "NodeState: rows are float32, float16 or bfloat16, got {}",
                 dtype_name(options.dtype));
  VOLLEY_REQUIRE(options.state_slots >= 0 && options.state_slots <= 2, ValueError,
                 "NodeState: state_slots must be 0, 1 or 2, got {}", options.state_slots);
  const int64_t value_bytes =
      (options.dim * static_cast<int64_t>(dtype_size(options.dtype)) + 15) / 16 * 16;
  const int64_t record_bytes = value_bytes + options.state_slots * options.dim * 4;
  int64_t stripes = 1;
  while (stripes < 4096 && stripes * 16 < options.rows) stripes *= 2;
  const size_t bytes = total_bytes(stripes, options.rows, record_bytes);
  Buffer buffer = options.shared ? Buffer::create_shareable(bytes) : Buffer::zeros(bytes);
  std::memset(buffer.data(), 0, kHeaderBytes + stripes * kStripeBytes);
  auto* header = new (buffer.data()) Header{};
  header->magic = kMagic;
  header->version = kVersion;
  header->state_slots = static_cast<uint32_t>(options.state_slots);
  header->rows = options.rows;
  header->dim = options.dim;
  header->stripes = stripes;
  header->value_bytes = value_bytes;
  header->record_bytes = record_bytes;
  header->dtype = static_cast<uint8_t>(options.dtype);
  header->undo = options.shared ? 1 : 0;
  header->steps.store(0);
  pthread_mutexattr_t attributes;
  pthread_mutexattr_init(&attributes);
  pthread_mutexattr_setpshared(&attributes, PTHREAD_PROCESS_SHARED);
  pthread_mutexattr_setrobust(&attributes, PTHREAD_MUTEX_ROBUST);
  const Table table{header, buffer.data()};
  for (int64_t i = 0; i < stripes; ++i) {
    Stripe* stripe = new (&table.stripe(i)) Stripe{};
    pthread_mutex_init(&stripe->mutex, &attributes);
    stripe->sequence.store(0);
    stripe->undo_row.store(-1);
  }
  pthread_mutexattr_destroy(&attributes);
  return NodeState(std::move(buffer));
}

NodeState NodeState::attach(Buffer buffer) {
  VOLLEY_REQUIRE(buffer.size() >= kHeaderBytes, ValueError,
                 "NodeState: {} bytes are not a NodeState (no header)", buffer.size());
  const auto* header = reinterpret_cast<const Header*>(buffer.data());
  VOLLEY_REQUIRE(header->magic == kMagic && header->version == kVersion, ValueError,
                 "NodeState: the bytes are not a NodeState of version {}", kVersion);
  const size_t bytes = total_bytes(header->stripes, header->rows, header->record_bytes);
  VOLLEY_REQUIRE(buffer.size() >= bytes, ValueError,
                 "NodeState: {} bytes hold a truncated table ({} needed)", buffer.size(), bytes);
  return NodeState(std::move(buffer));
}

int64_t NodeState::rows() const { return table_of(buffer_).header->rows; }
int64_t NodeState::dim() const { return table_of(buffer_).header->dim; }
DType NodeState::dtype() const { return table_of(buffer_).dtype(); }
int NodeState::state_slots() const {
  return static_cast<int>(table_of(buffer_).header->state_slots);
}
int64_t NodeState::steps() const { return table_of(buffer_).header->steps.load(); }

void NodeState::initialize(Init init, double scale, uint64_t seed, int64_t first_id) {
  const Table table = table_of(buffer_);
  const int64_t dim = table.header->dim;
  VOLLEY_REQUIRE(init == Init::kZeros || (std::isfinite(scale) && scale >= 0), ValueError,
                 "NodeState: the init scale must be finite and >= 0, got {}", scale);
  VOLLEY_REQUIRE(first_id >= 0, ValueError, "NodeState: the first id must be >= 0, got {}",
                 first_id);
  parallel_for(0, table.header->rows, 1024, [&](int64_t begin, int64_t end) {
    for (int64_t row = begin; row < end; ++row) {
      const auto id = static_cast<uint64_t>(first_id + row);
      PhiloxStream rng(seed, {0u, static_cast<uint32_t>(id), static_cast<uint32_t>(id >> 32), 7u});
      std::byte* record = table.record(row);
      for (int64_t k = 0; k < dim; ++k) {
        float value = 0.0f;
        if (init == Init::kUniform) {
          value = static_cast<float>((2.0 * rng.uniform_double() - 1.0) * scale);
        } else if (init == Init::kNormal) {  // Box-Muller on (0, 1] × [0, 1)
          const double u1 = 1.0 - rng.uniform_double();
          const double u2 = rng.uniform_double();
          value = static_cast<float>(scale * std::sqrt(-2.0 * std::log(u1)) *
                                     std::cos(6.283185307179586 * u2));
        }
        store(record, table.dtype(), k, value);
      }
    }
  });
}

void NodeState::pull(std::span<const int64_t> ids, DType out_dtype, std::byte* out) const {
  const Table table = table_of(buffer_);
  const DType dtype = table.dtype();
  VOLLEY_REQUIRE(out_dtype == dtype || out_dtype == DType::kFloat32, ValueError,
                 "NodeState: pull gives the row dtype ({}) or float32, not {}", dtype_name(dtype),
                 dtype_name(out_dtype));
  check_ids(ids, table.header->rows);
  const int64_t dim = table.header->dim;
  const size_t row_bytes = static_cast<size_t>(dim) * dtype_size(out_dtype);
  parallel_for(0, static_cast<int64_t>(ids.size()), 1024, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      if (i + kPrefetchGroups < end) {
        prefetch<false>(table.record(ids[i + kPrefetchGroups]), table.header->value_bytes);
      }
      std::byte* target = out + i * row_bytes;
      read_row(table, ids[i], [&](const std::byte* record) {
        if (out_dtype == dtype) {
          std::memcpy(target, record, row_bytes);
        } else {
          for (int64_t k = 0; k < dim; ++k) {
            reinterpret_cast<float*>(target)[k] = load(record, dtype, k);
          }
        }
      });
    }
  });
}

void NodeState::push(std::span<const int64_t> ids, std::span<const float> values, WriteOp op) {
  const Table table = table_of(buffer_);
  const int64_t dim = table.header->dim;
  check_values(ids, values, dim, "push values");
  check_ids(ids, table.header->rows);
  const int64_t count = static_cast<int64_t>(ids.size());
  // No coalescing: positions are applied in order, each row's by one thread (rows split over
  // the threads by id), so repeated ids keep position order whatever the thread count.
  const int64_t lanes = count < 4096 ? 1 : std::max(1, get_num_threads());
  parallel_for(0, lanes, 1, [&](int64_t first_lane, int64_t last_lane) {
    std::vector<float> scratch(static_cast<size_t>(dim));
    for (int64_t lane = first_lane; lane < last_lane; ++lane) {
      for (int64_t i = 0; i < count; ++i) {
        if (i + kPrefetchGroups < count && ids[i + kPrefetchGroups] % lanes == lane) {
          const int64_t ahead = ids[i + kPrefetchGroups];
          prefetch<true>(table.record(ahead), table.header->value_bytes);
          prefetch<true>(reinterpret_cast<std::byte*>(&table.stripe(ahead % table.header->stripes)),
                         64);
        }
        if (ids[i] % lanes != lane) continue;
        const float* row = values.data() + i * dim;
        write_row(table, ids[i], table.header->value_bytes, [&](std::byte* record) {
          const FloatRow value(table, record, scratch);
          float* target = value.data();
          if (op == WriteOp::kAdd) {
            add_row(dim, target, row);
          } else {
            std::copy(row, row + dim, target);
          }
          value.commit();
        });
      }
    }
  });
}

int64_t NodeState::step(std::span<const int64_t> ids, std::span<const float> grads,
                        const OptimizerStep& step) {
  const Table table = table_of(buffer_);
  const int needed = step.kind == OptimizerKind::kAdam ? 2 : 1;
  VOLLEY_REQUIRE(static_cast<int>(table.header->state_slots) >= needed, ValueError,
                 "NodeState: {} needs {} optimizer-state slot(s), the table has {}",
                 step.kind == OptimizerKind::kAdam ? "SparseAdam" : "SparseAdagrad", needed,
                 table.header->state_slots);
  VOLLEY_REQUIRE(std::isfinite(step.lr) && step.lr >= 0 && std::isfinite(step.eps) &&
                     step.eps >= 0 && step.beta1 >= 0 && step.beta1 < 1 && step.beta2 >= 0 &&
                     step.beta2 < 1,
                 ValueError, "NodeState: bad optimizer options (lr {}, eps {}, betas {}, {})",
                 step.lr, step.eps, step.beta1, step.beta2);
  const int64_t dim = table.header->dim;
  check_values(ids, grads, dim, "step gradients");
  check_ids(ids, table.header->rows);
  VOLLEY_REQUIRE(step.step_number >= 0, ValueError,
                 "NodeState: the step number must be >= 0 (0: the next), got {}", step.step_number);
  const int64_t count_step =
      step.step_number > 0 ? step.step_number : table.header->steps.fetch_add(1) + 1;
  const float step_size = adam_step_size(step, count_step);
  for_each_group(table, ids, grads, [&](std::byte* record, float* value, const float* grad) {
    if (step.kind == OptimizerKind::kAdam) {
      adam(dim, value, table.state(record, 0), table.state(record, 1), grad, step, step_size);
    } else {
      adagrad(dim, value, table.state(record, 0), grad, step);
    }
  });
  return count_step;
}

NodeStateSnapshot NodeState::snapshot(int64_t begin, int64_t end) const {
  const Table table = table_of(buffer_);
  const int64_t dim = table.header->dim;
  if (end < 0) end = table.header->rows;
  VOLLEY_REQUIRE(begin >= 0 && begin <= end && end <= table.header->rows, IndexError,
                 "NodeState: rows [{}, {}) are not within the table's {} rows", begin, end,
                 table.header->rows);
  const int slots = static_cast<int>(table.header->state_slots);
  NodeStateSnapshot snapshot{Array::empty(table.dtype(), {end - begin, dim}),
                             Array::empty(DType::kFloat32, {end - begin, slots, dim}),
                             table.header->steps.load()};
  const size_t value_bytes = static_cast<size_t>(dim) * dtype_size(table.dtype());
  const size_t state_bytes = static_cast<size_t>(slots) * dim * 4;
  parallel_for(begin, end, 1024, [&](int64_t first, int64_t last) {
    for (int64_t row = first; row < last; ++row) {
      read_row(table, row, [&](const std::byte* record) {
        const auto at = static_cast<size_t>(row - begin);
        std::memcpy(snapshot.values.raw_data() + at * value_bytes, record, value_bytes);
        if (state_bytes > 0) {  // a table without optimizer state has none to copy
          std::memcpy(snapshot.state.raw_data() + at * state_bytes,
                      record + table.header->value_bytes, state_bytes);
        }
      });
    }
  });
  return snapshot;
}

void NodeState::restore(const NodeStateSnapshot& snapshot, int64_t first_row) {
  const Table table = table_of(buffer_);
  const int64_t dim = table.header->dim;
  const int64_t slots = table.header->state_slots;
  const int64_t rows = snapshot.values.ndim() == 2 ? snapshot.values.shape()[0] : -1;
  const std::vector<int64_t> value_shape{rows, dim}, state_shape{rows, slots, dim};
  const bool fits = rows >= 0 && snapshot.values.dtype() == table.dtype() &&
                    snapshot.values.shape() == value_shape &&
                    snapshot.state.dtype() == DType::kFloat32 &&
                    snapshot.state.shape() == state_shape;
  VOLLEY_REQUIRE(fits, ValueError,
                 "NodeState: a snapshot of values {} and state {} does not fit a table of "
                 "dim {}, {}, {} state slot(s)",
                 snapshot.values.describe(), snapshot.state.describe(), dim,
                 dtype_name(table.dtype()), slots);
  VOLLEY_REQUIRE(first_row >= 0 && first_row <= table.header->rows - rows, IndexError,
                 "NodeState: {} snapshot rows from row {} do not fit the table's {} rows", rows,
                 first_row, table.header->rows);
  const size_t value_bytes = static_cast<size_t>(dim) * dtype_size(table.dtype());
  const size_t state_bytes = static_cast<size_t>(slots) * dim * 4;
  parallel_for(0, rows, 1024, [&](int64_t begin, int64_t end) {
    for (int64_t at = begin; at < end; ++at) {
      write_row(table, first_row + at, table.record_bytes(), [&](std::byte* record) {
        std::memcpy(record, snapshot.values.raw_data() + at * value_bytes, value_bytes);
        if (state_bytes > 0) {
          std::memcpy(record + table.header->value_bytes,
                      snapshot.state.raw_data() + at * state_bytes, state_bytes);
        }
      });
    }
  });
  if (snapshot.steps >= 0) table.header->steps.store(snapshot.steps);
}

namespace internal {

void node_state_write_partially(NodeState& state, int64_t id, std::span<const float> values,
                                size_t bytes) {
  const Table table = table_of(state.buffer());
  const int64_t index = id % table.header->stripes;
  Stripe& stripe = table.stripe(index);
  lock(table, index);
  std::byte* record = table.record(id);
  std::memcpy(table.undo(index), record, table.record_bytes());
  stripe.undo_bytes = table.record_bytes();
  stripe.undo_row.store(id, std::memory_order_release);
  stripe.sequence.fetch_add(1, std::memory_order_acq_rel);
  std::vector<std::byte> row(static_cast<size_t>(table.header->dim) * dtype_size(table.dtype()));
  for (int64_t k = 0; k < table.header->dim; ++k) store(row.data(), table.dtype(), k, values[k]);
  std::memcpy(record, row.data(), std::min(bytes, row.size()));
}

}  // namespace internal
}  // namespace volley
