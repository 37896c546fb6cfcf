// volley/graph/io/gzip_lines.h — a gzip-compressed (or plain) text file, line by line, in bounded
// memory.
//
//   GzipLines lines("raw/edge.csv.gz");
//   std::string_view line;
//   while (lines.next(&line)) { ... lines.line_number() ... }
//
// Decompresses through a 1 MiB buffer (zlib's gzread, which also reads uncompressed files as
// they are), so memory stays bounded whatever the file's size; a line may be at most 64 MiB.
// Errors are IoError naming the file (and line): a file that cannot be opened, a corrupt or
// truncated gzip stream, an over-long line. Not thread-safe; one reader per thread.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

struct gzFile_s;

namespace volley {

class GzipLines {
 public:
  explicit GzipLines(std::string path);
  ~GzipLines();
  GzipLines(const GzipLines&) = delete;
  GzipLines& operator=(const GzipLines&) = delete;

  // The next line, without its '\n' (and a '\r' before it); false at the end of the file. The
  // view stays valid until the next call. A last line without '\n' is still returned.
  bool next(std::string_view* line);
  // 1-based number of the line next() returned last (0 before the first).
  int64_t line_number() const { return line_number_; }
  // Bytes of the file (compressed) consumed so far: for progress bars.
  int64_t compressed_offset() const;
  const std::string& path() const { return path_; }

 private:
  bool refill();

  std::string path_;
  gzFile_s* file_ = nullptr;
  std::vector<char> buffer_;
  size_t begin_ = 0;
  size_t end_ = 0;
  bool at_end_ = false;
  std::string carry_;  // the start of a line that crosses a buffer boundary
  int64_t line_number_ = 0;
};

}  // namespace volley
