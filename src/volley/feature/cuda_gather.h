// volley/feature/cuda_gather.h — feature rows for a GPU: the hottest rows in device memory,
// the rest in pinned host memory, gathered into device memory by one kernel.
//
// The GPU tiers of FeatureStore (feature_store.h). A DeviceFeatureStore holds an N×D row-major
// matrix (or an [N] vector) of any Volley dtype in two tiers: a device cache of the hottest rows
// (as many as `device_byte_budget` holds, hottest by `hot_order`) and pinned host memory for
// the rest, which the kernel reads directly over PCIe/NVLink (unified virtual addressing).
// gather() resolves each id to (tier, slot) inside the kernel and copies whole rows with
// 16-byte loads and stores when the row size and the pointers allow (else 8, 4, 2, 1), a group
// of threads per row so that each row is read and written coalesced.
//
//   DeviceFeatureStore x = DeviceFeatureStore::build(
//       features, {.device_byte_budget = 8ull << 30, .hot_order = hotness_by_degree(graph)});
//   x.gather(ids_on_device, n, out_on_device, stream.handle());   // out: n × row_bytes()
//   Array rows = x.gather(host_ids, stream.handle());             // convenience: new device array
//
// Lookup: with a hot order, one entry per row on the device (int32 when N < 2^31, else int64):
// slot s >= 0 in the device tier, or ~s in the pinned tier. Without one, the device tier holds
// rows [0, device_rows()) and no lookup is needed. The output has the stored dtype (no
// conversion on the GPU; FeatureStore::gather converts on the CPU).
//
// Streams: gather() queues its work on the caller's stream (a cudaStream_t as void*, nullptr =
// legacy default stream). With check_ids (the default) it then waits for the stream and throws
// IndexError naming the first out-of-range id and its position; without, it returns at once
// and the rows of out-of-range ids are zero-filled (nothing is read out of bounds either way).
//
// Errors: ValueError for a bad matrix (not 1-d/2-d, not host-accessible, zero-width rows) or
// hot order (not int64 1-d, an id twice, more ids than rows), IndexError for a hot-order id out
// of range; RuntimeError for a failing CUDA call (CUDA's error string, file:line) and in a build
// without CUDA ("this build of Volley has no CUDA support").
//
// Thread safety: immutable after build(); copies share the tiers; any number of threads may
// gather concurrently (on their own streams).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>

#include "volley/core/array.h"
#include "volley/feature/feature_store.h"  // RowLocation

namespace volley {

struct DeviceFeatureStoreOptions {
  // Bytes of device memory for hot rows: floor(budget / row bytes) rows (all when it fits).
  size_t device_byte_budget = 0;
  // int64 row ids, hottest first (hotness.h); may list fewer than N rows (the rest follow in id
  // order). Absent: id order (the device tier holds the first rows).
  std::optional<Array> hot_order;
  int device = 0;  // CUDA device ordinal
};

struct DeviceGatherOptions {
  // Wait for the stream and throw IndexError for an out-of-range id (see above).
  bool check_ids = true;
};

class DeviceFeatureStore {
 public:
  DeviceFeatureStore() = default;  // defined() == false

  // Copies `matrix` ([N, D] or [N], host-accessible, any dtype) into the two tiers.
  // Synchronous.
  static DeviceFeatureStore build(const Array& matrix,
                                  const DeviceFeatureStoreOptions& options = {});

  bool defined() const { return state_ != nullptr; }
  int64_t num_rows() const;
  int64_t width() const;  // elements per row (1 for a vector store)
  int64_t ndim() const;   // 1 for a vector store, 2 for a matrix
  DType dtype() const;
  size_t row_bytes() const;
  int device() const;
  int64_t device_rows() const;  // rows in the device tier
  int64_t pinned_rows() const;  // rows in the pinned host tier
  // Tier (0: device, 1: pinned host) and slot of row `id` (IndexError when out of range). Host
  // side, from the host copy of the lookup: for tests and tools.
  RowLocation locate(int64_t id) const;
  // "float32[2449029, 100] on cuda:0: device 1.2 GB (300000 rows), pinned host 8.6 GB (...)"
  std::string describe() const;

  // out[i, :] = row ids[i] for i < count. `ids`: `count` int64 in memory the device can read
  // (device or pinned host); `out`: count × row_bytes() bytes the device can write. Both must
  // stay valid until the stream has run the gather.
  void gather(const int64_t* ids, int64_t count, void* out, void* stream = nullptr,
              const DeviceGatherOptions& options = {}) const;
  // Copies host `ids` to the device and gathers into a new device array [n, D] (or [n]):
  // allocates per call, for tests and simple use.
  Array gather(std::span<const int64_t> ids, void* stream = nullptr,
               const DeviceGatherOptions& options = {}) const;

  struct State;  // the implementation's (cuda_gather.cc)

 private:
  std::shared_ptr<const State> state_;
};

}  // namespace volley
