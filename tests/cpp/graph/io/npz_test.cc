#include "volley/graph/io/npz.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <zlib.h>

#include <filesystem>
#include <fstream>
#include "test_util.h"

namespace volley {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::ThrowsMessage;

void put16(std::string& out, uint32_t v) {
  out.push_back(static_cast<char>(v & 0xff));
  out.push_back(static_cast<char>((v >> 8) & 0xff));
}
void put32(std::string& out, uint32_t v) {
  put16(out, v & 0xffff);
  put16(out, v >> 16);
}

std::string raw_deflate(const std::string& input) {
  z_stream stream{};
  EXPECT_EQ(deflateInit2(&stream, 6, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY), Z_OK);
  std::string out(deflateBound(&stream, input.size()), '\0');
  stream.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(input.data()));
  stream.avail_in = static_cast<uInt>(input.size());
  stream.next_out = reinterpret_cast<Bytef*>(out.data());
  stream.avail_out = static_cast<uInt>(out.size());
  EXPECT_EQ(deflate(&stream, Z_FINISH), Z_STREAM_END);
  out.resize(stream.total_out);
  deflateEnd(&stream);
  return out;
}

// A minimal zip writer (what numpy's savez / savez_compressed produce, minus timestamps).
class ZipBuilder {
 public:
  // `declared_size` (when not 0) replaces the true size in the headers; `cut` drops bytes from
  // the end of the stored data — both to make corrupt archives.
  void add(const std::string& name, const std::string& content, bool deflated,
           uint32_t declared_size = 0, size_t cut = 0) {
    const auto crc = static_cast<uint32_t>(crc32(0, reinterpret_cast<const Bytef*>(content.data()),
                                                 static_cast<uInt>(content.size())));
    std::string stored = deflated ? raw_deflate(content) : content;
    stored.resize(stored.size() - cut);
    const uint32_t size =
        declared_size != 0 ? declared_size : static_cast<uint32_t>(content.size());
    const auto offset = static_cast<uint32_t>(body_.size());
    std::string local;
    put32(local, 0x04034b50);
    put16(local, 20);
    put16(local, 0);
    put16(local, deflated ? 8 : 0);
    put32(local, 0);  // time, date
    put32(local, crc);
    put32(local, static_cast<uint32_t>(stored.size()));
    put32(local, size);
    put16(local, static_cast<uint32_t>(name.size()));
    put16(local, 0);
    body_ += local + name + stored;
    std::string entry;
    put32(entry, 0x02014b50);
    put16(entry, 20);
    put16(entry, 20);
    put16(entry, 0);
    put16(entry, deflated ? 8 : 0);
    put32(entry, 0);
    put32(entry, crc);
    put32(entry, static_cast<uint32_t>(stored.size()));
    put32(entry, size);
    put16(entry, static_cast<uint32_t>(name.size()));
    put16(entry, 0);
    put16(entry, 0);
    put16(entry, 0);
    put16(entry, 0);
    put32(entry, 0);
    put32(entry, offset);
    directory_ += entry + name;
    ++count_;
  }

  std::string finish(uint16_t entries_override = 0) const {
    std::string end;
    put32(end, 0x06054b50);
    put16(end, 0);
    put16(end, 0);
    put16(end, count_);
    put16(end, entries_override ? entries_override : count_);
    put32(end, static_cast<uint32_t>(directory_.size()));
    put32(end, static_cast<uint32_t>(body_.size()));
    put16(end, 0);
    return body_ + directory_ + end;
  }

 private:
  std::string body_;
  std::string directory_;
  uint32_t count_ = 0;
};

// An .npy image as numpy writes it (version 1.0, header padded to 64 bytes).
std::string npy_image(const std::string& descr, const std::vector<int64_t>& shape,
                      const std::string& data) {
  std::string dict = fmt::format("{{'descr': '{}', 'fortran_order': False, 'shape': ({}{}), }}",
                                 descr, fmt::join(shape, ", "), shape.size() == 1 ? "," : "");
  while ((10 + dict.size() + 1) % 64 != 0) dict.push_back(' ');
  dict.push_back('\n');
  std::string image = "\x93NUMPY\x01";
  image.push_back(0);
  put16(image, static_cast<uint32_t>(dict.size()));
  return image + dict + data;
}

template <typename T>
std::string npy_of(const std::vector<T>& values, std::vector<int64_t> shape = {}) {
  if (shape.empty()) shape = {static_cast<int64_t>(values.size())};
  const std::string data(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(T));
  return npy_image(npy_descr(dtype_of<T>()), shape, data);
}

class NpzTest : public TempDirTest {
 protected:
  NpzTest() : TempDirTest("volley-npz-test") {}

  std::string write(const std::string& name, const std::string& bytes) const {
    const std::string path = (fs::path(dir_) / name).string();
    std::ofstream(path, std::ios::binary) << bytes;
    return path;
  }
};

TEST_F(NpzTest, ReadsStoredAndDeflatedMembers) {
  ZipBuilder zip;
  zip.add("ids.npy", npy_of<int64_t>({3, 1, 4, 1, 5}), /*deflated=*/false);
  std::vector<float> big(5000);
  for (size_t i = 0; i < big.size(); ++i) big[i] = static_cast<float>(i % 17);
  zip.add("big.npy", npy_of(big, {1000, 5}), /*deflated=*/true);
  zip.add("names.npy", npy_image("<U3", {2}, std::string(24, 'a')), false);
  const std::string path = write("a.npz", zip.finish());

  const NpzFile npz = NpzFile::open(path);
  EXPECT_EQ(npz.names(), (std::vector<std::string>{"ids", "big", "names"}));
  EXPECT_TRUE(npz.contains("ids"));
  EXPECT_TRUE(npz.contains("ids.npy"));
  EXPECT_FALSE(npz.contains("idx"));
  EXPECT_FALSE(npz.members()[0].deflated);
  EXPECT_TRUE(npz.members()[1].deflated);
  EXPECT_LT(npz.members()[1].compressed_size, npz.members()[1].size);

  const Array ids = npz.read("ids");
  EXPECT_EQ(ids.to_vector<int64_t>(), (std::vector<int64_t>{3, 1, 4, 1, 5}));
  EXPECT_EQ(npz.read("ids.npy").to_vector<int64_t>(), ids.to_vector<int64_t>());
  const Array floats = npz.read("big");
  EXPECT_EQ(floats.shape(), (std::vector<int64_t>{1000, 5}));
  EXPECT_EQ(floats.to_vector<float>(), big);

  // Unicode members are listed and described, but not read.
  const NpyHeaderFields names = npz.header_fields("names");
  EXPECT_EQ(names.descr, "<U3");
  EXPECT_EQ(names.shape, std::vector<int64_t>{2});
  EXPECT_EQ(npz.header_fields("big").descr, "<f4");
  EXPECT_THAT([&] { npz.read("names"); },
              ThrowsMessage<IoError>(HasSubstr(path + ":names.npy: descr: expected one of")));
  EXPECT_THAT([&] { npz.read("labels"); },
              ThrowsMessage<IoError>(HasSubstr(
                  "member 'labels': expected one of the archive's members (ids, big, names)")));
}

TEST_F(NpzTest, DetectsCorruption) {
  const std::string a = npy_of<int32_t>({1, 2, 3, 4});
  ZipBuilder zip;
  zip.add("a.npy", a, false);
  zip.add("b.npy", npy_of<int32_t>(std::vector<int32_t>(1000, 7)), true);
  std::string bytes = zip.finish();
  const std::string good = write("good.npz", bytes);
  ASSERT_EQ(NpzFile::open(good).read("b").numel(), 1000);

  const size_t a_data = 30 + 5;  // local header, name
  std::string flipped = bytes;
  flipped[a_data + a.size() - 3] ^= 0x01;  // a data byte of the stored member a.npy
  const NpzFile corrupt = NpzFile::open(write("flipped.npz", flipped));
  EXPECT_THAT([&] { corrupt.read("a"); },
              ThrowsMessage<IoError>(HasSubstr("flipped.npz:a.npy: crc32: expected")));

  // Damage the deflated stream of b.npy (after a's local header and data).
  std::string damaged = bytes;
  const size_t b_data = a_data + a.size() + 30 + 5;
  for (size_t i = 0; i < 8; ++i) damaged[b_data + i] = static_cast<char>(0xff);
  const NpzFile broken = NpzFile::open(write("damaged.npz", damaged));
  EXPECT_THAT([&] { broken.read("b"); },
              ThrowsMessage<IoError>(HasSubstr(
                  "damaged.npz:b.npy: deflated data: expected 4128 bytes, found 0 (corrupt data: "
                  "invalid block type)")));
}

TEST_F(NpzTest, DeflatedMembersMustHaveTheirDeclaredSize) {
  const std::string image = npy_of<int32_t>(std::vector<int32_t>(1000, 7));
  ZipBuilder zip;
  zip.add("long.npy", image, true, /*declared_size=*/static_cast<uint32_t>(image.size() - 8));
  zip.add("cut.npy", image, true, 0, /*cut=*/4);
  const NpzFile npz = NpzFile::open(write("sizes.npz", zip.finish()));
  EXPECT_THAT([&] { npz.read("long"); },
              ThrowsMessage<IoError>(
                  HasSubstr("sizes.npz:long.npy: deflated data: expected 4120 bytes, found more")));
  EXPECT_THAT([&] { npz.read("cut"); },
              ThrowsMessage<IoError>(HasSubstr("sizes.npz:cut.npy: deflated data: expected 4128 "
                                               "bytes, found")));
  EXPECT_EQ(npz.header_fields("cut").descr, "<i4") << "a header is readable from a cut stream";
}

TEST_F(NpzTest, RejectsWhatItCannotRead) {
  EXPECT_THAT([&] { NpzFile::open(write("text.npz", "this is not a zip archive at all")); },
              ThrowsMessage<IoError>(HasSubstr(
                  "text.npz: expected a zip archive (.npz), found no end-of-central-directory")));
  EXPECT_THAT([&] { NpzFile::open(write("short.npz", "PK")); },
              ThrowsMessage<IoError>(HasSubstr("found a file of 2 bytes")));
  ZipBuilder zip;
  zip.add("a.npy", npy_of<int32_t>({1}), false);
  EXPECT_THAT([&] { NpzFile::open(write("zip64.npz", zip.finish(0xffff))); },
              ThrowsMessage<IoError>(HasSubstr("zip64.npz: zip64 archive")));
  const std::string whole = zip.finish();
  EXPECT_THAT([&] { NpzFile::open(write("cut.npz", whole.substr(20))); },
              ThrowsMessage<IoError>(HasSubstr("cut.npz:")));
  std::string bzip = whole;
  bzip[8] = 12;  // local header method: irrelevant; the central directory's is what counts
  const size_t directory = whole.size() - 22 - (46 + 5);
  bzip[directory + 10] = 12;
  EXPECT_THAT([&] { NpzFile::open(write("bzip.npz", bzip)); },
              ThrowsMessage<IoError>(HasSubstr(
                  "bzip.npz:a.npy: compression method: expected 0 (stored) or 8 (deflated), "
                  "found 12")));
  EXPECT_THAT([&] { NpzFile::open((fs::path(dir_) / "absent.npz").string()); },
              ThrowsMessage<IoError>(HasSubstr("No such file or directory")));
}

TEST_F(NpzTest, ReadsASparseAdjacencyGraph) {
  // 3 nodes: 0 -> 1, 0 -> 2, 2 -> 1; features 3 x 4 as a CSR matrix; labels int8.
  ZipBuilder zip;
  zip.add("adj_data.npy", npy_of<float>({1, 1, 1}), false);
  zip.add("adj_indices.npy", npy_of<int32_t>({1, 2, 1}), false);
  zip.add("adj_indptr.npy", npy_of<int32_t>({0, 2, 2, 3}), false);
  zip.add("adj_shape.npy", npy_of<int64_t>({3, 3}), false);
  zip.add("attr_data.npy", npy_of<float>({1, 2, 3}), true);
  zip.add("attr_indices.npy", npy_of<int32_t>({0, 3, 1}), true);
  zip.add("attr_indptr.npy", npy_of<int32_t>({0, 1, 2, 3}), true);
  zip.add("attr_shape.npy", npy_of<int64_t>({3, 4}), false);
  zip.add("labels.npy", npy_of<int8_t>({2, 0, 1}), false);
  zip.add("node_names.npy", npy_image("<U1", {3}, std::string(12, 'x')), false);
  const NpzGraph graph = read_npz_graph(write("g.npz", zip.finish()));
  EXPECT_EQ(graph.num_nodes, 3);
  EXPECT_EQ(graph.edges.src.to_vector<int64_t>(), (std::vector<int64_t>{0, 0, 2}));
  EXPECT_EQ(graph.edges.dst.to_vector<int64_t>(), (std::vector<int64_t>{1, 2, 1}));
  EXPECT_FALSE(graph.edges.weights.has_value()) << "all-ones values are no weights";
  ASSERT_TRUE(graph.features.has_value());
  EXPECT_EQ(graph.features->shape(), (std::vector<int64_t>{3, 4}));
  EXPECT_EQ(graph.features->to_vector<float>(),
            (std::vector<float>{1, 0, 0, 0, 0, 0, 0, 2, 0, 3, 0, 0}));
  ASSERT_TRUE(graph.labels.has_value());
  EXPECT_EQ(graph.labels->to_vector<int64_t>(), (std::vector<int64_t>{2, 0, 1}));
}

TEST_F(NpzTest, SparseGraphErrorsNameTheMember) {
  auto archive = [&](const std::string& name, std::vector<int32_t> indices,
                     std::vector<int32_t> indptr, std::vector<int64_t> labels_shape) {
    ZipBuilder zip;
    zip.add("adj_data.npy", npy_of<float>({1, 0.5f}), false);
    zip.add("adj_indices.npy", npy_of(indices), false);
    zip.add("adj_indptr.npy", npy_of(indptr), false);
    zip.add("adj_shape.npy", npy_of<int64_t>({3, 3}), false);
    zip.add("labels.npy", npy_of<int64_t>(std::vector<int64_t>(labels_shape[0], 0)), false);
    return write(name, zip.finish());
  };
  const NpzGraph weighted = read_npz_graph(archive("w.npz", {1, 2}, {0, 1, 2, 2}, {3}));
  ASSERT_TRUE(weighted.edges.weights.has_value());
  EXPECT_EQ(weighted.edges.weights->to_vector<float>(), (std::vector<float>{1, 0.5f}));
  EXPECT_THAT(
      [&] {
        read_npz_graph(archive("range.npz", {1, 3}, {0, 1, 2, 2}, {3}));
      },
      ThrowsMessage<IoError>(
          HasSubstr("range.npz:adj_indices: [1] = 3 out of range for 3 columns")));
  EXPECT_THAT(
      [&] {
        read_npz_graph(archive("ptr.npz", {1, 2}, {0, 2, 1, 2}, {3}));
      },
      ThrowsMessage<IoError>(HasSubstr("ptr.npz:adj_indptr: expected non-decreasing")));
  EXPECT_THAT(
      [&] {
        read_npz_graph(archive("len.npz", {1, 2}, {0, 1, 2}, {3}));
      },
      ThrowsMessage<IoError>(
          HasSubstr("len.npz:adj_indptr: expected 4 entries (rows + 1), found 3")));
  EXPECT_THAT(
      [&] {
        read_npz_graph(archive("labels.npz", {1, 2}, {0, 1, 2, 2}, {4}));
      },
      ThrowsMessage<IoError>(
          HasSubstr("labels.npz: labels: expected 3 rows (one per node), found 4")));
}

TEST_F(NpzTest, ReadsEdgeIndexAndSrcDstLayouts) {
  ZipBuilder edge_index;
  edge_index.add("edge_index.npy", npy_of<int64_t>({0, 1, 2, 1, 2, 0}, {2, 3}), true);
  edge_index.add("x.npy", npy_of<double>({1, 2, 3, 4, 5, 6}, {3, 2}), false);
  edge_index.add("y.npy", npy_of<int32_t>({0, 1, 0}), false);
  const NpzGraph a = read_npz_graph(write("ei.npz", edge_index.finish()));
  EXPECT_EQ(a.edges.src.to_vector<int64_t>(), (std::vector<int64_t>{0, 1, 2}));
  EXPECT_EQ(a.edges.dst.to_vector<int64_t>(), (std::vector<int64_t>{1, 2, 0}));
  EXPECT_EQ(a.num_nodes, 3);
  EXPECT_EQ(a.features->dtype(), DType::kFloat32);
  EXPECT_EQ(a.labels->to_vector<int64_t>(), (std::vector<int64_t>{0, 1, 0}));

  ZipBuilder src_dst;
  src_dst.add("src.npy", npy_of<int32_t>({4, 5}), false);
  src_dst.add("dst.npy", npy_of<int32_t>({5, 6}), false);
  const NpzGraph b = read_npz_graph(write("sd.npz", src_dst.finish()));
  EXPECT_EQ(b.edges.src.to_vector<int64_t>(), (std::vector<int64_t>{4, 5}));
  EXPECT_EQ(b.edges.dst.to_vector<int64_t>(), (std::vector<int64_t>{5, 6}));
  EXPECT_FALSE(b.num_nodes.has_value());

  ZipBuilder other;
  other.add("weights.npy", npy_of<float>({1}), false);
  EXPECT_THAT([&] { read_npz_graph(write("other.npz", other.finish())); },
              ThrowsMessage<IoError>(HasSubstr("other.npz: expected a graph (adj_indptr/"
                                               "adj_indices/adj_data/adj_shape, edge_index, or src "
                                               "and dst), found members weights")));
}

}  // namespace
}  // namespace volley
