// tools/volley/commands.h — each `volley` subcommand registers itself on the CLI11 app.
//
// A command's callback throws volley::Error (or CLI11 errors) on failure; main() prints one line
// "volley: error: ..." to stderr and exits non-zero. Commands print results to stdout.
#pragma once

#include <CLI/CLI.hpp>
#include <nlohmann/json_fwd.hpp>

#include <cmath>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace volley {
class Csr;
struct PartitionOptions;
}  // namespace volley

namespace volley::cli {

// Whether `digits` (decimal digits only) is a number past int64's largest, 9223372036854775807
// (CLI11 would clamp it there).
inline bool past_int64(std::string_view digits) {
  constexpr std::string_view largest = "9223372036854775807";
  return digits.size() > largest.size() || (digits.size() == largest.size() && digits > largest);
}
inline bool all_digits(std::string_view text) {
  return !text.empty() && text.find_first_not_of("0123456789") == std::string_view::npos;
}

// Readable stand-ins for CLI::PositiveNumber / CLI::NonNegativeNumber, whose messages print the
// range up to DBL_MAX (309 digits): "must be a number >= 1, got '0'". An integer past int64
// (which CLI11 would clamp to 2^63 - 1) is refused too, as the value given.
inline CLI::Validator at_least(double minimum) {
  return CLI::Validator(
      [minimum](std::string& text) -> std::string {
        double value = 0;
        if (!CLI::detail::lexical_cast(text, value)) {
          return "must be a number >= " + CLI::detail::to_string(minimum) + ", got '" +
                 text.substr(0, 40) + "'";
        }
        if (!(value >= minimum) || !std::isfinite(value)) {  // NaN and inf too
          return "must be >= " + CLI::detail::to_string(minimum) + ", got " + text.substr(0, 40);
        }
        if (all_digits(text) && past_int64(text)) {
          return "must be at most 9223372036854775807, got " + text.substr(0, 40);
        }
        return "";
      },
      "NUMBER >= " + CLI::detail::to_string(minimum));
}
// An integer option's value past int64 (which CLI11 would clamp to 2^63 - 1) refused as given;
// anything else is left to CLI11's conversion and the option's own checks.
inline const CLI::Validator kInt64(
    [](std::string& text) -> std::string {
      const std::string_view digits =
          std::string_view(text).substr(!text.empty() && text[0] == '-' ? 1 : 0);
      if (all_digits(digits) && past_int64(digits)) {
        return "must be an integer in [-9223372036854775808, 9223372036854775807], got " +
               text.substr(0, 40);
      }
      return "";
    },
    "INT64");
// A share in [0, 1]: CLI::Range lets NaN through (NaN < 0 and NaN > 1 are both false).
inline const CLI::Validator kFraction(
    [](std::string& text) -> std::string {
      double value = 0;
      if (!CLI::detail::lexical_cast(text, value) || !(value >= 0.0 && value <= 1.0)) {
        return "must be a number in [0, 1], got '" + text.substr(0, 40) + "'";
      }
      return "";
    },
    "FRACTION");
// A byte size as CLI::AsSizeValue reads it ("64M", "8G", "4096"), checked before it: not
// negative, and a plain number of bytes within int64 (AsSizeValue wraps "-1" and clamps past
// 2^64 without a word).
inline const CLI::Validator kByteSize(
    [](std::string& text) -> std::string {
      const std::string shown = text.substr(0, 40);
      if (!text.empty() && text[0] == '-') return "must be a size >= 0, got " + shown;
      if (all_digits(text) && past_int64(text)) {
        return "must be at most 9223372036854775807 bytes, got " + shown;
      }
      return "";
    },
    "SIZE");
inline const CLI::Validator kPositive = at_least(1);
inline const CLI::Validator kNonNegative = at_least(0);

// Seconds: a finite number > 0 (or >= 0). CLI::PositiveNumber lets "nan" through (NaN < 0 is
// false) and "inf".
inline CLI::Validator seconds(bool zero_allowed) {
  return CLI::Validator(
      [zero_allowed](std::string& text) -> std::string {
        double value = 0;
        const std::string range =
            zero_allowed ? "a finite number of seconds >= 0" : "a finite number of seconds > 0";
        if (!CLI::detail::lexical_cast(text, value) || !std::isfinite(value) ||
            (zero_allowed ? value < 0 : value <= 0)) {
          return "must be " + range + ", got '" + text.substr(0, 40) + "'";
        }
        return "";
      },
      zero_allowed ? "SECONDS >= 0" : "SECONDS > 0");
}
inline const CLI::Validator kPositiveSeconds = seconds(false);
inline const CLI::Validator kNonNegativeSeconds = seconds(true);

// A seed: decimal digits with a value in [0, 2^64 - 1]. (CLI11 reads "-1" into a uint64 as
// 2^64 - 1 and saturates 2^64 there: two seeds that name the same stream.)
inline const CLI::Validator kSeed(
    [](std::string& text) -> std::string {
      const std::string range = "must be an integer in [0, 18446744073709551615], got '";
      if (text.empty() || text.size() > 20 ||
          text.find_first_not_of("0123456789") != std::string::npos) {
        return range + text.substr(0, 40) + (text.size() > 40 ? "...'" : "'");
      }
      if (text.size() == 20 && text > "18446744073709551615") return range + text + "'";
      return "";
    },
    "UINT64");

// Options every command sees.
struct GlobalOptions {
  bool quiet = false;  // no progress bars
  int threads = 0;     // 0: all hardware threads
};

void add_info_command(CLI::App& app, GlobalOptions& global);
void add_convert_command(CLI::App& app, GlobalOptions& global);
void add_generate_command(CLI::App& app, GlobalOptions& global);
void add_bench_command(CLI::App& app, GlobalOptions& global);
void add_partition_command(CLI::App& app, GlobalOptions& global);
// `volley split-edges` (split_edges_command.cc).
void add_split_edges_command(CLI::App& app, GlobalOptions& global);
// `volley serve` (serve_command.cc).
void add_serve_command(CLI::App& app, GlobalOptions& global);
// `volley bench gather` (feature store), registered by add_bench_command.
void add_bench_gather(CLI::App& bench);
// `volley bench dist` (bench_dist.cc), registered by add_bench_command.
void add_bench_dist(CLI::App& bench);
// The message of `serve` and `bench dist` in a build without gRPC (VOLLEY_WITH_DIST undefined).
extern const char* const kNoDistService;
// `volley info` on a partitioned dataset directory or one of its part-P directories (defined in
// partition_command.cc): prints the description and returns true, or returns false when `path`
// is neither.
bool describe_partitioned(const std::string& path, bool as_json, bool verify);
// `volley info` on part `part` of the heterogeneous partitioned directory `parent`, at `path`
// (partition_hetero.cc).
void describe_hetero_part(const std::string& path, const std::string& parent, int64_t part,
                          bool as_json, bool verify);
// The text description of a heterogeneous partitioned directory (partition_hetero.cc); `header`:
// its name, method and type counts first, its time files last.
void print_hetero_partitioned(const std::string& path, bool header);
// Minimum, mean and maximum of a degree sequence.
struct DegreeStats {
  int64_t min = 0;
  double mean = 0.0;
  int64_t max = 0;
};
// The degrees of `graph`'s rows and of its `num_columns` neighbor ids (info_command.cc): a
// homogeneous graph's in- and out-degrees (num_columns = its nodes), an edge type's over its
// destination and source types.
std::pair<DegreeStats, DegreeStats> row_column_degrees(const Csr& graph, int64_t num_columns);
// `volley info --verify` (info_command.cc): nothing when `problems` is empty; else prints them
// (as `json`'s "verify" with `as_json`) and throws IoError naming the first.
void report_problems_or_throw(const std::string& path, const std::vector<std::string>& problems,
                              bool as_json, nlohmann::ordered_json& json);

}  // namespace volley::cli
