#include "volley/graph/io/npy.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <limits>
#include <string_view>

#include "volley/core/files.h"
#include "volley/core/parallel.h"

namespace volley {
namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr size_t kMagicBytes = 6;
// Magic, two version bytes and the smallest (2-byte) header length field.
constexpr size_t kPreambleBytes = 10;

// Bytes as text for an error message: printable ASCII kept, the rest as \xNN.
std::string escape_bytes(const std::byte* data, size_t size) {
  std::string text;
  for (size_t i = 0; i < size; ++i) {
    const auto c = static_cast<unsigned char>(data[i]);
    if (c >= 0x20 && c < 0x7f && c != '\\') {
      text.push_back(static_cast<char>(c));
    } else {
      text += fmt::format("\\x{:02x}", c);
    }
  }
  return text;
}

std::string escape_text(std::string_view text) {
  return escape_bytes(reinterpret_cast<const std::byte*>(text.data()), text.size());
}

uint32_t read_le(const std::byte* data, size_t bytes) {
  uint32_t value = 0;
  for (size_t i = 0; i < bytes; ++i) value |= static_cast<uint32_t>(data[i]) << (8 * i);
  return value;
}

// A parser for the Python dict literal of an .npy header, e.g.
//   {'descr': '<f4', 'fortran_order': False, 'shape': (2708, 1433), }
// Only what numpy writes is accepted: string keys; string, bool, tuple-of-int values; a list
// value (a structured dtype) is recognised so that it can be rejected by name.
class HeaderParser {
 public:
  HeaderParser(std::string_view text, const std::string& source) : text_(text), source_(source) {}

  NpyHeaderFields parse() {
    NpyHeaderFields fields;
    bool seen_descr = false, seen_order = false, seen_shape = false;
    expect('{');
    while (true) {
      skip_space();
      if (peek() == '}') break;
      const std::string key = parse_string("a quoted key");
      expect(':');
      skip_space();
      if (key == "descr") {
        if (peek() == '[') {
          fields.descr = "structured dtype " + std::string(take_bracketed());
          fields.structured = true;
        } else {
          fields.descr = parse_string("a dtype string");
        }
        seen_descr = true;
      } else if (key == "fortran_order") {
        fields.fortran_order = parse_bool();
        seen_order = true;
      } else if (key == "shape") {
        fields.shape = parse_shape();
        seen_shape = true;
      } else {
        fail("header", "keys 'descr', 'fortran_order' and 'shape'",
             fmt::format("'{}'", escape_text(key)));
      }
      skip_space();
      if (peek() == ',') {
        ++position_;
        continue;
      }
      skip_space();
      if (peek() != '}') fail("header", "',' or '}'", found_here());
      break;
    }
    expect('}');
    // numpy pads with spaces up to a newline; any other byte there (a flipped bit) makes numpy's
    // literal_eval refuse the header, and so does Volley.
    skip_space();
    if (position_ != text_.size()) {
      fail("header", "only spaces and a newline after the dict (padding)", found_here());
    }
    if (!seen_descr) fail("descr", "a 'descr' key", "none");
    if (!seen_order) fail("fortran_order", "a 'fortran_order' key", "none");
    if (!seen_shape) fail("shape", "a 'shape' key", "none");
    return fields;
  }

 private:
  [[noreturn]] void fail(std::string_view field, std::string_view expected,
                         std::string_view found) const {
    throw IoError(fmt::format("{}: {}: expected {}, found {}", source_, field, expected, found));
  }

  std::string found_here() const {
    if (position_ >= text_.size()) return "the end of the header";
    const std::string_view next = text_.substr(position_, 12);
    return fmt::format("'{}' at header offset {}", escape_text(next), position_);
  }

  char peek() const { return position_ < text_.size() ? text_[position_] : '\0'; }

  void skip_space() {
    while (position_ < text_.size() && (text_[position_] == ' ' || text_[position_] == '\t' ||
                                        text_[position_] == '\n' || text_[position_] == '\r')) {
      ++position_;
    }
  }

  void expect(char c) {
    skip_space();
    if (peek() != c) fail("header", fmt::format("'{}'", c), found_here());
    ++position_;
  }

  std::string parse_string(std::string_view what) {
    skip_space();
    const char quote = peek();
    if (quote != '\'' && quote != '"') fail("header", what, found_here());
    const size_t end = text_.find(quote, position_ + 1);
    if (end == std::string_view::npos) fail("header", "a closing quote", "the end of the header");
    std::string value(text_.substr(position_ + 1, end - position_ - 1));
    position_ = end + 1;
    return value;
  }

  bool parse_bool() {
    if (text_.substr(position_, 4) == "True") {
      position_ += 4;
      return true;
    }
    if (text_.substr(position_, 5) == "False") {
      position_ += 5;
      return false;
    }
    fail("fortran_order", "True or False", found_here());
  }

  std::vector<int64_t> parse_shape() {
    if (peek() != '(') fail("shape", "a tuple of integers", found_here());
    ++position_;
    std::vector<int64_t> shape;
    while (true) {
      skip_space();
      if (peek() == ')') break;
      int64_t extent = 0;
      const char* begin = text_.data() + position_;
      const char* end = text_.data() + text_.size();
      const auto [next, error] = std::from_chars(begin, end, extent);
      if (error != std::errc() || extent < 0) {
        fail("shape", "non-negative integers", found_here());
      }
      position_ += static_cast<size_t>(next - begin);
      // numpy writes 'L' suffixes in headers made by Python 2.
      if (peek() == 'L') ++position_;
      shape.push_back(extent);
      skip_space();
      if (peek() == ',') {
        ++position_;
      } else if (peek() != ')') {
        fail("shape", "',' or ')'", found_here());
      }
    }
    ++position_;
    return shape;
  }

  std::string_view take_bracketed() {
    const size_t start = position_;
    int depth = 0;
    while (position_ < text_.size()) {
      const char c = text_[position_++];
      if (c == '[' || c == '(') ++depth;
      if ((c == ']' || c == ')') && --depth == 0) return text_.substr(start, position_ - start);
    }
    fail("descr", "a closed list", "the end of the header");
  }

  std::string_view text_;
  const std::string& source_;
  size_t position_ = 0;
};

// Number of elements of `shape`; IoError when the product overflows.
int64_t element_count(const std::vector<int64_t>& shape, const std::string& source) {
  int64_t count = 1;
  for (int64_t extent : shape) {
    if (extent != 0 && count > std::numeric_limits<int64_t>::max() / extent) {
      throw IoError(fmt::format("{}: shape: expected a size that fits in 64 bits, found ({})",
                                source, fmt::join(shape, ", ")));
    }
    count *= extent;
  }
  return count;
}

std::string shape_text(const std::vector<int64_t>& shape) {
  return fmt::format("({}{})", fmt::join(shape, ", "), shape.size() == 1 ? "," : "");
}

// The header bytes numpy would write for `dtype` and `shape`: the dict padded with spaces and a
// final newline so that the data starts at a multiple of 64 bytes.
std::string make_header(DType dtype, const std::vector<int64_t>& shape) {
  std::string dict = fmt::format("{{'descr': '{}', 'fortran_order': False, 'shape': {}, }}",
                                 npy_descr(dtype), shape_text(shape));
  size_t prefix = kPreambleBytes;  // version 1.0: 2-byte length
  int major = 1;
  if (dict.size() + 1 + prefix > 65535) {
    prefix = 12;  // version 2.0: 4-byte length
    major = 2;
  }
  const size_t total = (prefix + dict.size() + 1 + 63) / 64 * 64;
  dict.append(total - prefix - dict.size() - 1, ' ');
  dict.push_back('\n');
  std::string header(kMagic, kMagicBytes);
  header.push_back(static_cast<char>(major));
  header.push_back(0);
  const auto length = static_cast<uint32_t>(dict.size());
  for (size_t i = 0; i < prefix - 8; ++i) header.push_back(static_cast<char>(length >> (8 * i)));
  return header + dict;
}

// Size of the preamble plus header declared by the first bytes of an .npy image, after checking
// magic and version. `size` may be less than the full header (then only the preamble is read).
size_t declared_header_end(const std::byte* data, size_t size, const std::string& source) {
  if (size < kPreambleBytes) {
    throw IoError(fmt::format("{}: header: expected at least {} bytes, found {} (truncated file)",
                              source, kPreambleBytes, size));
  }
  if (std::memcmp(data, kMagic, kMagicBytes) != 0) {
    throw IoError(fmt::format("{}: magic: expected '\\x93NUMPY', found '{}' (not an .npy file)",
                              source, escape_bytes(data, kMagicBytes)));
  }
  const int major = static_cast<int>(data[6]);
  const int minor = static_cast<int>(data[7]);
  if (major == 1) return kPreambleBytes + read_le(data + 8, 2);
  if (major == 2 || major == 3) {
    if (size < 12) {
      throw IoError(fmt::format("{}: header: expected at least 12 bytes, found {} (truncated file)",
                                source, size));
    }
    return 12 + static_cast<size_t>(read_le(data + 8, 4));
  }
  throw IoError(
      fmt::format("{}: version: expected 1.0, 2.0 or 3.0, found {}.{}", source, major, minor));
}

// Checks that `available` data bytes are exactly what the header needs.
void check_data_size(const NpyHeader& header, size_t available, const std::string& source) {
  const size_t needed = npy_data_bytes(header, source);
  if (available < needed) {
    throw IoError(fmt::format("{}: data: expected {} bytes for {} {}, found {} (truncated file)",
                              source, needed, dtype_name(header.dtype), shape_text(header.shape),
                              available));
  }
  if (available > needed) {
    throw IoError(fmt::format("{}: data: expected {} bytes for {} {}, found {} ({} extra bytes)",
                              source, needed, dtype_name(header.dtype), shape_text(header.shape),
                              available, available - needed));
  }
}

// Reads exactly `bytes` from `fd` at `offset`; IoError on failure or early end of file.
void read_exactly(int fd, std::byte* out, size_t bytes, size_t offset, const std::string& path) {
  size_t done = 0;
  while (done < bytes) {
    const ssize_t got = pread(fd, out + done, std::min<size_t>(bytes - done, size_t{1} << 30),
                              static_cast<off_t>(offset + done));
    if (got < 0) {
      if (errno == EINTR) continue;
      throw IoError(fmt::format("cannot read '{}': {}", path, internal::errno_text(errno)));
    }
    if (got == 0) {
      throw IoError(fmt::format("{}: data: expected {} bytes, found {} (truncated file)", path,
                                offset + bytes, offset + done));
    }
    done += static_cast<size_t>(got);
  }
}

class FileCloser {
 public:
  explicit FileCloser(int fd) : fd_(fd) {}
  ~FileCloser() {
    if (fd_ >= 0) ::close(fd_);
  }
  FileCloser(const FileCloser&) = delete;
  FileCloser& operator=(const FileCloser&) = delete;

 private:
  int fd_;
};

}  // namespace

NpyHeaderFields parse_npy_header_fields(const std::byte* data, size_t size, size_t* data_offset,
                                        const std::string& source) {
  const size_t header_end = declared_header_end(data, size, source);
  const size_t dict_start = data[6] == std::byte{1} ? kPreambleBytes : 12;
  if (header_end > size) {
    throw IoError(fmt::format("{}: header: expected {} bytes, found {} (truncated file)", source,
                              header_end, size));
  }
  const std::string_view text(reinterpret_cast<const char*>(data) + dict_start,
                              header_end - dict_start);
  NpyHeaderFields fields = HeaderParser(text, source).parse();
  if (data_offset != nullptr) *data_offset = header_end;
  return fields;
}

NpyHeader parse_npy_header(const std::byte* data, size_t size, const std::string& source) {
  size_t data_offset = 0;
  NpyHeaderFields fields = parse_npy_header_fields(data, size, &data_offset, source);
  if (fields.structured) {
    throw IoError(fmt::format("{}: descr: expected a simple numeric dtype, found a {}", source,
                              escape_text(fields.descr)));
  }
  if (!fields.descr.empty() && fields.descr[0] == '>') {
    const auto swapped = dtype_from_npy_descr("<" + fields.descr.substr(1));
    if (swapped.has_value()) {
      throw IoError(fmt::format(
          "{}: descr: expected a little-endian dtype ('<{}'), found '{}' (big-endian; convert "
          "with numpy's arr.astype(arr.dtype.newbyteorder('<')))",
          source, fields.descr.substr(1), fields.descr));
    }
  }
  const auto dtype = dtype_from_npy_descr(fields.descr);
  if (!dtype.has_value()) {
    throw IoError(
        fmt::format("{}: descr: expected one of |b1 |i1 |u1 <i2 <i4 <i8 <f2 <f4 <f8, found '{}'",
                    source, escape_text(fields.descr)));
  }
  if (fields.fortran_order) {
    throw IoError(
        fmt::format("{}: fortran_order: expected False, found True (save a C-ordered array: "
                    "np.ascontiguousarray)",
                    source));
  }
  NpyHeader header{*dtype, std::move(fields.shape), data_offset};
  npy_data_bytes(header, source);  // rejects shapes whose byte size overflows
  return header;
}

size_t npy_data_bytes(const NpyHeader& header, const std::string& source) {
  const int64_t count = element_count(header.shape, source);
  const size_t item = dtype_size(header.dtype);
  if (static_cast<uint64_t>(count) > std::numeric_limits<size_t>::max() / item) {
    throw IoError(fmt::format("{}: shape: expected a byte size that fits in 64 bits, found {}",
                              source, shape_text(header.shape)));
  }
  return static_cast<size_t>(count) * item;
}

Array read_npy(const std::string& path, bool memory_map) {
  require_regular_file(path, ".npy file");
  if (memory_map) {
    Buffer file = Buffer::map_file(path);
    const NpyHeader header = parse_npy_header(file.data(), file.size(), path);
    check_data_size(header, file.size() - header.data_offset, path);
    const size_t bytes = npy_data_bytes(header, path);
    Buffer data = file.slice(header.data_offset, bytes);
    // The mapping starts on a page boundary, so the data is aligned when its offset is. numpy
    // pads headers to 64 bytes; other writers may not, and misaligned elements are copied.
    if (header.data_offset % dtype_size(header.dtype) != 0) {
      Buffer copy = Buffer::allocate(bytes);
      if (bytes > 0) std::memcpy(copy.data(), data.data(), bytes);
      data = std::move(copy);
    }
    return Array(std::move(data), header.dtype, header.shape);
  }

  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  VOLLEY_REQUIRE(fd >= 0, IoError, "cannot open '{}': {}", path, internal::errno_text(errno));
  FileCloser closer(fd);
  struct stat info {};
  VOLLEY_REQUIRE(fstat(fd, &info) == 0, IoError, "cannot stat '{}': {}", path,
                 internal::errno_text(errno));
  const auto file_bytes = static_cast<size_t>(info.st_size);
  std::vector<std::byte> preamble(std::min<size_t>(file_bytes, 12));
  read_exactly(fd, preamble.data(), preamble.size(), 0, path);
  const size_t header_end = declared_header_end(preamble.data(), preamble.size(), path);
  std::vector<std::byte> header_bytes(std::min(header_end, file_bytes));
  read_exactly(fd, header_bytes.data(), header_bytes.size(), 0, path);
  const NpyHeader header = parse_npy_header(header_bytes.data(), header_bytes.size(), path);
  check_data_size(header, file_bytes - header.data_offset, path);
  const size_t bytes = npy_data_bytes(header, path);
  Buffer data = Buffer::allocate(bytes);
  read_exactly(fd, data.data(), bytes, header.data_offset, path);
  return Array(std::move(data), header.dtype, header.shape);
}

Array parse_npy(const std::byte* data, size_t size, const std::string& source) {
  const NpyHeader header = parse_npy_header(data, size, source);
  check_data_size(header, size - header.data_offset, source);
  const size_t bytes = npy_data_bytes(header, source);
  Buffer copy = Buffer::allocate(bytes);
  if (bytes > 0) std::memcpy(copy.data(), data + header.data_offset, bytes);
  return Array(std::move(copy), header.dtype, header.shape);
}

void write_npy(const std::string& path, const Array& array) {
  VOLLEY_REQUIRE(array.defined(), ValueError, "write_npy('{}'): the array is undefined", path);
  VOLLEY_REQUIRE(array.buffer().host_accessible(), ValueError,
                 "write_npy('{}'): the array lives in {} memory; copy it to the host first", path,
                 location_name(array.buffer().location()));
  NpyWriter writer(path, array.dtype(), array.shape());
  writer.write(array.raw_data(), array.nbytes());
  writer.close();
}

NpyWriter::NpyWriter(const std::string& path, DType dtype, std::vector<int64_t> shape)
    : path_(path) {
  const std::string header = make_header(dtype, shape);  // ValueError for bfloat16
  expected_ = npy_data_bytes(NpyHeader{dtype, shape, header.size()}, path);
  file_ = std::fopen(path.c_str(), "wb");
  VOLLEY_REQUIRE(file_ != nullptr, IoError, "cannot create '{}': {}", path,
                 internal::errno_text(errno));
  if (std::fwrite(header.data(), 1, header.size(), file_) != header.size()) {
    const int error = errno;
    std::fclose(file_);
    file_ = nullptr;
    std::remove(path_.c_str());
    throw IoError(fmt::format("cannot write '{}': {}", path, internal::errno_text(error)));
  }
  crc_ = static_cast<uint32_t>(::crc32_z(0, nullptr, 0));
}

NpyWriter::~NpyWriter() {
  if (file_ != nullptr) {
    std::fclose(file_);
    file_ = nullptr;
    std::remove(path_.c_str());  // never completed: do not leave a file that looks valid
  }
}

void NpyWriter::write(const void* data, size_t bytes) {
  VOLLEY_REQUIRE(file_ != nullptr, ValueError, "NpyWriter('{}'): write after close", path_);
  VOLLEY_REQUIRE(bytes <= expected_ - written_, ValueError,
                 "NpyWriter('{}'): {} more bytes written than the shape needs ({} in all)", path_,
                 written_ + bytes - expected_, expected_);
  if (bytes == 0) return;
  if (std::fwrite(data, 1, bytes, file_) != bytes) {
    throw IoError(fmt::format("cannot write '{}': {}", path_, internal::errno_text(errno)));
  }
  crc_ = static_cast<uint32_t>(::crc32_z(crc_, static_cast<const Bytef*>(data), bytes));
  written_ += bytes;
}

void NpyWriter::close() {
  if (file_ == nullptr) return;
  if (written_ != expected_) {
    std::fclose(file_);
    file_ = nullptr;
    std::remove(path_.c_str());
    throw ValueError(fmt::format("NpyWriter('{}'): closed after {} of the {} bytes the shape needs",
                                 path_, written_, expected_));
  }
  const bool flushed = std::fflush(file_) == 0;
  const int flush_error = errno;
  const bool closed = std::fclose(file_) == 0;
  const int close_error = errno;
  file_ = nullptr;
  if (!flushed || !closed) {
    std::remove(path_.c_str());
    throw IoError(fmt::format("cannot write '{}': {}", path_,
                              internal::errno_text(flushed ? close_error : flush_error)));
  }
}

uint32_t crc32_of(const void* data, size_t bytes) {
  // Fixed chunk boundaries: the result is the plain CRC of the range whatever the thread count
  // (crc32_combine is exact), and each chunk is big enough to amortise a task.
  constexpr size_t kChunk = size_t{4} << 20;
  const auto* base = static_cast<const Bytef*>(data);
  if (bytes <= kChunk)
    return static_cast<uint32_t>(::crc32_z(::crc32_z(0, nullptr, 0), base, bytes));
  const auto chunks = static_cast<int64_t>((bytes + kChunk - 1) / kChunk);
  std::vector<uLong> partial(static_cast<size_t>(chunks));
  parallel_for(0, chunks, 1, [&](int64_t first, int64_t last) {
    for (int64_t c = first; c < last; ++c) {
      const size_t offset = static_cast<size_t>(c) * kChunk;
      const size_t length = std::min(kChunk, bytes - offset);
      partial[static_cast<size_t>(c)] = ::crc32_z(::crc32_z(0, nullptr, 0), base + offset, length);
    }
  });
  uLong crc = partial[0];
  for (int64_t c = 1; c < chunks; ++c) {
    const size_t offset = static_cast<size_t>(c) * kChunk;
    const size_t length = std::min(kChunk, bytes - offset);
    crc = ::crc32_combine64(crc, partial[static_cast<size_t>(c)], static_cast<z_off64_t>(length));
  }
  return static_cast<uint32_t>(crc);
}

std::string npy_shape_text(const std::vector<int64_t>& shape) {
  return fmt::format("[{}]", fmt::join(shape, ", "));
}

Array read_npy_expecting(const std::string& path, const NpyExpectation& expected,
                         const std::string& manifest, bool memory_map, bool verify_checksum) {
  Array array = read_npy(path, memory_map);
  if (array.dtype() != expected.dtype) {
    throw IoError(fmt::format("{}: dtype: expected {} (as {} says), found {}", path,
                              dtype_name(expected.dtype), manifest, dtype_name(array.dtype())));
  }
  if (array.shape() != expected.shape) {
    throw IoError(fmt::format("{}: shape: expected {} (as {} says), found {}", path,
                              npy_shape_text(expected.shape), manifest,
                              npy_shape_text(array.shape())));
  }
  if (verify_checksum) {
    const uint32_t crc = crc32_of(array.raw_data(), array.nbytes());
    if (crc != expected.crc32) {
      throw IoError(
          fmt::format("{}: crc32: expected {:08x} (as {} says), found {:08x} (the file is corrupt)",
                      path, expected.crc32, manifest, crc));
    }
  }
  return array;
}

}  // namespace volley
