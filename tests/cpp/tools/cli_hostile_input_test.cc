// The `volley` binary on hostile or careless input truncated and impossible .npy
// files, named pipes, nested manifests, out-of-range option values, too many partitions for the
// open-file limit. Each must end in one clear error line, never a crash, a hang or half output.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <string>

#include <fmt/format.h>

#include "cli_fixture.h"

namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;

using volley::testing_cli::kCora;
using volley::testing_cli::Result;
using CliHostileTest = volley::testing_cli::CliFixture;

// A version 1.0 .npy image of `dict` (padded to 64 bytes) followed by `data_bytes` zero bytes.
void write_npy(const std::string& file, const std::string& dict, size_t data_bytes) {
  std::string header = dict;
  while ((10 + header.size() + 1) % 64 != 0) header.push_back(' ');
  header.push_back('\n');
  std::ofstream stream(file, std::ios::binary);
  stream << "\x93NUMPY" << '\x01' << '\x00' << static_cast<char>(header.size() & 0xff)
         << static_cast<char>(header.size() >> 8) << header << std::string(data_bytes, '\0');
}

TEST_F(CliHostileTest, InfoReportsTruncatedAndImpossibleNpyFilesAsUnreadable) {
  write_npy(path("short.npy"), "{'descr': '<f4', 'fortran_order': False, 'shape': (10, 4), }", 8);
  const Result truncated = run(fmt::format("info '{}'", path("short.npy")));
  EXPECT_EQ(truncated.exit_code, 0) << truncated.err;
  EXPECT_THAT(truncated.out, HasSubstr("(not readable by Volley: truncated: 8 data bytes, the "
                                       "shape needs 160)"));
  const Result as_json = run(fmt::format("info --json '{}'", path("short.npy")));
  EXPECT_THAT(as_json.out, HasSubstr("\"readable\":false"));

  write_npy(path("huge.npy"),
            "{'descr': '<f8', 'fortran_order': False, 'shape': (4611686018427387904, 8), }", 0);
  const Result impossible = run(fmt::format("info '{}'", path("huge.npy")));
  EXPECT_EQ(impossible.exit_code, 0) << impossible.err;
  EXPECT_THAT(impossible.out, HasSubstr("not readable by Volley: impossible shape"));

  write_npy(path("good.npy"), "{'descr': '<i8', 'fortran_order': False, 'shape': (2,), }", 16);
  const Result good = run(fmt::format("info '{}'", path("good.npy")));
  EXPECT_THAT(good.out, Not(HasSubstr("not readable")));
}

TEST_F(CliHostileTest, InfoVerifyRefusesAFlippedByteInAHeaderPadding) {
  fs::copy(kCora, path("cora"));
  {
    std::fstream stream(path("cora/labels.npy"), std::ios::in | std::ios::out | std::ios::binary);
    stream.seekp(100);  // inside the spaces that pad the header to 128 bytes
    stream.put('`');
  }
  const Result result = run(fmt::format("info --verify '{}'", path("cora")));
  EXPECT_NE(result.exit_code, 0);
  EXPECT_THAT(result.out, HasSubstr("labels.npy: header: expected only spaces and a newline"));
}

TEST_F(CliHostileTest, InfoOnANamedPipeDoesNotBlock) {
  ASSERT_EQ(mkfifo(path("pipe.npy").c_str(), 0600), 0);
  const Result result = run(fmt::format("info '{}'", path("pipe.npy")));
  EXPECT_NE(result.exit_code, 0);
  EXPECT_THAT(result.err, HasSubstr("it is a named pipe (FIFO), not a regular file"));
}

TEST_F(CliHostileTest, InfoOnADeeplyNestedManifestIsAnError) {
  fs::copy(kCora, path("cora"));
  std::ofstream(path("cora/volley.json")) << std::string(200000, '[');
  const Result result = run(fmt::format("info '{}'", path("cora")));
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_THAT(result.err, HasSubstr("nest deeper than 64 levels"));
}

TEST_F(CliHostileTest, PartitionPartsOutOfRangeIsOneShortLine) {
  const Result zero = run(fmt::format("partition '{}' '{}' --parts 0", kCora, path("out")));
  EXPECT_NE(zero.exit_code, 0);
  EXPECT_THAT(zero.err, HasSubstr("must be >= 1, got 0"));
  EXPECT_LT(zero.err.size(), 200u) << zero.err;
  const Result many =
      run(fmt::format("partition '{}' '{}' --parts 2000000 -m random", kCora, path("out")));
  EXPECT_NE(many.exit_code, 0);
  EXPECT_THAT(many.err, HasSubstr("got 2000000"));
  EXPECT_FALSE(fs::exists(path("out")));
}

TEST_F(CliHostileTest, PartitionIntoManyPartsWorksUnderTheDefaultOpenFileLimit) {
  const std::string command = fmt::format(
      "ulimit -Sn 1024 && VOLLEY_PROGRESS=0 '{}' partition '{}' '{}' --parts 600 -m "
      "random >'{}' 2>'{}'",
      VOLLEY_CLI_PATH, kCora, path("out"), path("stdout"), path("stderr"));
  const int status = std::system(command.c_str());
  ASSERT_EQ(status, 0) << slurp(path("stderr"));
  EXPECT_TRUE(fs::exists(path("out/partition.json")));
  EXPECT_TRUE(fs::exists(path("out/part-599/part.json")));
}

TEST_F(CliHostileTest, AFailedPartitionLeavesNoHalfWrittenOutput) {
  // The open-file limit's hard cap is too low for 600 parts: the run fails before writing.
  const std::string command = fmt::format(
      "ulimit -n 256 && VOLLEY_PROGRESS=0 '{}' partition '{}' '{}' --parts 600 -m "
      "random >'{}' 2>'{}'",
      VOLLEY_CLI_PATH, kCora, path("out"), path("stdout"), path("stderr"));
  EXPECT_NE(std::system(command.c_str()), 0);
  EXPECT_THAT(slurp(path("stderr")), HasSubstr("the limit on open files is"));
  EXPECT_FALSE(fs::exists(path("out")));
  for (const auto& entry : fs::directory_iterator(path(""))) {
    EXPECT_THAT(entry.path().filename().string(), Not(HasSubstr("partial")));
  }
  // A directory that is not a partitioned dataset is never replaced.
  fs::create_directories(path("precious"));
  std::ofstream(path("precious/notes.txt")) << "keep me";
  const Result refused =
      run(fmt::format("partition '{}' '{}' --parts 2 -m random", kCora, path("precious")));
  EXPECT_NE(refused.exit_code, 0);
  EXPECT_THAT(refused.err, HasSubstr("is not a partitioned dataset directory; refusing"));
  EXPECT_TRUE(fs::exists(path("precious/notes.txt")));
}

// A seed is a decimal integer in [0, 2^64 - 1] on every command: CLI11 alone read "-1" and
// "18446744073709551616" as 2^64 - 1 (the same stream as that seed) and refused "1e23" without
// saying why.
TEST_F(CliHostileTest, SeedsOutOfRangeAreRefusedNamingTheValue) {
  for (const char* seed : {"-1", "18446744073709551616", "1e23", "0x10", "12a"}) {
    const Result result =
        run(fmt::format("generate '{}' --nodes 50 --edges 200 --seed='{}'", path("seeded"), seed));
    EXPECT_NE(result.exit_code, 0) << seed;
    EXPECT_THAT(result.err,
                HasSubstr(fmt::format(
                    "--seed: must be an integer in [0, 18446744073709551615], got '{}'", seed)));
    EXPECT_FALSE(fs::exists(path("seeded"))) << seed;
  }
  const Result top = run(
      fmt::format("generate '{}' --nodes 50 --edges 200 --seed 18446744073709551615", path("top")));
  EXPECT_EQ(top.exit_code, 0) << top.err;
  for (const char* command : {"partition {} '{}' --parts 2 --seed -1",
                              "bench sample --dataset {} --batches 1 --seed -1{}"}) {
    const Result result = run(fmt::format(fmt::runtime(command), kCora, path("p")));
    EXPECT_NE(result.exit_code, 0) << command;
    EXPECT_THAT(result.err, HasSubstr("--seed: must be an integer")) << command;
  }
}

// An edge list whose only line is a 10 MB run of digits was taken for a header and gave an
// empty dataset with exit code 0; a long id was echoed whole. Over-long fields are refused with
// the line number and a cut excerpt, wherever they are.
TEST_F(CliHostileTest, ConvertRefusesOverLongFieldsWithAnExcerpt) {
  const std::string digits(10'000'000, '7');
  for (const std::string& text :
       {digits + "\n", "0 1\n" + digits + " 2\n", "src dst\n1 " + digits}) {
    const std::string file = path("long.txt");
    std::ofstream(file) << text;
    const Result result = run(fmt::format("convert '{}' '{}'", file, path("long-out")));
    EXPECT_NE(result.exit_code, 0);
    EXPECT_THAT(result.err, HasSubstr("bytes long ('7777777777"));
    EXPECT_THAT(result.err, HasSubstr("fields are at most 64 bytes"));
    EXPECT_LT(result.err.size(), 400u) << "the error echoes the field";
    EXPECT_FALSE(fs::exists(fs::path(path("long-out")) / "volley.json"));
  }
  // 30 digits fit the field limit but not 64 bits: named, quoted and short.
  std::ofstream(path("wide.txt")) << "1 2\n3 " << std::string(30, '9') << "\n";
  const Result wide = run(fmt::format("convert '{}' '{}'", path("wide.txt"), path("wide-out")));
  EXPECT_NE(wide.exit_code, 0);
  EXPECT_THAT(wide.err, HasSubstr(":2: node id '999999999999999999999999999999' does not fit"));
}

}  // namespace
