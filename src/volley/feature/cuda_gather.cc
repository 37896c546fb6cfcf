// DeviceFeatureStore's front end (every build): argument checks, tier placement, dispatch to
// the gather kernel behind internal/cuda_gather_kernel.h.
#include "volley/feature/cuda_gather.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "volley/core/cuda_device.h"
#include "volley/core/error.h"
#include "volley/feature/gather.h"
#include "volley/feature/internal/cuda_gather_kernel.h"

namespace volley {

struct DeviceFeatureStore::State {
  int64_t num_rows = 0;
  int64_t width = 1;
  int64_t ndim = 1;
  DType dtype = DType::kFloat32;
  size_t row_bytes = 0;
  int device = 0;
  int64_t hot_rows = 0;
  Buffer device_rows;                // kCuda
  Buffer pinned_rows;                // kPinnedHost
  Buffer lookup;                     // kCuda, empty without a hot order
  std::vector<int64_t> host_lookup;  // the same entries on the host (locate())
  bool lookup_is_32bit = true;

  feature_internal::DeviceGatherPlan plan() const {
    feature_internal::DeviceGatherPlan plan;
    plan.device_rows = device_rows.data();
    plan.pinned_rows = pinned_rows.data();
    plan.lookup = lookup.empty() ? nullptr : lookup.data();
    plan.lookup_is_32bit = lookup_is_32bit;
    plan.hot_rows = hot_rows;
    plan.num_rows = num_rows;
    plan.row_bytes = row_bytes;
    plan.device = device;
    return plan;
  }
};

namespace {

[[noreturn]] void no_cuda_support() {
  throw RuntimeError(
      "GPU feature gather: this build of Volley has no CUDA support (built with VOLLEY_CUDA=OFF "
      "or without nvcc); use FeatureStore::gather on the CPU, or rebuild with CUDA");
}

// The row order of the tiers: the hot order's ids, then every other row in id order.
std::vector<int64_t> tier_order(const std::optional<Array>& hot_order, int64_t n) {
  std::vector<int64_t> order;
  order.reserve(static_cast<size_t>(n));
  std::vector<bool> listed(static_cast<size_t>(n), false);
  if (hot_order) {
    const Array& hot = *hot_order;
    VOLLEY_REQUIRE(hot.defined() && hot.ndim() == 1 && hot.dtype() == DType::kInt64, ValueError,
                   "hot_order must be a 1-d int64 array, got {}", hot.describe());
    VOLLEY_REQUIRE(hot.numel() <= n, ValueError, "hot_order lists {} rows; the matrix has only {}",
                   hot.numel(), n);
    const int64_t* ids = hot.data<int64_t>();
    for (int64_t i = 0; i < hot.numel(); ++i) {
      VOLLEY_REQUIRE(ids[i] >= 0 && ids[i] < n, IndexError,
                     "hot_order id {} at position {} out of range for a matrix with {} rows",
                     ids[i], i, n);
      VOLLEY_REQUIRE(!listed[static_cast<size_t>(ids[i])], ValueError,
                     "hot_order lists row {} twice (second time at position {})", ids[i], i);
      listed[static_cast<size_t>(ids[i])] = true;
      order.push_back(ids[i]);
    }
  }
  for (int64_t id = 0; id < n; ++id) {
    if (!listed[static_cast<size_t>(id)]) order.push_back(id);
  }
  return order;
}

std::string bytes_text(size_t bytes) {
  if (bytes >= (size_t{1} << 30)) return fmt::format("{:.1f} GB", static_cast<double>(bytes) / 1e9);
  if (bytes >= (size_t{1} << 20)) return fmt::format("{:.1f} MB", static_cast<double>(bytes) / 1e6);
  return fmt::format("{} B", bytes);
}

}  // namespace

DeviceFeatureStore DeviceFeatureStore::build(const Array& matrix,
                                             const DeviceFeatureStoreOptions& options) {
  VOLLEY_REQUIRE(matrix.defined() && (matrix.ndim() == 1 || matrix.ndim() == 2), ValueError,
                 "a DeviceFeatureStore needs a 1-d or 2-d matrix, got {}",
                 matrix.defined() ? matrix.describe() : std::string("an undefined array"));
  VOLLEY_REQUIRE(matrix.buffer().host_accessible(), ValueError,
                 "a DeviceFeatureStore is built from host-accessible memory; the matrix lives in "
                 "{} memory",
                 location_name(matrix.buffer().location()));
  VOLLEY_REQUIRE(options.device >= 0, ValueError, "CUDA device must be >= 0, got {}",
                 options.device);
  auto state = std::make_shared<State>();
  state->num_rows = matrix.dim(0);
  state->ndim = matrix.ndim();
  state->width = matrix.ndim() == 2 ? matrix.dim(1) : 1;
  state->dtype = matrix.dtype();
  state->row_bytes = static_cast<size_t>(state->width) * dtype_size(state->dtype);
  state->device = options.device;
  VOLLEY_REQUIRE(state->row_bytes > 0, ValueError,
                 "a DeviceFeatureStore needs rows of at least one element, got {}",
                 matrix.describe());
  const int64_t n = state->num_rows;
  const std::vector<int64_t> order = tier_order(options.hot_order, n);  // checks the hot order
  if (!cuda_built()) no_cuda_support();
  const int count = cuda_device_count();
  VOLLEY_REQUIRE(options.device < count, RuntimeError,
                 "CUDA device {} requested, but {} CUDA device(s) are visible", options.device,
                 count);

  state->hot_rows =
      std::min<int64_t>(n, static_cast<int64_t>(options.device_byte_budget / state->row_bytes));
  const int64_t cold_rows = n - state->hot_rows;
  const size_t hot_bytes = static_cast<size_t>(state->hot_rows) * state->row_bytes;
  const size_t cold_bytes = static_cast<size_t>(cold_rows) * state->row_bytes;
  // Both tiers are filled through pinned memory: the cold tier is its final home, the hot one
  // a staging copy uploaded to the device.
  const bool in_id_order = !options.hot_order.has_value();
  state->pinned_rows = Buffer::allocate_pinned(std::max<size_t>(cold_bytes, 1));
  std::span<const int64_t> hot_ids(order.data(), static_cast<size_t>(state->hot_rows));
  std::span<const int64_t> cold_ids(order.data() + state->hot_rows, static_cast<size_t>(cold_rows));
  auto fill = [&](std::span<const int64_t> ids, std::byte* destination) {
    if (ids.empty()) return;
    if (in_id_order) {  // a contiguous range of rows
      std::memcpy(destination,
                  matrix.raw_data() + static_cast<size_t>(ids.front()) * state->row_bytes,
                  ids.size() * state->row_bytes);
    } else {
      gather_rows_parallel(matrix, ids, state->dtype, destination);
    }
  };
  fill(cold_ids, state->pinned_rows.data());
  state->device_rows = Buffer::allocate_device(std::max<size_t>(hot_bytes, 1), options.device);
  if (hot_bytes > 0) {
    Buffer staging = Buffer::allocate_pinned(hot_bytes);
    fill(hot_ids, staging.data());
    cuda_copy(state->device_rows.data(), staging.data(), hot_bytes, nullptr);
    cuda_synchronize(nullptr);
  }
  if (!in_id_order) {
    state->lookup_is_32bit = n < (int64_t{1} << 31);
    state->host_lookup.resize(static_cast<size_t>(n));
    for (int64_t slot = 0; slot < n; ++slot) {
      const int64_t id = order[static_cast<size_t>(slot)];
      state->host_lookup[static_cast<size_t>(id)] =
          slot < state->hot_rows ? slot : ~(slot - state->hot_rows);
    }
    const size_t entry_bytes = state->lookup_is_32bit ? 4 : 8;
    Buffer staging =
        Buffer::allocate_pinned(std::max<size_t>(static_cast<size_t>(n) * entry_bytes, 1));
    if (state->lookup_is_32bit) {
      auto* entries = reinterpret_cast<int32_t*>(staging.data());
      for (int64_t id = 0; id < n; ++id)
        entries[id] = static_cast<int32_t>(state->host_lookup[static_cast<size_t>(id)]);
    } else {
      std::memcpy(staging.data(), state->host_lookup.data(), static_cast<size_t>(n) * 8);
    }
    state->lookup = Buffer::allocate_device(staging.size(), options.device);
    cuda_copy(state->lookup.data(), staging.data(), staging.size(), nullptr);
    cuda_synchronize(nullptr);
  }
  DeviceFeatureStore store;
  store.state_ = std::move(state);
  return store;
}

int64_t DeviceFeatureStore::num_rows() const { return state_ ? state_->num_rows : 0; }
int64_t DeviceFeatureStore::width() const { return state_ ? state_->width : 0; }
int64_t DeviceFeatureStore::ndim() const { return state_ ? state_->ndim : 0; }
DType DeviceFeatureStore::dtype() const { return state_ ? state_->dtype : DType::kFloat32; }
size_t DeviceFeatureStore::row_bytes() const { return state_ ? state_->row_bytes : 0; }
int DeviceFeatureStore::device() const { return state_ ? state_->device : 0; }
int64_t DeviceFeatureStore::device_rows() const { return state_ ? state_->hot_rows : 0; }
int64_t DeviceFeatureStore::pinned_rows() const {
  return state_ ? state_->num_rows - state_->hot_rows : 0;
}

RowLocation DeviceFeatureStore::locate(int64_t id) const {
  VOLLEY_REQUIRE(state_ != nullptr, ValueError, "locate() on an empty DeviceFeatureStore");
  VOLLEY_REQUIRE(id >= 0 && id < state_->num_rows, IndexError,
                 "row id {} out of range for a store with {} rows", id, state_->num_rows);
  if (state_->host_lookup.empty()) {
    return id < state_->hot_rows ? RowLocation{0, id} : RowLocation{1, id - state_->hot_rows};
  }
  const int64_t entry = state_->host_lookup[static_cast<size_t>(id)];
  return entry >= 0 ? RowLocation{0, entry} : RowLocation{1, ~entry};
}

std::string DeviceFeatureStore::describe() const {
  if (!state_) return "empty DeviceFeatureStore";
  const std::string shape = state_->ndim == 2
                                ? fmt::format("[{}, {}]", state_->num_rows, state_->width)
                                : fmt::format("[{}]", state_->num_rows);
  return fmt::format(
      "{}{} on cuda:{}: device {} ({} rows), pinned host {} ({} rows)", dtype_name(state_->dtype),
      shape, state_->device, bytes_text(static_cast<size_t>(state_->hot_rows) * state_->row_bytes),
      state_->hot_rows, bytes_text(static_cast<size_t>(pinned_rows()) * state_->row_bytes),
      pinned_rows());
}

void DeviceFeatureStore::gather(const int64_t* ids, int64_t count, void* out, void* stream,
                                const DeviceGatherOptions& options) const {
  VOLLEY_REQUIRE(state_ != nullptr, ValueError, "gather() on an empty DeviceFeatureStore");
  VOLLEY_REQUIRE(count >= 0, ValueError, "gather count must be >= 0, got {}", count);
  if (count == 0) return;
  VOLLEY_REQUIRE(ids != nullptr && out != nullptr, ValueError,
                 "gather of {} rows needs non-null ids and out pointers", count);
  const int64_t bad = feature_internal::launch_device_gather(state_->plan(), ids, count, out,
                                                             stream, options.check_ids);
  if (bad >= 0) {
    int64_t id = 0;
    cuda_copy(&id, ids + bad, sizeof id, stream);
    cuda_synchronize(stream);
    throw IndexError(fmt::format("row id {} at position {} out of range for a store with {} rows",
                                 id, bad, state_->num_rows));
  }
}

Array DeviceFeatureStore::gather(std::span<const int64_t> ids, void* stream,
                                 const DeviceGatherOptions& options) const {
  VOLLEY_REQUIRE(state_ != nullptr, ValueError, "gather() on an empty DeviceFeatureStore");
  const auto n = static_cast<int64_t>(ids.size());
  std::vector<int64_t> shape = {n};
  if (state_->ndim == 2) shape.push_back(state_->width);
  const size_t out_bytes = static_cast<size_t>(n) * state_->row_bytes;
  Buffer out = Buffer::allocate_device(std::max<size_t>(out_bytes, 1), state_->device);
  if (n > 0) {
    Buffer device_ids = Buffer::allocate_device(ids.size_bytes(), state_->device);
    cuda_copy(device_ids.data(), ids.data(), ids.size_bytes(), stream);
    gather(reinterpret_cast<const int64_t*>(device_ids.data()), n, out.data(), stream, options);
    cuda_synchronize(stream);  // device_ids is freed on return
  }
  return Array(out.slice(0, out_bytes), state_->dtype, shape);
}

}  // namespace volley
