#include "volley/graph/io/npy.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <zlib.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>

#include "test_util.h"
#include "volley/core/parallel.h"

namespace volley {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

class NpyTest : public TempDirTest {
 protected:
  NpyTest() : TempDirTest("volley-npy-test") {}

  void write_bytes(const std::string& file, const std::string& bytes) const {
    std::ofstream(path(file), std::ios::binary) << bytes;
  }

  std::string read_bytes(const std::string& file) const {
    std::ifstream stream(path(file), std::ios::binary);
    return {std::istreambuf_iterator<char>(stream), {}};
  }

  // The message of the IoError that reading `file` throws (both read paths must agree).
  std::string read_error(const std::string& file) const {
    std::string messages[2];
    for (int mapped = 0; mapped < 2; ++mapped) {
      try {
        read_npy(path(file), mapped == 1);
        ADD_FAILURE() << "reading " << file << " did not throw";
      } catch (const IoError& error) {
        messages[mapped] = error.what();
      }
    }
    EXPECT_EQ(messages[0], messages[1]);
    return messages[1];
  }
};

// An .npy image with a hand-written header dict (padded to 16 bytes, as old numpy did).
std::string npy_image(int major, const std::string& dict, const std::string& data) {
  const size_t prefix = major == 1 ? 10 : 12;
  std::string header = dict;
  while ((prefix + header.size() + 1) % 16 != 0) header.push_back(' ');
  header.push_back('\n');
  std::string image = "\x93NUMPY";
  image.push_back(static_cast<char>(major));
  image.push_back(0);
  for (size_t i = 0; i < prefix - 8; ++i)
    image.push_back(static_cast<char>(header.size() >> (8 * i)));
  return image + header + data;
}

std::string int32_data(std::initializer_list<int32_t> values) {
  std::string data;
  for (int32_t v : values) data.append(reinterpret_cast<const char*>(&v), sizeof(v));
  return data;
}

Array random_array(DType dtype, std::vector<int64_t> shape, uint32_t seed) {
  Array array = Array::empty(dtype, std::move(shape));
  std::mt19937 rng(seed);
  auto* bytes = reinterpret_cast<uint8_t*>(array.raw_data());
  for (size_t i = 0; i < array.nbytes(); ++i) bytes[i] = static_cast<uint8_t>(rng());
  if (dtype == DType::kBool) {
    for (size_t i = 0; i < array.nbytes(); ++i) bytes[i] &= 1;
  }
  return array;
}

TEST_F(NpyTest, RoundTripsEveryDtypeAndShape) {
  const DType dtypes[] = {DType::kBool,    DType::kInt8,    DType::kUInt8,
                          DType::kInt16,   DType::kInt32,   DType::kInt64,
                          DType::kFloat16, DType::kFloat32, DType::kFloat64};
  const std::vector<std::vector<int64_t>> shapes = {{}, {0}, {7}, {3, 5}, {2, 0, 4}, {2, 3, 4}};
  uint32_t seed = 1;
  for (DType dtype : dtypes) {
    for (const auto& shape : shapes) {
      SCOPED_TRACE(fmt::format("{} [{}]", dtype_name(dtype), fmt::join(shape, ", ")));
      const Array original = random_array(dtype, shape, seed++);
      write_npy(path("a.npy"), original);
      for (bool mapped : {true, false}) {
        const Array loaded = read_npy(path("a.npy"), mapped);
        EXPECT_EQ(loaded.dtype(), dtype);
        EXPECT_EQ(loaded.shape(), shape);
        ASSERT_EQ(loaded.nbytes(), original.nbytes());
        if (original.nbytes() > 0) {
          EXPECT_EQ(std::memcmp(loaded.raw_data(), original.raw_data(), original.nbytes()), 0);
        }
        if (mapped && original.nbytes() > 0) {
          EXPECT_EQ(loaded.buffer().location(), Location::kMappedFile);
        }
      }
    }
  }
}

TEST_F(NpyTest, WritesNumpyStyleVersion1Headers) {
  write_npy(path("a.npy"), Array::from_vector<int64_t>({1, 2, 3}));
  const std::string bytes = read_bytes("a.npy");
  ASSERT_GE(bytes.size(), 64u + 24u);
  EXPECT_EQ(bytes.substr(0, 8), std::string("\x93NUMPY\x01\x00", 8));
  const size_t header_end =
      10 + static_cast<uint8_t>(bytes[8]) + 256u * static_cast<uint8_t>(bytes[9]);
  EXPECT_EQ(header_end % 64, 0u) << "data must start 64-byte aligned, as numpy writes it";
  EXPECT_EQ(bytes[header_end - 1], '\n');
  EXPECT_THAT(bytes.substr(10, header_end - 10),
              HasSubstr("{'descr': '<i8', 'fortran_order': False, 'shape': (3,), }"));
  EXPECT_EQ(bytes.size(), header_end + 24);
}

TEST_F(NpyTest, WritesVersion2WhenTheHeaderIsLong) {
  // 22,000 dimensions of size 1: the shape tuple alone is longer than a 2-byte length allows.
  const Array many_dims(Buffer::allocate(4), DType::kInt32, std::vector<int64_t>(22000, 1));
  *many_dims.data<int32_t>() = 42;
  write_npy(path("long.npy"), many_dims);
  EXPECT_EQ(read_bytes("long.npy")[6], '\x02');
  const Array loaded = read_npy(path("long.npy"));
  EXPECT_EQ(loaded.ndim(), 22000);
  EXPECT_EQ(*loaded.data<int32_t>(), 42);
}

TEST_F(NpyTest, ReadsVersion1To3HeadersAndQuirks) {
  const std::string data = int32_data({5, -6, 7});
  for (int major : {1, 2, 3}) {
    write_bytes(
        "v.npy",
        npy_image(major, "{'descr': '<i4', 'fortran_order': False, 'shape': (3,), }", data));
    const Array loaded = read_npy(path("v.npy"));
    EXPECT_EQ(loaded.to_vector<int32_t>(), (std::vector<int32_t>{5, -6, 7})) << major;
  }
  // Key order, double quotes, '|' and '=' byte orders, Python 2 'L' suffixes, no trailing comma.
  write_bytes("q.npy",
              npy_image(1, R"({"shape": (3L,), "fortran_order": False, "descr": "=i4"})", data));
  EXPECT_EQ(read_npy(path("q.npy")).to_vector<int32_t>(), (std::vector<int32_t>{5, -6, 7}));
  write_bytes("u.npy",
              npy_image(1, "{'descr': '|u1', 'fortran_order': False, 'shape': (2, 1), }", "ab"));
  EXPECT_EQ(read_npy(path("u.npy")).shape(), (std::vector<int64_t>{2, 1}));
}

TEST_F(NpyTest, MisalignedDataIsCopiedNotMapped) {
  // A 16-byte-padded header of 10 + 70 bytes puts int64 data at offset 80... make it 84.
  std::string dict = "{'descr': '<i8', 'fortran_order': False, 'shape': (2,), }";
  std::string header = dict + std::string(84 - 10 - dict.size() - 1, ' ') + "\n";
  std::string image = "\x93NUMPY\x01";
  image.push_back(0);
  image.push_back(static_cast<char>(header.size()));
  image.push_back(0);
  int64_t values[2] = {-1, 1LL << 40};
  image += header + std::string(reinterpret_cast<const char*>(values), sizeof(values));
  write_bytes("m.npy", image);
  const Array loaded = read_npy(path("m.npy"), /*memory_map=*/true);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(loaded.raw_data()) % 8, 0u);
  EXPECT_EQ(loaded.to_vector<int64_t>(), (std::vector<int64_t>{-1, 1LL << 40}));
}

TEST_F(NpyTest, ParsesImagesInMemory) {
  const std::string image = npy_image(
      1, "{'descr': '<i4', 'fortran_order': False, 'shape': (3,), }", int32_data({1, 2, 3}));
  const auto* bytes = reinterpret_cast<const std::byte*>(image.data());
  const NpyHeader header = parse_npy_header(bytes, image.size(), "mem");
  EXPECT_EQ(header.dtype, DType::kInt32);
  EXPECT_EQ(header.shape, std::vector<int64_t>{3});
  EXPECT_EQ(header.data_offset, image.size() - 12);
  EXPECT_EQ(parse_npy(bytes, image.size(), "mem").to_vector<int32_t>(),
            (std::vector<int32_t>{1, 2, 3}));
  EXPECT_THAT([&] { parse_npy(bytes, image.size() - 1, "mem"); },
              ::testing::ThrowsMessage<IoError>(HasSubstr("mem: data: expected 12 bytes")));
}

TEST_F(NpyTest, RejectsTruncatedFiles) {
  write_npy(path("a.npy"), Array::from_vector<float>({1, 2, 3, 4, 5, 6, 7, 8, 9, 10}));
  const std::string bytes = read_bytes("a.npy");
  write_bytes("data.npy", bytes.substr(0, bytes.size() - 3));
  EXPECT_EQ(
      read_error("data.npy"),
      path("data.npy") + ": data: expected 40 bytes for float32 (10,), found 37 (truncated file)");
  write_bytes("header.npy", bytes.substr(0, 40));
  EXPECT_EQ(read_error("header.npy"),
            path("header.npy") + ": header: expected 128 bytes, found 40 (truncated file)");
  write_bytes("tiny.npy", bytes.substr(0, 4));
  EXPECT_THAT(read_error("tiny.npy"),
              HasSubstr("header: expected at least 10 bytes, found 4 (truncated file)"));
  write_bytes("empty.npy", "");
  EXPECT_THAT(read_error("empty.npy"), HasSubstr("found 0 (truncated file)"));
  write_bytes("extra.npy", bytes + "xx");
  EXPECT_THAT(read_error("extra.npy"),
              HasSubstr(": data: expected 40 bytes for float32 (10,), found 42 (2 extra bytes)"));
}

TEST_F(NpyTest, RejectsWrongMagicAndVersion) {
  write_bytes("magic.npy", "PK\x03\x04 this is a zip, not an npy file");
  EXPECT_EQ(read_error("magic.npy"), path("magic.npy") +
                                         ": magic: expected '\\x93NUMPY', found 'PK\\x03\\x04 t' "
                                         "(not an .npy file)");
  std::string image = npy_image(1, "{'descr': '<i4', 'fortran_order': False, 'shape': (0,), }", "");
  image[6] = 4;
  write_bytes("version.npy", image);
  EXPECT_EQ(read_error("version.npy"),
            path("version.npy") + ": version: expected 1.0, 2.0 or 3.0, found 4.0");
}

TEST_F(NpyTest, RejectsUnsupportedDtypesAndOrder) {
  const std::string data = int32_data({1, 2});
  write_bytes("big.npy",
              npy_image(1, "{'descr': '>i4', 'fortran_order': False, 'shape': (2,), }", data));
  EXPECT_THAT(read_error("big.npy"),
              HasSubstr("big.npy: descr: expected a little-endian dtype ('<i4'), found '>i4' "
                        "(big-endian"));
  write_bytes("unicode.npy",
              npy_image(1, "{'descr': '<U2', 'fortran_order': False, 'shape': (1,), }", data));
  EXPECT_THAT(read_error("unicode.npy"),
              HasSubstr("unicode.npy: descr: expected one of |b1 |i1 |u1 <i2 <i4 <i8 <f2 <f4 "
                        "<f8, found '<U2'"));
  write_bytes("complex.npy",
              npy_image(1, "{'descr': '<c8', 'fortran_order': False, 'shape': (1,), }", data));
  EXPECT_THAT(read_error("complex.npy"), HasSubstr("found '<c8'"));
  write_bytes(
      "struct.npy",
      npy_image(1, "{'descr': [('a', '<i4')], 'fortran_order': False, 'shape': (2,), }", data));
  EXPECT_THAT(read_error("struct.npy"),
              HasSubstr("descr: expected a simple numeric dtype, found a structured dtype "
                        "[('a', '<i4')]"));
  write_bytes("fortran.npy",
              npy_image(1, "{'descr': '<i4', 'fortran_order': True, 'shape': (1, 2), }", data));
  EXPECT_THAT(read_error("fortran.npy"),
              HasSubstr("fortran.npy: fortran_order: expected False, found True"));
}

TEST_F(NpyTest, RejectsBadHeaders) {
  const std::string data = int32_data({1});
  const std::pair<std::string, std::string> cases[] = {
      {"{'descr': '<i4', 'fortran_order': False, }", "shape: expected a 'shape' key, found none"},
      {"{'fortran_order': False, 'shape': (1,), }", "descr: expected a 'descr' key, found none"},
      {"{'descr': '<i4', 'fortran_order': Maybe, 'shape': (1,), }",
       "fortran_order: expected True or False, found 'Maybe"},
      {"{'descr': '<i4', 'fortran_order': False, 'shape': (-1,), }",
       "shape: expected non-negative integers, found '-1,)"},
      {"{'descr': '<i4', 'fortran_order': False, 'shape': [1], }",
       "shape: expected a tuple of integers, found '[1]"},
      {"{'descr': '<i4', 'fortran_order': False, 'shape': (1,), 'extra': 1}",
       "header: expected keys 'descr', 'fortran_order' and 'shape', found 'extra'"},
      {"['descr', '<i4']", "header: expected '{', found '['descr'"},
      {"{'descr': '<i4', 'fortran_order': False, 'shape': (1,) 'x'}",
       "header: expected ',' or '}', found"},
      {"{'descr: '<i4'}", "header: expected ':', found"},
      {"{'descr': '<i4', 'fortran_order': False, 'shape': (99999999999, 99999999999, 99999999999), "
       "}",
       "shape: expected a size that fits in 64 bits"},
  };
  for (const auto& [dict, message] : cases) {
    SCOPED_TRACE(dict);
    write_bytes("bad.npy", npy_image(1, dict, data));
    EXPECT_THAT(read_error("bad.npy"), HasSubstr(path("bad.npy") + ": " + message));
  }
}

TEST_F(NpyTest, MissingFileIsAnIoError) {
  EXPECT_THAT([&] { read_npy(path("absent.npy")); },
              ::testing::ThrowsMessage<IoError>(HasSubstr("No such file or directory")));
  EXPECT_THAT([&] { read_npy(path("absent.npy"), false); },
              ::testing::ThrowsMessage<IoError>(HasSubstr("No such file or directory")));
}

TEST_F(NpyTest, WriterStreamsAndChecksTheByteCount) {
  std::vector<float> values(1000);
  for (size_t i = 0; i < values.size(); ++i) values[i] = static_cast<float>(i) * 0.5f;
  {
    NpyWriter writer(path("w.npy"), DType::kFloat32, {100, 10});
    for (size_t row = 0; row < 100; ++row) writer.write(values.data() + row * 10, 40);
    writer.close();
    EXPECT_EQ(writer.crc32(), crc32_of(values.data(), values.size() * 4));
  }
  const Array loaded = read_npy(path("w.npy"));
  EXPECT_EQ(loaded.shape(), (std::vector<int64_t>{100, 10}));
  EXPECT_EQ(loaded.to_vector<float>(), values);

  {
    NpyWriter writer(path("over.npy"), DType::kInt32, {2});
    EXPECT_THAT([&] { writer.write(values.data(), 12); },
                ::testing::ThrowsMessage<ValueError>(
                    HasSubstr("4 more bytes written than the shape needs (8 in all)")));
  }
  EXPECT_FALSE(fs::exists(path("over.npy"))) << "an incomplete file must be removed";
  {
    NpyWriter writer(path("short.npy"), DType::kInt32, {2});
    writer.write(values.data(), 4);
    EXPECT_THAT([&] { writer.close(); }, ::testing::ThrowsMessage<ValueError>(HasSubstr(
                                             "closed after 4 of the 8 bytes the shape needs")));
  }
  EXPECT_FALSE(fs::exists(path("short.npy")));
  EXPECT_THAT([&] { NpyWriter(path("bf.npy"), DType::kBFloat16, {1}); },
              ::testing::ThrowsMessage<ValueError>(HasSubstr("bfloat16 has no .npy")));
  EXPECT_THAT([&] { NpyWriter(path("no/such/dir.npy"), DType::kInt32, {1}); },
              ::testing::ThrowsMessage<IoError>(HasSubstr("cannot create")));
}

TEST(Crc32Test, MatchesZlibForAnySizeAndThreadCount) {
  const char* check = "123456789";
  EXPECT_EQ(crc32_of(check, 9), 0xcbf43926u);
  EXPECT_EQ(crc32_of(check, 0), 0u);
  std::vector<uint8_t> bytes((size_t{13} << 20) + 12345);
  std::mt19937 rng(7);
  for (auto& b : bytes) b = static_cast<uint8_t>(rng());
  const auto expected =
      static_cast<uint32_t>(crc32_z(crc32_z(0, nullptr, 0), bytes.data(), bytes.size()));
  const int threads = get_num_threads();
  for (int n : {1, 2, 5}) {
    set_num_threads(n);
    EXPECT_EQ(crc32_of(bytes.data(), bytes.size()), expected) << n << " threads";
  }
  set_num_threads(threads);
}

}  // namespace
}  // namespace volley
