#include "volley/feature/internal/huge_pages.h"

#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <set>
#include <thread>
#include <utility>

namespace volley::feature_internal {
namespace {

#ifndef MADV_COLLAPSE
constexpr int MADV_COLLAPSE = 25;  // Linux 6.1; older headers lack the name
#endif

bool enabled() {
  const char* value = std::getenv("VOLLEY_HUGE_PAGES");
  return value == nullptr || std::strcmp(value, "0") != 0;
}

void collapse(Buffer keep, uintptr_t begin, uintptr_t end) {
  setpriority(PRIO_PROCESS, static_cast<id_t>(gettid()), 10);  // behind the loader's threads
  constexpr uintptr_t kChunk = uintptr_t{32} << 20;
  for (uintptr_t at = begin; at < end; at += kChunk) {
    const size_t bytes = static_cast<size_t>(std::min(kChunk, end - at));
    auto* chunk = reinterpret_cast<void*>(at);
    if (madvise(chunk, bytes, MADV_HUGEPAGE) != 0) return;
    if (madvise(chunk, bytes, MADV_COLLAPSE) != 0 && errno != EAGAIN) return;  // unsupported
  }
  (void)keep;  // released last: the memory stays mapped while the thread works on it
}

}  // namespace

bool collapse_huge_pages_async(const Array& matrix) {
  const Location location = matrix.buffer().location();
  if ((location != Location::kHost && location != Location::kExternal) ||
      matrix.nbytes() < kCollapseMinBytes || !enabled()) {
    return false;
  }
  constexpr uintptr_t kHuge = uintptr_t{2} << 20;
  const auto data = reinterpret_cast<uintptr_t>(matrix.raw_data());
  const uintptr_t begin = (data + kHuge - 1) & ~(kHuge - 1);
  const uintptr_t end = (data + matrix.nbytes()) & ~(kHuge - 1);
  if (end <= begin) return false;
  static std::mutex mutex;
  static std::set<std::pair<uintptr_t, uintptr_t>> started;  // once per range and process
  {
    std::lock_guard lock(mutex);
    if (!started.emplace(begin, end).second) return false;
  }
  std::thread(collapse, matrix.buffer(), begin, end).detach();
  return true;
}

}  // namespace volley::feature_internal
