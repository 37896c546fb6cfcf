// `volley generate --model hetero`, `volley info` and `volley convert` on heterogeneous datasets.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>

#include <nlohmann/json.hpp>

#include "cli_fixture.h"
#include "volley/core/array.h"
#include "volley/graph/io/npy.h"

namespace {

using ::testing::HasSubstr;
using HeteroCliTest = volley::testing_cli::CliFixture;

TEST_F(HeteroCliTest, GenerateInfoVerify) {
  const auto generated = run(
      fmt::format("generate '{}' --model hetero --nodes 2000 --reverse --feature-dim 8 --classes 5",
                  path("mag")));
  ASSERT_EQ(generated.exit_code, 0) << generated.err;
  EXPECT_THAT(generated.out, HasSubstr("generated mag-2000-seed0-rev"));
  EXPECT_THAT(generated.out, HasSubstr("8 edge types"));
  const auto info = run(fmt::format("info '{}' --json --verify", path("mag")));
  ASSERT_EQ(info.exit_code, 0) << info.err;
  const auto json = nlohmann::json::parse(info.out);
  EXPECT_EQ(json["kind"], "hetero_dataset");
  ASSERT_EQ(json["node_types"].size(), 4u);
  EXPECT_EQ(json["node_types"][0]["name"], "paper");
  EXPECT_EQ(json["node_types"][0]["features"]["width"], 8);
  EXPECT_TRUE(json["node_types"][1]["features"].is_null());  // authors are featureless
  ASSERT_EQ(json["edge_types"].size(), 8u);
  EXPECT_EQ(json["edge_types"][1]["name"], "paper__rev_writes__author");
  EXPECT_TRUE(json["verify"]["ok"]);
  const auto text = run(fmt::format("info '{}'", path("mag")));
  EXPECT_THAT(text.out, HasSubstr("node type field_of_study: 163 nodes\n  features: none\n"));
  EXPECT_THAT(text.out, HasSubstr("author__affiliated_with__institution:"));

  // Same seed, same bytes.
  ASSERT_EQ(run(fmt::format("generate '{}' --model hetero --nodes 2000 --reverse --feature-dim 8 "
                            "--classes 5",
                            path("again")))
                .exit_code,
            0);
  for (const char* file : {"paper__cites__paper.indices.npy", "paper.features.npy"}) {
    EXPECT_EQ(slurp(path("mag") + "/" + file), slurp(path("again") + "/" + file)) << file;
  }

  // `bench sample` measures it, and refuses --time (temporal heterogeneous sampling has no bench)
  // instead of measuring untimed sampling under that name.
  const auto bench = run(fmt::format(
      "--quiet bench sample --dataset '{}' --batches 2 --warmup 0 --batch-size 16", path("mag")));
  ASSERT_EQ(bench.exit_code, 0) << bench.err;
  EXPECT_THAT(bench.out, HasSubstr("\"hetero\":true"));
  const auto timed = run(fmt::format(
      "--quiet bench sample --dataset '{}' --batches 2 --warmup 0 --batch-size 16 --time",
      path("mag")));
  EXPECT_NE(timed.exit_code, 0);
  EXPECT_THAT(timed.err, HasSubstr("--time measures homogeneous datasets only"));

  // A damaged array makes --verify fail naming the file.
  {
    std::fstream file(path("mag") + "/author__writes__paper.indices.npy",
                      std::ios::in | std::ios::out | std::ios::binary);
    file.seekp(-2, std::ios::end);
    file.put('\x55');
  }
  const auto bad = run(fmt::format("info '{}' --verify", path("mag")));
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_THAT(bad.out, HasSubstr("author__writes__paper.indices.npy"));
}

TEST_F(HeteroCliTest, GenerateRefusesHomogeneousOnlyOptions) {
  const auto result = run(fmt::format("generate '{}' --model hetero --edges 100", path("x")));
  EXPECT_NE(result.exit_code, 0);
  EXPECT_THAT(result.err, HasSubstr("--model hetero takes no --edges"));
  const auto missing = run(fmt::format("generate '{}' --model powerlaw --nodes 10", path("y")));
  EXPECT_NE(missing.exit_code, 0);
  EXPECT_THAT(missing.err, HasSubstr("--model powerlaw needs --nodes and --edges"));
}

TEST_F(HeteroCliTest, ConvertsADirectoryOfEdgeTypes) {
  const std::string input = path("input");
  std::filesystem::create_directories(input);
  volley::Array writes = volley::Array::empty(volley::DType::kInt64, {2, 3});
  const int64_t values[] = {0, 1, 2, 1, 1, 0};
  std::copy(values, values + 6, writes.data<int64_t>());
  volley::write_npy(input + "/author__writes__paper.npy", writes);
  std::ofstream(input + "/paper__cites__paper.txt") << "0 1\n";
  const auto converted = run(fmt::format("convert '{}' '{}' --name tiny", input, path("out")));
  ASSERT_EQ(converted.exit_code, 0) << converted.err;
  EXPECT_THAT(converted.out, HasSubstr("wrote tiny"));
  EXPECT_THAT(converted.out, HasSubstr("in 2 types, 4 edges in 2 types"));
  const auto info = run(fmt::format("info '{}' --verify", path("out")));
  ASSERT_EQ(info.exit_code, 0) << info.err;
  EXPECT_THAT(info.out, HasSubstr("author: 3 nodes"));
  const auto refused = run(fmt::format("convert '{}' '{}' --undirected", input, path("out2")));
  EXPECT_NE(refused.exit_code, 0);
  EXPECT_THAT(refused.err, HasSubstr("a heterogeneous input takes only --name"));
}

}  // namespace
