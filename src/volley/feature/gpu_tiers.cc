// The GPU tiers of FeatureStore (every build): a device cache of the hottest rows and pinned host
// memory for the rest, placed here and gathered by the kernel behind
// internal/cuda_gather_kernel.h (cuda/gather_kernel.cu; cuda_gather_stub.cc throws without CUDA).
#include <algorithm>
#include <cstring>
#include <vector>

#include "volley/core/cuda_device.h"
#include "volley/core/error.h"
#include "volley/feature/gather.h"
#include "volley/feature/internal/store_state.h"

namespace volley {

feature_internal::DeviceGatherPlan FeatureStore::State::plan() const {
  feature_internal::DeviceGatherPlan plan;
  plan.device_rows = tiers[0].rows().raw_data();
  plan.pinned_rows = tiers[1].rows().raw_data();
  plan.lookup = device_lookup.empty() ? nullptr : device_lookup.data();
  plan.lookup_is_32bit = device_lookup_is_32bit;
  plan.hot_rows = hot_rows;
  plan.num_rows = num_rows;
  plan.row_bytes = row_bytes;
  plan.device = device;
  return plan;
}

namespace feature_internal {
namespace {

[[noreturn]] void no_cuda_support() {
  throw RuntimeError(
      "GPU feature tiers: this build of Volley has no CUDA support (built with VOLLEY_CUDA=OFF "
      "or without nvcc); use host tiers and gather on the CPU, or rebuild with CUDA");
}

bool is_gpu_location(Location location) {
  return location == Location::kCuda || location == Location::kPinnedHost;
}

// The device budget of the tier specs ({kCuda}, {kCuda, kPinnedHost} or {kPinnedHost}) and
// their device; ValueError for any other list.
std::pair<size_t, int> device_budget(const FeatureStoreOptions& options) {
  const auto& tiers = options.tiers;
  const bool cuda_first = tiers[0].location == Location::kCuda;
  const bool valid =
      (tiers.size() == 1 && is_gpu_location(tiers[0].location)) ||
      (tiers.size() == 2 && cuda_first && tiers[1].location == Location::kPinnedHost);
  if (!valid) {
    std::string listed;
    for (const TierSpec& spec : tiers) {
      listed += fmt::format("{}{}", listed.empty() ? "" : ", ", location_name(spec.location));
    }
    throw ValueError(fmt::format(
        "GPU tiers are [cuda], [cuda, pinned_host] or [pinned_host], and do not mix with host "
        "tiers; got [{}]",
        listed));
  }
  const int device = tiers[0].device;
  VOLLEY_REQUIRE(device >= 0, ValueError, "CUDA device must be >= 0, got {}", device);
  VOLLEY_REQUIRE(tiers.size() == 1 || tiers[1].device == device, ValueError,
                 "the pinned tier is read by cuda:{}, the device tier lives on cuda:{}; use one "
                 "device",
                 tiers[1].device, device);
  return {cuda_first ? tiers[0].byte_budget : 0, device};
}

// Copies rows `ids` of `matrix` to `destination`: one memcpy when they are a contiguous range.
void fill_rows(const Array& matrix, std::span<const int64_t> ids, bool in_id_order,
               size_t row_bytes, std::byte* destination) {
  if (ids.empty()) return;
  if (in_id_order) {
    std::memcpy(destination, matrix.raw_data() + static_cast<size_t>(ids.front()) * row_bytes,
                ids.size() * row_bytes);
  } else {
    gather_rows_parallel(matrix, ids, matrix.dtype(), destination);
  }
}

// Uploads the lookup (slot s >= 0 in the device tier, ~s in the pinned tier) of `order`.
void build_device_lookup(const std::vector<int64_t>& order, FeatureStore::State& state) {
  const int64_t n = state.num_rows;
  state.device_lookup_is_32bit = n < (int64_t{1} << 31);
  state.host_lookup.resize(static_cast<size_t>(n));
  for (int64_t slot = 0; slot < n; ++slot) {
    const int64_t id = order[static_cast<size_t>(slot)];
    state.host_lookup[static_cast<size_t>(id)] =
        slot < state.hot_rows ? slot : ~(slot - state.hot_rows);
  }
  const size_t entry_bytes = state.device_lookup_is_32bit ? 4 : 8;
  Buffer staging =
      Buffer::allocate_pinned(std::max<size_t>(static_cast<size_t>(n) * entry_bytes, 1));
  if (state.device_lookup_is_32bit) {
    auto* entries = reinterpret_cast<int32_t*>(staging.data());
    for (int64_t id = 0; id < n; ++id)
      entries[id] = static_cast<int32_t>(state.host_lookup[static_cast<size_t>(id)]);
  } else {
    std::memcpy(staging.data(), state.host_lookup.data(), static_cast<size_t>(n) * 8);
  }
  state.device_lookup = Buffer::allocate_device(staging.size(), state.device);
  cuda_copy(state.device_lookup.data(), staging.data(), staging.size(), nullptr);
  cuda_synchronize(nullptr);
}

std::vector<int64_t> tier_shape(const FeatureStore::State& state, int64_t rows) {
  if (state.ndim == 1) return {rows};
  return {rows, state.width};
}

}  // namespace

bool wants_gpu_tiers(const FeatureStoreOptions& options) {
  return std::any_of(options.tiers.begin(), options.tiers.end(),
                     [](const TierSpec& spec) { return is_gpu_location(spec.location); });
}

void build_gpu_tiers(const Array& matrix, const FeatureStoreOptions& options,
                     FeatureStore::State& state) {
  const auto [budget, device] = device_budget(options);
  VOLLEY_REQUIRE(state.row_bytes > 0, ValueError,
                 "GPU feature tiers need rows of at least one element, got {}", matrix.describe());
  const int64_t n = state.num_rows;
  std::vector<int64_t> order = placement_order(options.hot_order, n);  // checks the hot order
  if (!cuda_built()) no_cuda_support();
  const int count = cuda_device_count();
  VOLLEY_REQUIRE(device < count, RuntimeError,
                 "CUDA device {} requested, but {} CUDA device(s) are visible", device, count);
  const bool in_id_order = order.empty();
  if (in_id_order) {
    order.resize(static_cast<size_t>(n));
    for (int64_t id = 0; id < n; ++id) order[static_cast<size_t>(id)] = id;
  }
  state.device = device;
  // In unsigned arithmetic: an "everything" budget (~0) over 1-byte rows is past int64's range.
  state.hot_rows =
      static_cast<int64_t>(std::min<uint64_t>(static_cast<uint64_t>(n), budget / state.row_bytes));
  const int64_t cold_rows = n - state.hot_rows;
  const size_t hot_bytes = static_cast<size_t>(state.hot_rows) * state.row_bytes;
  const size_t cold_bytes = static_cast<size_t>(cold_rows) * state.row_bytes;
  const std::span<const int64_t> hot_ids(order.data(), static_cast<size_t>(state.hot_rows));
  const std::span<const int64_t> cold_ids(order.data() + state.hot_rows,
                                          static_cast<size_t>(cold_rows));
  // Both tiers are filled through pinned memory: the cold tier is its final home, the hot one
  // a staging copy uploaded to the device.
  Buffer pinned = Buffer::allocate_pinned(std::max<size_t>(cold_bytes, 1));
  fill_rows(matrix, cold_ids, in_id_order, state.row_bytes, pinned.data());
  Buffer on_device = Buffer::allocate_device(std::max<size_t>(hot_bytes, 1), device);
  if (hot_bytes > 0) {
    Buffer staging = Buffer::allocate_pinned(hot_bytes);
    fill_rows(matrix, hot_ids, in_id_order, state.row_bytes, staging.data());
    cuda_copy(on_device.data(), staging.data(), hot_bytes, nullptr);
    cuda_synchronize(nullptr);
  }
  state.tiers.emplace_back(Array(on_device, state.dtype, tier_shape(state, state.hot_rows)));
  state.tiers.emplace_back(Array(pinned, state.dtype, tier_shape(state, cold_rows)));
  if (!in_id_order) build_device_lookup(order, state);
}

RowLocation locate_on_gpu(const FeatureStore::State& state, int64_t id) {
  if (state.host_lookup.empty()) {
    return id < state.hot_rows ? RowLocation{0, id} : RowLocation{1, id - state.hot_rows};
  }
  const int64_t entry = state.host_lookup[static_cast<size_t>(id)];
  return entry >= 0 ? RowLocation{0, entry} : RowLocation{1, ~entry};
}

namespace {

// Whether the kernel on `device` can read / write `buffer` in place.
bool device_reachable(const Buffer& buffer, int device) {
  return (buffer.location() == Location::kCuda && buffer.device() == device) ||
         buffer.location() == Location::kPinnedHost;
}

// The gather kernel on the CUDA executor, or on the host executor when the host-executor device
// stands in for CUDA (cuda_emulated(): every pointer is host memory).
int64_t run_gather(const FeatureStore::State& state, const int64_t* ids, int64_t n, void* out,
                   void* stream, bool check) {
#if defined(VOLLEY_WITH_GPU_HOST)
  if (cuda_emulated()) return launch_host_gather(state.plan(), ids, n, out, check);
#endif
  return launch_device_gather(state.plan(), ids, n, out, stream, check);
}

[[noreturn]] void throw_bad_id(int64_t id, int64_t position, int64_t num_rows) {
  throw IndexError(
      fmt::format("row id {} at position {} out of range for a feature store with {} rows", id,
                  position, num_rows));
}

}  // namespace

void gather_on_gpu(const FeatureStore::State& state, const Array& ids, const Array& out,
                   const GatherOptions& options) {
  VOLLEY_REQUIRE(!options.out_dtype || *options.out_dtype == state.dtype, ValueError,
                 "a GPU feature store gathers its stored dtype ({}), not {}",
                 dtype_name(state.dtype), dtype_name(*options.out_dtype));
  VOLLEY_REQUIRE(out.dtype() == state.dtype, ValueError,
                 "out must have the stored dtype {} of a GPU feature store, got {}",
                 dtype_name(state.dtype), out.describe());
  const int64_t n = ids.numel();
  const bool ids_on_device = device_reachable(ids.buffer(), state.device);
  VOLLEY_REQUIRE(ids_on_device || ids.buffer().host_accessible(), ValueError,
                 "ids live on cuda:{}, the feature store on cuda:{}", ids.buffer().device(),
                 state.device);
  VOLLEY_REQUIRE(device_reachable(out.buffer(), state.device) || out.buffer().host_accessible(),
                 ValueError, "out lives on cuda:{}, the feature store on cuda:{}",
                 out.buffer().device(), state.device);
  if (n == 0) return;
  const int64_t* id_pointer = ids.data<int64_t>();
  Buffer staged_ids, staged_out;
  if (!ids_on_device) {  // checked here, then uploaded
    for (int64_t i = 0; i < n; ++i) {
      if (id_pointer[i] < 0 || id_pointer[i] >= state.num_rows)
        throw_bad_id(id_pointer[i], i, state.num_rows);
    }
    staged_ids = Buffer::allocate_device(ids.nbytes(), state.device);
    cuda_copy(staged_ids.data(), id_pointer, ids.nbytes(), options.stream);
    id_pointer = reinterpret_cast<const int64_t*>(staged_ids.data());
  }
  std::byte* out_pointer = out.raw_data();
  if (!device_reachable(out.buffer(), state.device)) {
    staged_out = Buffer::allocate_device(out.nbytes(), state.device);
    out_pointer = staged_out.data();
  }
  const bool check = options.check_ids && ids_on_device;
  const int64_t bad = run_gather(state, id_pointer, n, out_pointer, options.stream, check);
  if (bad >= 0) {
    int64_t id = 0;
    cuda_copy(&id, id_pointer + bad, sizeof id, options.stream);
    cuda_synchronize(options.stream);
    throw_bad_id(id, bad, state.num_rows);
  }
  if (!staged_out.empty()) cuda_copy(out.raw_data(), out_pointer, out.nbytes(), options.stream);
  // Staging buffers are freed on return: wait until the stream is done with them.
  if (!staged_ids.empty() || !staged_out.empty()) cuda_synchronize(options.stream);
}

}  // namespace feature_internal
}  // namespace volley
