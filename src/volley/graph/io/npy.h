// volley/graph/io/npy.h — numpy .npy files: read (mapped or copied) and write.
//
// Supports format versions 1.0, 2.0 and 3.0 headers, little-endian (or byte-order-free) dtypes
// of volley::DType except bfloat16, C order only. Reading validates magic, version, header
// syntax, dtype, fortran_order and that the file holds exactly (or at least) the bytes the
// shape needs; each failure is an IoError "FILE: FIELD: expected X, found Y".
//
//   Array a = read_npy("features.npy");                 // memory-mapped, read-only
//   write_npy("out.npy", a);
//   NpyWriter w("big.npy", DType::kFloat32, {n, d});    // stream rows without holding them
//   w.write(chunk.data(), chunk_bytes); w.close();
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "volley/core/array.h"

namespace volley {

struct NpyHeader {
  DType dtype;
  std::vector<int64_t> shape;
  size_t data_offset;  // bytes from the start of the file to the first element
};

// Parses the header of an .npy image held in memory (`size` bytes from `data`; the data itself
// need not be there). `source` names the file in error messages.
NpyHeader parse_npy_header(const std::byte* data, size_t size, const std::string& source);

// The header dict as written, before its dtype is checked: lets tools describe arrays Volley
// cannot read (numpy's '<U7' strings in an .npz, big-endian data).
struct NpyHeaderFields {
  std::string descr;  // e.g. "<f4", "<U7"; for a structured dtype, its list as text
  bool structured = false;
  bool fortran_order = false;
  std::vector<int64_t> shape;
};
// Checks magic, version and header syntax only; stores the data offset in `*data_offset` when
// not null. Throws IoError like parse_npy_header.
NpyHeaderFields parse_npy_header_fields(const std::byte* data, size_t size, size_t* data_offset,
                                        const std::string& source);

// Bytes of data the header's dtype and shape need; IoError when that overflows 64 bits.
size_t npy_data_bytes(const NpyHeader& header, const std::string& source);

// Reads an .npy file: memory-mapped read-only when `memory_map`, else copied into heap memory.
// The file must hold exactly the data bytes its header declares. (A mapped file whose data
// offset is not a multiple of the item size — never the case for numpy's 64-byte-aligned
// headers — is copied, so that elements are aligned.)
Array read_npy(const std::string& path, bool memory_map = true);

// Parses an .npy image held in memory (e.g. a stored .npz member); copies the data. The image
// must hold exactly the data bytes its header declares.
Array parse_npy(const std::byte* data, size_t size, const std::string& source);

// Writes `array` (host-accessible) as a version 1.0 .npy file (2.0 if the header needs it).
void write_npy(const std::string& path, const Array& array);

// Streams an .npy file: writes the header for `shape` up front, then exactly the bytes the
// shape needs through write(); close() checks the count and flushes. Throws IoError on a failed
// write, ValueError when more or fewer bytes than the shape needs are written.
class NpyWriter {
 public:
  NpyWriter(const std::string& path, DType dtype, std::vector<int64_t> shape);
  ~NpyWriter();  // closes without throwing; an incomplete file is removed
  NpyWriter(const NpyWriter&) = delete;
  NpyWriter& operator=(const NpyWriter&) = delete;

  void write(const void* data, size_t bytes);
  void close();
  // CRC-32 (zlib) of the data bytes written so far.
  uint32_t crc32() const { return crc_; }

 private:
  std::string path_;
  std::FILE* file_ = nullptr;
  size_t expected_ = 0;
  size_t written_ = 0;
  uint32_t crc_ = 0;
};

// What a manifest records about one .npy file.
struct NpyExpectation {
  DType dtype;
  std::vector<int64_t> shape;
  uint32_t crc32;
};

// Reads `path` (as read_npy) and checks it against `expected`: dtype and shape always, the CRC-32
// of its data bytes when `verify_checksum`. Throws IoError "PATH: FIELD: expected X (as MANIFEST
// says), found Y" — `manifest` names the manifest file in that message.
Array read_npy_expecting(const std::string& path, const NpyExpectation& expected,
                         const std::string& manifest, bool memory_map, bool verify_checksum);

// "[2708, 1433]".
std::string npy_shape_text(const std::vector<int64_t>& shape);

// zlib CRC-32 of a byte range, computed in parallel chunks (combined with crc32_combine).
uint32_t crc32_of(const void* data, size_t bytes);

}  // namespace volley
