#include "volley/feature/feature_store.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <limits>

#include "volley/core/host_pool.h"
#include "volley/core/internal/fault_guard.h"
#include "volley/core/parallel.h"
#include "volley/feature/cpu/gather_kernel.h"
#include "volley/feature/gather.h"
#include "volley/feature/internal/disk_tier.h"
#include "volley/feature/internal/huge_pages.h"
#include "volley/feature/internal/store_state.h"
#include "volley/graph/io/npy.h"

namespace volley {

namespace fi = feature_internal;

namespace {

// Segment layout of create_shared: a 64-byte header, then the rows (64-byte aligned).
struct SharedFeatureHeader {
  uint64_t magic;
  uint32_t version;
  uint32_t dtype;
  int64_t ndim;
  int64_t rows;
  int64_t width;
};
constexpr uint64_t kSharedFeatureMagic = 0x5446594c4c4f56ULL;  // "VOLLYFT"
constexpr size_t kSharedFeatureHeaderBytes = 64;
static_assert(sizeof(SharedFeatureHeader) <= kSharedFeatureHeaderBytes);

void check_matrix(const Array& matrix) {
  VOLLEY_REQUIRE(matrix.defined() && (matrix.ndim() == 1 || matrix.ndim() == 2), ValueError,
                 "a feature store holds an [N, D] matrix or an [N] vector, got {}",
                 matrix.defined() ? matrix.describe() : std::string("an undefined array"));
  VOLLEY_REQUIRE(matrix.buffer().host_accessible() || matrix.numel() == 0, ValueError,
                 "a CPU feature store needs host-accessible rows; this matrix lives in {} memory",
                 location_name(matrix.buffer().location()));
}

std::shared_ptr<FeatureStore::State> state_for(const Array& matrix) {
  check_matrix(matrix);
  auto state = std::make_shared<FeatureStore::State>();
  state->num_rows = matrix.dim(0);
  state->ndim = matrix.ndim();
  state->width = matrix.ndim() == 2 ? matrix.dim(1) : 1;
  state->dtype = matrix.dtype();
  state->row_bytes = static_cast<size_t>(state->width) * dtype_size(state->dtype);
  return state;
}

void finish_map(FeatureStore::State& state) {
  VOLLEY_ASSERT(state.tiers.size() <= fi::RowMap::kMaxTiers);
  state.mapped_file.clear();
  for (size_t t = 0; t < state.tiers.size(); ++t) {
    state.map.bases[t] = state.tiers[t].rows().raw_data();
    const Buffer& rows = state.tiers[t].rows().buffer();
    if (rows.location() == Location::kMappedFile && state.mapped_file.empty()) {
      state.mapped_file = rows.file_path();
    }
  }
  state.map.lookup = state.lookup.empty() ? nullptr : state.lookup.data();
  state.map.lookup_is_32bit = state.lookup_is_32bit;
  state.map.row_bytes = state.row_bytes;
  state.map.width = state.width;
  state.map.dtype = state.dtype;
}

std::vector<int64_t> tier_shape(const FeatureStore::State& state, int64_t slots) {
  if (state.ndim == 1) return {slots};
  return {slots, state.width};
}

// Rows of a mapped file read through the map are read at random: without this advice the
// kernel reads ~128 KiB ahead around every faulting row (16x fewer rows/s past the page cache).
void advise_random(const Array& matrix) {
  if (matrix.buffer().location() != Location::kMappedFile || matrix.nbytes() == 0) return;
  const auto page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  const auto begin = reinterpret_cast<uintptr_t>(matrix.raw_data()) & ~(page - 1);
  const auto end = reinterpret_cast<uintptr_t>(matrix.raw_data()) + matrix.nbytes();
  madvise(reinterpret_cast<void*>(begin), end - begin, MADV_RANDOM);
}

// Copies rows `ids` of `matrix` into `destination` (slots in order), in parallel.
void copy_rows(const Array& matrix, std::span<const int64_t> ids, std::byte* destination) {
  gather_rows_parallel(matrix, ids, matrix.dtype(), destination);
}

}  // namespace

FeatureStore::FeatureStore(Array matrix) {
  if (matrix.defined() && fi::wants_disk_tier(matrix, {})) {
    *this = build(matrix, {});  // a mapped file larger than its share of RAM: the disk tier
    return;
  }
  auto state = state_for(matrix);
  fi::collapse_huge_pages_async(matrix);
  state->tiers.emplace_back(std::move(matrix));
  finish_map(*state);
  state_ = std::move(state);
}

FeatureStore FeatureStore::from_npy(const std::string& path, const FeatureStoreOptions& options) {
  const Array matrix = read_npy(path, /*memory_map=*/true);
  return build(matrix, options);
}

FeatureStore FeatureStore::create_shared(const Array& matrix, const std::string& name) {
  auto state = state_for(matrix);
  const size_t bytes = matrix.nbytes();
  // Unnamed: an anonymous memfd segment, which nothing can leak even if every process holding it
  // is killed; a caller-chosen name needs a /dev/shm segment.
  Buffer segment = name.empty() ? Buffer::create_shareable(kSharedFeatureHeaderBytes + bytes)
                                : Buffer::create_shared(kSharedFeatureHeaderBytes + bytes, name);
  auto* header = reinterpret_cast<SharedFeatureHeader*>(segment.data());
  header->version = 1;
  header->dtype = static_cast<uint32_t>(state->dtype);
  header->ndim = state->ndim;
  header->rows = state->num_rows;
  header->width = state->width;
  Array rows(segment.slice(kSharedFeatureHeaderBytes, bytes), state->dtype, matrix.shape());
  if (bytes > 0) {
    // Parallel copy: the segment's pages are touched by the threads that fill them.
    const int64_t rows_count = state->num_rows;
    const size_t row_bytes = state->row_bytes;
    const std::byte* from = matrix.raw_data();
    std::byte* to = rows.raw_data();
    parallel_for(0, rows_count,
                 std::max<int64_t>(1, (int64_t{4} << 20) / std::max<int64_t>(1, row_bytes)),
                 [&](int64_t begin, int64_t end) {
                   std::memcpy(to + static_cast<size_t>(begin) * row_bytes,
                               from + static_cast<size_t>(begin) * row_bytes,
                               static_cast<size_t>(end - begin) * row_bytes);
                 });
  }
  std::atomic_thread_fence(std::memory_order_release);
  header->magic = kSharedFeatureMagic;  // last: a reader sees a complete segment
  state->shared_name = segment.shared_name();
  state->tiers.emplace_back(std::move(rows));
  finish_map(*state);
  FeatureStore store;
  store.state_ = std::move(state);
  return store;
}

FeatureStore FeatureStore::attach_shared(const std::string& name) {
  Buffer segment = Buffer::attach_shared(name);
  VOLLEY_REQUIRE(segment.size() >= kSharedFeatureHeaderBytes, IoError,
                 "shared-memory segment '{}' is not a feature store ({} bytes)", name,
                 segment.size());
  const auto* header = reinterpret_cast<const SharedFeatureHeader*>(segment.data());
  VOLLEY_REQUIRE(header->magic == kSharedFeatureMagic && header->version == 1, IoError,
                 "shared-memory segment '{}' is not a feature store made by "
                 "FeatureStore::create_shared",
                 name);
  VOLLEY_REQUIRE(header->dtype <= static_cast<uint32_t>(DType::kFloat64) &&
                     (header->ndim == 1 || header->ndim == 2) && header->rows >= 0 &&
                     header->width >= 0,
                 IoError, "shared-memory segment '{}' has a corrupt feature header", name);
  const auto dtype = static_cast<DType>(header->dtype);
  std::vector<int64_t> shape = {header->rows};
  if (header->ndim == 2) shape.push_back(header->width);
  const size_t bytes =
      static_cast<size_t>(header->rows) * static_cast<size_t>(header->width) * dtype_size(dtype);
  VOLLEY_REQUIRE(bytes <= segment.size() - kSharedFeatureHeaderBytes, IoError,
                 "shared-memory segment '{}' holds {} bytes of rows; its header needs {}", name,
                 segment.size() - kSharedFeatureHeaderBytes, bytes);
  Array rows(segment.slice(kSharedFeatureHeaderBytes, bytes), dtype, std::move(shape));
  FeatureStore store(std::move(rows));
  auto state = std::make_shared<State>(*store.state_);
  state->shared_name = name;
  finish_map(*state);
  store.state_ = std::move(state);
  return store;
}

namespace feature_internal {

std::vector<int64_t> placement_order(const std::optional<Array>& hot_order, int64_t n) {
  std::vector<int64_t> order;
  if (!hot_order) return order;
  const Array& hot = *hot_order;
  VOLLEY_REQUIRE(hot.defined() && hot.ndim() == 1 && hot.dtype() == DType::kInt64, ValueError,
                 "hot_order must be a 1-d int64 array, got {}", hot.describe());
  VOLLEY_REQUIRE(hot.numel() <= n, ValueError, "hot_order lists {} rows; the matrix has only {}",
                 hot.numel(), n);
  std::vector<uint8_t> seen(static_cast<size_t>(n), 0);
  const int64_t* ids = hot.data<int64_t>();
  order.reserve(static_cast<size_t>(n));
  for (int64_t i = 0; i < hot.numel(); ++i) {
    VOLLEY_REQUIRE(ids[i] >= 0 && ids[i] < n, IndexError,
                   "hot_order id {} at position {} out of range for a matrix with {} rows", ids[i],
                   i, n);
    VOLLEY_REQUIRE(!seen[static_cast<size_t>(ids[i])], ValueError,
                   "hot_order lists row {} twice (second time at position {})", ids[i], i);
    seen[static_cast<size_t>(ids[i])] = 1;
    order.push_back(ids[i]);
  }
  for (int64_t id = 0; id < n; ++id) {
    if (!seen[static_cast<size_t>(id)]) order.push_back(id);
  }
  return order;
}

}  // namespace feature_internal

namespace {

void check_host_tiers(const FeatureStoreOptions& options) {
  VOLLEY_REQUIRE(options.tiers.size() < static_cast<size_t>(fi::RowMap::kMaxTiers), ValueError,
                 "a feature store has at most {} cache tiers, got {}", fi::RowMap::kMaxTiers - 1,
                 options.tiers.size());
  for (size_t t = 0; t < options.tiers.size(); ++t) {
    const Location where = options.tiers[t].location;
    VOLLEY_REQUIRE(where == Location::kHost || where == Location::kSharedMemory, ValueError,
                   "cache tier {} must be in host, shared, cuda or pinned_host memory, not {}", t,
                   location_name(where));
  }
}

// How many rows each cache tier takes.
std::vector<int64_t> tier_takes(const std::vector<TierSpec>& tiers, size_t row_bytes, int64_t n) {
  std::vector<int64_t> takes;
  int64_t placed = 0;
  for (const TierSpec& spec : tiers) {
    int64_t fit = n - placed;
    if (spec.byte_budget != Buffer::npos && row_bytes > 0) {
      fit = std::min<int64_t>(fit, static_cast<int64_t>(spec.byte_budget / row_bytes));
    }
    takes.push_back(fit);
    placed += fit;
  }
  return takes;
}

// Fills the cache tiers with rows in placement order (`order`, empty: id order): through the
// disk tier's reader when the store has one (sorted, coalesced reads), else from the matrix.
void fill_tiers(const Array& matrix, const std::vector<TierSpec>& tiers,
                const std::vector<int64_t>& order, const std::vector<int64_t>& takes,
                FeatureStore::State& state) {
  std::vector<int64_t> ids_buffer;
  int64_t position = 0;
  for (size_t t = 0; t < tiers.size(); ++t) {
    const TierSpec& spec = tiers[t];
    const int64_t count = takes[t];
    const size_t bytes = static_cast<size_t>(count) * state.row_bytes;
    Buffer buffer = spec.location != Location::kSharedMemory ? Buffer::allocate(bytes)
                    : spec.shared_name.empty()               ? Buffer::create_shareable(bytes)
                                               : Buffer::create_shared(bytes, spec.shared_name);
    if (spec.location == Location::kHost) advise_huge_pages(buffer.data(), bytes);
    Array rows(std::move(buffer), state.dtype, tier_shape(state, count));
    std::span<const int64_t> ids;
    if (order.empty()) {
      ids_buffer.resize(static_cast<size_t>(count));
      for (int64_t i = 0; i < count; ++i) ids_buffer[static_cast<size_t>(i)] = position + i;
      ids = ids_buffer;
    } else {
      ids = std::span<const int64_t>(order).subspan(static_cast<size_t>(position),
                                                    static_cast<size_t>(count));
    }
    if (state.disk) {
      std::vector<std::byte*> destinations(ids.size());
      for (size_t i = 0; i < ids.size(); ++i)
        destinations[i] = rows.raw_data() + i * state.row_bytes;
      state.disk->reader->read(ids, destinations);
    } else {
      copy_rows(matrix, ids, rows.raw_data());
    }
    state.tiers.emplace_back(std::move(rows));
    position += count;
  }
}

// The packed id → (tier, slot) lookup (absent when one tier holds every row in id order).
void build_lookup(FeatureStore::State& state, const std::vector<int64_t>& order,
                  const std::vector<int64_t>& takes, bool source_tier) {
  const int64_t n = state.num_rows;
  const bool in_id_order = order.empty();
  if (state.tiers.size() == 1 && in_id_order) return;
  auto order_at = [&](int64_t position) {
    return in_id_order ? position : order[static_cast<size_t>(position)];
  };
  const auto source_index = static_cast<uint64_t>(state.tiers.size() - 1);
  state.lookup_is_32bit = n < (int64_t{1} << fi::kTierShift32);
  const size_t entry_bytes = state.lookup_is_32bit ? 4 : 8;
  state.lookup = Buffer::allocate(static_cast<size_t>(n) * entry_bytes);
  auto fill = [&](auto* lookup, int shift) {
    using Entry = std::remove_pointer_t<decltype(lookup)>;
    if (source_tier) {
      parallel_for(0, n, 1 << 16, [&](int64_t begin, int64_t end) {
        for (int64_t id = begin; id < end; ++id) {
          lookup[id] = static_cast<Entry>((source_index << shift) | static_cast<uint64_t>(id));
        }
      });
    }
    int64_t at = 0;
    for (size_t t = 0; t < takes.size(); ++t) {
      for (int64_t slot = 0; slot < takes[t]; ++slot, ++at) {
        lookup[order_at(at)] =
            static_cast<Entry>((static_cast<uint64_t>(t) << shift) | static_cast<uint64_t>(slot));
      }
    }
  };
  if (state.lookup_is_32bit) {
    fill(reinterpret_cast<uint32_t*>(state.lookup.data()), fi::kTierShift32);
  } else {
    fill(reinterpret_cast<uint64_t*>(state.lookup.data()), fi::kTierShift64);
  }
}

}  // namespace

FeatureStore FeatureStore::build(const Array& matrix, const FeatureStoreOptions& options) {
  auto state = state_for(matrix);
  FeatureStore store;
  if (fi::wants_gpu_tiers(options)) {
    fi::build_gpu_tiers(matrix, options, *state);
    store.state_ = std::move(state);
    return store;
  }
  check_host_tiers(options);
  std::vector<TierSpec> tiers = options.tiers;
  const bool disk = fi::wants_disk_tier(matrix, options);
  const size_t cache_bytes = disk                                  ? fi::cache_budget(options)
                             : options.cache_bytes == Buffer::npos ? 0
                                                                   : options.cache_bytes;
  if (disk) state->disk = fi::open_disk_tier(matrix, options, cache_bytes);
  // Static hotness: the hottest rows that fit cache_bytes in a host tier before the others.
  if (options.cache_policy == CachePolicy::kStatic && cache_bytes >= state->row_bytes) {
    VOLLEY_REQUIRE(tiers.size() + 1 < static_cast<size_t>(fi::RowMap::kMaxTiers), ValueError,
                   "a feature store has at most {} cache tiers, got {} and the static cache",
                   fi::RowMap::kMaxTiers - 1, tiers.size());
    TierSpec cache;
    cache.location = Location::kHost;
    cache.byte_budget = cache_bytes;
    tiers.insert(tiers.begin(), cache);
  }
  const int64_t n = state->num_rows;
  const std::vector<int64_t> order = fi::placement_order(options.hot_order, n);
  const std::vector<int64_t> takes = tier_takes(tiers, state->row_bytes, n);
  int64_t placed = 0;
  for (const int64_t take : takes) placed += take;
  const bool source_tier = placed < n || tiers.empty();
  fill_tiers(matrix, tiers, order, takes, *state);
  if (source_tier) {
    if (!state->disk) advise_random(matrix);
    if (!state->disk) fi::collapse_huge_pages_async(matrix);
    state->tiers.emplace_back(matrix);
  } else {
    state->disk.reset();  // every row is cached: the disk tier is never read
  }
  build_lookup(*state, order, takes, source_tier);
  finish_map(*state);
  store.state_ = std::move(state);
  return store;
}

Buffer allocate_gather_buffer(size_t bytes) {
  Buffer buffer = Buffer::allocate(bytes);
  advise_huge_pages(buffer.data(), bytes);
  return buffer;
}

int64_t FeatureStore::num_rows() const { return state_ ? state_->num_rows : 0; }
int64_t FeatureStore::width() const { return state_ ? state_->width : 0; }
int64_t FeatureStore::ndim() const { return state_ ? state_->ndim : 0; }
DType FeatureStore::dtype() const { return state_ ? state_->dtype : DType::kFloat32; }
size_t FeatureStore::row_bytes() const { return state_ ? state_->row_bytes : 0; }
bool FeatureStore::has_lookup() const {
  return state_ && (!state_->lookup.empty() || !state_->host_lookup.empty());
}
bool FeatureStore::on_cuda() const { return state_ && state_->on_cuda(); }
int FeatureStore::device() const { return state_ ? state_->device : -1; }
std::vector<int> FeatureStore::devices() const {
  std::vector<int> result;
  if (state_) {
    for (const State::DeviceView& view : state_->views) result.push_back(view.device);
  }
  return result;
}

const std::vector<Tier>& FeatureStore::tiers() const {
  static const std::vector<Tier> kNone;
  return state_ ? state_->tiers : kNone;
}

const std::string& FeatureStore::shared_name() const {
  static const std::string kNone;
  return state_ ? state_->shared_name : kNone;
}

RowLocation FeatureStore::locate(int64_t id, int device) const {
  VOLLEY_REQUIRE(id >= 0 && id < num_rows(), IndexError,
                 "row id {} out of range for a feature store with {} rows", id, num_rows());
  if (state_->on_cuda()) return fi::locate_on_gpu(*state_, id, device);
  return fi::locate_host(*state_, id);
}

std::string FeatureStore::disk_io() const {
  return state_ && state_->disk ? state_->disk->reader->describe() : std::string();
}

FeatureStore::DiskStats FeatureStore::disk_stats() const {
  if (!state_ || !state_->disk) return {};
  const fi::DiskTier& disk = *state_->disk;
  return {disk.hits.load(), disk.misses.load(), disk.read_ahead ? disk.read_ahead->rows_read() : 0};
}

bool FeatureStore::wants_lookahead() const {
  return state_ && state_->disk && state_->disk->lookahead;
}

void FeatureStore::announce_batch(int64_t batch, std::span<const int64_t> ids) const {
  if (!wants_lookahead()) return;
  VOLLEY_REQUIRE(batch >= 0 && batch < (int64_t{1} << 62), ValueError,
                 "a batch number to announce must be in [0, 2^62), got {}", batch);
  for (const int64_t id : ids) {
    VOLLEY_REQUIRE(id >= 0 && id < state_->num_rows, IndexError,
                   "row id {} out of range for a store of {} rows (batch {})", id, state_->num_rows,
                   batch);
  }
  state_->disk->lookahead->announce(batch, ids);
  if (state_->disk->read_ahead) state_->disk->read_ahead->request(batch, ids);
}

void FeatureStore::begin_batch(int64_t batch) const {
  if (!wants_lookahead()) return;
  if (state_->disk->read_ahead) state_->disk->read_ahead->settle(batch);
  state_->disk->lookahead->begin(batch);
}

std::string disk_io_support() {
  const std::string refusal = fi::io_uring_refusal();
  return refusal.empty() ? std::string("io_uring") : "pread (" + refusal + ")";
}

std::string FeatureStore::describe() const {
  if (!state_) return "FeatureStore(undefined)";
  std::string text = fmt::format("{}[{}", dtype_name(state_->dtype), state_->num_rows);
  if (state_->ndim == 2) text += fmt::format(", {}", state_->width);
  text +=
      fmt::format("] in {} tier{}:", state_->tiers.size(), state_->tiers.size() == 1 ? "" : "s");
  for (size_t t = 0; t < state_->tiers.size(); ++t) {
    const Tier& tier = state_->tiers[t];
    const bool on_disk = state_->disk && t + 1 == state_->tiers.size();
    const std::string where = on_disk ? std::string("disk")
                              : state_->views.size() > 1 && tier.location() == Location::kCuda
                                  ? fmt::format("cuda:{}", tier.rows().buffer().device())
                                  : std::string(location_name(tier.location()));
    text += fmt::format("{} {} ({} rows, {:.1f} MB)", t == 0 ? "" : ",", where, tier.num_slots(),
                        static_cast<double>(tier.nbytes()) / 1e6);
  }
  if (state_->disk) {
    text += fmt::format("; disk reads: {}", state_->disk->reader->describe());
    if (state_->disk->cache) {
      text += fmt::format("; SIEVE row cache of {} rows", state_->disk->cache->capacity());
    }
  }
  return text;
}

void FeatureStore::gather(const Array& ids, const Array& out, const GatherOptions& options) const {
  VOLLEY_REQUIRE(state_ != nullptr, ValueError, "gather from an undefined feature store");
  const State& state = *state_;
  VOLLEY_REQUIRE(ids.defined() && ids.ndim() == 1 && ids.dtype() == DType::kInt64, ValueError,
                 "ids must be a 1-d int64 array, got {}",
                 ids.defined() ? ids.describe() : std::string("an undefined array"));
  const int64_t n = ids.numel();
  VOLLEY_REQUIRE(out.defined() && out.ndim() >= 1 && out.dim(0) == n &&
                     out.numel() == n * state.width && out.buffer().writable(),
                 ValueError, "out must be a writable array of {} rows × {} elements, got {}", n,
                 state.width, out.defined() ? out.describe() : std::string("an undefined array"));
  if (state.on_cuda()) {
    fi::gather_on_gpu(state, ids, out, options);
    return;
  }
  VOLLEY_REQUIRE(!options.out_dtype || *options.out_dtype == out.dtype(), ValueError,
                 "out_dtype {} differs from the dtype of out, {}",
                 dtype_name(options.out_dtype.value_or(out.dtype())), out.describe());
  VOLLEY_REQUIRE(ids.buffer().host_accessible() && out.buffer().host_accessible(), ValueError,
                 "a feature store in host memory gathers host ids into host memory; got ids in {} "
                 "and out in {} memory",
                 location_name(ids.buffer().location()), location_name(out.buffer().location()));
  GatherOptions host = options;
  host.out_dtype = out.dtype();
  gather(ids.span<int64_t>(), out.raw_data(), host);
}

void FeatureStore::gather(std::span<const int64_t> ids, std::byte* out,
                          const GatherOptions& options) const {
  VOLLEY_REQUIRE(state_ != nullptr, ValueError, "gather from an undefined feature store");
  const State& state = *state_;
  const DType out_dtype = options.out_dtype.value_or(state.dtype);
  if (state.on_cuda()) {  // host memory in and out, through the device
    const auto n = static_cast<int64_t>(ids.size());
    std::vector<int64_t> shape = {n};
    if (state.ndim == 2) shape.push_back(state.width);
    const size_t out_bytes = static_cast<size_t>(n) * state.row_bytes;
    const Array id_array(Buffer::borrow(const_cast<int64_t*>(ids.data()), ids.size_bytes(), {},
                                        /*writable=*/false, Location::kHost),
                         DType::kInt64, {n});
    const Array out_array(Buffer::borrow(out, out_bytes, {}, true, Location::kHost), out_dtype,
                          shape);
    fi::gather_on_gpu(state, id_array, out_array, options);
    return;
  }
  VOLLEY_REQUIRE(gather_supports(state.dtype, out_dtype), ValueError, "cannot gather {} rows as {}",
                 dtype_name(state.dtype), dtype_name(out_dtype));
  VOLLEY_REQUIRE(options.threads >= 0, ValueError, "threads must be >= 0, got {}", options.threads);
  const size_t out_row_bytes = static_cast<size_t>(state.width) * dtype_size(out_dtype);
  const size_t out_bytes = ids.size() * out_row_bytes;
  if (ids.empty()) return;
  const fi::StoreMode mode = !options.streaming_stores   ? fi::StoreMode::kAuto
                             : *options.streaming_stores ? fi::StoreMode::kStreaming
                                                         : fi::StoreMode::kCached;
  const auto rows = static_cast<uint64_t>(state.num_rows);
  // Checks a part of the ids; returns the position of its first bad id or -1.
  auto first_bad = [&](size_t begin, size_t end) -> int64_t {
    for (size_t i = begin; i < end; ++i) {
      if (static_cast<uint64_t>(ids[i]) >= rows) return static_cast<int64_t>(i);
    }
    return -1;
  };
  auto fail = [&](int64_t position) {
    throw IndexError(
        fmt::format("row id {} at position {} out of range for a feature store with {} rows",
                    ids[static_cast<size_t>(position)], position, state.num_rows));
  };
  const int64_t count = static_cast<int64_t>(ids.size());
  // Chunks of about 1 MiB of output: big enough to amortise scheduling, small enough to balance.
  const int64_t grain =
      std::max<int64_t>(256, (int64_t{1} << 20) / std::max<int64_t>(1, out_row_bytes));
  auto run = [&](std::span<const int64_t> part, std::byte* into) {
    if (state.disk) {
      fi::gather_with_disk(state, part, out_dtype, into);
    } else if (state.mapped_file.empty()) {
      fi::gather_kernel(state.map, part, out_dtype, into, mode, out_bytes);
    } else if (!internal::guard_bus_errors(
                   [&] { fi::gather_kernel(state.map, part, out_dtype, into, mode, out_bytes); })) {
      throw IoError(
          fmt::format("'{}' changed on disk since it was opened: a mapped row is no "
                      "longer in the file (truncated or rewritten in place); reopen it",
                      state.mapped_file));
    }
  };
  if (options.threads == 1 || count <= grain || get_num_threads() == 1) {
    if (const int64_t bad = first_bad(0, ids.size()); bad >= 0) fail(bad);
    run(ids, out);
    return;
  }
  std::atomic<int64_t> bad_position{std::numeric_limits<int64_t>::max()};
  parallel_for(0, count, grain, [&](int64_t begin, int64_t end) {
    const int64_t bad = first_bad(static_cast<size_t>(begin), static_cast<size_t>(end));
    if (bad >= 0) {
      int64_t seen = bad_position.load();
      while (bad < seen && !bad_position.compare_exchange_weak(seen, bad)) {
      }
      return;
    }
    run(ids.subspan(static_cast<size_t>(begin), static_cast<size_t>(end - begin)),
        out + static_cast<size_t>(begin) * out_row_bytes);
  });
  if (bad_position.load() != std::numeric_limits<int64_t>::max()) fail(bad_position.load());
}

Array FeatureStore::gather(std::span<const int64_t> ids, const GatherOptions& options) const {
  VOLLEY_REQUIRE(state_ != nullptr, ValueError, "gather from an undefined feature store");
  const DType out_dtype = options.out_dtype.value_or(state_->dtype);
  const auto count = static_cast<int64_t>(ids.size());
  const size_t bytes = static_cast<size_t>(count * state_->width) * dtype_size(out_dtype);
  Array out(allocate_gather_buffer(bytes), out_dtype, tier_shape(*state_, count));
  gather(ids, out.raw_data(), options);
  return out;
}

}  // namespace volley
