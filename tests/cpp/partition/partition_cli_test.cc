// `volley partition` and `volley info` on partitioned datasets, run as a user would.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "cli_fixture.h"

#include <sys/wait.h>
#include <unistd.h>
#include "volley/partition/partition.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

using volley::testing_cli::kCora;
using volley::testing_cli::Result;
using PartitionCliTest = volley::testing_cli::CliFixture;

TEST_F(PartitionCliTest, PartitionsAndDescribes) {
  if (!volley::metis_available()) GTEST_SKIP() << "built without METIS (libmetis-dev)";
  Result result =
      run(fmt::format("partition {} {} --parts 3 --method hotness --fanout 5,5 "
                      "--cache-bytes 14K",
                      kCora, path("out")));
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_THAT(result.out, HasSubstr("into 3 parts with hotness"));
  EXPECT_THAT(result.out, HasSubstr("edge cut: "));
  EXPECT_THAT(result.out, HasSubstr("remote reads in a simulated epoch"));
  EXPECT_THAT(result.out, HasSubstr("metis"));

  result = run("info " + path("out"));
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_THAT(result.out, HasSubstr("method: hotness, 3 partitions"));
  result = run("info --verify " + path("out"));
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_THAT(result.out, HasSubstr("verify: ok"));

  result = run("info --json " + path("out/part-2"));
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const auto json = nlohmann::json::parse(result.out);
  EXPECT_EQ(json["kind"], "partition");
  EXPECT_EQ(json["part"], 2);
  EXPECT_EQ(json["cached"], 10);  // 14 KiB / 1,433 bytes per uint8 row

  result =
      run(fmt::format("partition {} {} --parts 2 --method stream --json", kCora, path("stream")));
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const auto summary = nlohmann::json::parse(result.out);
  EXPECT_EQ(summary["offsets"].back(), 2708);
  EXPECT_LE(summary["quality"]["node_balance"].get<double>(), 1.05 + 1e-9);
}

TEST_F(PartitionCliTest, VerifyFindsCorruption) {
  if (!volley::metis_available()) GTEST_SKIP() << "built without METIS (libmetis-dev)";
  ASSERT_EQ(run(fmt::format("partition {} {} -k 2 -m random", kCora, path("out"))).exit_code, 0);
  {
    std::fstream file(path("out/part-0/labels.npy"),
                      std::ios::in | std::ios::out | std::ios::binary);
    file.seekp(-1, std::ios::end);
    file.put('\x7f');
  }
  const Result result = run("info --verify " + path("out"));
  EXPECT_NE(result.exit_code, 0);
  EXPECT_THAT(result.err, HasSubstr("part-0/labels.npy: crc32: expected"));
}

TEST_F(PartitionCliTest, RefusesBadArguments) {
  if (!volley::metis_available()) GTEST_SKIP() << "built without METIS (libmetis-dev)";
  Result result =
      run(fmt::format("partition {} {} -k 2 -m metis --cache-bytes 1M", kCora, path("out")));
  EXPECT_NE(result.exit_code, 0);
  EXPECT_THAT(result.err, HasSubstr("needs the hotness method"));
  result =
      run(fmt::format("partition {} {} -k 2 -m hotness --cache-bytes 12Q", kCora, path("out")));
  EXPECT_NE(result.exit_code, 0);
  EXPECT_THAT(result.err, HasSubstr("unknown unit 'Q'"));
}

}  // namespace

// A heterogeneous dataset: `volley partition` dispatches on the manifest version; `volley info`
// describes (and verifies) the result; hotness is refused naming the method.
TEST_F(PartitionCliTest, PartitionsHeterogeneousDatasets) {
  if (!volley::metis_available()) GTEST_SKIP() << "built without METIS (libmetis-dev)";
  Result result =
      run(fmt::format("-q generate {} --model hetero --reverse --nodes 800", path("mag")));
  ASSERT_EQ(result.exit_code, 0) << result.err;
  result = run(fmt::format("partition {} {} --parts 3 --method metis", path("mag"), path("out")));
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_THAT(result.out, HasSubstr("partitioned heterogeneous"));
  EXPECT_THAT(result.out, HasSubstr("paper__cites__paper"));
  EXPECT_THAT(result.out, HasSubstr("node balance per type"));
  result = run("info --verify " + path("out"));
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_THAT(result.out, HasSubstr("method: metis, 3 partitions, 4 node types, 8 edge types"));
  EXPECT_THAT(result.out, HasSubstr("verify: ok"));
  result = run(fmt::format("partition {} {} --parts 2 --method hotness", path("mag"), path("hot")));
  EXPECT_NE(result.exit_code, 0);
  EXPECT_THAT(result.err, HasSubstr("method 'hotness' is not available for heterogeneous"));
}
