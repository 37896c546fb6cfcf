// volley/graph/internal/ogb_files.h — the readers of an OGB directory's files (internal; io/ogb.cc
// defines them for both OGB importers: a heterogeneous dataset's node type reads its features,
// labels and split files exactly as a homogeneous dataset reads its own).
#pragma once

#include <charconv>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "volley/core/array.h"
#include "volley/core/progress.h"
#include "volley/graph/io/gzip_lines.h"

namespace volley::graph_internal {

// Whether all of `text` is one number of type T.
template <typename T>
bool parse_number(std::string_view text, T* value) {
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), *value);
  return error == std::errc() && end == text.data() + text.size() && !text.empty();
}

// One bar over every file read, in compressed bytes; a default-constructed one draws nothing.
class ByteProgress {
 public:
  ByteProgress() = default;
  explicit ByteProgress(int64_t total) { bar_.emplace("convert ogb", total); }
  // Advances the bar to where `lines` is; call every few thousand lines and at the file's end.
  void update(const GzipLines& lines) {
    const int64_t offset = lines.compressed_offset();
    if (offset > last_ && bar_) bar_->advance(offset - last_);
    last_ = offset;
  }
  void start_file() { last_ = 0; }
  void finish() {
    if (bar_) bar_->finish();
  }

 private:
  std::optional<ProgressBar> bar_;
  int64_t last_ = 0;
};

// The split/ folder to read: `wanted` (IoError naming the folders present when it is not
// there), or the only one present (ValueError when there are several); empty when there is
// none.
std::string choose_ogb_split(const std::filesystem::path& root, const std::string& wanted);

// A feature file as written: its width (0: the input was empty and nothing was written) and the
// CRC-32 of its data bytes.
struct WrittenFeatures {
  int64_t dim = 0;
  uint32_t crc32 = 0;
};

// Streams node-feat.csv.gz (one row of comma-separated numbers per node, n rows) into a new .npy
// file at `out_path`, [n, D] stored as `dtype` (float32, float16, or uint8 when every value is an
// integer in [0, 255]). ValueError naming the file and line of a malformed row or a wrong count.
WrittenFeatures write_ogb_features(const std::string& path, int64_t n, DType dtype,
                                   const std::string& out_path, ByteProgress& progress);

// node-label.csv.gz: one class id per line for n nodes ("nan": unlabelled, stored as -1). The
// int64 labels [n] and the number of classes (the largest id + 1). ValueError naming the line of
// a malformed value, several columns (multi-label tasks) or a wrong count.
std::pair<Array, int64_t> read_ogb_labels(const std::string& path, int64_t n,
                                          ByteProgress& progress);

// A split file: node ids in [0, n), one per line (int64 [*]). ValueError / IndexError naming the
// line of a malformed or out-of-range id.
Array read_ogb_split(const std::string& path, int64_t n, ByteProgress& progress);

}  // namespace volley::graph_internal
