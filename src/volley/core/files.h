// volley/core/files.h — small file helpers that every on-disk format of Volley shares.
//
//   write_file_atomically(dir + "/volley.json", manifest.dump(2) + "\n");
//   json["crc32"] = crc32_hex(writer.crc32());  // "1a2b3c4d"
//
// Thread safety: the functions keep no state; two calls writing the same path race as the file
// system lets them (the last rename wins, and each file is whole).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace volley {

// Writes `text` to `path` so that the file appears complete or not at all: written beside as
// `path` + ".tmp", then renamed over `path`. IoError naming the file (and the reason) when
// either step fails; the temporary may then be left behind.
void write_file_atomically(const std::string& path, std::string_view text);

// The whole of a file as bytes. IoError "<path>: cannot open the <what>: <reason>" when it
// cannot be opened; require_regular_file's error when it is not a regular file.
std::string read_file_text(const std::string& path, std::string_view what);

// Refuses, before anything opens it, a path that is not a regular file (a named pipe would block
// the opener, a device would be read forever): IoError "<path>: cannot read the <what>: it is a
// named pipe (FIFO), not a regular file" (or "a directory", "a device", ...). A path that does
// not exist passes: the caller's open reports it as it always has.
void require_regular_file(const std::string& path, std::string_view what);

// A CRC-32 as Volley's manifests write it: 8 lowercase hex digits ("0000beef").
std::string crc32_hex(uint32_t crc);

}  // namespace volley
