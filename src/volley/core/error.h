// volley/core/error.h — the error family of Volley.
//
// Two tiers (STYLE.md): mistakes of the caller (a bad id, a bad file, a wrong dtype) throw one of
// the `Error` subclasses below with the offending values in the message; broken internal
// invariants use VOLLEY_ASSERT, which throws `InternalError` (never aborts: a Python user keeps
// their session). Python maps the kinds to ValueError / IndexError / OSError / RuntimeError
// subclasses.
//
//   VOLLEY_REQUIRE(id < n, IndexError, "seed id {} out of range for graph with {} nodes", id, n);
#pragma once

#include <stdexcept>
#include <string>

#include <fmt/format.h>

namespace volley {

enum class ErrorKind {
  kValue,       // a bad argument value or shape (Python: ValueError)
  kIndex,       // an id or index out of range (Python: IndexError)
  kIo,          // a file or network problem (Python: OSError)
  kRuntime,     // a failure while running, e.g. a worker died (Python: RuntimeError)
  kInternal,    // a broken invariant inside Volley: a bug (Python: RuntimeError)
  kConnection,  // a server that is down, unreachable or went away (Python: ConnectionError)
  kTimeout,     // a deadline passed without an answer (Python: TimeoutError)
  kPermission,  // a missing or wrong access token (Python: PermissionError)
};

// Base of every exception Volley throws on purpose. `what()` is the full message.
class Error : public std::runtime_error {
 public:
  Error(ErrorKind kind, const std::string& message) : std::runtime_error(message), kind_(kind) {}
  ErrorKind kind() const noexcept { return kind_; }

 private:
  ErrorKind kind_;
};

class ValueError : public Error {
 public:
  explicit ValueError(const std::string& message) : Error(ErrorKind::kValue, message) {}
};

class IndexError : public Error {
 public:
  explicit IndexError(const std::string& message) : Error(ErrorKind::kIndex, message) {}
};

class IoError : public Error {
 public:
  explicit IoError(const std::string& message) : Error(ErrorKind::kIo, message) {}
};

class RuntimeError : public Error {
 public:
  explicit RuntimeError(const std::string& message) : Error(ErrorKind::kRuntime, message) {}
};

class InternalError : public Error {
 public:
  explicit InternalError(const std::string& message) : Error(ErrorKind::kInternal, message) {}
};

class ConnectionError : public Error {
 public:
  explicit ConnectionError(const std::string& message) : Error(ErrorKind::kConnection, message) {}
};

class TimeoutError : public Error {
 public:
  explicit TimeoutError(const std::string& message) : Error(ErrorKind::kTimeout, message) {}
};

class PermissionError : public Error {
 public:
  explicit PermissionError(const std::string& message) : Error(ErrorKind::kPermission, message) {}
};

namespace internal {
// Throws the Error subclass of `kind` with `message`.
[[noreturn]] void throw_error(ErrorKind kind, const std::string& message);
[[noreturn]] void assert_failed(const char* condition, const char* file, int line);
// errno as text, e.g. "No such file or directory (errno 2)".
std::string errno_text(int error_number);
}  // namespace internal

}  // namespace volley

// Throws ErrorType(fmt::format(...)) when `condition` is false.
#define VOLLEY_REQUIRE(condition, ErrorType, ...)            \
  do {                                                       \
    if (!(condition)) [[unlikely]] {                         \
      throw ::volley::ErrorType(::fmt::format(__VA_ARGS__)); \
    }                                                        \
  } while (false)

// Internal invariant: throws volley::InternalError naming the condition and place.
#define VOLLEY_ASSERT(condition)                                         \
  do {                                                                   \
    if (!(condition)) [[unlikely]] {                                     \
      ::volley::internal::assert_failed(#condition, __FILE__, __LINE__); \
    }                                                                    \
  } while (false)
