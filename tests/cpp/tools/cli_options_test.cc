// The `volley` binary as a user types it: global options on either side of the subcommand,
// `convert` of an OGB directory, bench sweeps and --plot's failure path.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <zlib.h>

#include <filesystem>
#include <sstream>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli_fixture.h"

namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

using volley::testing_cli::kCora;
using volley::testing_cli::Result;
using CliOptionsTest = volley::testing_cli::CliFixture;

std::vector<nlohmann::json> json_lines(const std::string& out) {
  std::vector<nlohmann::json> lines;
  std::istringstream stream(out);
  for (std::string line; std::getline(stream, line);) {
    if (!line.empty() && line[0] == '{') lines.push_back(nlohmann::json::parse(line));
  }
  return lines;
}

TEST_F(CliOptionsTest, QuietAndThreadsWorkAfterTheSubcommandToo) {
  const std::string generate =
      fmt::format("generate '{}' --model powerlaw --nodes 200 --edges 800 --seed 1", path("g"));
  for (const std::string& command :
       {"-q " + generate, generate + " --quiet", generate + " -q", generate + " -t 1 -q",
        "--threads 1 " + generate + " --quiet"}) {
    fs::remove_all(path("g"));
    const Result result = run(command);
    EXPECT_EQ(result.exit_code, 0) << command << "\n" << result.err;
    EXPECT_TRUE(fs::exists(fs::path(path("g")) / "volley.json")) << command;
  }
  // Still an error: an option nobody knows.
  const Result unknown = run(generate + " --no-such-option");
  EXPECT_NE(unknown.exit_code, 0);
  EXPECT_THAT(unknown.err, HasSubstr("--no-such-option"));
  // `info` after the path.
  const Result info = run("info " + kCora + " -q");
  EXPECT_EQ(info.exit_code, 0) << info.err;
}

void write_gz(const fs::path& path, const std::string& text) {
  fs::create_directories(path.parent_path());
  gzFile file = gzopen(path.c_str(), "wb");
  ASSERT_NE(file, nullptr);
  ASSERT_EQ(gzwrite(file, text.data(), static_cast<unsigned>(text.size())),
            static_cast<int>(text.size()));
  ASSERT_EQ(gzclose(file), Z_OK);
}

TEST_F(CliOptionsTest, ConvertsAnOgbDirectory) {
  const fs::path root = path("ogbn_small");
  write_gz(root / "raw/num-node-list.csv.gz", "4\n");
  write_gz(root / "raw/edge.csv.gz", "0,1\n1,2\n2,3\n3,0\n1,0\n");
  write_gz(root / "raw/node-feat.csv.gz", "1,0\n0,1\n1,1\n0,0\n");
  write_gz(root / "raw/node-label.csv.gz", "0\n1\n1\n0\n");
  write_gz(root / "split/random/train.csv.gz", "0\n1\n");
  write_gz(root / "split/random/valid.csv.gz", "2\n");
  write_gz(root / "split/random/test.csv.gz", "3\n");
  // Detected from the layout; --format ogb says it outright.
  for (const std::string format : {"", " --format ogb"}) {
    fs::remove_all(path("out"));
    const Result result = run(fmt::format("convert '{}' '{}' --undirected --feature-dtype uint8{}",
                                          root.string(), path("out"), format));
    ASSERT_EQ(result.exit_code, 0) << result.err;
    EXPECT_THAT(result.out, HasSubstr("wrote ogbn_small -> "));
    EXPECT_THAT(result.out, HasSubstr("4 nodes, 8 edges, 2 uint8 features, 2 classes, split "
                                      "random 2/1/1"));
  }
  const Result info = run(fmt::format("info --verify '{}'", path("out")));
  ASSERT_EQ(info.exit_code, 0) << info.err;
  EXPECT_THAT(info.out, HasSubstr("split: train 2, val 1, test 1"));
  // Options that do not apply are refused, not ignored.
  const Result split =
      run(fmt::format("convert '{}' '{}' --split random", root.string(), path("out2")));
  EXPECT_NE(split.exit_code, 0);
  EXPECT_THAT(split.err, HasSubstr("OGB datasets bring their own split"));
  const Result missing = run(
      fmt::format("convert '{}' '{}' --format ogb --ogb-split time", root.string(), path("out3")));
  EXPECT_NE(missing.exit_code, 0);
  EXPECT_THAT(missing.err, HasSubstr("no split 'time' (found: random)"));
}

TEST_F(CliOptionsTest, BenchMeasuresEveryConfigurationOfASweep) {
  const Result result = run("bench sample --dataset " + kCora +
                            " --fanout 5,5 --batch-size 16,32 --threads 1,2 --batches 2");
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const auto lines = json_lines(result.out);
  ASSERT_EQ(lines.size(), 4u) << result.out;
  std::vector<std::pair<int64_t, int>> seen;
  for (const auto& line : lines) seen.emplace_back(line["batch_size"], line["threads"]);
  EXPECT_EQ(seen, (std::vector<std::pair<int64_t, int>>{{16, 1}, {16, 2}, {32, 1}, {32, 2}}));
  const Result loader = run("bench loader --dataset " + kCora +
                            " --fanout 5 --batch-size 16 --threads 1,2 --batches 2");
  ASSERT_EQ(loader.exit_code, 0) << loader.err;
  for (const auto& line : json_lines(loader.out)) {
    EXPECT_GT(line["sampling_only_seconds"].get<double>(), 0.0);
  }
}

TEST_F(CliOptionsTest, PlotReportsAFailingPlotter) {
  const Result result =
      run("bench sample --dataset " + kCora + " --fanout 5 --batch-size 16 --batches 1 --plot '" +
              path("x.png") + "'",
          "VOLLEY_PYTHON=/bin/false");
  EXPECT_NE(result.exit_code, 0);
  EXPECT_THAT(result.out, HasSubstr("\"bench\":\"sample\""));  // the figures still print
  EXPECT_THAT(result.err, HasSubstr("`/bin/false -m volley.plot` failed with exit status 1"));
}

}  // namespace
