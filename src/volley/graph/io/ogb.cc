#include "volley/graph/io/ogb.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>
#include <filesystem>

#include "volley/core/array.h"
#include "volley/core/half.h"
#include "volley/core/parallel.h"
#include "volley/core/progress.h"
#include "volley/graph/csr.h"
#include "volley/graph/dataset.h"
#include "volley/graph/internal/ogb_files.h"
#include "volley/graph/io/gzip_lines.h"
#include "volley/graph/io/npy.h"

namespace volley {
namespace {

namespace fs = std::filesystem;

using graph_internal::ByteProgress;
using graph_internal::parse_number;

constexpr int64_t kRowsPerBlock = 4096;       // feature rows parsed before each write
constexpr size_t kIndicesPerWrite = 1 << 20;  // neighbors copied out per write of indices.npy

// A line for an error message: at most 60 characters, non-printable bytes as \xNN.
std::string quoted(std::string_view line) {
  std::string text;
  for (const char c : line.substr(0, 60)) {
    const auto byte = static_cast<unsigned char>(c);
    text += byte >= 0x20 && byte < 0x7f ? std::string(1, c) : fmt::format("\\x{:02x}", byte);
  }
  return fmt::format("'{}{}'", text, line.size() > 60 ? "..." : "");
}

// A file of `bytes` in `directory`, mapped read-write and unlinked at once: scratch space backed
// by the page cache, never left behind (not even after a crash).
class ScratchMapping {
 public:
  ScratchMapping(const std::string& directory, size_t bytes) : bytes_(bytes) {
    if (bytes == 0) return;
    const std::string path = (fs::path(directory) / ".volley-ogb-scratch").string();
    const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0) throw IoError(fmt::format("cannot create '{}': {}", path, std::strerror(errno)));
    ::unlink(path.c_str());
    if (::ftruncate(fd, static_cast<off_t>(bytes)) != 0) {
      const int error = errno;
      ::close(fd);
      throw IoError(fmt::format("cannot size scratch file '{}' to {} bytes: {}", path, bytes,
                                std::strerror(error)));
    }
    data_ = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    const int error = errno;
    ::close(fd);
    if (data_ == MAP_FAILED) {
      data_ = nullptr;
      throw IoError(fmt::format("cannot map scratch file '{}': {}", path, std::strerror(error)));
    }
  }
  ~ScratchMapping() {
    if (data_ != nullptr) ::munmap(data_, bytes_);
  }
  ScratchMapping(const ScratchMapping&) = delete;
  ScratchMapping& operator=(const ScratchMapping&) = delete;
  void* data() const { return data_; }

 private:
  void* data_ = nullptr;
  size_t bytes_;
};

// "src,dst" with both ids in [0, n).
void parse_edge(std::string_view line, const GzipLines& lines, int64_t n, int64_t* src,
                int64_t* dst) {
  const size_t comma = line.find(',');
  const bool ok = comma != std::string_view::npos && parse_number(line.substr(0, comma), src) &&
                  parse_number(line.substr(comma + 1), dst);
  VOLLEY_REQUIRE(ok, ValueError, "{}:{}: expected 'src,dst' (two node ids), found {}", lines.path(),
                 lines.line_number(), quoted(line));
  for (const int64_t id : {*src, *dst}) {
    VOLLEY_REQUIRE(id >= 0 && id < n, IndexError,
                   "{}:{}: node id {} out of range for {} nodes (raw/num-node-list.csv.gz)",
                   lines.path(), lines.line_number(), id, n);
  }
}

// Calls visit(row, neighbor) for every stored entry of every edge line: (dst, src), and with
// `undirected` also (src, dst). Returns the number of edge lines.
template <typename Visit>
int64_t for_each_entry(const std::string& path, int64_t n, const OgbConvertOptions& options,
                       ByteProgress& progress, Visit&& visit) {
  GzipLines lines(path);
  progress.start_file();
  std::string_view line;
  int64_t src = 0, dst = 0, count = 0;
  while (lines.next(&line)) {
    parse_edge(line, lines, n, &src, &dst);
    ++count;
    if ((count & 0xffff) == 0) progress.update(lines);
    if (src == dst && options.drop_self_loops) continue;
    visit(dst, src);  // in-neighbors: row dst lists the source
    if (options.undirected && src != dst) visit(src, dst);
  }
  progress.update(lines);
  return count;
}

// Sorts each row of the scratch neighbors, drops repeats when asked, and streams the result
// into indices.npy; adds indptr and indices to `writer`. Returns the number of stored edges.
template <typename T>
int64_t write_sorted_rows(T* slots, const std::vector<int64_t>& slot_ptr, bool unique,
                          DatasetWriter& writer) {
  const int64_t n = static_cast<int64_t>(slot_ptr.size()) - 1;
  Array indptr = Array::empty(DType::kInt64, {n + 1});
  int64_t* kept = indptr.data<int64_t>();
  kept[0] = 0;
  parallel_for(0, n, 1024, [&](int64_t begin, int64_t end) {
    for (int64_t v = begin; v < end; ++v) {
      T* first = slots + slot_ptr[v];
      T* last = slots + slot_ptr[v + 1];
      std::sort(first, last);
      kept[v + 1] = unique ? std::unique(first, last) - first : last - first;
    }
  });
  for (int64_t v = 0; v < n; ++v) kept[v + 1] += kept[v];
  const int64_t num_edges = kept[n];
  NpyWriter indices(writer.path_of("indices"), dtype_of<T>(), {num_edges});
  std::vector<T> chunk;
  chunk.reserve(kIndicesPerWrite);
  for (int64_t v = 0; v < n; ++v) {
    const T* row = slots + slot_ptr[v];
    for (int64_t k = 0; k < kept[v + 1] - kept[v]; ++k) {
      chunk.push_back(row[k]);
      if (chunk.size() == kIndicesPerWrite) {
        indices.write(chunk.data(), chunk.size() * sizeof(T));
        chunk.clear();
      }
    }
  }
  indices.write(chunk.data(), chunk.size() * sizeof(T));
  indices.close();
  writer.add_array("indptr", indptr);
  writer.add_written("indices", dtype_of<T>(), {num_edges}, indices.crc32());
  return num_edges;
}

// Two passes over edge.csv.gz: count each row's entries, then place them into scratch memory.
template <typename T>
int64_t write_graph_as(const std::string& path, int64_t n, const OgbConvertOptions& options,
                       const std::string& output, DatasetWriter& writer, ByteProgress& progress) {
  std::vector<int64_t> slot_ptr(static_cast<size_t>(n) + 1, 0);
  const int64_t lines_counted = for_each_entry(path, n, options, progress,
                                               [&](int64_t row, int64_t) { ++slot_ptr[row + 1]; });
  for (int64_t v = 0; v < n; ++v) slot_ptr[v + 1] += slot_ptr[v];
  ScratchMapping scratch(output, static_cast<size_t>(slot_ptr[n]) * sizeof(T));
  T* slots = static_cast<T*>(scratch.data());
  std::vector<int64_t> cursor(slot_ptr.begin(), slot_ptr.end() - 1);
  const int64_t lines_placed =
      for_each_entry(path, n, options, progress, [&](int64_t row, int64_t neighbor) {
        VOLLEY_REQUIRE(cursor[row] < slot_ptr[row + 1], IoError,
                       "{}: changed while it was being read", path);
        slots[cursor[row]++] = static_cast<T>(neighbor);
      });
  VOLLEY_REQUIRE(lines_placed == lines_counted, IoError,
                 "{}: changed while it was being read ({} edges, then {})", path, lines_counted,
                 lines_placed);
  return write_sorted_rows(slots, slot_ptr, options.undirected, writer);
}

int64_t write_graph(const std::string& path, int64_t n, const OgbConvertOptions& options,
                    const std::string& output, DatasetWriter& writer, ByteProgress& progress) {
  if (n < (int64_t{1} << 31)) {
    return write_graph_as<int32_t>(path, n, options, output, writer, progress);
  }
  return write_graph_as<int64_t>(path, n, options, output, writer, progress);
}

// Parses one feature line into `row` (exactly `dim` values).
void parse_feature_row(std::string_view line, const GzipLines& lines, int64_t dim, float* row) {
  int64_t count = 0;
  size_t start = 0;
  while (true) {
    size_t comma = line.find(',', start);
    if (comma == std::string_view::npos) comma = line.size();
    const std::string_view field = line.substr(start, comma - start);
    if (count < dim) {
      VOLLEY_REQUIRE(parse_number(field, &row[count]), ValueError,
                     "{}:{}: value {} is {}, not a number", lines.path(), lines.line_number(),
                     count, quoted(field));
    }
    ++count;
    if (comma == line.size()) break;
    start = comma + 1;
  }
  VOLLEY_REQUIRE(count == dim, ValueError, "{}:{}: expected {} values (as on line 1), found {}",
                 lines.path(), lines.line_number(), dim, count);
}

// Writes `rows` parsed rows of `block` in `dtype`; `first_row` numbers them in error messages.
void write_feature_block(const std::vector<float>& block, int64_t rows, int64_t dim,
                         int64_t first_row, DType dtype, const std::string& source,
                         NpyWriter& out) {
  const size_t count = static_cast<size_t>(rows * dim);
  if (dtype == DType::kFloat32) {
    out.write(block.data(), count * sizeof(float));
  } else if (dtype == DType::kFloat16) {
    std::vector<uint16_t> converted(count);
    for (size_t i = 0; i < count; ++i) converted[i] = float_to_half(block[i]);
    out.write(converted.data(), count * sizeof(uint16_t));
  } else {
    std::vector<uint8_t> converted(count);
    for (size_t i = 0; i < count; ++i) {
      const float value = block[i];
      VOLLEY_REQUIRE(value >= 0.0f && value <= 255.0f && std::floor(value) == value, ValueError,
                     "{}: feature [{}, {}] = {} is not an integer in [0, 255], so it cannot be "
                     "stored as uint8 exactly (use float32 or float16)",
                     source, first_row + static_cast<int64_t>(i) / dim,
                     static_cast<int64_t>(i) % dim, value);
      converted[i] = static_cast<uint8_t>(value);
    }
    out.write(converted.data(), count);
  }
}

int64_t read_num_nodes(const std::string& path) {
  GzipLines lines(path);
  std::string_view line;
  int64_t n = -1;
  VOLLEY_REQUIRE(lines.next(&line) && parse_number(line, &n) && n >= 0, ValueError,
                 "{}:1: expected the number of nodes, found {}", path, quoted(line));
  VOLLEY_REQUIRE(!lines.next(&line), ValueError,
                 "{}: more than one graph (a graph-property dataset?); only node-property "
                 "datasets with one graph can be converted",
                 path);
  return n;
}

std::string default_name(const fs::path& root) {
  fs::path path = root.lexically_normal();
  if (path.filename().empty()) path = path.parent_path();
  return path.filename().string();
}

int64_t size_of(const fs::path& path) {
  std::error_code error;
  const auto size = fs::file_size(path, error);
  return error ? 0 : static_cast<int64_t>(size);
}

}  // namespace

namespace graph_internal {

std::string choose_ogb_split(const fs::path& root, const std::string& wanted) {
  std::vector<std::string> present;
  std::error_code error;
  if (fs::is_directory(root / "split", error)) {
    for (const auto& entry : fs::directory_iterator(root / "split")) {
      if (entry.is_directory()) present.push_back(entry.path().filename().string());
    }
  }
  std::sort(present.begin(), present.end());
  if (!wanted.empty()) {
    VOLLEY_REQUIRE(std::find(present.begin(), present.end(), wanted) != present.end(), IoError,
                   "{}: no split '{}' (found: {})", (root / "split").string(), wanted,
                   present.empty() ? "none" : fmt::format("{}", fmt::join(present, ", ")));
    return wanted;
  }
  VOLLEY_REQUIRE(present.size() <= 1, ValueError, "{}: several splits ({}); name one",
                 (root / "split").string(), fmt::join(present, ", "));
  return present.empty() ? "" : present[0];
}

WrittenFeatures write_ogb_features(const std::string& path, int64_t n, DType dtype,
                                   const std::string& out_path, ByteProgress& progress) {
  VOLLEY_REQUIRE(dtype == DType::kFloat32 || dtype == DType::kFloat16 || dtype == DType::kUInt8,
                 ValueError, "OGB features can be stored as float32, float16 or uint8, not {}",
                 dtype_name(dtype));
  GzipLines lines(path);
  progress.start_file();
  std::string_view line;
  if (!lines.next(&line)) {
    VOLLEY_REQUIRE(n == 0, ValueError, "{}: empty, but the graph has {} nodes", path, n);
    return {};
  }
  const int64_t dim = std::count(line.begin(), line.end(), ',') + 1;
  NpyWriter out(out_path, dtype, {n, dim});
  std::vector<float> block(static_cast<size_t>(kRowsPerBlock * dim));
  int64_t row = 0, in_block = 0;
  do {
    VOLLEY_REQUIRE(row < n, ValueError, "{}: more than {} rows, one per node", path, n);
    parse_feature_row(line, lines, dim, block.data() + in_block * dim);
    ++row;
    if (++in_block == kRowsPerBlock) {
      write_feature_block(block, in_block, dim, row - in_block, dtype, path, out);
      in_block = 0;
      progress.update(lines);
    }
  } while (lines.next(&line));
  write_feature_block(block, in_block, dim, row - in_block, dtype, path, out);
  progress.update(lines);
  VOLLEY_REQUIRE(row == n, ValueError, "{}: {} rows, but the graph has {} nodes", path, row, n);
  out.close();
  return {dim, out.crc32()};
}

std::pair<Array, int64_t> read_ogb_labels(const std::string& path, int64_t n,
                                          ByteProgress& progress) {
  GzipLines lines(path);
  progress.start_file();
  Array labels = Array::empty(DType::kInt64, {n});
  int64_t* label = labels.data<int64_t>();
  int64_t row = 0, max_label = -1;
  std::string_view line;
  while (lines.next(&line)) {
    VOLLEY_REQUIRE(line.find(',') == std::string_view::npos, ValueError,
                   "{}:{}: {} columns; Volley stores one class per node, so multi-label tasks "
                   "(ogbn-proteins) are not supported",
                   path, lines.line_number(), std::count(line.begin(), line.end(), ',') + 1);
    VOLLEY_REQUIRE(row < n, ValueError, "{}: more than {} labels, one per node", path, n);
    double value = 0;
    const bool number = parse_number(line, &value);
    const bool ok = number && (std::isnan(value) ||
                               (value >= 0 && std::floor(value) == value && value < 9.0e15));
    VOLLEY_REQUIRE(ok, ValueError, "{}:{}: expected a class id (integer >= 0) or nan, found {}",
                   path, lines.line_number(), quoted(line));
    label[row] = std::isnan(value) ? -1 : static_cast<int64_t>(value);
    max_label = std::max(max_label, label[row]);
    if ((++row & 0xffff) == 0) progress.update(lines);
  }
  progress.update(lines);
  VOLLEY_REQUIRE(row == n, ValueError, "{}: {} labels, but the graph has {} nodes", path, row, n);
  return {std::move(labels), max_label + 1};
}

Array read_ogb_split(const std::string& path, int64_t n, ByteProgress& progress) {
  GzipLines lines(path);
  progress.start_file();
  std::vector<int64_t> ids;
  std::string_view line;
  while (lines.next(&line)) {
    int64_t id = 0;
    VOLLEY_REQUIRE(parse_number(line, &id), ValueError, "{}:{}: expected a node id, found {}", path,
                   lines.line_number(), quoted(line));
    VOLLEY_REQUIRE(id >= 0 && id < n, IndexError, "{}:{}: node id {} out of range for {} nodes",
                   path, lines.line_number(), id, n);
    ids.push_back(id);
  }
  progress.update(lines);
  return Array::from_vector(ids);
}

}  // namespace graph_internal

bool is_ogb_directory(const std::string& directory) {
  std::error_code error;
  return fs::is_regular_file(fs::path(directory) / "raw" / "edge.csv.gz", error);
}

OgbConversion convert_ogb_node_dataset(const std::string& input, const std::string& output,
                                       const OgbConvertOptions& options) {
  const fs::path root(input);
  const fs::path raw = root / "raw";
  std::error_code error;
  VOLLEY_REQUIRE(
      !fs::exists(raw / "relations", error) && !fs::exists(raw / "num-node-dict.csv.gz", error),
      ValueError,
      "{}: a heterogeneous OGB dataset (raw/relations/): convert it with "
      "convert_ogb_hetero_dataset (volley/graph/io/ogb_hetero.h; `volley convert` does)",
      input);
  for (const char* required : {"num-node-list.csv.gz", "edge.csv.gz"}) {
    VOLLEY_REQUIRE(fs::is_regular_file(raw / required, error), IoError,
                   "{}: not an OGB node-property dataset: {} is missing", input,
                   (raw / required).string());
  }
  OgbConversion result;
  result.name = options.name.empty() ? default_name(root) : options.name;
  result.split = graph_internal::choose_ogb_split(root, options.split);
  const int64_t n = read_num_nodes((raw / "num-node-list.csv.gz").string());
  result.num_nodes = n;
  const fs::path features = raw / "node-feat.csv.gz";
  const fs::path labels = raw / "node-label.csv.gz";
  const bool has_features = fs::is_regular_file(features, error);
  const bool has_labels = fs::is_regular_file(labels, error);
  const fs::path split_dir = root / "split" / result.split;
  const std::pair<const char*, const char*> split_files[] = {
      {"train.csv.gz", "train_idx"}, {"valid.csv.gz", "val_idx"}, {"test.csv.gz", "test_idx"}};

  int64_t total = 2 * size_of(raw / "edge.csv.gz");
  if (has_features) total += size_of(features);
  if (has_labels) total += size_of(labels);
  if (!result.split.empty()) {
    for (const auto& [file, field] : split_files) total += size_of(split_dir / file);
  }
  ByteProgress progress(total);
  DatasetWriter writer(output, result.name);
  result.num_edges =
      write_graph((raw / "edge.csv.gz").string(), n, options, output, writer, progress);
  if (has_features) {
    const auto written = graph_internal::write_ogb_features(
        features.string(), n, options.feature_dtype, writer.path_of("features"), progress);
    result.feature_dim = written.dim;
    if (written.dim > 0) {
      writer.add_written("features", options.feature_dtype, {n, written.dim}, written.crc32);
    }
  }
  if (has_labels) {
    auto [array, classes] = graph_internal::read_ogb_labels(labels.string(), n, progress);
    writer.add_array("labels", array);
    result.num_classes = classes;
  }
  if (!result.split.empty()) {
    int64_t* sizes[] = {&result.num_train, &result.num_val, &result.num_test};
    for (int i = 0; i < 3; ++i) {
      const fs::path file = split_dir / split_files[i].first;
      VOLLEY_REQUIRE(fs::is_regular_file(file, error), IoError, "{}: missing", file.string());
      const Array ids = graph_internal::read_ogb_split(file.string(), n, progress);
      writer.add_array(split_files[i].second, ids);
      *sizes[i] = ids.numel();
    }
  }
  writer.finish(n, result.num_edges, result.num_classes, Orientation::kIn);
  progress.finish();
  return result;
}

}  // namespace volley
