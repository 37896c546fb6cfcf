#include "volley/core/error.h"

#include <cstring>

namespace volley::internal {

void throw_error(ErrorKind kind, const std::string& message) {
  switch (kind) {
    case ErrorKind::kValue:
      throw ValueError(message);
    case ErrorKind::kIndex:
      throw IndexError(message);
    case ErrorKind::kIo:
      throw IoError(message);
    case ErrorKind::kRuntime:
      throw RuntimeError(message);
    case ErrorKind::kInternal:
      throw InternalError(message);
    case ErrorKind::kConnection:
      throw ConnectionError(message);
    case ErrorKind::kTimeout:
      throw TimeoutError(message);
    case ErrorKind::kPermission:
      throw PermissionError(message);
  }
  throw InternalError(message);
}

void assert_failed(const char* condition, const char* file, int line) {
  throw InternalError(
      fmt::format("internal error: assertion '{}' failed at {}:{} (a Volley bug; "
                  "please report it)",
                  condition, file, line));
}

std::string errno_text(int error_number) {
  char buffer[256];
  // GNU strerror_r returns the message pointer (which may or may not be `buffer`).
  const char* text = strerror_r(error_number, buffer, sizeof(buffer));
  return fmt::format("{} (errno {})", text, error_number);
}

}  // namespace volley::internal
