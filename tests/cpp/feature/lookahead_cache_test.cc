// The kLookahead row cache of a disk tier: the right rows under every policy, and the hits of
// a known trace equal to Belady within the window (cache_simulation.h).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "test_util.h"
#include "volley/core/error.h"
#include "volley/feature/cache_simulation.h"
#include "volley/feature/feature_store.h"
#include "volley/feature/internal/disk_reader.h"
#include "volley/feature/internal/lookahead_cache.h"
#include "volley/feature/internal/read_ahead.h"
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
                        const std::vector<int64_t>& hot, bool read_ahead = false) {
  FeatureStoreOptions options;
  options.read_ahead = read_ahead;
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

Csr uniform_graph(uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<int64_t> src(200), dst(200);
  for (size_t e = 0; e < src.size(); ++e) {
    src[e] = static_cast<int64_t>(rng() % kRows);
    dst[e] = static_cast<int64_t>(rng() % kRows);
  }
  return build_csr(Array::from_vector(src), Array::from_vector(dst), std::nullopt,
                   {.num_nodes = kRows});
}

void expect_same_batch(const Batch& want, const Batch& got) {
  ASSERT_EQ(want.index, got.index);
  ASSERT_EQ(want.nodes.to_vector<int64_t>(), got.nodes.to_vector<int64_t>());
  ASSERT_EQ(want.input_ids.to_vector<int64_t>(), got.input_ids.to_vector<int64_t>());
  ASSERT_EQ(want.edge_index.to_vector<int64_t>(), got.edge_index.to_vector<int64_t>());
  ASSERT_EQ(want.edge_ids.to_vector<int64_t>(), got.edge_ids.to_vector<int64_t>());
  ASSERT_EQ(want.nodes_per_hop, got.nodes_per_hop);
  ASSERT_EQ(want.edges_per_hop, got.edges_per_hop);
  const std::vector<float> x = want.x.to_vector<float>();
  const std::vector<float> y = got.x.to_vector<float>();
  ASSERT_EQ(x.size(), y.size());
  ASSERT_EQ(std::memcmp(x.data(), y.data(), x.size() * sizeof(float)), 0);  // bit-identical
}

// The loader samples each batch once (the batches ahead are kept): its batches are bit-identical
// to those of a loader without lookahead over the mapped file, for any window, thread count and
// with or without reading ahead.
TEST(LookaheadCache, TheLoaderAnnouncesItsNextBatches) {
  TempDir dir;
  const std::string path = write_matrix(dir.path());
  const Csr graph = uniform_graph(9);
  const FeatureStore plain = FeatureStore::from_npy(path, {.source_reads = SourceReads::kMapped});
  for (const bool read_ahead : {false, true}) {
    for (const int lookahead : {0, 1, 3, 8}) {
      for (const int threads : {1, 2, 3}) {
        const FeatureStore store =
            open_store(path, CachePolicy::kLookahead, 6 * 64, shuffled_rows(2), read_ahead);
        const LoaderOptions options{.batch_size = 3,
                                    .shuffle = true,
                                    .num_threads = threads,
                                    .lookahead = lookahead,
                                    .seed = 5,
                                    .sampler = {.fanouts = {2, 2}}};
        NeighborLoader a(graph, plain, std::nullopt, std::nullopt, options);
        NeighborLoader b(graph, store, std::nullopt, std::nullopt, options);
        for (int64_t epoch = 0; epoch < 2; ++epoch) {
          auto x = a.start_epoch(epoch);
          auto y = b.start_epoch(epoch);
          int64_t batches = 0;
          while (auto want = x->next()) {
            auto got = y->next();
            ASSERT_TRUE(got.has_value());
            expect_same_batch(*want, *got);
            ++batches;
          }
          EXPECT_FALSE(y->next().has_value());
          EXPECT_EQ(batches, 14);
        }
        const FeatureStore::DiskStats stats = store.disk_stats();
        EXPECT_GT(stats.hits, 0);
        EXPECT_GT(stats.misses + stats.read_ahead, 0);
        if (!read_ahead) EXPECT_EQ(stats.read_ahead, 0);
      }
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

// The read-ahead thread, on its own: an announced batch's rows that the policy admits are read
// into free or evictable slots, and the batch's gather then finds them cached.
TEST(ReadAhead, ReadsAnAnnouncedBatchIntoTheCache) {
  TempDir dir;
  const std::string path = write_matrix(dir.path());
  const feature_internal::DiskReader reader(path, 128, kWidth * 4, kRows);
  std::vector<int64_t> rank(kRows);
  std::iota(rank.begin(), rank.end(), 0);  // hot order = id order
  feature_internal::LookaheadCache cache(kWidth * 4, 8 * kWidth * 4, rank);
  cache.prefill(reader, std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6, 7});
  feature_internal::ReadAhead ahead(reader, cache, kWidth * 4);
  // Batch 1 uses rows 0, 20, 21, 22 (20-22 missing, admitted over rows no batch uses); batch 2
  // uses 30..39 (ten rows: more than the slots not needed sooner: only five are admitted).
  const std::vector<int64_t> one = {0, 20, 21, 22};
  std::vector<int64_t> two(10);
  std::iota(two.begin(), two.end(), 30);
  cache.announce(1, one);
  ahead.request(1, one);
  cache.announce(2, two);
  ahead.request(2, two);
  ahead.drain();
  EXPECT_EQ(ahead.failed_reads(), 0);
  EXPECT_EQ(ahead.rows_read(), 3 + 4);  // 8 slots: 0, 20, 21, 22 and four of batch 2
  std::vector<float> out(4 * kWidth);
  std::vector<int64_t> ids = one;
  std::vector<std::byte*> into;
  for (size_t i = 0; i < ids.size(); ++i)
    into.push_back(reinterpret_cast<std::byte*>(out.data() + i * kWidth));
  cache.begin(1);
  EXPECT_EQ(cache.take_cached(ids, into), 4);  // every row of batch 1 is cached
  for (size_t i = 0; i < one.size(); ++i)
    EXPECT_EQ(out[i * kWidth + 1], static_cast<float>(one[i] * 1000 + 1));
  // A batch settled before its read starts is dropped; a request for it afterwards too.
  ahead.settle(5);
  ahead.request(4, one);
  ahead.drain();
  EXPECT_EQ(ahead.rows_read(), 7);
  // Batches more than kAheadBatches past the latest begun wait; at most kMaxQueued are queued
  // (the rest are dropped, never blocking the caller).
  constexpr auto kQueued = static_cast<int64_t>(feature_internal::ReadAhead::kMaxQueued);
  for (int64_t b = 8; b < 8 + kQueued + 10; ++b) ahead.request(b, std::vector<int64_t>{b % kRows});
  ahead.drain();
  EXPECT_EQ(ahead.rows_read(), 7);  // 8 > 5 + 2: not read yet
  EXPECT_EQ(ahead.dropped(), 10);
  // Beginning batch 6 lets batch 8 be read: row 8, admitted over row 22 (no use, coldest).
  ahead.settle(6);
  ahead.drain();
  EXPECT_EQ(ahead.rows_read(), 8);
}

// A read ahead that fails (the file changed on disk) frees its slots and is dropped: the gather
// of the batch that needs the rows raises the error, naming the file, and nothing hangs.
TEST(ReadAhead, AFailedReadSurfacesAtTheBatchThatNeedsTheRows) {
  TempDir dir;
  const std::string path = write_matrix(dir.path());
  {
    const feature_internal::DiskReader reader(path, 128, kWidth * 4, kRows);
    std::vector<int64_t> rank(kRows);
    std::iota(rank.begin(), rank.end(), 0);
    feature_internal::LookaheadCache cache(kWidth * 4, 4 * kWidth * 4, rank);
    feature_internal::ReadAhead ahead(reader, cache, kWidth * 4);
    const FeatureStore store = open_store(path, CachePolicy::kLookahead, 4 * 64, {}, true);
    ASSERT_EQ(::truncate(path.c_str(), 128 + 20 * kWidth * 4), 0);
    const std::vector<int64_t> batch = {30, 31, 32};
    cache.announce(1, batch);
    ahead.request(1, batch);
    ahead.drain();
    EXPECT_EQ(ahead.failed_reads(), 1);
    EXPECT_EQ(ahead.rows_read(), 0);
    // The slots came back: a later insert is admitted.
    const std::vector<float> row(kWidth, 1.0f);
    const std::vector<const std::byte*> rows(3, reinterpret_cast<const std::byte*>(row.data()));
    cache.insert(batch, rows);
    std::vector<int64_t> ids = batch;
    std::vector<float> out(3 * kWidth);
    std::vector<std::byte*> into;
    for (size_t i = 0; i < 3; ++i)
      into.push_back(reinterpret_cast<std::byte*>(out.data() + i * kWidth));
    EXPECT_EQ(cache.take_cached(ids, into), 3);
    // Through the store: the read ahead fails quietly, the gather raises.
    store.announce_batch(1, batch);
    store.begin_batch(1);
    try {
      store.gather(batch);
      FAIL() << "no error";
    } catch (const IoError& e) {
      EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
    }
  }
  // Through the loader, with reading ahead: the epoch raises at a batch and ends; no hang.
  const std::string again = write_matrix(dir.path());
  const Csr graph = uniform_graph(5);
  const FeatureStore store = open_store(again, CachePolicy::kLookahead, 4 * 64, {}, true);
  ASSERT_EQ(::truncate(again.c_str(), 128 + 20 * kWidth * 4), 0);
  NeighborLoader loader(
      graph, store, std::nullopt, std::nullopt,
      {.batch_size = 4, .num_threads = 2, .lookahead = 4, .sampler = {.fanouts = {3}}});
  auto epoch = loader.start_epoch(0);
  bool raised = false;
  try {
    while (epoch->next()) {
    }
  } catch (const IoError& e) {
    raised = true;
    EXPECT_NE(std::string(e.what()).find(again), std::string::npos) << e.what();
  }
  EXPECT_TRUE(raised);
}

}  // namespace
}  // namespace volley
