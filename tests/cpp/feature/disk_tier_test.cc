// The disk tier (io_uring / pread, O_DIRECT), its row caches, and opening files larger than RAM.
#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "test_util.h"
#include "volley/core/buffer.h"
#include "volley/core/error.h"
#include "volley/core/half.h"
#include "volley/feature/feature_store.h"
#include "volley/feature/internal/disk_tier.h"
#include "volley/graph/dataset.h"
#include "volley/graph/io/npy.h"

namespace volley {
namespace {

using ::testing::HasSubstr;

// Writes an .npy header for a float32 [rows, width] matrix and sizes the file to hold it with
// ftruncate: the rows read as zeros and cost no disk (a sparse file).
void write_sparse_npy(const std::string& path, int64_t rows, int64_t width) {
  std::string dict =
      fmt::format("{{'descr': '<f4', 'fortran_order': False, 'shape': ({}, {}), }}", rows, width);
  const size_t unpadded = 10 + dict.size() + 1;
  dict.append((64 - unpadded % 64) % 64, ' ');
  dict.push_back('\n');
  std::string header = "\x93NUMPY";
  header.push_back('\x01');
  header.push_back('\x00');
  const auto length = static_cast<uint16_t>(dict.size());
  header.push_back(static_cast<char>(length & 0xff));
  header.push_back(static_cast<char>(length >> 8));
  header += dict;
  const int fd = ::open(path.c_str(), O_CREAT | O_TRUNC | O_WRONLY, 0644);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::write(fd, header.data(), header.size()), static_cast<ssize_t>(header.size()));
  ASSERT_EQ(::ftruncate(fd, static_cast<off_t>(header.size() + rows * width * 4)), 0);
  ::close(fd);
}

// Writes row `id` of a float32 matrix of `width` columns whose data starts at byte 128.
void write_row(const std::string& path, int64_t id, int64_t width, float value) {
  std::vector<float> row(static_cast<size_t>(width));
  std::iota(row.begin(), row.end(), value);
  const int fd = ::open(path.c_str(), O_WRONLY);
  ASSERT_GE(fd, 0);
  const off_t at = 128 + static_cast<off_t>(id * width * 4);
  ASSERT_EQ(::pwrite(fd, row.data(), row.size() * 4, at), static_cast<ssize_t>(row.size() * 4));
  ::close(fd);
}

Array random_matrix(int64_t rows, int64_t width, uint64_t seed) {
  Array matrix = Array::empty(DType::kFloat32, {rows, width});
  std::mt19937_64 rng(seed);
  for (int64_t i = 0; i < rows * width; ++i) {
    matrix.data<float>()[i] = static_cast<float>(static_cast<int>(rng() % 4001) - 2000) / 4.0f;
  }
  return matrix;
}

std::vector<int64_t> random_ids(int64_t count, int64_t rows, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<int64_t> ids(static_cast<size_t>(count));
  for (auto& id : ids) id = static_cast<int64_t>(rng() % static_cast<uint64_t>(rows));
  return ids;
}

class DiskTierTest : public TempDirTest {};

// 64 GiB of rows, larger than the RAM of the CI machine and its commit limit: opening it maps
// read-only (nothing charged), and the default options read it through the disk tier.
TEST_F(DiskTierTest, OpensASparse64GiBFileAndGathersRows) {
  const std::string file = path("huge.npy");
  const int64_t width = 800;
  const int64_t rows = (int64_t{64} << 30) / (width * 4);
  write_sparse_npy(file, rows, width);
  write_row(file, 7, width, 1.0f);
  write_row(file, rows - 1, width, 100.0f);

  const Buffer map = Buffer::map_file(file);
  EXPECT_EQ(map.size(), static_cast<size_t>(128 + rows * width * 4));
  EXPECT_FALSE(map.writable());
  const Buffer view = Buffer::map_file(file, 0, Buffer::npos, MapMode::kCopyOnWrite);
  EXPECT_TRUE(view.writable());

  const FeatureStore store = FeatureStore::from_npy(file);
  EXPECT_THAT(store.describe(), HasSubstr("disk"));
  EXPECT_FALSE(store.disk_io().empty());
  const std::vector<int64_t> ids = {rows - 1, 3, 7, rows / 2, 7};
  const Array out = store.gather(ids);
  for (int64_t c = 0; c < width; c += 97) {
    EXPECT_EQ(out.data<float>()[0 * width + c], 100.0f + static_cast<float>(c));
    EXPECT_EQ(out.data<float>()[1 * width + c], 0.0f);
    EXPECT_EQ(out.data<float>()[2 * width + c], 1.0f + static_cast<float>(c));
    EXPECT_EQ(out.data<float>()[3 * width + c], 0.0f);
    EXPECT_EQ(out.data<float>()[4 * width + c], 1.0f + static_cast<float>(c));
  }
  // The same file through the map, as asked.
  const FeatureStore mapped = FeatureStore::from_npy(file, {.source_reads = SourceReads::kMapped});
  EXPECT_TRUE(mapped.disk_io().empty());
  EXPECT_EQ(mapped.gather(std::vector<int64_t>{rows - 1}).data<float>()[5], 105.0f);
}

// The disk tier gives the same rows as the map, for io_uring and pread, every cache policy,
// duplicates, unsorted ids, conversion and many threads.
TEST_F(DiskTierTest, MatchesTheMappedGather) {
  const std::string file = path("x.npy");
  const int64_t rows = 3000;
  const int64_t width = 37;  // rows straddle 4 KiB blocks
  const Array matrix = random_matrix(rows, width, 5);
  write_npy(file, matrix);
  const FeatureStore reference =
      FeatureStore::from_npy(file, {.source_reads = SourceReads::kMapped});
  std::vector<int64_t> ids = random_ids(5000, rows, 9);
  ids.push_back(0);
  ids.push_back(rows - 1);
  Array hot = Array::empty(DType::kInt64, {100});
  for (int64_t i = 0; i < 100; ++i) hot.data<int64_t>()[i] = (i * 31) % rows;
  for (const bool uring : {true, false}) {
    for (const CachePolicy policy : {CachePolicy::kStatic, CachePolicy::kDynamic}) {
      for (const size_t cache : {size_t{0}, size_t{200} * width * 4}) {
        SCOPED_TRACE(
            fmt::format("io_uring {} policy {} cache {}", uring, static_cast<int>(policy), cache));
        const FeatureStore store = FeatureStore::from_npy(file, {.hot_order = hot,
                                                                 .source_reads = SourceReads::kDisk,
                                                                 .cache_bytes = cache,
                                                                 .cache_policy = policy,
                                                                 .allow_io_uring = uring});
        EXPECT_EQ(store.disk_io().find("io_uring") == 0, uring);
        for (int repeat = 0; repeat < 2; ++repeat) {
          for (const int threads : {1, 0}) {
            const Array got = store.gather(ids, {.threads = threads});
            const Array want = reference.gather(ids);
            ASSERT_EQ(std::memcmp(got.raw_data(), want.raw_data(), want.nbytes()), 0);
          }
        }
        const Array half = store.gather(ids, {.out_dtype = DType::kFloat16});
        const Array want_half = reference.gather(ids, {.out_dtype = DType::kFloat16});
        ASSERT_EQ(std::memcmp(half.raw_data(), want_half.raw_data(), want_half.nbytes()), 0);
        const auto stats = store.disk_stats();
        EXPECT_EQ(stats.hits + stats.misses, static_cast<int64_t>(ids.size()) * 5);
        EXPECT_EQ(stats.hits > 0, cache > 0);
      }
    }
  }
}

// A forked child (DataLoader workers, torch.multiprocessing) reads through its own ring, not the
// parent's, and both get the right rows.
TEST_F(DiskTierTest, AForkedChildReadsThroughItsOwnRing) {
  const std::string file = path("x.npy");
  const Array matrix = random_matrix(1000, 40, 11);
  write_npy(file, matrix);
  const FeatureStore store =
      FeatureStore::from_npy(file, {.source_reads = SourceReads::kDisk, .cache_bytes = 0});
  const std::vector<int64_t> ids = random_ids(700, 1000, 4);
  auto matches = [&] {
    const Array got = store.gather(ids, {.threads = 1});
    for (size_t i = 0; i < ids.size(); ++i) {
      if (std::memcmp(got.raw_data() + i * 160, matrix.raw_data() + ids[i] * 160, 160) != 0) {
        return false;
      }
    }
    return true;
  };
  ASSERT_TRUE(matches());  // the parent's thread ring exists now
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) _exit(matches() && matches() ? 0 : 1);
  const bool parent_ok = matches();
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  EXPECT_TRUE(parent_ok);
}

TEST_F(DiskTierTest, BadFilesRaiseClearErrors) {
  const std::string file = path("x.npy");
  write_npy(file, random_matrix(512, 16, 3));
  const FeatureStore store = FeatureStore::from_npy(file, {.source_reads = SourceReads::kDisk});
  ASSERT_EQ(::truncate(file.c_str(), 1000), 0);  // changed on disk after open
  const std::string message = message_of<Error>([&] { store.gather(std::vector<int64_t>{500}); });
  EXPECT_THAT(message, HasSubstr("changed on disk"));
  EXPECT_THAT(message, HasSubstr(file));

  // Not a mapped file.
  EXPECT_THAT(message_of<Error>([&] {
                FeatureStore::build(random_matrix(4, 2, 1), {.source_reads = SourceReads::kDisk});
              }),
              HasSubstr("the disk tier reads a mapped .npy file"));
  // Missing.
  EXPECT_THAT(message_of<Error>([&] { FeatureStore::from_npy(path("missing.npy")); }),
              HasSubstr("missing.npy"));
  // A truncated file does not open.
  EXPECT_THAT(message_of<Error>(
                  [&] { FeatureStore::from_npy(file, {.source_reads = SourceReads::kDisk}); }),
              HasSubstr("truncated"));
}

// The topology is read into memory when it fits the budget (feature I/O cannot evict it), and
// mapped like the other arrays when it does not; the features stay mapped either way.
TEST_F(DiskTierTest, TheTopologyStaysResidentWithinItsBudget) {
  Dataset dataset;
  dataset.name = "tiny";
  dataset.graph = Csr::from_arrays(Array::from_vector(std::vector<int64_t>{0, 1, 2, 3}),
                                   Array::from_vector(std::vector<int64_t>{1, 2, 0}));
  dataset.features = random_matrix(3, 4, 1);
  save_dataset(dataset, dir_);
  const Dataset resident = load_dataset(dir_);
  EXPECT_EQ(resident.graph.indices().buffer().location(), Location::kHost);
  EXPECT_EQ(resident.graph.indptr().buffer().location(), Location::kHost);
  EXPECT_EQ(resident.features->buffer().location(), Location::kMappedFile);
  const Dataset mapped = load_dataset(dir_, {.resident_graph_bytes = 0});
  EXPECT_EQ(mapped.graph.indices().buffer().location(), Location::kMappedFile);
}

TEST(SieveCacheTest, KeepsVisitedRowsAndEvictsTheOthers) {
  const size_t row_bytes = 8;
  feature_internal::SieveCache cache(100, row_bytes, 3 * row_bytes);
  ASSERT_EQ(cache.capacity(), 3);
  std::vector<int64_t> values(100);
  std::iota(values.begin(), values.end(), 1000);
  auto insert = [&](int64_t id) {
    const std::byte* row = reinterpret_cast<const std::byte*>(&values[static_cast<size_t>(id)]);
    cache.insert(std::span<const int64_t>(&id, 1), std::span<const std::byte* const>(&row, 1));
  };
  int64_t got = 0;
  auto has = [&](int64_t id) { return cache.read(id, reinterpret_cast<std::byte*>(&got)); };
  insert(1);
  insert(2);
  insert(3);
  EXPECT_TRUE(has(1));  // visited
  EXPECT_EQ(got, 1001);
  insert(4);  // the hand passes 1 (visited) and evicts 2
  EXPECT_FALSE(has(2));
  EXPECT_TRUE(has(1));
  EXPECT_TRUE(has(3));
  EXPECT_TRUE(has(4));
  EXPECT_EQ(got, 1004);
  EXPECT_FALSE(has(50));
}

}  // namespace
}  // namespace volley
