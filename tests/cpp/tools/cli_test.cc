// Runs the `volley` binary (VOLLEY_CLI_PATH) as a user would.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <sys/wait.h>
#include "cli_fixture.h"
#include "volley/core/version.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;

using volley::testing_cli::kCora;
using volley::testing_cli::last_json_line;
using volley::testing_cli::Result;
using CliTest = volley::testing_cli::CliFixture;

// One version: `project(volley VERSION x.y.z)` in CMakeLists.txt is what --version prints.
TEST_F(CliTest, VersionIsTheProjectVersion) {
  std::ifstream cmake_file(std::string(VOLLEY_SOURCE_DIR) + "/CMakeLists.txt");
  std::stringstream text;
  text << cmake_file.rdbuf();
  const std::string marker = "project(volley VERSION ";
  const size_t at = text.str().find(marker);
  ASSERT_NE(at, std::string::npos);
  const size_t begin = at + marker.size();
  const std::string version = text.str().substr(begin, text.str().find(' ', begin) - begin);
  EXPECT_EQ(version, volley::kVersion);
  const Result result = run("--version");
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(result.out, "volley " + version + "\n");
}

TEST_F(CliTest, InfoDescribesCora) {
  const Result result = run("info " + kCora);
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_THAT(result.out, HasSubstr("nodes: 2,708"));
  EXPECT_THAT(result.out, HasSubstr("edges: 10,556"));
  EXPECT_THAT(result.out, HasSubstr("features: 2,708 x 1,433 uint8"));
  EXPECT_THAT(result.out, HasSubstr("classes: 7"));
  EXPECT_THAT(result.out, HasSubstr("split: train 140, val 500, test 1,000"));
  EXPECT_EQ(result.err, "");
}

TEST_F(CliTest, InfoJsonIsOneObject) {
  const Result result = run("info --json --verify " + kCora);
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const auto json = nlohmann::json::parse(result.out);
  EXPECT_EQ(json["num_nodes"], 2708);
  EXPECT_EQ(json["num_edges"], 10556);
  EXPECT_EQ(json["features"]["width"], 1433);
  EXPECT_EQ(json["num_classes"], 7);
  EXPECT_EQ(json["split"]["train"], 140);
  EXPECT_EQ(json["verify"]["ok"], true);
}

TEST_F(CliTest, ConvertFailsCleanlyOnABadFile) {
  std::ofstream(path("bad.txt")) << "0 1\n1 2\nthree four\n";
  const Result result = run(fmt::format("convert '{}' '{}'", path("bad.txt"), path("out")));
  EXPECT_NE(result.exit_code, 0);
  EXPECT_EQ(result.err, fmt::format("volley: error: {}:3: expected 2 numeric columns (as on line "
                                    "1), found 'three four'\n",
                                    path("bad.txt")));
  EXPECT_FALSE(fs::exists(path("out/volley.json")));

  const Result missing = run(fmt::format("convert '{}' '{}'", path("none.npz"), path("out")));
  EXPECT_NE(missing.exit_code, 0);
  EXPECT_THAT(missing.err, HasSubstr("No such file or directory"));
  EXPECT_EQ(std::count(missing.err.begin(), missing.err.end(), '\n'), 1);
}

TEST_F(CliTest, ConvertThenInfo) {
  std::ofstream(path("tiny.csv")) << "# a tiny graph\nsrc,dst\n0,1\n1,2\n2,0\n2,1\n";
  const Result convert = run(fmt::format("convert '{}' '{}' --undirected --split random --seed 3",
                                         path("tiny.csv"), path("tiny")));
  ASSERT_EQ(convert.exit_code, 0) << convert.err;
  EXPECT_THAT(convert.out, HasSubstr("3 nodes, 6 edges"));

  const Result info = run(fmt::format("info --json '{}'", path("tiny")));
  ASSERT_EQ(info.exit_code, 0) << info.err;
  const auto json = nlohmann::json::parse(info.out);
  EXPECT_EQ(json["name"], "tiny");
  EXPECT_EQ(json["num_nodes"], 3);
  EXPECT_EQ(json["num_edges"], 6);  // 3 undirected edges (2,1 duplicates 1,2) both ways
  EXPECT_EQ(json["in_degree"]["min"], 2);
  EXPECT_EQ(json["features"], nullptr);
  EXPECT_EQ(json["split"]["train"].get<int>() + json["split"]["val"].get<int>() +
                json["split"]["test"].get<int>(),
            3);

  // Writing over a directory that is not a dataset is refused.
  fs::create_directories(path("precious"));
  std::ofstream(path("precious/notes.txt")) << "keep me";
  const Result refused = run(fmt::format("convert '{}' '{}'", path("tiny.csv"), path("precious")));
  EXPECT_NE(refused.exit_code, 0);
  EXPECT_THAT(refused.err, HasSubstr("is not a Volley dataset directory; refusing"));
}

TEST_F(CliTest, InfoVerifyFailsOnACorruptDataset) {
  fs::copy(kCora, path("cora"));
  {
    std::fstream stream(path("cora/labels.npy"), std::ios::in | std::ios::out | std::ios::binary);
    stream.seekp(200);
    stream.put('\x7f');  // labels are 0..6: this byte changes
  }
  const Result result = run(fmt::format("info --verify '{}'", path("cora")));
  EXPECT_NE(result.exit_code, 0);
  EXPECT_THAT(result.out, HasSubstr("labels.npy: crc32: expected"));
  EXPECT_THAT(result.err, HasSubstr("verification failed: 1 problem"));
  EXPECT_EQ(std::count(result.err.begin(), result.err.end(), '\n'), 1);
}

TEST_F(CliTest, InfoDescribesNpyFiles) {
  const Result npy = run(fmt::format("info '{}/indptr.npy'", kCora));
  ASSERT_EQ(npy.exit_code, 0) << npy.err;
  EXPECT_THAT(npy.out, HasSubstr("dtype: int64"));
  EXPECT_THAT(npy.out, HasSubstr("shape: [2,709]"));
  const Result missing = run(fmt::format("info '{}'", path("absent")));
  EXPECT_NE(missing.exit_code, 0);
  EXPECT_THAT(missing.err, HasSubstr("no such file or directory"));
}

}  // namespace

namespace {

TEST_F(CliTest, BenchSamplePrintsSepsAsJson) {
  const Result result = run("bench sample --dataset " + kCora +
                            " --fanout 5,5 --batch-size 32 --threads 2 --batches 4");
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const auto line = last_json_line(result.out);
  EXPECT_EQ(line["bench"], "sample");
  EXPECT_EQ(line["threads"], 2);
  EXPECT_GT(line["sampled_edges"].get<int64_t>(), 0);
  EXPECT_GT(line["seps"].get<double>(), 0.0);
  EXPECT_EQ(line["warmup"], 2);
}

TEST_F(CliTest, BenchSampleWarmupZeroTimesTheFirstBatches) {
  const Result result =
      run("bench sample --dataset " + kCora + " --fanout 5 --batch-size 32 --batches 2 --warmup 0");
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const auto line = last_json_line(result.out);
  EXPECT_EQ(line["warmup"], 0);
  EXPECT_EQ(line["batches"], 2);
  EXPECT_GT(line["sampled_edges"].get<int64_t>(), 0);
  const Result bad = run("bench sample --dataset " + kCora + " --warmup -1");
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_NE(bad.err.find("--warmup"), std::string::npos) << bad.err;
}

TEST_F(CliTest, BenchLoaderComparesWithSamplingOnly) {
  const Result result = run("bench loader --dataset " + kCora +
                            " --fanout 5,5 --batch-size 32 --threads 1 --batches 3");
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const auto line = last_json_line(result.out);
  EXPECT_EQ(line["bench"], "loader");
  EXPECT_EQ(line["feature_dim"], 1433);
  EXPECT_GT(line["ratio_to_sampling_only"].get<double>(), 0.0);
}

TEST_F(CliTest, BenchCachePoliciesStayUnderTheOptimum) {
  const Result result = run("bench cache --dataset " + kCora +
                            " --fanout 5,5 --batch-size 32 --cache-bytes 60K --lookahead 4");
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const auto line = last_json_line(result.out);
  EXPECT_EQ(line["cache_rows"], 60 * 1024 / 1433);
  const double cold = line["hit_rate_belady_offline"].get<double>();
  const double filled = line["hit_rate_belady_offline_prefilled"].get<double>();
  EXPECT_GT(cold, 0.0);
  EXPECT_GE(filled, cold);
  EXPECT_LE(line["hit_rate_sieve"].get<double>(), cold);
  EXPECT_LE(line["hit_rate_lookahead_lru"].get<double>(), cold);
  EXPECT_LE(line["hit_rate_lookahead"].get<double>(), filled);
  EXPECT_LE(line["hit_rate_static_degree"].get<double>(), filled);
}

TEST_F(CliTest, BenchLoaderReadsThroughTheDiskTier) {
  for (const std::string policy :
       {"static", "dynamic", "lookahead --lookahead 3", "lookahead --lookahead 2 --read-ahead"}) {
    const Result result =
        run("bench loader --dataset " + kCora + " --fanout 5,5 --batch-size 32 --threads 1 " +
            "--batches 3 --cache-bytes 20K --policy " + policy);
    ASSERT_EQ(result.exit_code, 0) << result.err;
    const auto line = last_json_line(result.out);
    EXPECT_THAT(line["features"].get<std::string>(), HasSubstr("disk")) << policy;
    EXPECT_GT(line["rows_from_disk"].get<int64_t>(), 0) << policy;
    if (policy.starts_with("lookahead")) {
      EXPECT_EQ(line["read_ahead"].get<bool>(), policy.ends_with("--read-ahead")) << policy;
      EXPECT_GE(line["rows_from_disk"].get<int64_t>(), line["rows_read_ahead"].get<int64_t>());
    }
  }
}

TEST_F(CliTest, BenchGatherComparesWithMemcpy) {
  const Result result =
      run("bench gather --rows 5000 --dim 16 --dtype float16 --out-dtype float32 --batch 1000 "
          "--threads 1 --batches 2");
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const auto line = last_json_line(result.out);
  EXPECT_NE(line.dump().find("memcpy"), std::string::npos) << line.dump();
}

TEST_F(CliTest, BenchRejectsBadFanout) {
  const Result result =
      run("bench sample --dataset " + kCora + " --fanout 5,x --batch-size 8 --batches 1");
  EXPECT_NE(result.exit_code, 0);
  EXPECT_THAT(result.err, HasSubstr("--fanout '5,x': 'x' is not an integer"));
}

}  // namespace
