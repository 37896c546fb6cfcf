#include "volley/graph/dataset.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <sys/stat.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "test_util.h"
#include "volley/graph/io/npy.h"

namespace volley {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::ThrowsMessage;
using Json = nlohmann::json;

class DatasetTest : public ::testing::Test {
 protected:
  std::string file(const std::string& name) const { return (fs::path(dir_) / name).string(); }

  // A 4-node graph with every optional array.
  static Dataset toy() {
    const Array src = Array::from_vector<int64_t>({0, 1, 2, 3, 0});
    const Array dst = Array::from_vector<int64_t>({1, 2, 3, 0, 2});
    const Array weights = Array::from_vector<float>({1, 2, 3, 4, 5});
    Dataset dataset;
    dataset.name = "toy";
    dataset.graph = build_csr(src, dst, weights, {.num_nodes = 4});
    Array features = Array::empty(DType::kFloat32, {4, 3});
    for (int64_t i = 0; i < 12; ++i) features.data<float>()[i] = static_cast<float>(i) * 0.25f;
    dataset.features = features;
    dataset.labels = Array::from_vector<int64_t>({0, 1, 1, -1});
    dataset.num_classes = 2;
    dataset.train_idx = Array::from_vector<int64_t>({0, 1});
    dataset.val_idx = Array::from_vector<int64_t>({2});
    dataset.test_idx = Array::from_vector<int64_t>({3});
    return dataset;
  }

  Json manifest() const {
    std::ifstream stream(file("volley.json"));
    return Json::parse(stream);
  }
  void write_manifest(const Json& json) const { std::ofstream(file("volley.json")) << json.dump(); }

  // The message load_dataset throws (any volley::Error).
  std::string load_error(const DatasetLoadOptions& options = {}) const {
    try {
      load_dataset(dir_, options);
    } catch (const Error& error) {
      return error.what();
    }
    ADD_FAILURE() << "load_dataset did not throw";
    return "";
  }

  TempDir root_{"volley-dataset-test"};
  const std::string dir_ = root_ / "toy";
};

void expect_same(const Array& a, const Array& b) {
  EXPECT_EQ(a.dtype(), b.dtype());
  EXPECT_EQ(a.shape(), b.shape());
  ASSERT_EQ(a.nbytes(), b.nbytes());
  EXPECT_EQ(std::memcmp(a.raw_data(), b.raw_data(), a.nbytes()), 0);
}

TEST_F(DatasetTest, SaveLoadRoundTrip) {
  const Dataset original = toy();
  EXPECT_FALSE(is_dataset_directory(dir_));
  save_dataset(original, dir_);
  EXPECT_TRUE(is_dataset_directory(dir_));
  for (bool mapped : {true, false}) {
    SCOPED_TRACE(mapped ? "mapped" : "copied");
    const Dataset loaded = load_dataset(dir_, {.memory_map = mapped, .verify_checksums = true});
    EXPECT_EQ(loaded.name, "toy");
    EXPECT_EQ(loaded.num_classes, 2);
    EXPECT_EQ(loaded.graph.num_nodes(), 4);
    EXPECT_EQ(loaded.graph.num_edges(), 5);
    EXPECT_EQ(loaded.graph.orientation(), Orientation::kIn);
    expect_same(loaded.graph.indptr(), original.graph.indptr());
    expect_same(loaded.graph.indices(), original.graph.indices());
    expect_same(*loaded.graph.edge_ids(), *original.graph.edge_ids());
    expect_same(*loaded.graph.weights(), *original.graph.weights());
    expect_same(*loaded.features, *original.features);
    expect_same(*loaded.labels, *original.labels);
    expect_same(*loaded.train_idx, *original.train_idx);
    expect_same(*loaded.val_idx, *original.val_idx);
    expect_same(*loaded.test_idx, *original.test_idx);
    EXPECT_EQ(loaded.features->buffer().location(),
              mapped ? Location::kMappedFile : Location::kHost);
  }
  const Json json = manifest();
  EXPECT_EQ(json["format"], "volley-dataset");
  EXPECT_EQ(json["version"], 1);
  EXPECT_EQ(json["arrays"]["indptr"]["shape"], Json::array({5}));
  const Array indptr = original.graph.indptr();
  EXPECT_EQ(json["arrays"]["indptr"]["crc32"],
            fmt::format("{:08x}", crc32_of(indptr.raw_data(), indptr.nbytes())));
  EXPECT_TRUE(verify_dataset(dir_).ok());
}

TEST_F(DatasetTest, OptionalArraysMayBeMissingAndStaleOnesGo) {
  save_dataset(toy(), dir_);
  Dataset bare;
  bare.name = "bare";
  bare.graph = build_csr(Array::from_vector<int64_t>({0}), Array::from_vector<int64_t>({1}),
                         std::nullopt, {.keep_edge_ids = false});
  save_dataset(bare, dir_);
  EXPECT_FALSE(fs::exists(file("features.npy"))) << "a stale array of the old dataset remains";
  const Dataset loaded = load_dataset(dir_);
  EXPECT_EQ(loaded.name, "bare");
  EXPECT_FALSE(loaded.graph.has_edge_ids());
  EXPECT_FALSE(loaded.features.has_value());
  EXPECT_FALSE(loaded.labels.has_value());
  EXPECT_FALSE(loaded.train_idx.has_value());
  EXPECT_EQ(loaded.num_classes, 0);
}

TEST_F(DatasetTest, VerifyFindsAFlippedByte) {
  save_dataset(toy(), dir_);
  {
    std::fstream stream(file("features.npy"), std::ios::in | std::ios::out | std::ios::binary);
    stream.seekg(128 + 5);
    const char byte = static_cast<char>(stream.get());
    stream.seekp(128 + 5);
    stream.put(static_cast<char>(byte ^ 0x40));
  }
  const DatasetCheck check = verify_dataset(dir_);
  ASSERT_EQ(check.problems.size(), 1u);
  EXPECT_THAT(check.problems[0], HasSubstr(file("features.npy") + ": crc32: expected "));
  EXPECT_THAT(check.problems[0], HasSubstr("(the file is corrupt)"));
  EXPECT_THAT(load_error({.verify_checksums = true}), HasSubstr("features.npy: crc32: expected"));
  EXPECT_NO_THROW(load_dataset(dir_)) << "without verify_checksums the bytes are not read";
}

TEST_F(DatasetTest, VerifyReportsEveryProblem) {
  save_dataset(toy(), dir_);
  fs::remove(file("labels.npy"));
  fs::resize_file(file("weights.npy"), fs::file_size(file("weights.npy")) - 4);
  const DatasetCheck check = verify_dataset(dir_);
  ASSERT_EQ(check.problems.size(), 2u);
  EXPECT_THAT(check.problems[0], HasSubstr("weights.npy: data: expected 20 bytes"));
  EXPECT_THAT(check.problems[1], HasSubstr("labels.npy"));
  EXPECT_THAT(check.problems[1], HasSubstr("No such file or directory"));
}

TEST_F(DatasetTest, ManifestMismatchesAreRefusedPrecisely) {
  save_dataset(toy(), dir_);
  const Json good = manifest();
  const std::string manifest_path = file("volley.json");

  Json json = good;
  json["num_nodes"] = 5;
  write_manifest(json);
  EXPECT_EQ(load_error(), manifest_path +
                              ": arrays.indptr.shape: expected [6], found [5] (num_nodes 5, "
                              "num_edges 5)");

  json = good;
  json["arrays"]["indices"]["dtype"] = "int64";
  write_manifest(json);
  EXPECT_EQ(load_error(),
            file("indices.npy") + ": dtype: expected int64 (as volley.json says), found int32");

  json = good;
  json["arrays"]["features"]["shape"] = {4, 4};
  write_manifest(json);
  EXPECT_EQ(load_error(),
            file("features.npy") + ": shape: expected [4, 4] (as volley.json says), found [4, 3]");

  json = good;
  json["format"] = "dgl";
  write_manifest(json);
  EXPECT_EQ(load_error(), manifest_path + ": format: expected \"volley-dataset\", found \"dgl\"");

  json = good;
  json["version"] = 2;
  write_manifest(json);
  EXPECT_THAT(load_error(), HasSubstr(manifest_path + ": version: expected 1"));

  json = good;
  json.erase("num_edges");
  write_manifest(json);
  EXPECT_EQ(load_error(),
            manifest_path + ": num_edges: expected a value (it is required), found none");

  json = good;
  json["arrays"].erase("indices");
  write_manifest(json);
  EXPECT_EQ(load_error(),
            manifest_path + ": arrays.indices: expected an entry (it is required), found none");

  json = good;
  json["arrays"]["colors"] = json["arrays"]["labels"];
  write_manifest(json);
  EXPECT_THAT(load_error(), HasSubstr(manifest_path + ": arrays.colors: expected one of indptr"));

  json = good;
  json["arrays"]["labels"]["crc32"] = "xyz";
  write_manifest(json);
  EXPECT_EQ(load_error(),
            manifest_path + ": arrays.labels.crc32: expected 8 hex digits, found \"xyz\"");

  json = good;
  json["arrays"]["labels"]["file"] = "../../etc/passwd";
  write_manifest(json);
  EXPECT_THAT(load_error(), HasSubstr("arrays.labels.file: expected a file name inside the "
                                      "dataset directory"));

  json = good;
  json["num_classes"] = 1;
  write_manifest(json);
  EXPECT_EQ(load_error(), file("labels.npy") +
                              ": labels[1] = 1: expected a class in [0, 1) (num_classes) or -1 "
                              "(unlabelled)");

  std::ofstream(manifest_path) << "{\"format\": ";
  EXPECT_THAT(load_error(), HasSubstr(manifest_path + ": not valid JSON:"));

  // Found by manifest_fuzz: a number too large for a double escaped as nlohmann's out_of_range.
  std::ofstream(manifest_path) << "{\"num_nodes\": 1E400}";
  EXPECT_THAT(load_error(), HasSubstr(manifest_path + ": not valid JSON: [json.exception."
                                                      "out_of_range.406] number overflow"));

  fs::remove(manifest_path);
  EXPECT_THAT(load_error(), HasSubstr(manifest_path + ": cannot open the dataset manifest"));
  EXPECT_FALSE(is_dataset_directory(dir_));
}

TEST_F(DatasetTest, DeeplyNestedManifestIsRefusedNotACrash) {
  save_dataset(toy(), dir_);
  Json json = manifest();
  // 200 KB of brackets: nlohmann's dump (and any recursive walk) would exhaust the stack.
  std::ofstream(file("volley.json")) << std::string(100000, '[') << std::string(100000, ']');
  EXPECT_THAT(load_error(), HasSubstr(": not a Volley manifest: arrays and objects nest deeper "
                                      "than 64 levels (at byte 64)"));
  std::ofstream(file("volley.json"))
      << "{\"format\": \"volley-dataset\", \"name\": " << std::string(100000, '{')
      << std::string(100000, '}') << "}";
  EXPECT_THAT(load_error(), HasSubstr("nest deeper than 64 levels"));
  // Brackets inside strings do not count.
  json["name"] = std::string(1000, '[');
  write_manifest(json);
  EXPECT_NO_THROW(load_dataset(dir_));
}

TEST_F(DatasetTest, ManifestFileNameWithANulIsRefused) {
  save_dataset(toy(), dir_);
  Json json = manifest();
  json["arrays"]["labels"]["file"] = std::string("labels.npy\0.evil", 16);
  write_manifest(json);
  EXPECT_THAT(load_error(), HasSubstr("arrays.labels.file: expected a file name inside the "
                                      "dataset directory, found \"labels.npy\\u0000.evil\""));
}

TEST_F(DatasetTest, ErrorMessagesCutLongValues) {
  save_dataset(toy(), dir_);
  Json json = manifest();
  json["name"] = Json::array();
  for (int i = 0; i < 10000; ++i) json["name"].push_back(i);
  write_manifest(json);
  const std::string error = load_error();
  EXPECT_THAT(error, HasSubstr("name: expected a string, found [0,1,2,"));
  EXPECT_LT(error.size(), 400u);
}

TEST_F(DatasetTest, ManifestThatIsANamedPipeIsRefusedWithoutBlocking) {
  save_dataset(toy(), dir_);
  fs::remove(file("volley.json"));
  ASSERT_EQ(mkfifo(file("volley.json").c_str(), 0600), 0);
  EXPECT_THAT(load_error(), HasSubstr("volley.json: cannot read the dataset manifest: it is a "
                                      "named pipe (FIFO), not a regular file"));
  fs::remove(file("volley.json"));
  save_dataset(toy(), dir_);
  fs::remove(file("labels.npy"));
  ASSERT_EQ(mkfifo(file("labels.npy").c_str(), 0600), 0);
  EXPECT_THAT(load_error(), HasSubstr("labels.npy: cannot read the .npy file: it is a named pipe"));
}

TEST_F(DatasetTest, VerifyFindsAFlippedByteInTheNpyHeaderPadding) {
  save_dataset(toy(), dir_);
  {
    // The header dict ends well before byte 120; numpy pads it with spaces up to a newline.
    std::fstream stream(file("features.npy"), std::ios::in | std::ios::out | std::ios::binary);
    stream.seekg(120);
    const char byte = static_cast<char>(stream.get());
    ASSERT_EQ(byte, ' ');
    stream.seekp(120);
    stream.put(static_cast<char>(byte ^ 0x40));
  }
  const DatasetCheck check = verify_dataset(dir_);
  ASSERT_EQ(check.problems.size(), 1u);
  EXPECT_THAT(check.problems[0], HasSubstr("features.npy: header: expected only spaces and a "
                                           "newline after the dict (padding), found '`"));
}

TEST_F(DatasetTest, GraphAndSplitErrorsNameTheirSource) {
  save_dataset(toy(), dir_);
  // An indices file whose ids are out of range, with a matching manifest.
  write_npy(file("indices.npy"), Array::from_vector<int32_t>({3, 0, 9, 1, 2}));
  Json json = manifest();
  const Array bad = read_npy(file("indices.npy"));
  json["arrays"]["indices"]["crc32"] =
      fmt::format("{:08x}", crc32_of(bad.raw_data(), bad.nbytes()));
  write_manifest(json);
  EXPECT_THAT(load_error(), HasSubstr(dir_ + ": graph: "));
  EXPECT_THAT(load_error(), HasSubstr("9"));
  EXPECT_NO_THROW(load_dataset(dir_, {.validate_graph = false}));
  EXPECT_EQ(verify_dataset(dir_).problems.size(), 1u);

  save_dataset(toy(), dir_);
  write_npy(file("test_idx.npy"), Array::from_vector<int64_t>({3, 4}));
  json = manifest();
  json["arrays"]["test_idx"]["shape"] = {2};
  write_manifest(json);
  EXPECT_EQ(load_error(), file("test_idx.npy") + ": test_idx[1] = 4 out of range for 4 nodes");
}

TEST_F(DatasetTest, SaveRefusesInconsistentArraysBeforeWriting) {
  Dataset dataset = toy();
  dataset.features = Array::zeros(DType::kFloat32, {3, 2});
  EXPECT_THAT([&] { save_dataset(dataset, dir_); },
              ThrowsMessage<ValueError>(
                  HasSubstr("features: shape: expected [4, D] (one row per node), found [3, 2]")));
  EXPECT_FALSE(fs::exists(dir_));

  dataset = toy();
  dataset.labels = Array::from_vector<int32_t>({0, 1, 1, 0});
  EXPECT_THAT([&] { save_dataset(dataset, dir_); },
              ThrowsMessage<ValueError>(HasSubstr("labels: dtype: expected int64, found int32")));
  dataset = toy();
  dataset.train_idx = Array::from_vector<int64_t>({0, 7});
  EXPECT_THAT([&] { save_dataset(dataset, dir_); },
              ThrowsMessage<ValueError>(HasSubstr("train_idx[1] = 7 out of range for 4 nodes")));
  EXPECT_THAT([&] { save_dataset(Dataset{}, dir_); },
              ThrowsMessage<ValueError>(HasSubstr("the dataset has no graph")));
}

TEST_F(DatasetTest, WriterStreamsArraysAndWritesTheManifestLast) {
  const Dataset dataset = toy();
  DatasetWriter writer(dir_, "streamed");
  writer.add_array("indptr", dataset.graph.indptr());
  writer.add_array("indices", dataset.graph.indices());
  {
    NpyWriter features(writer.path_of("features"), DType::kFloat32, {4, 3});
    for (int row = 0; row < 4; ++row) features.write(dataset.features->data<float>() + 3 * row, 12);
    features.close();
    writer.add_written("features", DType::kFloat32, {4, 3}, features.crc32());
  }
  EXPECT_FALSE(is_dataset_directory(dir_)) << "no manifest before finish()";
  EXPECT_THAT([&] { writer.add_array("indptr", dataset.graph.indptr()); },
              ThrowsMessage<ValueError>(HasSubstr("array 'indptr' was added twice")));
  EXPECT_THAT([&] { writer.path_of("colors"); },
              ThrowsMessage<ValueError>(HasSubstr("unknown array 'colors'")));
  EXPECT_THAT([&] { writer.finish(5, 5, 0, Orientation::kIn); },
              ThrowsMessage<ValueError>(HasSubstr("indptr: shape: expected [6], found [5]")));
  writer.finish(4, 5, 0, Orientation::kIn);
  const Dataset loaded = load_dataset(dir_, {.verify_checksums = true});
  EXPECT_EQ(loaded.name, "streamed");
  expect_same(*loaded.features, *dataset.features);

  DatasetWriter incomplete(root_ / "other", "x");
  EXPECT_THAT([&] { incomplete.finish(0, 0, 0, Orientation::kIn); },
              ThrowsMessage<ValueError>(HasSubstr("the required array 'indptr' was not added")));
}

TEST(BundledData, CoraLoadsWithItsPlanetoidSplit) {
  const std::string cora = std::string(VOLLEY_SOURCE_DIR) + "/data/cora";
  ASSERT_TRUE(is_dataset_directory(cora));
  const Dataset dataset = load_dataset(cora, {.verify_checksums = true});
  EXPECT_EQ(dataset.name, "cora");
  EXPECT_EQ(dataset.graph.num_nodes(), 2708);
  EXPECT_EQ(dataset.graph.num_edges(), 10556);  // 5,278 undirected edges, stored both ways
  ASSERT_TRUE(dataset.features.has_value());
  EXPECT_EQ(dataset.features->shape(), (std::vector<int64_t>{2708, 1433}));
  EXPECT_EQ(dataset.features->dtype(), DType::kUInt8);
  EXPECT_EQ(dataset.num_classes, 7);
  ASSERT_TRUE(dataset.labels.has_value());
  EXPECT_EQ(dataset.labels->numel(), 2708);
  EXPECT_EQ(dataset.train_idx->numel(), 140);
  EXPECT_EQ(dataset.val_idx->numel(), 500);
  EXPECT_EQ(dataset.test_idx->numel(), 1000);
  // Undirected: every edge u -> v has its reverse.
  const Csr& graph = dataset.graph;
  const Csr reversed = graph.transposed();
  expect_same(reversed.indptr(), graph.indptr());
  expect_same(reversed.indices(), graph.indices());
  EXPECT_TRUE(verify_dataset(cora).ok());
}

}  // namespace
}  // namespace volley
