#include "volley/core/files.h"

#include <fmt/format.h>

#include <cerrno>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <sys/stat.h>

#include "volley/core/error.h"

namespace volley {

void write_file_atomically(const std::string& path, std::string_view text) {
  const std::string temporary = path + ".tmp";
  {
    std::ofstream stream(temporary, std::ios::binary | std::ios::trunc);
    stream << text;
    stream.close();
    if (!stream) {
      throw IoError(fmt::format("cannot write '{}': {}", temporary, internal::errno_text(errno)));
    }
  }
  std::error_code error;
  std::filesystem::rename(temporary, path, error);
  if (error) throw IoError(fmt::format("cannot write '{}': {}", path, error.message()));
}

void require_regular_file(const std::string& path, std::string_view what) {
  struct stat info {};
  if (::stat(path.c_str(), &info) != 0 || S_ISREG(info.st_mode)) return;
  const char* kind = S_ISFIFO(info.st_mode)   ? "a named pipe (FIFO)"
                     : S_ISDIR(info.st_mode)  ? "a directory"
                     : S_ISCHR(info.st_mode)  ? "a character device"
                     : S_ISBLK(info.st_mode)  ? "a block device"
                     : S_ISSOCK(info.st_mode) ? "a socket"
                                              : "not a regular file";
  throw IoError(
      fmt::format("{}: cannot read the {}: it is {}, not a regular file", path, what, kind));
}

std::string read_file_text(const std::string& path, std::string_view what) {
  require_regular_file(path, what);
  std::ifstream stream(path, std::ios::binary);
  if (!stream) {
    throw IoError(
        fmt::format("{}: cannot open the {}: {}", path, what, internal::errno_text(errno)));
  }
  std::stringstream text;
  text << stream.rdbuf();
  return text.str();
}

std::string crc32_hex(uint32_t crc) { return fmt::format("{:08x}", crc); }

}  // namespace volley
