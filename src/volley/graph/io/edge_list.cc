#include "volley/graph/io/edge_list.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <string_view>
#include <vector>

#include "volley/core/files.h"
#include "volley/core/progress.h"

namespace volley {
namespace {

bool is_blank(char c) { return c == ' ' || c == '\t' || c == '\r'; }

// A line for an error message: trailing blanks removed, at most 60 characters, bytes that are
// not printable ASCII (a binary file read as text) as \xNN.
std::string quoted(std::string_view line) {
  while (!line.empty() && is_blank(line.back())) line.remove_suffix(1);
  const bool long_line = line.size() > 60;
  std::string text;
  for (const char c : line.substr(0, 60)) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte >= 0x20 && byte < 0x7f) {
      text.push_back(c);
    } else {
      text += fmt::format("\\x{:02x}", byte);
    }
  }
  return fmt::format("'{}{}'", text, long_line ? "..." : "");
}

// Splits one line into at most `kMaxFields` fields separated by blanks and/or one comma.
// Returns the number of fields, or kMaxFields + 1 when there are more.
constexpr int kMaxFields = 3;
int split_fields(std::string_view line, std::string_view (&fields)[kMaxFields]) {
  int count = 0;
  size_t i = 0;
  const size_t n = line.size();
  while (true) {
    while (i < n && is_blank(line[i])) ++i;
    if (i == n) return count;
    if (count > 0) {
      if (line[i] == ',') {
        ++i;
        while (i < n && is_blank(line[i])) ++i;
      }
    }
    const size_t start = i;
    while (i < n && !is_blank(line[i]) && line[i] != ',') ++i;
    if (count == kMaxFields) return kMaxFields + 1;
    fields[count++] = line.substr(start, i - start);
    if (i == start) return kMaxFields + 1;  // an empty field: ",," or a trailing comma
  }
}

bool parse_id(std::string_view text, int64_t* value) {
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), *value);
  return error == std::errc() && end == text.data() + text.size();
}

// A number as text, whatever its magnitude (a run of a million digits is out of a double's
// range, and still a number: a header line is words).
bool looks_numeric(std::string_view text) {
  double value;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  return (error == std::errc() || error == std::errc::result_out_of_range) &&
         end == text.data() + text.size();
}

// The longest field an edge list may hold: a node id has at most 20 digits, a weight needs no
// more than a few dozen characters. Longer ones are refused before they are read.
constexpr size_t kMaxFieldBytes = 64;

class EdgeListParser {
 public:
  EdgeListParser(const std::string& path, const EdgeListOptions& options)
      : path_(path), options_(options) {}

  EdgeList parse(std::string_view text) {
    ProgressBar progress("read edges", static_cast<int64_t>(text.size()));
    size_t position = 0;
    size_t reported = 0;
    int64_t line_number = 0;
    bool first_content_line = true;
    while (position < text.size()) {
      size_t end = text.find('\n', position);
      if (end == std::string_view::npos) end = text.size();
      const std::string_view line = text.substr(position, end - position);
      position = end + 1;
      ++line_number;
      if (position - reported >= (size_t{1} << 22)) {
        progress.advance(static_cast<int64_t>(std::min(position, text.size()) - reported));
        reported = position;
      }

      size_t first = 0;
      while (first < line.size() && is_blank(line[first])) ++first;
      if (first == line.size() || line[first] == '#' || line[first] == '%') continue;
      if (first_content_line) {
        first_content_line = false;
        if (is_header(line, line_number)) continue;
      }
      parse_edge(line, line_number);
    }
    progress.finish();

    EdgeList edges{Array::from_vector(src_), Array::from_vector(dst_), std::nullopt};
    if (columns_ == 3) edges.weights = Array::from_vector(weights_);
    return edges;
  }

 private:
  // IoError naming the line and an excerpt when a field is longer than kMaxFieldBytes.
  void check_field_sizes(const std::string_view (&fields)[kMaxFields], int count,
                         int64_t line_number) const {
    for (int f = 0; f < std::min(count, kMaxFields); ++f) {
      if (fields[f].size() > kMaxFieldBytes) {
        throw IoError(fmt::format(
            "{}:{}: field {} is {} bytes long ({}); fields are at most {} "
            "bytes (node ids at most 20 digits)",
            path_, line_number, f + 1, fields[f].size(), quoted(fields[f]), kMaxFieldBytes));
      }
    }
  }

  bool is_header(std::string_view line, int64_t line_number) const {
    std::string_view fields[kMaxFields];
    const int count = split_fields(line, fields);
    check_field_sizes(fields, count, line_number);
    const bool numeric = count >= 1 && looks_numeric(fields[0]);
    if (options_.has_header.has_value()) {
      if (!*options_.has_header) return false;
      if (numeric && count >= 2 && looks_numeric(fields[1])) {
        // A header was promised, but the line is an edge: skipping it would lose data silently.
        throw IoError(
            fmt::format("{}:{}: expected a header line (has_header was set), found the edge {}",
                        path_, line_number, quoted(line)));
      }
      return true;
    }
    return !numeric;
  }

  [[noreturn]] void fail_columns(std::string_view line, int64_t line_number) const {
    if (columns_ == 0) {
      throw IoError(fmt::format("{}:{}: expected 2 or 3 numeric columns, found {}", path_,
                                line_number, quoted(line)));
    }
    throw IoError(fmt::format("{}:{}: expected {} numeric columns (as on line {}), found {}", path_,
                              line_number, columns_, first_edge_line_, quoted(line)));
  }

  int64_t parse_node(std::string_view field, std::string_view line, int64_t line_number) const {
    int64_t id;
    if (!parse_id(field, &id)) {
      int64_t ignored;
      const auto [end, error] = std::from_chars(field.data(), field.data() + field.size(), ignored);
      if (error == std::errc::result_out_of_range) {
        throw IoError(fmt::format("{}:{}: node id {} does not fit in 64 bits", path_, line_number,
                                  quoted(field)));
      }
      if (looks_numeric(field)) {
        throw IoError(fmt::format("{}:{}: expected integer node ids, found '{}' in {}", path_,
                                  line_number, field, quoted(line)));
      }
      fail_columns(line, line_number);
    }
    if (id < 0) {
      throw IoError(
          fmt::format("{}:{}: node id {} is negative (ids must be >= 0)", path_, line_number, id));
    }
    if (options_.num_nodes.has_value() && id >= *options_.num_nodes) {
      throw IoError(fmt::format("{}:{}: node id {} out of range for a graph with {} nodes", path_,
                                line_number, id, *options_.num_nodes));
    }
    return id;
  }

  void parse_edge(std::string_view line, int64_t line_number) {
    std::string_view fields[kMaxFields];
    const int count = split_fields(line, fields);
    check_field_sizes(fields, count, line_number);
    if (count < 2 || count > kMaxFields) fail_columns(line, line_number);
    if (columns_ != 0 && count != columns_) fail_columns(line, line_number);
    src_.push_back(parse_node(fields[0], line, line_number));
    dst_.push_back(parse_node(fields[1], line, line_number));
    if (count == 3) {
      float weight;
      const std::string_view text = fields[2];
      const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), weight);
      if (error != std::errc() || end != text.data() + text.size()) {
        fail_columns(line, line_number);
      }
      if (!(std::isfinite(weight) && weight >= 0.0f)) {
        throw IoError(
            fmt::format("{}:{}: weight {} must be finite and >= 0", path_, line_number, text));
      }
      weights_.push_back(weight);
    }
    if (columns_ == 0) {  // the first edge sets the number of columns for every other line
      columns_ = count;
      first_edge_line_ = line_number;
    }
  }

  const std::string& path_;
  const EdgeListOptions& options_;
  int columns_ = 0;  // 2 or 3 once the first edge is read
  int64_t first_edge_line_ = 0;
  std::vector<int64_t> src_;
  std::vector<int64_t> dst_;
  std::vector<float> weights_;
};

}  // namespace

EdgeList read_edge_list(const std::string& path, const EdgeListOptions& options) {
  VOLLEY_REQUIRE(!options.num_nodes.has_value() || *options.num_nodes >= 0, ValueError,
                 "read_edge_list('{}'): num_nodes must be >= 0, got {}", path,
                 options.num_nodes.value_or(0));
  require_regular_file(path, "edge list");
  const Buffer file = Buffer::map_file(path);
  std::string_view text(reinterpret_cast<const char*>(file.data()), file.size());
  if (text.starts_with("\xEF\xBB\xBF")) text.remove_prefix(3);  // a UTF-8 byte-order mark
  return EdgeListParser(path, options).parse(text);
}

EdgeList edge_list_from_array(const Array& edges, const std::string& source) {
  VOLLEY_REQUIRE(edges.dtype() == DType::kInt32 || edges.dtype() == DType::kInt64, ValueError,
                 "{}: expected an int32 or int64 edge array, found {}", source, edges.describe());
  VOLLEY_REQUIRE(edges.ndim() == 2 && (edges.dim(0) == 2 || edges.dim(1) == 2), ValueError,
                 "{}: expected an edge array of shape [2, E] or [E, 2], found {}", source,
                 edges.describe());
  const bool rows_are_edges = edges.dim(0) != 2;  // [E, 2]
  const int64_t count = rows_are_edges ? edges.dim(0) : edges.dim(1);
  const Array wide = edges.dtype() == DType::kInt64 ? edges : edges.cast(DType::kInt64);
  const int64_t* values = wide.data<int64_t>();
  EdgeList result{Array::empty(DType::kInt64, {count}), Array::empty(DType::kInt64, {count}),
                  std::nullopt};
  int64_t* src = result.src.data<int64_t>();
  int64_t* dst = result.dst.data<int64_t>();
  for (int64_t i = 0; i < count; ++i) {
    src[i] = rows_are_edges ? values[2 * i] : values[i];
    dst[i] = rows_are_edges ? values[2 * i + 1] : values[count + i];
    VOLLEY_REQUIRE(src[i] >= 0 && dst[i] >= 0, ValueError,
                   "{}: edge {} ({} -> {}) has a negative node id", source, i, src[i], dst[i]);
  }
  return result;
}

}  // namespace volley
