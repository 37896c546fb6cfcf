#include "volley/feature/feature_store.h"

#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <random>
#include <string>

#include "volley/core/half.h"
#include "volley/core/parallel.h"
#include "volley/feature/gather.h"
#include "volley/graph/io/npy.h"

namespace volley {
namespace {

using ::testing::HasSubstr;

// A [rows, width] table of `dtype` with distinct, exactly representable values.
Array make_table(DType dtype, int64_t rows, int64_t width, uint64_t seed = 1) {
  Array table = Array::empty(dtype, {rows, width});
  std::mt19937_64 rng(seed);
  const size_t size = dtype_size(dtype);
  for (int64_t i = 0; i < rows * width; ++i) {
    const float value = static_cast<float>(static_cast<int>(rng() % 2001) - 1000) / 8.0f;
    std::byte* at = table.raw_data() + static_cast<size_t>(i) * size;
    switch (dtype) {
      case DType::kFloat32:
        std::memcpy(at, &value, 4);
        break;
      case DType::kFloat16: {
        const uint16_t bits = float_to_half(value);
        std::memcpy(at, &bits, 2);
        break;
      }
      case DType::kBFloat16: {
        const uint16_t bits = float_to_bfloat16(value);
        std::memcpy(at, &bits, 2);
        break;
      }
      default: {
        const uint64_t bits = rng();
        std::memcpy(at, &bits, size);
      }
    }
  }
  return table;
}

// numpy's table[ids] (rows copied byte for byte).
std::vector<std::byte> reference_gather(const Array& table, const std::vector<int64_t>& ids) {
  const size_t row_bytes = table.nbytes() / static_cast<size_t>(std::max<int64_t>(1, table.dim(0)));
  std::vector<std::byte> out(ids.size() * row_bytes);
  for (size_t i = 0; i < ids.size(); ++i) {
    std::memcpy(out.data() + i * row_bytes,
                table.raw_data() + static_cast<size_t>(ids[i]) * row_bytes, row_bytes);
  }
  return out;
}

std::vector<int64_t> random_rows(int64_t rows, size_t count, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<int64_t> ids(count);
  for (auto& id : ids) id = static_cast<int64_t>(rng() % static_cast<uint64_t>(rows));
  return ids;
}

std::string temp_path(const std::string& stem) {
  return fmt::format("/tmp/volley-feature-test-{}-{}.npy", stem, static_cast<long>(getpid()));
}

bool same_bytes(const Array& out, const std::vector<std::byte>& expected) {
  return out.nbytes() == expected.size() &&
         (expected.empty() || std::memcmp(out.raw_data(), expected.data(), expected.size()) == 0);
}

// Every way to hold the same table: one tier of each location, and mixed tiers.
std::vector<std::pair<std::string, FeatureStore>> stores_of(const Array& table,
                                                            const std::string& npy_path) {
  std::vector<std::pair<std::string, FeatureStore>> stores;
  stores.emplace_back("host", FeatureStore(table));
  stores.emplace_back("shared", FeatureStore::create_shared(table));
  if (table.dtype() != DType::kBFloat16) {
    write_npy(npy_path, table);
    stores.emplace_back("mapped", FeatureStore::from_npy(npy_path));
  }
  const int64_t n = table.dim(0);
  std::vector<int64_t> hot;
  for (int64_t i = n - 1; i >= 0; i -= 3) hot.push_back(i);
  const size_t row_bytes = table.nbytes() / static_cast<size_t>(n);
  stores.emplace_back(
      "host+source", FeatureStore::build(
                         table, {.tiers = {{.location = Location::kHost,
                                            .byte_budget = row_bytes * static_cast<size_t>(n / 4)}},
                                 .hot_order = Array::from_vector(hot)}));
  stores.emplace_back(
      "host+shared+source",
      FeatureStore::build(table,
                          {.tiers = {{.location = Location::kHost, .byte_budget = row_bytes * 10},
                                     {.location = Location::kSharedMemory,
                                      .byte_budget = row_bytes * static_cast<size_t>(n / 3)}},
                           .hot_order = Array::from_vector(hot)}));
  stores.emplace_back("host copy, id order",
                      FeatureStore::build(table, {.tiers = {{.location = Location::kHost}}}));
  if (table.dtype() != DType::kBFloat16) {
    stores.emplace_back(
        "host+mapped",
        FeatureStore::from_npy(
            npy_path, {.tiers = {{.location = Location::kHost, .byte_budget = row_bytes * 50}},
                       .hot_order = Array::from_vector(hot)}));
  }
  return stores;
}

class GatherEveryDtype : public ::testing::TestWithParam<DType> {};

TEST_P(GatherEveryDtype, EqualsFancyIndexingInEveryTier) {
  const DType dtype = GetParam();
  const Array table = make_table(dtype, 700, 13);
  const std::string path = temp_path(std::string(dtype_name(dtype)));
  const auto batches = std::vector<std::vector<int64_t>>{
      {},                         // empty
      {5},                        // one
      {3, 3, 3, 699, 0, 3},       // repeated ids, both ends
      random_rows(700, 5000, 7),  // bigger than the parallel grain
      random_rows(700, 97, 8)};
  for (const auto& [name, store] : stores_of(table, path)) {
    EXPECT_EQ(store.num_rows(), 700) << name;
    EXPECT_EQ(store.width(), 13) << name;
    EXPECT_EQ(store.dtype(), dtype) << name;
    for (const auto& ids : batches) {
      for (const int threads : {0, 1}) {
        const Array out = store.gather(ids, {.threads = threads});
        ASSERT_EQ(out.shape(), (std::vector<int64_t>{static_cast<int64_t>(ids.size()), 13}));
        EXPECT_TRUE(same_bytes(out, reference_gather(table, ids)))
            << name << ", " << ids.size() << " ids, threads " << threads;
      }
      for (const bool streaming : {false, true}) {
        GatherOptions options;
        options.streaming_stores = streaming;
        EXPECT_TRUE(same_bytes(store.gather(ids, options), reference_gather(table, ids)))
            << name << ", streaming " << streaming;
      }
    }
  }
  std::remove(path.c_str());
}

INSTANTIATE_TEST_SUITE_P(Dtypes, GatherEveryDtype,
                         ::testing::Values(DType::kFloat32, DType::kFloat16, DType::kBFloat16,
                                           DType::kInt8, DType::kUInt8, DType::kInt64),
                         [](const auto& info) { return std::string(dtype_name(info.param)); });

TEST(FeatureStore, ConversionToFloat32IsExact) {
  // Every float16 and bfloat16 bit pattern, as rows of 64 (vector and scalar tails both run).
  for (const DType dtype : {DType::kFloat16, DType::kBFloat16}) {
    Array table = Array::empty(dtype, {65536 / 64, 64});
    auto* bits = reinterpret_cast<uint16_t*>(table.raw_data());
    for (uint32_t i = 0; i < 65536; ++i) bits[i] = static_cast<uint16_t>(i);
    std::vector<int64_t> ids(65536 / 64);
    for (size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<int64_t>(ids.size() - 1 - i);
    for (const bool streaming : {false, true}) {
      GatherOptions options;
      options.out_dtype = DType::kFloat32;
      options.streaming_stores = streaming;
      const Array out = FeatureStore(table).gather(ids, options);
      const float* values = out.data<float>();
      for (size_t r = 0; r < ids.size(); ++r) {
        for (int j = 0; j < 64; ++j) {
          const uint16_t in = bits[ids[r] * 64 + j];
          const float expected =
              dtype == DType::kFloat16 ? half_to_float(in) : bfloat16_to_float(in);
          uint32_t got = float_bits(values[r * 64 + j]);
          // Signaling NaNs may come out quieted (the hardware conversion does that); the sign
          // and payload are kept.
          if (expected != expected) got &= ~0x00400000u | float_bits(expected);
          ASSERT_EQ(got, float_bits(expected))
              << dtype_name(dtype) << " bits " << in << " streaming " << streaming;
        }
      }
    }
  }
  // Odd widths: the vector loops' tails.
  const Array odd = make_table(DType::kFloat16, 50, 11);
  GatherOptions options;
  options.out_dtype = DType::kFloat32;
  const Array out = FeatureStore(odd).gather(std::vector<int64_t>{4, 49, 0}, options);
  for (int j = 0; j < 11; ++j) {
    EXPECT_EQ(out.data<float>()[11 + j],
              half_to_float(reinterpret_cast<const uint16_t*>(odd.raw_data())[49 * 11 + j]));
  }
  // Integers to float32 and int64: exact.
  for (const DType dtype : {DType::kInt8, DType::kUInt8}) {
    const Array table = make_table(dtype, 40, 7);
    const std::vector<int64_t> ids = {39, 1, 1, 20};
    GatherOptions to_float;
    to_float.out_dtype = DType::kFloat32;
    GatherOptions to_long;
    to_long.out_dtype = DType::kInt64;
    const Array floats = FeatureStore(table).gather(ids, to_float);
    const Array longs = FeatureStore(table).gather(ids, to_long);
    for (size_t i = 0; i < ids.size(); ++i) {
      for (int j = 0; j < 7; ++j) {
        const auto at = static_cast<size_t>(ids[i] * 7 + j);
        const int64_t expected = dtype == DType::kInt8
                                     ? static_cast<int64_t>(table.data<int8_t>()[at])
                                     : static_cast<int64_t>(table.data<uint8_t>()[at]);
        EXPECT_EQ(floats.data<float>()[i * 7 + j], static_cast<float>(expected));
        EXPECT_EQ(longs.data<int64_t>()[i * 7 + j], expected);
      }
    }
  }
  // float32 → float16 / bfloat16 rounds to nearest even, as numpy and torch.
  const Array floats = make_table(DType::kFloat32, 30, 9);
  for (const DType to : {DType::kFloat16, DType::kBFloat16}) {
    GatherOptions options;
    options.out_dtype = to;
    const Array out = FeatureStore(floats).gather(std::vector<int64_t>{29, 0}, options);
    const auto* got = reinterpret_cast<const uint16_t*>(out.raw_data());
    for (int j = 0; j < 9; ++j) {
      const float in = floats.data<float>()[29 * 9 + j];
      EXPECT_EQ(got[j], to == DType::kFloat16 ? float_to_half(in) : float_to_bfloat16(in));
    }
  }
}

TEST(FeatureStore, UnsupportedConversionIsAValueError) {
  GatherOptions options;
  options.out_dtype = DType::kInt8;
  try {
    FeatureStore(make_table(DType::kFloat32, 4, 2)).gather(std::vector<int64_t>{0}, options);
    FAIL() << "expected ValueError";
  } catch (const ValueError& error) {
    EXPECT_THAT(error.what(), HasSubstr("cannot gather float32 rows as int8"));
  }
}

TEST(FeatureStore, OutOfRangeIdsNameTheIdAndPosition) {
  const Array table = make_table(DType::kFloat32, 100, 4);
  const auto tiered = FeatureStore::build(
      table, {.tiers = {{.location = Location::kHost, .byte_budget = 16 * 10}},
              .hot_order = Array::from_vector(std::vector<int64_t>{99, 98, 97})});
  for (const FeatureStore& store : {FeatureStore(table), tiered}) {
    for (const int threads : {0, 1}) {
      std::vector<int64_t> ids = random_rows(100, 20000, 3);
      ids[15000] = 100;
      ids[17000] = -5;
      try {
        store.gather(ids, {.threads = threads});
        FAIL() << "expected IndexError";
      } catch (const IndexError& error) {
        EXPECT_THAT(error.what(), HasSubstr("row id 100 at position 15000 out of range"));
        EXPECT_THAT(error.what(), HasSubstr("100 rows"));
      }
      try {
        store.gather(std::vector<int64_t>{-1});
        FAIL() << "expected IndexError";
      } catch (const IndexError& error) {
        EXPECT_THAT(error.what(), HasSubstr("row id -1 at position 0"));
      }
    }
  }
  EXPECT_THROW(FeatureStore(table).locate(100), IndexError);
}

TEST(FeatureStore, HottestRowsGoToTheFirstTierInOrder) {
  const Array table = make_table(DType::kFloat32, 1000, 8);
  std::vector<int64_t> hot = {500, 7, 999, 0, 123, 42};
  const size_t row_bytes = 8 * 4;
  const auto store = FeatureStore::build(
      table, {.tiers = {{.location = Location::kHost, .byte_budget = row_bytes * 2 + 5},
                        {.location = Location::kSharedMemory, .byte_budget = row_bytes * 3}},
              .hot_order = Array::from_vector(hot)});
  ASSERT_EQ(store.tiers().size(), 3u);
  EXPECT_EQ(store.tiers()[0].location(), Location::kHost);
  EXPECT_EQ(store.tiers()[0].num_slots(), 2);
  EXPECT_EQ(store.tiers()[1].location(), Location::kSharedMemory);
  EXPECT_EQ(store.tiers()[1].num_slots(), 3);
  EXPECT_EQ(store.tiers()[2].num_slots(), 1000);  // the source matrix itself, not copied
  EXPECT_EQ(store.tiers()[2].rows().raw_data(), table.raw_data());
  EXPECT_TRUE(store.has_lookup());
  EXPECT_EQ(store.locate(500).tier, 0);
  EXPECT_EQ(store.locate(500).slot, 0);
  EXPECT_EQ(store.locate(7).slot, 1);
  EXPECT_EQ(store.locate(999).tier, 1);
  EXPECT_EQ(store.locate(0).tier, 1);
  EXPECT_EQ(store.locate(123).tier, 1);
  EXPECT_EQ(store.locate(123).slot, 2);
  EXPECT_EQ(store.locate(42).tier, 2);
  EXPECT_EQ(store.locate(42).slot, 42);
  EXPECT_EQ(store.locate(1).tier, 2);
  // Without a hot order, rows fill the tiers in id order.
  const auto by_id = FeatureStore::build(
      table, {.tiers = {{.location = Location::kHost, .byte_budget = row_bytes * 10}}});
  EXPECT_EQ(by_id.locate(9).tier, 0);
  EXPECT_EQ(by_id.locate(10).tier, 1);
  EXPECT_EQ(by_id.locate(10).slot, 10);
}

TEST(FeatureStore, NoLookupForOneTierInIdOrder) {
  const Array table = make_table(DType::kFloat32, 50, 3);
  EXPECT_FALSE(FeatureStore(table).has_lookup());
  const auto copy = FeatureStore::build(table, {.tiers = {{.location = Location::kHost}}});
  EXPECT_FALSE(copy.has_lookup());
  ASSERT_EQ(copy.tiers().size(), 1u);
  EXPECT_NE(copy.tiers()[0].rows().raw_data(), table.raw_data());
  // A permuted single tier needs the lookup.
  const auto permuted =
      FeatureStore::build(table, {.tiers = {{.location = Location::kHost}},
                                  .hot_order = Array::from_vector(std::vector<int64_t>{49})});
  EXPECT_TRUE(permuted.has_lookup());
  ASSERT_EQ(permuted.tiers().size(), 1u);
  EXPECT_EQ(permuted.locate(49).slot, 0);
  EXPECT_EQ(permuted.locate(0).slot, 1);
}

TEST(FeatureStore, RejectsBadOptions) {
  const Array table = make_table(DType::kFloat32, 10, 2);
  EXPECT_THROW(FeatureStore::build(table, {.tiers = {{.location = Location::kMappedFile}}}),
               ValueError);
  EXPECT_THROW(
      FeatureStore::build(table, {.hot_order = Array::from_vector(std::vector<int64_t>{1, 2, 1})}),
      ValueError);
  EXPECT_THROW(
      FeatureStore::build(table, {.hot_order = Array::from_vector(std::vector<int64_t>{10})}),
      IndexError);
  EXPECT_THROW(FeatureStore(Array::zeros(DType::kFloat32, {2, 2, 2})), ValueError);
  EXPECT_THROW(FeatureStore::attach_shared("/volley-no-such-segment-xyz"), IoError);
  // A plain Volley segment that is not a feature store.
  const Buffer plain = Buffer::create_shared(128);
  EXPECT_THROW(FeatureStore::attach_shared(plain.shared_name()), IoError);
}

TEST(FeatureStore, VectorStoreGathersLabels) {
  std::vector<int64_t> labels(300);
  for (size_t i = 0; i < labels.size(); ++i) labels[i] = static_cast<int64_t>(i % 7) - 1;
  const FeatureStore store(Array::from_vector(labels));
  EXPECT_EQ(store.ndim(), 1);
  EXPECT_EQ(store.width(), 1);
  const Array out = store.gather(std::vector<int64_t>{299, 0, 8});
  EXPECT_EQ(out.shape(), std::vector<int64_t>{3});
  EXPECT_EQ(out.to_vector<int64_t>(), (std::vector<int64_t>{labels[299], labels[0], labels[8]}));
  // int32 labels delivered as int64.
  std::vector<int32_t> narrow(labels.begin(), labels.end());
  GatherOptions options;
  options.out_dtype = DType::kInt64;
  EXPECT_EQ(FeatureStore(Array::from_vector(narrow))
                .gather(std::vector<int64_t>{5}, options)
                .to_vector<int64_t>(),
            std::vector<int64_t>{labels[5]});
}

TEST(FeatureStore, SharedStoreAttachedFromAnotherProcess) {
  const Array table = make_table(DType::kFloat16, 400, 9);
  const FeatureStore store = FeatureStore::create_shared(table);
  ASSERT_FALSE(store.shared_name().empty());
  const std::vector<int64_t> ids = random_rows(400, 1000, 21);
  const auto expected = reference_gather(table, ids);
  int pipe_fds[2];
  ASSERT_EQ(pipe(pipe_fds), 0);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    // The child: attach by name only, gather, report success through the exit status.
    close(pipe_fds[0]);
    int status = 1;
    try {
      const FeatureStore attached = FeatureStore::attach_shared(store.shared_name());
      GatherOptions options;
      options.threads = 1;  // no thread pool in a forked child
      const Array out = attached.gather(ids, options);
      status = attached.num_rows() == 400 && attached.width() == 9 &&
                       attached.dtype() == DType::kFloat16 && same_bytes(out, expected)
                   ? 0
                   : 2;
    } catch (...) {
      status = 3;
    }
    const char done = static_cast<char>(status);
    (void)!write(pipe_fds[1], &done, 1);
    _exit(status);
  }
  close(pipe_fds[1]);
  char done = 0;
  ASSERT_EQ(read(pipe_fds[0], &done, 1), 1);
  close(pipe_fds[0]);
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
  // And in this process too.
  EXPECT_TRUE(same_bytes(FeatureStore::attach_shared(store.shared_name()).gather(ids), expected));
}

// Resident anonymous and file-backed memory of this process, in bytes.
std::pair<int64_t, int64_t> resident_anon_and_file() {
  std::ifstream status("/proc/self/status");
  std::string key;
  int64_t anon = 0, file = 0;
  while (status >> key) {
    if (key == "RssAnon:") status >> anon;
    if (key == "RssFile:") status >> file;
  }
  return {anon * 1024, file * 1024};
}

TEST(FeatureStore, MappedTierReadsOnlyTouchedPagesWithoutCopying) {
  // 256 MiB of rows (4 KiB each: one page per row); gather 200 of them.
  const int64_t rows = 65536, width = 1024;
  const std::string path = temp_path("big");
  {
    NpyWriter writer(path, DType::kFloat32, {rows, width});
    std::vector<float> row(width);
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t j = 0; j < width; ++j) row[j] = static_cast<float>(r) + j * 0.5f;
      writer.write(row.data(), row.size() * sizeof(float));
    }
    writer.close();
  }
  // Drop the file from the page cache, so pages come from disk only when touched.
  {
    FILE* file = std::fopen(path.c_str(), "rb");
    ASSERT_NE(file, nullptr);
    posix_fadvise(fileno(file), 0, 0, POSIX_FADV_DONTNEED);
    std::fclose(file);
  }
  const auto [anon_before, file_before] = resident_anon_and_file();
  const FeatureStore store = FeatureStore::from_npy(path);
  ASSERT_EQ(store.tiers().front().location(), Location::kMappedFile);
  const std::vector<int64_t> ids = random_rows(rows, 200, 5);
  GatherOptions options;
  options.threads = 1;
  const Array out = store.gather(ids, options);
  const auto [anon_after, file_after] = resident_anon_and_file();
  for (size_t i = 0; i < ids.size(); ++i) {
    ASSERT_EQ(out.data<float>()[i * width + 3], static_cast<float>(ids[i]) + 1.5f);
  }
  const int64_t file_bytes = rows * width * 4;
  // Nothing copied: anonymous memory grew by about the output (800 KiB), not the file.
  EXPECT_LT(anon_after - anon_before, int64_t{16} << 20);
  // Only touched pages became resident: far less than the file (200 rows + read-ahead).
  EXPECT_LT(file_after - file_before, file_bytes / 4);
  std::remove(path.c_str());
}

TEST(GatherRows, KeepsItsContract) {
  const Array table = make_table(DType::kFloat32, 100, 5);
  const std::vector<int64_t> ids = random_rows(100, 3000, 2);
  std::vector<std::byte> out(ids.size() * 5 * 4);
  gather_rows(table, ids, DType::kFloat32, out.data());
  EXPECT_EQ(out, reference_gather(table, ids));
  std::fill(out.begin(), out.end(), std::byte{0});
  gather_rows_parallel(table, ids, DType::kFloat32, out.data());
  EXPECT_EQ(out, reference_gather(table, ids));
  EXPECT_THROW(gather_rows(table, std::vector<int64_t>{100}, DType::kFloat32, out.data()),
               IndexError);
}

// A mapped feature file truncated under its store: the next gather of a row past the new end
// is an IoError naming the file ("changed on disk"), on one thread and on many, not a SIGBUS
// that ends the process; rows still in the file gather as before, and a SIGBUS outside a
// guarded read still ends the process (a child shows it: by SIGBUS, or under ASan by the
// sanitizer's own handler, which the guard chains to).
TEST(FeatureStore, ATruncatedMappedFileIsAnErrorNotASignal) {
  const int64_t rows = 20000, width = 64;
  const std::string path = temp_path("truncated");
  write_npy(path, make_table(DType::kFloat32, rows, width));
  const FeatureStore store = FeatureStore::from_npy(path);
  ASSERT_EQ(store.tiers().front().location(), Location::kMappedFile);
  const std::vector<int64_t> early = {0, 1, 2, 3}, late = {0, rows - 1, 5};
  ASSERT_EQ(truncate(path.c_str(), 4096 * 4), 0);  // the header and the first rows remain
  for (int threads : {1, 4}) {
    GatherOptions options;
    options.threads = threads;
    std::vector<int64_t> many_ids(40000);
    for (size_t i = 0; i < many_ids.size(); ++i)
      many_ids[i] = static_cast<int64_t>(i * 7919) % rows;
    const std::vector<int64_t>& many = many_ids;
    for (const std::vector<int64_t>* ids : {&late, &many}) {
      try {
        store.gather(*ids, options);
        ADD_FAILURE() << "a gather past the truncated end returned";
      } catch (const IoError& error) {
        EXPECT_THAT(error.what(), ::testing::HasSubstr(path + "' changed on disk"));
      }
    }
    const Array out = store.gather(early, options);  // rows still in the file
    EXPECT_EQ(out.dim(0), 4);
  }
  const pid_t child = fork();
  if (child == 0) {
    raise(SIGBUS);  // not a guarded read: the process ends as it always did
    _exit(0);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  // Ended by the signal, or by the handler the guard replaced (a sanitizer's report and abort).
  EXPECT_FALSE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  std::remove(path.c_str());
}

}  // namespace
}  // namespace volley
