// GPU tiers over the disk, on emulated devices (the gather kernel on the shuffled host executor):
// a cache sharded over 4 devices with full, partial, non-transitive and no peer access, the rows
// no clique caches left in the .npy file and read through the disk tier. Every device gathers
// what the CPU gathers, what one device over the disk gathers and what the same store with the
// cold rows in pinned memory gathers, each row from the own shard, a peer's shard or the disk as
// locate() says, and the disk counters show the disk rows were read from the disk. Then device
// ids and out, concurrent gathers, the failure paths (a file changed on disk, a bad id, refused
// combinations: nothing written, nothing read) and the lookahead row cache. Label gpu-host.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <numeric>
#include <random>
#include <thread>

#include "test_util.h"
#include "volley/core/cuda_device.h"
#include "volley/core/internal/emulated_device.h"
#include "volley/feature/feature_store.h"
#include "volley/feature/gather.h"
#include "volley/graph/io/npy.h"

namespace volley {
namespace {

using ::testing::HasSubstr;

// Peer matrices of 4 emulated devices (VOLLEY_HOST_EXECUTOR_PEERS syntax): every pair, none, two
// pairs, and 0-1, 1-2 peers with 0-2 not (3 reads 2 but 2 does not read 3).
const char* const kPeers[] = {"all", "none", "1100,1100,0011,0011", "1100,1110,0110,0011"};

// Rows of distinct, exactly representable values (row i, column j: a hash of i * width + j).
Array distinct_rows(int64_t n, int64_t width) {
  Array matrix = Array::empty(DType::kFloat32, {n, width});
  for (int64_t i = 0; i < n * width; ++i) {
    matrix.data<float>()[i] = static_cast<float>((i * 7919 + 13) % 65521) / 4.0f;
  }
  return matrix;
}

FeatureStoreOptions over(SourceReads reads, size_t budget, std::vector<int> devices,
                         std::optional<Array> hot_order, size_t cache_bytes = 0) {
  return {.tiers = {{.location = Location::kCuda,
                     .byte_budget = budget,
                     .devices = std::move(devices)}},
          .hot_order = std::move(hot_order),
          .source_reads = reads,
          .cache_bytes = cache_bytes};
}

class GpuDiskTierTest : public TempDirTest {
 protected:
  static constexpr int64_t kRows = 400, kWidth = 5, kPerDevice = 30;
  static constexpr size_t kRowBytes = kWidth * sizeof(float);

  void SetUp() override {
    file_ = path("x.npy");
    matrix_ = distinct_rows(kRows, kWidth);
    write_npy(file_, matrix_);
  }
  std::vector<std::byte> cpu_rows(const std::vector<int64_t>& ids) const {
    std::vector<std::byte> rows(ids.size() * kRowBytes);
    gather_rows(matrix_, ids, DType::kFloat32, rows.data());
    return rows;
  }

  std::string file_;
  Array matrix_;
};

// The rows a gather on `device` reads from the own shard, from peers' shards and from the disk,
// each checked against the matrix (a shard's slot holds the row; the file's slot is the id).
struct Placement {
  int local = 0, peer = 0, disk = 0;
};
Placement placement(const FeatureStore& store, const Array& matrix, int device,
                    const std::vector<int>& clique) {
  Placement counts;
  const size_t row_bytes = store.row_bytes();
  for (int64_t id = 0; id < store.num_rows(); ++id) {
    const RowLocation at = store.locate(id, device);
    const Array& rows = store.tiers()[static_cast<size_t>(at.tier)].rows();
    if (rows.buffer().location() == Location::kMappedFile) {
      EXPECT_EQ(at.slot, id);
      ++counts.disk;
      continue;
    }
    EXPECT_EQ(rows.buffer().location(), Location::kCuda) << id;
    const int owner = rows.buffer().device();
    EXPECT_NE(std::find(clique.begin(), clique.end(), owner), clique.end()) << id;
    EXPECT_EQ(std::memcmp(rows.raw_data() + at.slot * row_bytes, matrix.raw_data() + id * row_bytes,
                          row_bytes),
              0)
        << id;
    (owner == device ? counts.local : counts.peer) += 1;
  }
  return counts;
}

// Every device of every topology, in id order and in a shuffled hot order, without and with a
// row cache in front of the disk: the CPU's rows, one device's rows over the disk, and the rows
// of the same sharded store with its cold rows in pinned memory.
TEST_F(GpuDiskTierTest, EveryDeviceGathersTheSingleDeviceRowsFromEveryPlacement) {
  std::mt19937_64 rng(3);
  std::vector<int64_t> ids(600);
  for (auto& id : ids) id = static_cast<int64_t>(rng() % kRows);  // duplicates included
  for (int64_t id = 0; id < kRows; ++id) ids.push_back(id);       // every row at least once
  const std::vector<std::byte> expected = cpu_rows(ids);
  std::vector<int64_t> shuffled(kRows);
  std::iota(shuffled.begin(), shuffled.end(), int64_t{0});
  std::shuffle(shuffled.begin(), shuffled.end(), rng);
  const size_t budget = kPerDevice * kRowBytes;
  for (const char* peers : kPeers) {
    internal::ScopedCudaEmulation emulated(internal::parse_emulated_devices("4", peers));
    const std::vector<std::vector<int>> cliques = cuda_peer_cliques(std::vector<int>{0, 1, 2, 3});
    for (const bool hot : {false, true}) {
      std::optional<Array> order;
      if (hot) order = Array::from_vector(shuffled);
      for (const size_t cache_bytes : {size_t{0}, 64 * kRowBytes}) {
        int64_t cache_hits = 0;
        const FeatureStore store = FeatureStore::from_npy(
            file_, over(SourceReads::kDisk, budget, {0, 1, 2, 3}, order, cache_bytes));
        const FeatureStore pinned =
            FeatureStore::from_npy(file_, over(SourceReads::kMapped, budget, {0, 1, 2, 3}, order));
        ASSERT_FALSE(store.disk_io().empty());
        ASSERT_TRUE(pinned.disk_io().empty());
        EXPECT_THAT(store.describe(), HasSubstr("disk (400 rows"));
        for (int device = 0; device < 4; ++device) {
          SCOPED_TRACE(fmt::format("peers {}, hot order {}, cache {} B, cuda:{}", peers, hot,
                                   cache_bytes, device));
          const std::vector<int>& clique = *std::find_if(
              cliques.begin(), cliques.end(),
              [&](const auto& c) { return std::find(c.begin(), c.end(), device) != c.end(); });
          const auto size = static_cast<int64_t>(clique.size());
          const Placement at = placement(store, matrix_, device, clique);
          EXPECT_EQ(at.local, kPerDevice);
          EXPECT_EQ(at.peer, kPerDevice * (size - 1));
          EXPECT_EQ(at.disk, kRows - kPerDevice * size);
          int64_t cold = 0;  // positions whose row the clique does not cache
          for (const int64_t id : ids) {
            const RowLocation where = store.locate(id, device);
            cold +=
                store.tiers()[static_cast<size_t>(where.tier)].location() == Location::kMappedFile;
          }
          const FeatureStore alone = FeatureStore::from_npy(
              file_, over(SourceReads::kDisk, budget, {device}, order, cache_bytes));
          std::vector<std::byte> got(expected.size()), single(expected.size()),
              from_pinned(expected.size());
          const FeatureStore::DiskStats before = store.disk_stats();
          store.gather(ids, got.data(), {.device = device});
          const FeatureStore::DiskStats after = store.disk_stats();
          alone.gather(ids, single.data());
          pinned.gather(ids, from_pinned.data(), {.device = device});
          EXPECT_EQ(std::memcmp(got.data(), expected.data(), got.size()), 0);
          EXPECT_EQ(std::memcmp(single.data(), expected.data(), single.size()), 0);
          EXPECT_EQ(std::memcmp(from_pinned.data(), expected.data(), from_pinned.size()), 0);
          EXPECT_EQ(after.hits + after.misses - before.hits - before.misses,
                    static_cast<int64_t>(ids.size()));
          if (cache_bytes == 0) {
            EXPECT_EQ(after.misses - before.misses, cold);  // every cold row from the disk
          } else {
            EXPECT_LE(after.misses - before.misses, cold);
            cache_hits += cold - (after.misses - before.misses);
          }
        }
        EXPECT_EQ(cache_hits > 0, cache_bytes > 0);  // later devices hit the row cache
      }
    }
  }
}

// Ids and out in device memory (the gathering device follows out), an out-of-range id without
// the check (its row zero-filled, the others right), and several threads gathering at once on
// their own devices through one SIEVE cache in front of the disk.
TEST_F(GpuDiskTierTest, DeviceMemoryAndConcurrentGathers) {
  internal::ScopedCudaEmulation emulated(
      internal::parse_emulated_devices("4", "1100,1100,0011,0011"));
  const FeatureStore store =
      FeatureStore::from_npy(file_, over(SourceReads::kDisk, kPerDevice * kRowBytes, {2, 0, 1, 3},
                                         std::nullopt, 100 * kRowBytes));
  std::vector<int64_t> ids = {399, 0, 31, 200, 59, 60, 1, 399, 250};
  const std::vector<std::byte> expected = cpu_rows(ids);
  for (const int device : {0, 3}) {
    const Array on_device(Buffer::allocate_device(ids.size() * 8, device), DType::kInt64,
                          {static_cast<int64_t>(ids.size())});
    cuda_copy(on_device.raw_data(), ids.data(), ids.size() * 8, nullptr);
    const Array out(Buffer::allocate_device(expected.size(), device), DType::kFloat32,
                    {static_cast<int64_t>(ids.size()), kWidth});
    store.gather(on_device, out);
    EXPECT_EQ(std::memcmp(out.raw_data(), expected.data(), expected.size()), 0) << device;
    int64_t bad = kRows + 5;
    cuda_copy(on_device.raw_data() + 3 * 8, &bad, 8, nullptr);  // position 3: id 200
    store.gather(on_device, out, {.check_ids = false});
    for (size_t i = 0; i < ids.size(); ++i) {
      const std::byte* row = out.raw_data() + i * kRowBytes;
      if (i == 3) {
        EXPECT_TRUE(
            std::all_of(row, row + kRowBytes, [](std::byte b) { return b == std::byte{0}; }));
      } else {
        EXPECT_EQ(std::memcmp(row, expected.data() + i * kRowBytes, kRowBytes), 0) << i;
      }
    }
  }
  std::vector<std::vector<int64_t>> batches(4);
  std::mt19937_64 rng(8);
  for (auto& batch : batches) {
    for (int i = 0; i < 300; ++i) batch.push_back(static_cast<int64_t>(rng() % kRows));
  }
  std::vector<std::vector<std::byte>> got(4);
  std::vector<std::thread> threads;
  for (int device = 0; device < 4; ++device) {
    threads.emplace_back([&, device] {
      got[device].resize(batches[device].size() * kRowBytes);
      for (int round = 0; round < 3; ++round)
        store.gather(batches[device], got[device].data(), {.device = device});
    });
  }
  for (std::thread& thread : threads) thread.join();
  for (int device = 0; device < 4; ++device) {
    EXPECT_EQ(std::memcmp(got[device].data(), cpu_rows(batches[device]).data(), got[device].size()),
              0)
        << device;
  }
}

// A file changed on disk after open, or an out-of-range device id, fails the gather with a clear
// error before anything is written (out keeps its bytes) and, for the id, before anything is
// read; the store still gathers the cached rows afterwards.
TEST_F(GpuDiskTierTest, FailuresLeaveOutUntouched) {
  internal::ScopedCudaEmulation emulated(internal::parse_emulated_devices("2", "all"));
  const FeatureStore store = FeatureStore::from_npy(
      file_, over(SourceReads::kDisk, kPerDevice * kRowBytes, {0, 1}, std::nullopt));
  const std::vector<int64_t> ids = {0, 350, 1, 399};  // rows 0 and 1 cached, 350 and 399 on disk
  const Array device_ids(Buffer::allocate_device(ids.size() * 8, 1), DType::kInt64, {4});
  std::vector<int64_t> with_bad = ids;
  with_bad[2] = -7;
  cuda_copy(device_ids.raw_data(), with_bad.data(), with_bad.size() * 8, nullptr);
  const Array out(Buffer::allocate_device(ids.size() * kRowBytes, 1), DType::kFloat32, {4, kWidth});
  std::memset(out.raw_data(), 0x5a, out.nbytes());
  const std::vector<std::byte> untouched(out.raw_data(), out.raw_data() + out.nbytes());
  EXPECT_THAT(message_of<IndexError>([&] { store.gather(device_ids, out); }),
              HasSubstr("row id -7 at position 2"));
  EXPECT_EQ(std::memcmp(out.raw_data(), untouched.data(), untouched.size()), 0);
  EXPECT_EQ(store.disk_stats().misses, 0);  // nothing read

  ASSERT_EQ(::truncate(file_.c_str(), 1000), 0);  // changed on disk after open
  std::vector<std::byte> host_out(untouched);
  const std::string message =
      message_of<IoError>([&] { store.gather(ids, host_out.data(), {.device = 0}); });
  EXPECT_THAT(message, HasSubstr("changed on disk"));
  EXPECT_THAT(message, HasSubstr(file_));
  EXPECT_EQ(host_out, untouched);
  EXPECT_THAT(message_of<IoError>([&] { store.gather(ids, host_out.data(), {.device = 1}); }),
              HasSubstr("changed on disk"));
  EXPECT_EQ(host_out, untouched);
  const std::vector<int64_t> cached = {1, 0, 59};  // in both cliques' caches: no disk read
  store.gather(cached, host_out.data(), {.device = 1});
  EXPECT_EQ(std::memcmp(host_out.data(), cpu_rows(cached).data(), 3 * kRowBytes), 0);
}

// What stays refused names the offending option; a store whose cliques cache every row drops
// the disk (nothing would read it) and is an ordinary GPU store.
TEST_F(GpuDiskTierTest, RefusedCombinationsNameTheOption) {
  internal::ScopedCudaEmulation emulated(internal::parse_emulated_devices("2", "all"));
  FeatureStoreOptions pinned_too = over(SourceReads::kDisk, 1000, {0, 1}, std::nullopt);
  pinned_too.tiers.push_back({.location = Location::kPinnedHost});
  EXPECT_THAT(message_of<ValueError>([&] { FeatureStore::from_npy(file_, pinned_too); }),
              HasSubstr("a pinned_host tier copies them to pinned memory"));
  EXPECT_THAT(message_of<ValueError>([&] {
                FeatureStore::build(matrix_, over(SourceReads::kDisk, 1000, {0}, std::nullopt));
              }),
              HasSubstr("the disk tier reads a mapped .npy file"));
  FeatureStoreOptions fixed = over(SourceReads::kDisk, 1000, {0}, std::nullopt, 1000);
  fixed.cache_policy = CachePolicy::kStatic;
  EXPECT_THAT(message_of<ValueError>([&] { FeatureStore::from_npy(file_, fixed); }),
              HasSubstr("not static"));
  const FeatureStore store =
      FeatureStore::from_npy(file_, over(SourceReads::kDisk, 1000, {0, 1}, std::nullopt));
  EXPECT_FALSE(store.shareable());
  EXPECT_THAT(message_of<ValueError>([&] { store.gpu_parts(); }),
              HasSubstr("reads its cold rows from the disk ('" + file_ + "')"));
  EXPECT_THAT(message_of<ValueError>([&] { store.to_shareable(); }), HasSubstr("from the disk"));
  // Automatic reads: a file this small goes to pinned memory, as before.
  const FeatureStore automatic =
      FeatureStore::from_npy(file_, over(SourceReads::kAuto, 1000, {0, 1}, std::nullopt));
  EXPECT_TRUE(automatic.disk_io().empty());
  EXPECT_EQ(automatic.tiers().back().location(), Location::kPinnedHost);
  const FeatureStore everything =
      FeatureStore::from_npy(file_, over(SourceReads::kDisk, Buffer::npos, {0, 1}, std::nullopt));
  EXPECT_TRUE(everything.disk_io().empty());
  EXPECT_EQ(everything.tiers().back().location(), Location::kPinnedHost);
  EXPECT_EQ(everything.tiers().back().num_slots(), 0);
  EXPECT_TRUE(everything.to_shareable().shareable());
}

// The lookahead row cache in front of the disk, steered by announced batches: the rows are the
// CPU's, and rows a later announced batch uses are admitted when first read from the disk (over
// the prefilled hottest rows no batch uses), so that batch reads none from the disk.
TEST_F(GpuDiskTierTest, TheLookaheadCacheServesAnnouncedBatches) {
  internal::ScopedCudaEmulation emulated(internal::parse_emulated_devices("2", "all"));
  FeatureStoreOptions options =
      over(SourceReads::kDisk, 10 * kRowBytes, {0, 1}, std::nullopt, 80 * kRowBytes);
  options.cache_policy = CachePolicy::kLookahead;
  const FeatureStore store = FeatureStore::from_npy(file_, options);
  ASSERT_TRUE(store.wants_lookahead());
  std::vector<int64_t> batch(60);
  std::iota(batch.begin(), batch.end(), int64_t{300});
  const std::vector<std::byte> expected = cpu_rows(batch);
  std::vector<std::byte> got(expected.size());
  store.announce_batch(1, batch);
  store.announce_batch(2, batch);
  store.begin_batch(1);
  const int64_t before = store.disk_stats().misses;
  store.gather(batch, got.data(), {.device = 1});
  EXPECT_EQ(got, expected);
  EXPECT_EQ(store.disk_stats().misses - before, 60);
  store.begin_batch(2);
  std::fill(got.begin(), got.end(), std::byte{0});
  store.gather(batch, got.data(), {.device = 0});
  EXPECT_EQ(got, expected);
  EXPECT_EQ(store.disk_stats().misses - before, 60);  // all 60 from the row cache
}

}  // namespace
}  // namespace volley
