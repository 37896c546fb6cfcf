// tests/cpp/test_util.h — helpers shared by the C++ tests.
#pragma once

#include <string>

namespace volley {

// The message of the exception of type E that f() throws, or "<no exception>".
template <typename E, typename F>
std::string message_of(F&& f) {
  try {
    f();
  } catch (const E& error) {
    return error.what();
  }
  return "<no exception>";
}

}  // namespace volley
