#include "volley/graph/io/gzip_lines.h"

#include <zlib.h>

#include <cerrno>
#include <cstring>

#include "volley/core/error.h"
#include "volley/core/files.h"

namespace volley {
namespace {

constexpr size_t kBufferBytes = size_t{1} << 20;
constexpr size_t kMaxLineBytes = size_t{64} << 20;

std::string_view without_cr(std::string_view line) {
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  return line;
}

}  // namespace

GzipLines::GzipLines(std::string path) : path_(std::move(path)), buffer_(kBufferBytes) {
  require_regular_file(path_, "gzip file");
  file_ = gzopen(path_.c_str(), "rb");
  if (file_ == nullptr) {
    throw IoError(fmt::format("cannot open '{}': {}", path_,
                              errno != 0 ? std::strerror(errno) : "out of memory"));
  }
  gzbuffer(file_, static_cast<unsigned>(kBufferBytes));
}

GzipLines::~GzipLines() {
  if (file_ != nullptr) gzclose(file_);
}

int64_t GzipLines::compressed_offset() const {
  const z_off_t offset = gzoffset(file_);
  return offset < 0 ? 0 : static_cast<int64_t>(offset);
}

bool GzipLines::refill() {
  if (at_end_) return false;
  const int count = gzread(file_, buffer_.data(), static_cast<unsigned>(buffer_.size()));
  if (count < 0) {
    int code = 0;
    const char* message = gzerror(file_, &code);
    throw IoError(fmt::format("{}: truncated or corrupt after line {}: {}", path_, line_number_,
                              code == Z_ERRNO ? std::strerror(errno) : message));
  }
  if (count == 0) {
    // gzread returns 0 at a clean end, and also for a stream cut short: tell them apart.
    int code = 0;
    const char* message = gzerror(file_, &code);
    if (code != Z_OK && code != Z_STREAM_END) {
      throw IoError(
          fmt::format("{}: truncated or corrupt after line {}: {}", path_, line_number_, message));
    }
    at_end_ = true;
    return false;
  }
  begin_ = 0;
  end_ = static_cast<size_t>(count);
  return true;
}

bool GzipLines::next(std::string_view* line) {
  carry_.clear();
  while (true) {
    const char* start = buffer_.data() + begin_;
    const void* newline = begin_ < end_ ? std::memchr(start, '\n', end_ - begin_) : nullptr;
    if (newline != nullptr) {
      const size_t length = static_cast<const char*>(newline) - start;
      begin_ += length + 1;
      ++line_number_;
      if (carry_.empty()) {
        *line = without_cr({start, length});
      } else {
        carry_.append(start, length);
        *line = without_cr(carry_);
      }
      return true;
    }
    carry_.append(start, end_ - begin_);
    begin_ = end_;
    if (carry_.size() > kMaxLineBytes) {
      throw IoError(fmt::format("{}:{}: line longer than {} MiB; is this a text file?", path_,
                                line_number_ + 1, kMaxLineBytes >> 20));
    }
    if (!refill()) {
      if (carry_.empty()) return false;
      ++line_number_;
      *line = without_cr(carry_);
      return true;
    }
  }
}

}  // namespace volley
