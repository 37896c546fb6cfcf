// The GPU tiers of FeatureStore (every build): a device cache of the hottest rows, sharded over
// the peer-access cliques of its devices (one device: one shard), and pinned host memory for
// the rest, placed here and gathered by the kernel behind internal/cuda_gather_kernel.h
// (cuda/gather_kernel.cu; cuda_gather_stub.cc throws without CUDA).
#include <algorithm>
#include <cstring>
#include <span>
#include <vector>

#include "volley/core/cuda_device.h"
#include "volley/core/error.h"
#include "volley/core/internal/emulated_device.h"
#include "volley/core/ipc.h"
#include "volley/feature/gather.h"
#include "volley/feature/internal/disk_tier.h"
#include "volley/feature/internal/store_state.h"

namespace volley {

const FeatureStore::State::DeviceView* FeatureStore::State::view_of(int cuda_device) const {
  for (const DeviceView& view : views) {
    if (view.device == cuda_device) return &view;
  }
  return nullptr;
}

feature_internal::DeviceGatherPlan FeatureStore::State::plan(int cuda_device) const {
  const DeviceView* view = view_of(cuda_device);
  VOLLEY_ASSERT(view != nullptr);
  feature_internal::DeviceGatherPlan plan;
  plan.shard_rows = reinterpret_cast<const std::byte* const*>(view->shard_table.data());
  plan.shards = static_cast<int>(cliques[static_cast<size_t>(view->clique)].size());
  plan.shard_address_bits = view->shard_address_bits;
  plan.pinned_rows = tiers.back().rows().raw_data();
  plan.pinned_first = pinned_first;
  plan.lookup = view->lookup.empty() ? nullptr : view->lookup.data();
  plan.lookup_is_32bit = device_lookup_is_32bit;
  plan.hot_rows = view->hot_rows;
  plan.num_rows = num_rows;
  plan.row_bytes = row_bytes;
  plan.device = cuda_device;
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

// What the GPU tier specs ask for: each device's cache budget and the devices.
struct DeviceTiers {
  size_t budget = 0;
  std::vector<int> devices;
};

std::string device_list(const std::vector<int>& devices) {
  return fmt::format("[{}]", fmt::join(devices, ", "));
}

std::string device_list(const FeatureStore::State& state) {
  std::vector<int> devices;
  for (const FeatureStore::State::DeviceView& view : state.views) devices.push_back(view.device);
  return device_list(devices);
}

// The tier specs ({kCuda}, {kCuda, kPinnedHost} or {kPinnedHost}) checked; ValueError for any
// other list, a negative or repeated device, or a pinned tier read by a device without a shard.
DeviceTiers device_tiers(const FeatureStoreOptions& options) {
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
  DeviceTiers result{cuda_first ? tiers[0].byte_budget : 0, tiers[0].devices};
  if (result.devices.empty()) result.devices = {tiers[0].device};
  for (size_t i = 0; i < result.devices.size(); ++i) {
    const int device = result.devices[i];
    VOLLEY_REQUIRE(device >= 0, ValueError, "CUDA device must be >= 0, got {}", device);
    const auto earlier = result.devices.begin() + static_cast<std::ptrdiff_t>(i);
    VOLLEY_REQUIRE(std::find(result.devices.begin(), earlier, device) == earlier, ValueError,
                   "CUDA device {} is listed twice in devices {}", device,
                   device_list(result.devices));
  }
  if (tiers.size() == 2) {
    const int reader = tiers[1].device;
    const bool listed =
        std::find(result.devices.begin(), result.devices.end(), reader) != result.devices.end();
    VOLLEY_REQUIRE(listed, ValueError,
                   "the pinned tier is read by cuda:{}, the device tier lives on {}; use one "
                   "device of the device tier",
                   reader, device_list(result.devices));
  }
  return result;
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

std::vector<int64_t> tier_shape(const FeatureStore::State& state, int64_t rows) {
  if (state.ndim == 1) return {rows};
  return {rows, state.width};
}

// Copies `bytes` of pinned `staging` to a new allocation on `device`.
Buffer upload(const Buffer& staging, size_t bytes, int device) {
  Buffer on_device = Buffer::allocate_device(std::max<size_t>(bytes, 1), device);
  if (bytes > 0) {
    cuda_copy(on_device.data(), staging.data(), bytes, nullptr);
    cuda_synchronize(nullptr);
  }
  return on_device;
}

// The clique member `member` of `size`'s shard: slots member, member + size, ... below
// `hot_rows`, in the order of placement `order` (size 1: a prefix of it, not copied; in id
// order that is a contiguous range, one memcpy).
Array fill_shard(const Array& matrix, const std::vector<int64_t>& order, bool in_id_order,
                 int64_t member, int64_t size, int64_t hot_rows, int device,
                 const FeatureStore::State& state) {
  std::vector<int64_t> strided;
  std::span<const int64_t> ids(order.data(), static_cast<size_t>(hot_rows));
  if (size > 1) {
    for (int64_t slot = member; slot < hot_rows; slot += size) {
      strided.push_back(order[static_cast<size_t>(slot)]);
    }
    ids = strided;
  }
  const size_t bytes = ids.size() * state.row_bytes;
  Buffer staging = Buffer::allocate_pinned(std::max<size_t>(bytes, 1));
  if (state.disk) {  // a file past its share of RAM: sorted, coalesced reads
    read_disk_rows(state, ids, staging.data());
  } else {
    fill_rows(matrix, ids, in_id_order && size == 1, state.row_bytes, staging.data());
  }
  return Array(upload(staging, bytes, device), state.dtype,
               tier_shape(state, static_cast<int64_t>(ids.size())));
}

// The cliques of `devices`, a view and a shard tier per device (tiers in `devices` order), and
// peer access within each clique. `per_device`: rows one device caches.
void place_shards(const Array& matrix, const std::vector<int64_t>& order, bool in_id_order,
                  int64_t per_device, const std::vector<int>& devices, FeatureStore::State& state) {
  const int64_t n = state.num_rows;
  state.views.resize(devices.size());
  for (size_t v = 0; v < devices.size(); ++v) state.views[v].device = devices[v];
  state.pinned_first = n;
  for (const std::vector<int>& members : cuda_peer_cliques(devices)) {
    std::vector<int>& clique = state.cliques.emplace_back();
    const auto size = static_cast<int64_t>(members.size());
    const int64_t hot_rows = per_device >= (n + size - 1) / size ? n : per_device * size;
    state.pinned_first = std::min(state.pinned_first, hot_rows);
    for (const int device : members) {
      const auto view =
          static_cast<int>(std::find(devices.begin(), devices.end(), device) - devices.begin());
      clique.push_back(view);
      state.views[static_cast<size_t>(view)].clique = static_cast<int>(state.cliques.size() - 1);
      state.views[static_cast<size_t>(view)].hot_rows = hot_rows;
      for (const int peer : members) cuda_enable_peer_access(device, peer);
    }
  }
  std::vector<Array> shards(devices.size());
  for (const std::vector<int>& clique : state.cliques) {
    const auto size = static_cast<int64_t>(clique.size());
    for (int64_t member = 0; member < size; ++member) {
      const auto view = static_cast<size_t>(clique[static_cast<size_t>(member)]);
      shards[view] = fill_shard(matrix, order, in_id_order, member, size,
                                state.views[view].hot_rows, devices[view], state);
    }
  }
  for (Array& shard : shards) state.tiers.emplace_back(std::move(shard));
}

// Each view's shard table: its clique's shard pointers, on its device (pointers of this
// process: rebuilt wherever the shards are opened).
void upload_shard_tables(FeatureStore::State& state) {
  for (FeatureStore::State::DeviceView& view : state.views) {
    const std::vector<int>& clique = state.cliques[static_cast<size_t>(view.clique)];
    Buffer table = Buffer::allocate_pinned(clique.size() * sizeof(const std::byte*));
    auto* pointers = reinterpret_cast<const std::byte**>(table.data());
    view.shard_address_bits = 0;
    for (size_t member = 0; member < clique.size(); ++member) {
      pointers[member] = state.tiers[static_cast<size_t>(clique[member])].rows().raw_data();
      view.shard_address_bits |= reinterpret_cast<uintptr_t>(pointers[member]);
    }
    view.shard_table = upload(table, table.size(), view.device);
  }
}

// With a hot order, the placement slot of every row: on the host (locate()) and a copy on each
// view's device.
void upload_lookups(const std::vector<int64_t>& order, bool in_id_order,
                    FeatureStore::State& state) {
  if (in_id_order) return;
  const int64_t n = state.num_rows;
  state.host_lookup.resize(static_cast<size_t>(n));
  for (int64_t slot = 0; slot < n; ++slot)
    state.host_lookup[static_cast<size_t>(order[static_cast<size_t>(slot)])] = slot;
  state.device_lookup_is_32bit = n < (int64_t{1} << 31);
  const size_t lookup_bytes = static_cast<size_t>(n) * (state.device_lookup_is_32bit ? 4 : 8);
  Buffer staging = Buffer::allocate_pinned(std::max<size_t>(lookup_bytes, 1));
  if (state.device_lookup_is_32bit) {
    auto* entries = reinterpret_cast<int32_t*>(staging.data());
    for (int64_t id = 0; id < n; ++id)
      entries[id] = static_cast<int32_t>(state.host_lookup[static_cast<size_t>(id)]);
  } else {
    std::memcpy(staging.data(), state.host_lookup.data(), lookup_bytes);
  }
  for (FeatureStore::State::DeviceView& view : state.views)
    view.lookup = upload(staging, lookup_bytes, view.device);
}

}  // namespace

bool wants_gpu_tiers(const FeatureStoreOptions& options) {
  return std::any_of(options.tiers.begin(), options.tiers.end(),
                     [](const TierSpec& spec) { return is_gpu_location(spec.location); });
}

void build_gpu_tiers(const Array& matrix, const FeatureStoreOptions& options,
                     FeatureStore::State& state) {
  const DeviceTiers spec = device_tiers(options);
  VOLLEY_REQUIRE(state.row_bytes > 0, ValueError,
                 "GPU feature tiers need rows of at least one element, got {}", matrix.describe());
  const bool on_disk = wants_gpu_disk(matrix, options);
  const int64_t n = state.num_rows;
  std::vector<int64_t> order = placement_order(options.hot_order, n);  // checks the hot order
  if (!cuda_built()) no_cuda_support();
  const int count = cuda_device_count();
  for (const int device : spec.devices) {
    VOLLEY_REQUIRE(device < count, RuntimeError,
                   "CUDA device {} requested, but {} CUDA device(s) are visible", device, count);
  }
  const bool in_id_order = order.empty();
  if (in_id_order) {
    order.resize(static_cast<size_t>(n));
    for (int64_t id = 0; id < n; ++id) order[static_cast<size_t>(id)] = id;
  }
  state.device = spec.devices.front();
  // In unsigned arithmetic: an "everything" budget (~0) over 1-byte rows is past int64's range.
  const auto per_device = static_cast<int64_t>(
      std::min<uint64_t>(static_cast<uint64_t>(n), spec.budget / state.row_bytes));
  if (on_disk && per_device < n)
    state.disk = open_disk_tier(matrix, options, cache_budget(options));
  place_shards(matrix, order, in_id_order, per_device, spec.devices, state);
  if (state.disk && state.pinned_first < n) {
    state.tiers.emplace_back(matrix);  // the cold rows stay in the file, read per gather
  } else {
    state.disk.reset();  // every clique caches every row: the disk is never read
    // The pinned tier: every slot some clique does not cache, filled in its final home.
    const int64_t cold_rows = n - state.pinned_first;
    const std::span<const int64_t> cold_ids(order.data() + state.pinned_first,
                                            static_cast<size_t>(cold_rows));
    Buffer pinned = Buffer::allocate_pinned(
        std::max<size_t>(static_cast<size_t>(cold_rows) * state.row_bytes, 1));
    fill_rows(matrix, cold_ids, in_id_order, state.row_bytes, pinned.data());
    state.tiers.emplace_back(Array(pinned, state.dtype, tier_shape(state, cold_rows)));
  }
  upload_shard_tables(state);
  upload_lookups(order, in_id_order, state);
}

}  // namespace feature_internal

namespace fi = feature_internal;

FeatureStore::GpuParts FeatureStore::gpu_parts() const {
  VOLLEY_REQUIRE(defined() && state_->on_cuda(), ValueError,
                 "gpu_parts: this feature store has no GPU tiers");
  VOLLEY_REQUIRE(!state_->disk, ValueError,
                 "gpu_parts: this GPU feature store reads its cold rows from the disk ('{}'), "
                 "not from pinned memory another process can open; open the file in each "
                 "process (FeatureStore::from_npy with the same options)",
                 state_->disk->reader->path());
  GpuParts parts;
  for (size_t v = 0; v < state_->views.size(); ++v) {
    const State::DeviceView& view = state_->views[v];
    parts.devices.push_back(view.device);
    parts.shards.push_back(state_->tiers[v].rows());
    parts.lookups.push_back(
        view.lookup.empty()
            ? std::nullopt
            : std::optional<Array>(
                  Array(view.lookup, state_->device_lookup_is_32bit ? DType::kInt32 : DType::kInt64,
                        {state_->num_rows})));
  }
  parts.pinned = state_->tiers.back().rows();
  parts.cliques = state_->cliques;
  for (const std::vector<int>& clique : state_->cliques)
    parts.hot_rows.push_back(state_->views[static_cast<size_t>(clique.front())].hot_rows);
  return parts;
}

namespace {

// The layout of `parts` checked; ValueError naming what disagrees.
void check_gpu_parts(const FeatureStore::GpuParts& parts) {
  const size_t views = parts.devices.size();
  VOLLEY_REQUIRE(views > 0 && parts.shards.size() == views && parts.lookups.size() == views &&
                     !parts.cliques.empty() && parts.cliques.size() == parts.hot_rows.size(),
                 ValueError,
                 "GPU feature parts: {} devices, {} shards, {} lookups, {} cliques with {} hot "
                 "row counts (one shard and lookup per device, one count per clique)",
                 views, parts.shards.size(), parts.lookups.size(), parts.cliques.size(),
                 parts.hot_rows.size());
  const Array& pinned = parts.pinned;
  VOLLEY_REQUIRE(pinned.defined() && pinned.buffer().location() == Location::kPinnedHost,
                 ValueError, "GPU feature parts: the cold rows must be in pinned memory, got {}",
                 pinned.defined() ? pinned.describe() : std::string("none"));
  for (size_t v = 0; v < views; ++v) {
    const Array& shard = parts.shards[v];
    VOLLEY_REQUIRE(shard.defined() && shard.buffer().location() == Location::kCuda &&
                       shard.buffer().device() == parts.devices[v] &&
                       shard.dtype() == pinned.dtype() && shard.ndim() == pinned.ndim() &&
                       (shard.ndim() == 1 || shard.dim(1) == pinned.dim(1)),
                   ValueError,
                   "GPU feature parts: the shard of cuda:{} must be device memory there, of the "
                   "pinned rows' dtype and width ({}), got {}",
                   parts.devices[v], pinned.describe(),
                   shard.defined() ? shard.describe() : std::string("none"));
  }
  std::vector<int> seen(views, 0);
  for (const std::vector<int>& clique : parts.cliques) {
    VOLLEY_REQUIRE(!clique.empty(), ValueError, "GPU feature parts: an empty clique");
    for (const int member : clique) {
      VOLLEY_REQUIRE(member >= 0 && static_cast<size_t>(member) < views &&
                         seen[static_cast<size_t>(member)]++ == 0,
                     ValueError,
                     "GPU feature parts: clique member {} is not a device index of [0, {}) or "
                     "is in two cliques",
                     member, views);
    }
  }
}

}  // namespace

FeatureStore FeatureStore::from_gpu_parts(GpuParts parts) {
  check_gpu_parts(parts);
  const Array& pinned = parts.pinned;
  auto state = std::make_shared<State>();
  state->ndim = pinned.ndim();
  state->width = pinned.ndim() == 2 ? pinned.dim(1) : 1;
  state->dtype = pinned.dtype();
  state->row_bytes = static_cast<size_t>(state->width) * dtype_size(state->dtype);
  // The pinned rows start where the clique that caches the fewest slots stops (place_shards).
  state->pinned_first = *std::min_element(parts.hot_rows.begin(), parts.hot_rows.end());
  state->num_rows = state->pinned_first + pinned.dim(0);
  state->device = parts.devices.front();
  state->cliques = parts.cliques;
  state->views.resize(parts.devices.size());
  for (size_t c = 0; c < parts.cliques.size(); ++c) {
    for (const int member : parts.cliques[c]) {
      State::DeviceView& view = state->views[static_cast<size_t>(member)];
      view.device = parts.devices[static_cast<size_t>(member)];
      view.clique = static_cast<int>(c);
      view.hot_rows = parts.hot_rows[c];
      for (const int peer : parts.cliques[c])
        cuda_enable_peer_access(view.device, parts.devices[static_cast<size_t>(peer)]);
    }
  }
  for (Array& shard : parts.shards) state->tiers.emplace_back(std::move(shard));
  state->tiers.emplace_back(pinned);
  fi::upload_shard_tables(*state);
  for (size_t v = 0; v < parts.lookups.size(); ++v) {
    const std::optional<Array>& lookup = parts.lookups[v];
    if (!lookup) continue;
    VOLLEY_REQUIRE(
        lookup->numel() == state->num_rows && lookup->buffer().location() == Location::kCuda,
        ValueError,
        "GPU feature parts: the lookup of cuda:{} must hold {} slots on "
        "the device, got {}",
        parts.devices[v], state->num_rows, lookup->describe());
    state->views[v].lookup = lookup->buffer();
    state->device_lookup_is_32bit = lookup->dtype() == DType::kInt32;
  }
  if (parts.lookups.front()) {  // the host copy, for locate()
    const Array& lookup = *parts.lookups.front();
    state->host_lookup.resize(static_cast<size_t>(state->num_rows));
    std::vector<int32_t> narrow(state->device_lookup_is_32bit ? state->host_lookup.size() : 0);
    void* target = state->device_lookup_is_32bit ? static_cast<void*>(narrow.data())
                                                 : static_cast<void*>(state->host_lookup.data());
    cuda_copy(target, lookup.raw_data(), lookup.nbytes(), nullptr);
    cuda_synchronize(nullptr);
    if (state->device_lookup_is_32bit)
      std::copy(narrow.begin(), narrow.end(), state->host_lookup.begin());
  }
  FeatureStore store;
  store.state_ = std::move(state);
  return store;
}

bool FeatureStore::shareable() const {
  if (!defined() || !state_->on_cuda() || state_->disk) return false;
  bool shared = true;
  for (const Tier& tier : state_->tiers) shared = shared && ipc_shareable(tier.rows().buffer());
  for (const State::DeviceView& view : state_->views)
    shared = shared && (view.lookup.empty() || ipc_shareable(view.lookup));
  return shared;
}

FeatureStore FeatureStore::to_shareable() const {
  if (shareable()) return *this;
  GpuParts parts = gpu_parts();
  for (Array& shard : parts.shards) shard = shareable_array(shard);
  for (std::optional<Array>& lookup : parts.lookups) {
    if (lookup) lookup = shareable_array(*lookup);
  }
  parts.pinned = shareable_array(parts.pinned);
  return from_gpu_parts(std::move(parts));
}

namespace feature_internal {

RowLocation locate_on_gpu(const FeatureStore::State& state, int64_t id, int device) {
  const FeatureStore::State::DeviceView* view = state.view_of(device < 0 ? state.device : device);
  VOLLEY_REQUIRE(view != nullptr, ValueError,
                 "cuda:{} holds no shard of this feature store (devices {})", device,
                 device_list(state));
  const int64_t slot = state.host_lookup.empty() ? id : state.host_lookup[static_cast<size_t>(id)];
  if (slot >= view->hot_rows) {  // pinned rows from pinned_first on; the file: every row
    return {static_cast<int>(state.tiers.size() - 1), state.disk ? id : slot - state.pinned_first};
  }
  const std::vector<int>& clique = state.cliques[static_cast<size_t>(view->clique)];
  const auto size = static_cast<int64_t>(clique.size());
  return {clique[static_cast<size_t>(slot % size)], slot / size};
}

namespace {

// Whether the kernel on `device` can read / write `buffer` in place.
bool device_reachable(const Buffer& buffer, int device) {
  return (buffer.location() == Location::kCuda && buffer.device() == device) ||
         buffer.location() == Location::kPinnedHost;
}

// The gather kernel of `device` on the CUDA executor, or on the host executor when host-executor
// devices stand in for CUDA (cuda_emulated(): every pointer is host memory, so there the plan's
// shards are checked against the emulated peer-access matrix, as the hardware would fault).
int64_t run_gather(const FeatureStore::State& state, const DeviceGatherPlan& plan,
                   const int64_t* ids, int64_t n, void* out, void* stream, bool check) {
#if defined(VOLLEY_WITH_GPU_HOST)
  if (cuda_emulated()) {
    const int device = plan.device;
    const FeatureStore::State::DeviceView& view = *state.view_of(device);
    for (const int member : state.cliques[static_cast<size_t>(view.clique)]) {
      VOLLEY_ASSERT(internal::emulated_can_access_peer(
          device, state.views[static_cast<size_t>(member)].device));
    }
    return launch_host_gather(plan, ids, n, out, check);
  }
#endif
  (void)state;
  return launch_device_gather(plan, ids, n, out, stream, check);
}

// The device whose kernel gathers: options.device, else where out lives, else where the ids
// live (when the store has a shard there), else the first device.
int gathering_device(const FeatureStore::State& state, const Array& ids, const Array& out,
                     const GatherOptions& options) {
  if (options.device >= 0 || options.device < -1) {
    VOLLEY_REQUIRE(state.view_of(options.device) != nullptr, ValueError,
                   "cannot gather on cuda:{}: it holds no shard of this feature store (devices "
                   "{})",
                   options.device, device_list(state));
    return options.device;
  }
  for (const Buffer* buffer : {&out.buffer(), &ids.buffer()}) {
    if (buffer->location() == Location::kCuda && state.view_of(buffer->device()) != nullptr) {
      return buffer->device();
    }
  }
  return state.device;
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
  const int device = gathering_device(state, ids, out, options);
  const bool ids_on_device = device_reachable(ids.buffer(), device);
  VOLLEY_REQUIRE(ids_on_device || ids.buffer().host_accessible(), ValueError,
                 "ids live on cuda:{}, the feature store gathers on cuda:{}", ids.buffer().device(),
                 device);
  VOLLEY_REQUIRE(device_reachable(out.buffer(), device) || out.buffer().host_accessible(),
                 ValueError, "out lives on cuda:{}, the feature store gathers on cuda:{}",
                 out.buffer().device(), device);
  if (n == 0) return;
  const int64_t* id_pointer = ids.data<int64_t>();
  // Over the disk, the rows no clique of `device` caches are read on the host first: device ids
  // are copied here in stream order (and then checked here, before anything is read or written).
  std::vector<int64_t> host_ids;
  if (state.disk && ids_on_device) {
    if (!ids.buffer().host_accessible()) {
      host_ids.resize(static_cast<size_t>(n));
      cuda_copy(host_ids.data(), id_pointer, ids.nbytes(), options.stream);
    }
    cuda_synchronize(options.stream);
  }
  const int64_t* checked = host_ids.empty() ? id_pointer : host_ids.data();
  Buffer staged_ids, staged_out, disk_rows;
  if (!ids_on_device || (state.disk && options.check_ids)) {
    for (int64_t i = 0; i < n; ++i) {
      if (checked[i] < 0 || checked[i] >= state.num_rows)
        throw_bad_id(checked[i], i, state.num_rows);
    }
  }
  DeviceGatherPlan plan = state.plan(device);
  if (state.disk)
    disk_rows = stage_disk_rows(state, device, {checked, static_cast<size_t>(n)}, plan);
  if (!ids_on_device) {  // checked above, then uploaded
    staged_ids = Buffer::allocate_device(ids.nbytes(), device);
    cuda_copy(staged_ids.data(), id_pointer, ids.nbytes(), options.stream);
    id_pointer = reinterpret_cast<const int64_t*>(staged_ids.data());
  }
  std::byte* out_pointer = out.raw_data();
  if (!device_reachable(out.buffer(), device)) {
    staged_out = Buffer::allocate_device(out.nbytes(), device);
    out_pointer = staged_out.data();
  }
  const bool check = options.check_ids && ids_on_device;
  const int64_t bad = run_gather(state, plan, id_pointer, n, out_pointer, options.stream, check);
  if (bad >= 0) {
    int64_t id = 0;
    cuda_copy(&id, id_pointer + bad, sizeof id, options.stream);
    cuda_synchronize(options.stream);
    throw_bad_id(id, bad, state.num_rows);
  }
  if (!staged_out.empty()) cuda_copy(out.raw_data(), out_pointer, out.nbytes(), options.stream);
  // Staging buffers are freed on return: wait until the stream is done with them.
  if (!staged_ids.empty() || !staged_out.empty() || !disk_rows.empty())
    cuda_synchronize(options.stream);
}

}  // namespace feature_internal
}  // namespace volley
