// volley/feature/internal/slot_copy.h — the row copy into or out of a row cache's slot whose
// readers take no lock (SieveCache, LookaheadCache: a seqlock per slot).
//
// The slot's version check discards a copy torn by a concurrent rewrite, so a plain memcpy is
// correct; ThreadSanitizer cannot see that and reports it, so its builds copy with relaxed
// atomic bytes instead (the same bytes, slower).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstring>

namespace volley::feature_internal {

#if defined(__SANITIZE_THREAD__)
inline constexpr bool kThreadSanitizer = true;
#elif defined(__has_feature)
inline constexpr bool kThreadSanitizer = __has_feature(thread_sanitizer);
#else
inline constexpr bool kThreadSanitizer = false;
#endif

inline void slot_copy(std::byte* to, const std::byte* from, size_t bytes) {
  if constexpr (kThreadSanitizer) {
    for (size_t i = 0; i < bytes; ++i) {
      const std::byte value = std::atomic_ref<std::byte>(const_cast<std::byte&>(from[i]))
                                  .load(std::memory_order_relaxed);
      std::atomic_ref<std::byte>(to[i]).store(value, std::memory_order_relaxed);
    }
  } else {
    std::memcpy(to, from, bytes);
  }
}

}  // namespace volley::feature_internal
