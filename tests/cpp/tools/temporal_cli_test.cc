// The CLI's temporal pieces: generate --model temporal, info on times, convert
// --sort-by-time, bench sample --time.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <sstream>

#include <nlohmann/json.hpp>

#include "cli_fixture.h"

namespace {

using ::testing::HasSubstr;
using volley::testing_cli::Result;
using TemporalCliTest = volley::testing_cli::CliFixture;

TEST_F(TemporalCliTest, GenerateInfoSortAndBench) {
  const std::string stream = path("stream"), sorted = path("sorted");
  Result result = run("generate " + stream +
                      " --model temporal --nodes 3000 --edges 20000 --classes 5 --seed 2");
  ASSERT_EQ(result.exit_code, 0) << result.err;
  result = run("info " + stream);
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_THAT(result.out, HasSubstr("edge time: yes (int64; every row sorted by it)"));
  EXPECT_THAT(result.out, HasSubstr("node time: yes (int64; row "));  // not sorted by node time
  result = run("convert " + stream + " " + sorted + " --sort-by-time --time-kind node");
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_THAT(result.out, HasSubstr("rows sorted by node time"));
  result = run("info --json --verify " + sorted);
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const auto json = nlohmann::json::parse(result.out);
  EXPECT_EQ(json["edge_time"], true);
  EXPECT_EQ(json["first_row_unsorted_by_time"]["node"], -1);
  EXPECT_EQ(json["verify"]["ok"], true);
  result = run("bench sample --dataset " + stream +
               " --time --batch-size 64 --batches 3 --fanout 5,3 --warmup 0");
  ASSERT_EQ(result.exit_code, 0) << result.err;
  std::istringstream lines(result.out);
  std::vector<std::string> modes;
  for (std::string line; std::getline(lines, line);) {
    modes.push_back(nlohmann::json::parse(line)["temporal_strategy"]);
  }
  EXPECT_EQ(modes, (std::vector<std::string>{"none", "none-disjoint", "uniform", "last"}));
}

TEST_F(TemporalCliTest, SortByTimeNeedsADatasetAndTimes) {
  Result result = run("convert " + path("nothing.txt") + " " + path("out") + " --sort-by-time");
  EXPECT_NE(result.exit_code, 0);
  EXPECT_THAT(result.err, HasSubstr("--sort-by-time rewrites a dataset directory"));
  result = run("generate " + path("plain") + " --nodes 100 --edges 500");
  ASSERT_EQ(result.exit_code, 0) << result.err;
  result = run("convert " + path("plain") + " " + path("out") + " --sort-by-time");
  EXPECT_NE(result.exit_code, 0);
  EXPECT_THAT(result.err, HasSubstr("sorting rows by node time needs node_time"));
}

}  // namespace
