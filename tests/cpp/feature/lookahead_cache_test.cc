// The kLookahead row cache of a disk tier: the right rows under every policy, and the hits of
// a known trace equal to Belady within the window (cache_simulation.h).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "test_util.h"
#include "volley/core/error.h"
#include "volley/feature/cache_simulation.h"
#include "volley/feature/feature_store.h"
#include "volley/graph/csr.h"
#include "volley/loader/neighbor_loader.h"

namespace volley {
namespace {

constexpr int64_t kRows = 40;
constexpr int64_t kWidth = 16;  // 64-byte rows

// A float32 [kRows, kWidth] .npy whose row r holds r * 1000 + column.
std::string write_matrix(const std::string& dir) {
  std::vector<float> values(static_cast<size_t>(kRows * kWidth));
  for (int64_t r = 0; r < kRows; ++r) {
    for (int64_t c = 0; c < kWidth; ++c)
      values[static_cast<size_t>(r * kWidth + c)] = static_cast<float>(r * 1000 + c);
  }
  std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': (40, 16), }";
  header.append(128 - 10 - header.size() - 1, ' ');
  header.push_back('\n');
  std::string bytes = std::string("\x93NUMPY\x01\x00", 8);
  bytes.push_back(static_cast<char>(header.size() & 0xff));
  bytes.push_back(static_cast<char>(header.size() >> 8));
  bytes += header;
  const std::string path = dir + "/x.npy";
  const int fd = ::open(path.c_str(), O_CREAT | O_TRUNC | O_WRONLY, 0644);
  EXPECT_GE(fd, 0);
  EXPECT_EQ(::write(fd, bytes.data(), bytes.size()), static_cast<ssize_t>(bytes.size()));
  const auto data_bytes = static_cast<ssize_t>(values.size() * sizeof(float));
  EXPECT_EQ(::write(fd, values.data(), values.size() * sizeof(float)), data_bytes);
  ::close(fd);
  return path;
}

FeatureStore open_store(const std::string& path, CachePolicy policy, size_t cache_bytes,
                        const std::vector<int64_t>& hot) {
  FeatureStoreOptions options;
  options.source_reads = SourceReads::kDisk;
  options.cache_policy = policy;
  options.cache_bytes = cache_bytes;
  if (!hot.empty()) options.hot_order = Array::from_vector(hot);  // empty: id order
  return FeatureStore::from_npy(path, options);
}

void expect_rows(const FeatureStore& store, const std::vector<int64_t>& ids) {
  const Array out = store.gather(ids);
  for (size_t i = 0; i < ids.size(); ++i) {
    for (int64_t c = 0; c < kWidth; ++c) {
      ASSERT_EQ(out.data<float>()[i * kWidth + static_cast<size_t>(c)],
                static_cast<float>(ids[i] * 1000 + c))
          << "row " << ids[i];
    }
  }
}

std::vector<int64_t> shuffled_rows(uint64_t seed) {
  std::vector<int64_t> order(kRows);
  std::iota(order.begin(), order.end(), 0);
  std::shuffle(order.begin(), order.end(), std::mt19937_64(seed));
  return order;
}

TEST(LookaheadCache, HitsEqualBeladyWithinTheWindow) {
  TempDir dir;
  const std::string path = write_matrix(dir.path());
  std::mt19937_64 rng(11);
  for (int round = 0; round < 6; ++round) {
    const std::vector<int64_t> hot = shuffled_rows(rng());
    std::vector<int64_t> rank(kRows);
    for (size_t r = 0; r < hot.size(); ++r)
      rank[static_cast<size_t>(hot[r])] = static_cast<int64_t>(r);
    std::vector<std::vector<int64_t>> trace(round == 5 ? 2500 : 60);  // 2500: heap compaction
    for (auto& batch : trace) batch = {static_cast<int64_t>(rng() % (round % 2 ? 12 : kRows))};
    const int64_t capacity = 2 + round;
    const int64_t window = round % 3 + 1;
    const FeatureStore store =
        open_store(path, CachePolicy::kLookahead, static_cast<size_t>(capacity) * 64, hot);
    ASSERT_TRUE(store.wants_lookahead());
    const int64_t n = static_cast<int64_t>(trace.size());
    for (int64_t b = 1; b <= window && b < n; ++b) store.announce_batch(b, trace[b]);
    for (int64_t b = 0; b < n; ++b) {
      store.begin_batch(b);
      if (b + window < n) store.announce_batch(b + window, trace[b + window]);
      expect_rows(store, trace[static_cast<size_t>(b)]);
    }
    const std::vector<int64_t> prefill(hot.begin(), hot.begin() + capacity);
    const int64_t expected = cache_hits_window_belady(
        trace, capacity, {.window = window, .bypass = true, .rank = &rank, .prefill = prefill});
    EXPECT_GT(expected, 0) << "round " << round;  // a trace where the cache matters
    EXPECT_EQ(store.disk_stats().hits, expected) << "round " << round;
    EXPECT_EQ(store.disk_stats().hits + store.disk_stats().misses, n);
  }
}

TEST(LookaheadCache, EveryPolicyGathersTheRightRows) {
  TempDir dir;
  const std::string path = write_matrix(dir.path());
  std::mt19937_64 rng(4);
  for (const CachePolicy policy :
       {CachePolicy::kStatic, CachePolicy::kDynamic, CachePolicy::kLookahead}) {
    for (const size_t cache_bytes : {size_t{0}, size_t{64}, size_t{64 * 7}, size_t{1} << 20}) {
      const std::vector<int64_t> hot =
          rng() % 3 == 0 ? std::vector<int64_t>{} : shuffled_rows(rng());
      const FeatureStore store = open_store(path, policy, cache_bytes, hot);
      for (int64_t b = 0; b < 20; ++b) {
        std::vector<int64_t> ids(1 + rng() % 9);
        for (auto& id : ids) id = static_cast<int64_t>(rng() % kRows);
        store.announce_batch(b + 2, ids);  // a wrong forecast changes hits, never the rows
        store.begin_batch(b);
        expect_rows(store, ids);
      }
    }
  }
}

TEST(LookaheadCache, AnnouncingABadIdNamesIt) {
  TempDir dir;
  const FeatureStore store =
      open_store(write_matrix(dir.path()), CachePolicy::kLookahead, 256, shuffled_rows(1));
  const std::vector<int64_t> bad = {3, kRows};
  try {
    store.announce_batch(7, bad);
    FAIL() << "no error";
  } catch (const IndexError& e) {
    EXPECT_NE(std::string(e.what()).find("row id 40"), std::string::npos) << e.what();
  }
  store.begin_batch(12345);  // never announced: nothing to do
  expect_rows(store, {3, 5});
}

TEST(LookaheadCache, TheLoaderAnnouncesItsNextBatches) {
  TempDir dir;
  const std::string path = write_matrix(dir.path());
  std::mt19937_64 rng(9);
  std::vector<int64_t> src(200), dst(200);
  for (size_t e = 0; e < src.size(); ++e) {
    src[e] = static_cast<int64_t>(rng() % kRows);
    dst[e] = static_cast<int64_t>(rng() % kRows);
  }
  const Csr graph = build_csr(Array::from_vector(src), Array::from_vector(dst), std::nullopt,
                              {.num_nodes = kRows});
  const FeatureStore plain = FeatureStore::from_npy(path, {.source_reads = SourceReads::kMapped});
  for (const int lookahead : {0, 3}) {
    for (const int threads : {1, 2}) {
      const FeatureStore store =
          open_store(path, CachePolicy::kLookahead, 6 * 64, shuffled_rows(2));
      const LoaderOptions options{.batch_size = 3,
                                  .shuffle = true,
                                  .num_threads = threads,
                                  .lookahead = lookahead,
                                  .seed = 5,
                                  .sampler = {.fanouts = {2}}};
      NeighborLoader a(graph, plain, std::nullopt, std::nullopt, options);
      NeighborLoader b(graph, store, std::nullopt, std::nullopt, options);
      for (int64_t epoch = 0; epoch < 2; ++epoch) {
        auto x = a.start_epoch(epoch);
        auto y = b.start_epoch(epoch);
        int64_t batches = 0;
        while (auto want = x->next()) {
          auto got = y->next();
          ASSERT_TRUE(got.has_value());
          ASSERT_EQ(want->nodes.to_vector<int64_t>(), got->nodes.to_vector<int64_t>());
          ASSERT_EQ(want->x.to_vector<float>(), got->x.to_vector<float>());
          ++batches;
        }
        EXPECT_FALSE(y->next().has_value());
        EXPECT_EQ(batches, 14);
      }
      const FeatureStore::DiskStats stats = store.disk_stats();
      EXPECT_GT(stats.hits, 0);
      EXPECT_GT(stats.misses, 0);
    }
  }
  LoaderOptions bad;
  bad.lookahead = -1;
  try {
    NeighborLoader loader(graph, plain, std::nullopt, std::nullopt, bad);
    FAIL() << "no error";
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("lookahead must be >= 0, got -1"), std::string::npos);
  }
}

}  // namespace
}  // namespace volley
