// The GPU gather returns exactly the CPU gather's bytes for every dtype, row width and tier mix,
// reports bad ids, and does not leak; a cache sharded over every visible GPU (two or more: the
// peer-access cliques the driver reports) gathers the same bytes on each of them, also with the
// rows no clique caches left in the .npy file (GPU tiers over the disk). Skips without a CUDA
// device (the sharded test: with fewer than two). (A .cc: public API only.)
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <numeric>
#include <optional>
#include <random>

#include "test_util.h"
#include "volley/core/cuda_device.h"
#include "volley/feature/feature_store.h"
#include "volley/graph/io/npy.h"

namespace volley {
namespace {

bool have_device() { return cuda_device_count() > 0; }

Array random_matrix(DType dtype, int64_t rows, int64_t width, uint64_t seed) {
  Array matrix = width == 0 ? Array::empty(dtype, {rows}) : Array::empty(dtype, {rows, width});
  std::mt19937_64 rng(seed);
  for (size_t i = 0; i < matrix.nbytes(); ++i) {
    matrix.raw_data()[i] = static_cast<std::byte>(rng() & 0x7f);  // no NaN patterns needed
  }
  return matrix;
}

// GPU tiers: `budget` bytes of rows on device 0 (hottest by `hot_order`), the rest pinned.
FeatureStoreOptions gpu_tiers(size_t budget, std::optional<Array> hot_order = std::nullopt) {
  return {.tiers = {{.location = Location::kCuda, .byte_budget = budget}},
          .hot_order = std::move(hot_order)};
}

int64_t device_rows(const FeatureStore& store) { return store.tiers()[0].num_slots(); }

// An uninitialised device array on device 0.
Array device_array(DType dtype, std::vector<int64_t> shape) {
  int64_t count = 1;
  for (int64_t d : shape) count *= d;
  const size_t bytes = static_cast<size_t>(count) * dtype_size(dtype);
  return Array(Buffer::allocate_device(std::max<size_t>(bytes, 1), 0).slice(0, bytes), dtype,
               std::move(shape));
}

// Rows `ids` gathered on the device into a new device array.
Array gather_on_device(const FeatureStore& store, const std::vector<int64_t>& ids,
                       void* stream = nullptr, bool check_ids = true) {
  std::vector<int64_t> shape = {static_cast<int64_t>(ids.size())};
  if (store.ndim() == 2) shape.push_back(store.width());
  Array out = device_array(store.dtype(), shape);
  GatherOptions options;
  options.stream = stream;
  options.check_ids = check_ids;
  store.gather(Array::from_vector(ids), out, options);
  if (stream != nullptr) cuda_synchronize(stream);
  return out;
}

std::vector<std::byte> to_host(const Array& device_array) {
  std::vector<std::byte> bytes(device_array.nbytes());
  cuda_copy(bytes.data(), device_array.raw_data(), bytes.size(), nullptr);
  cuda_synchronize(nullptr);
  return bytes;
}

// Rows `ids` gathered by a matrix store on `device`, from ids in its memory into its memory on a
// side stream, copied back to the host.
std::vector<std::byte> gather_from_device_ids(const FeatureStore& store,
                                              const std::vector<int64_t>& ids, int device) {
  CudaStream stream = CudaStream::create(device);
  const auto n = static_cast<int64_t>(ids.size());
  const Array device_ids(Buffer::allocate_device(ids.size() * 8, device), DType::kInt64, {n});
  cuda_copy(device_ids.raw_data(), ids.data(), ids.size() * 8, stream.handle());
  const Array out(Buffer::allocate_device(ids.size() * store.row_bytes(), device), store.dtype(),
                  {n, store.width()});
  store.gather(device_ids, out, {.stream = stream.handle()});  // on `device`: out is there
  stream.synchronize();
  return to_host(out);
}

TEST(CudaGather, EqualsTheCpuGatherForEveryDtypeWidthAndTierMix) {
  if (!have_device()) GTEST_SKIP() << "no CUDA device on this machine";
  const int64_t n = 3000;
  std::mt19937_64 rng(1);
  std::vector<int64_t> ids(5000);
  for (auto& id : ids) id = static_cast<int64_t>(rng() % n);
  std::vector<int64_t> hot(n / 2);
  for (size_t i = 0; i < hot.size(); ++i) hot[i] = static_cast<int64_t>((i * 7919) % n);
  CudaStream stream = CudaStream::create(0);
  int cases = 0;
  for (DType dtype : {DType::kFloat32, DType::kFloat16, DType::kBFloat16, DType::kInt8,
                      DType::kUInt8, DType::kInt32, DType::kInt64, DType::kFloat64}) {
    for (int64_t width : {0, 1, 3, 8, 100, 129}) {  // 0: a vector store [N]
      const Array matrix = random_matrix(dtype, n, width, 7 + cases);
      const Array expected = FeatureStore(matrix).gather(ids);
      const size_t row_bytes = matrix.nbytes() / static_cast<size_t>(n);
      for (int mix = 0; mix < 5; ++mix) {
        // 0: all pinned; 1: all on the device; 2, 3: a third on the device in id order / by a
        // hot order listing half the rows; 4: a hot order, nothing on the device.
        const size_t budget = mix == 0 || mix == 4 ? 0
                              : mix == 1           ? matrix.nbytes()
                                                   : matrix.nbytes() / 3;
        std::optional<Array> hot_order;
        if (mix >= 3) hot_order = Array::from_vector(hot);
        const FeatureStore store = FeatureStore::build(matrix, gpu_tiers(budget, hot_order));
        ASSERT_TRUE(store.on_cuda());
        ASSERT_EQ(store.row_bytes(), row_bytes);
        ASSERT_EQ(device_rows(store) + store.tiers()[1].num_slots(), n);
        const Array got = gather_on_device(store, ids, stream.handle());
        // Host memory out (through the device) gives the same bytes.
        const Array host = store.gather(ids);
        ASSERT_EQ(std::memcmp(host.raw_data(), expected.raw_data(), host.nbytes()), 0);
        ASSERT_EQ(got.shape(), expected.shape());
        const auto bytes = to_host(got);
        ASSERT_EQ(std::memcmp(bytes.data(), expected.raw_data(), bytes.size()), 0)
            << dtype_name(dtype) << " width " << width << " mix " << mix << ": "
            << store.describe();
        ++cases;
      }
    }
  }
  EXPECT_EQ(cases, 8 * 6 * 5);
}

TEST(CudaGather, MisalignedOutputAndHotOrderPlacement) {
  if (!have_device()) GTEST_SKIP() << "no CUDA device on this machine";
  const Array matrix = random_matrix(DType::kFloat32, 100, 16, 3);  // 64-byte rows
  const FeatureStore store = FeatureStore::build(
      matrix, gpu_tiers(64 * 10, Array::from_vector(std::vector<int64_t>{99, 5, 42})));
  EXPECT_EQ(device_rows(store), 10);
  EXPECT_EQ(store.locate(99).tier, 0);
  EXPECT_EQ(store.locate(99).slot, 0);
  EXPECT_EQ(store.locate(42).slot, 2);
  EXPECT_EQ(store.locate(0).tier, 0);  // the hot order lists 3; id order fills the rest
  EXPECT_EQ(store.locate(0).slot, 3);
  EXPECT_EQ(store.locate(50).tier, 1);
  // An output 4 bytes off 16-byte alignment takes the 4-byte path and must still be exact.
  const std::vector<int64_t> ids = {99, 0, 50, 42, 7};
  const Buffer out = Buffer::allocate_device(ids.size() * 64 + 4, 0);
  const Array device_ids = device_array(DType::kInt64, {static_cast<int64_t>(ids.size())});
  cuda_copy(device_ids.raw_data(), ids.data(), ids.size() * 8, nullptr);
  store.gather(device_ids, Array(out.slice(4, ids.size() * 64), DType::kFloat32,
                                 {static_cast<int64_t>(ids.size()), 16}));
  std::vector<std::byte> got(ids.size() * 64);
  cuda_copy(got.data(), out.data() + 4, got.size(), nullptr);
  cuda_synchronize(nullptr);
  const Array expected = FeatureStore(matrix).gather(ids);
  EXPECT_EQ(std::memcmp(got.data(), expected.raw_data(), got.size()), 0);
}

TEST(CudaGather, OutOfRangeIdsAreReportedOrZeroFilled) {
  if (!have_device()) GTEST_SKIP() << "no CUDA device on this machine";
  const Array matrix = random_matrix(DType::kFloat32, 50, 4, 5);
  const FeatureStore store = FeatureStore::build(matrix, gpu_tiers(400));
  const std::vector<int64_t> bad = {1, 2, 50, 3, -1};
  // Host ids are checked on the host; device ids by the kernel: the same message.
  const Array device_ids = device_array(DType::kInt64, {5});
  cuda_copy(device_ids.raw_data(), bad.data(), 40, nullptr);
  cuda_synchronize(nullptr);
  for (int on_device = 0; on_device < 2; ++on_device) {
    try {
      if (on_device) {
        store.gather(device_ids, device_array(DType::kFloat32, {5, 4}));
      } else {
        gather_on_device(store, bad);
      }
      FAIL() << "no IndexError";
    } catch (const IndexError& error) {
      EXPECT_NE(std::string(error.what()).find("row id 50 at position 2 out of range"),
                std::string::npos)
          << error.what();
    }
  }
  const Array minus_five = device_array(DType::kInt64, {2});
  const std::vector<int64_t> ids = {1, -5};
  cuda_copy(minus_five.raw_data(), ids.data(), 16, nullptr);
  const Array got = device_array(DType::kFloat32, {2, 4});
  GatherOptions unchecked;
  unchecked.check_ids = false;
  store.gather(minus_five, got, unchecked);
  const auto bytes = to_host(got);
  EXPECT_EQ(std::memcmp(bytes.data(), matrix.raw_data() + 16, 16), 0);
  for (size_t i = 16; i < 32; ++i) EXPECT_EQ(bytes[i], std::byte{0});
}

TEST(CudaGather, NoLeakOverAThousandGathers) {
  if (!have_device()) GTEST_SKIP() << "no CUDA device on this machine";
  const Array matrix = random_matrix(DType::kFloat32, 100000, 64, 9);
  const FeatureStore store = FeatureStore::build(matrix, gpu_tiers(matrix.nbytes() / 4));
  std::mt19937_64 rng(4);
  std::vector<int64_t> ids(20000);
  for (auto& id : ids) id = static_cast<int64_t>(rng() % 100000);
  const Array device_ids = device_array(DType::kInt64, {static_cast<int64_t>(ids.size())});
  const Array out = device_array(DType::kFloat32, {static_cast<int64_t>(ids.size()), 64});
  cuda_copy(device_ids.raw_data(), ids.data(), ids.size() * 8, nullptr);
  CudaStream stream = CudaStream::create(0);
  GatherOptions options;
  options.stream = stream.handle();
  auto once = [&] { store.gather(device_ids, out, options); };
  once();
  stream.synchronize();
  size_t free_before = 0, free_after = 0, total = 0;
  ASSERT_EQ(cudaMemGetInfo(&free_before, &total), cudaSuccess);
  for (int i = 0; i < 1000; ++i) once();
  stream.synchronize();
  ASSERT_EQ(cudaMemGetInfo(&free_after, &total), cudaSuccess);
  EXPECT_LE(free_before - std::min(free_before, free_after), size_t{2} << 20);
}

// Every visible GPU (up to 8) holds a shard of the cache, grouped by the driver's peer access;
// a gather on each device, into its own memory, reads its rows, its peers' and pinned memory.
TEST(CudaGatherMultiGpu, ShardedCacheEqualsTheCpuGatherOnEveryDevice) {
  const int count = std::min(cuda_device_count(), 8);
  if (count < 2) GTEST_SKIP() << "needs two or more CUDA devices, found " << count;
  std::vector<int> devices(static_cast<size_t>(count));
  for (int d = 0; d < count; ++d) devices[static_cast<size_t>(d)] = d;
  const auto cliques = cuda_peer_cliques(devices);
  std::string described;
  for (const auto& clique : cliques) described += fmt::format(" [{}]", fmt::join(clique, ", "));
  RecordProperty("peer_cliques", described);
  std::printf("peer-access cliques of %d GPUs:%s\n", count, described.c_str());
  const int64_t n = 200000, per_device = 20000;
  const Array matrix = random_matrix(DType::kFloat32, n, 64, 17);
  std::mt19937_64 rng(8);
  std::vector<int64_t> ids(50000), hot(n);
  for (auto& id : ids) id = static_cast<int64_t>(rng() % n);
  std::iota(hot.begin(), hot.end(), int64_t{0});
  std::shuffle(hot.begin(), hot.end(), rng);
  const Array expected = FeatureStore(matrix).gather(ids);
  for (const bool hot_order : {false, true}) {
    std::optional<Array> order;
    if (hot_order) order = Array::from_vector(hot);
    const FeatureStore store =
        FeatureStore::build(matrix, {.tiers = {{.location = Location::kCuda,
                                                .byte_budget = per_device * 256,
                                                .devices = devices}},
                                     .hot_order = order});
    for (const int device : devices) {
      EXPECT_EQ(std::memcmp(gather_from_device_ids(store, ids, device).data(), expected.raw_data(),
                            expected.nbytes()),
                0)
          << "cuda:" << device << " hot order " << hot_order << ": " << store.describe();
      const Array host = store.gather(ids, {.device = device});
      EXPECT_EQ(std::memcmp(host.raw_data(), expected.raw_data(), expected.nbytes()), 0);
      int64_t local = 0;
      for (int64_t id = 0; id < n; ++id) {
        const RowLocation at = store.locate(id, device);
        local += store.tiers()[static_cast<size_t>(at.tier)].rows().buffer().device() == device &&
                 store.tiers()[static_cast<size_t>(at.tier)].location() == Location::kCuda;
      }
      EXPECT_EQ(local, per_device) << "cuda:" << device;
    }
  }
}

// GPU tiers over the disk on every visible GPU (up to 8; one is enough): the rows no clique
// caches stay in the .npy file and each gather reads them through the disk tier into pinned
// staging that the kernel reads; device ids into device memory on a side stream, host ids into
// host memory, each the CPU's rows, the disk rows read from the disk.
TEST(CudaGather, ColdRowsOnTheDiskEqualTheCpuGatherOnEveryDevice) {
  if (!have_device()) GTEST_SKIP() << "no CUDA device";
  std::vector<int> devices(static_cast<size_t>(std::min(cuda_device_count(), 8)));
  std::iota(devices.begin(), devices.end(), 0);
  const TempDir dir;
  const std::string file = dir / "x.npy";
  const int64_t n = 100000, width = 32;
  const Array matrix = random_matrix(DType::kFloat32, n, width, 23);
  write_npy(file, matrix);
  std::mt19937_64 rng(4);
  std::vector<int64_t> ids(20000);
  for (auto& id : ids) id = static_cast<int64_t>(rng() % n);
  const Array expected = FeatureStore(matrix).gather(ids);
  const FeatureStore store = FeatureStore::from_npy(
      file,
      {.tiers = {{.location = Location::kCuda, .byte_budget = 5000 * 128, .devices = devices}},
       .source_reads = SourceReads::kDisk,
       .cache_bytes = 0});
  ASSERT_FALSE(store.disk_io().empty()) << store.describe();
  for (const int device : devices) {
    const int64_t misses = store.disk_stats().misses;
    EXPECT_EQ(std::memcmp(gather_from_device_ids(store, ids, device).data(), expected.raw_data(),
                          expected.nbytes()),
              0)
        << "cuda:" << device << ": " << store.describe();
    EXPECT_GT(store.disk_stats().misses, misses) << "cuda:" << device;
    const Array host = store.gather(ids, {.device = device});
    EXPECT_EQ(std::memcmp(host.raw_data(), expected.raw_data(), expected.nbytes()), 0);
  }
}

}  // namespace
}  // namespace volley
