#include "volley/core/host_pool.h"

#include <pthread.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <charconv>
#include <cstdlib>
#include <deque>
#include <map>
#include <mutex>
#include <string_view>
#include <vector>

#include "volley/core/error.h"

namespace volley {
namespace {

size_t page_size() {
  static const auto page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  return page;
}

// VOLLEY_HOST_POOL_BYTES: a byte count with an optional K, M or G suffix (powers of 1024).
size_t limit_from_environment() {
  const char* text = std::getenv("VOLLEY_HOST_POOL_BYTES");
  if (text == nullptr || *text == '\0') {
    const auto physical = static_cast<size_t>(sysconf(_SC_PHYS_PAGES)) * page_size();
    return std::min(size_t{1} << 30, physical / 8);
  }
  const std::string_view value(text);
  size_t number = 0;
  const auto [next, error] = std::from_chars(value.data(), value.data() + value.size(), number);
  const std::string_view suffix(next, static_cast<size_t>(value.data() + value.size() - next));
  int shift = -1;
  if (suffix.empty()) shift = 0;
  if (suffix == "K" || suffix == "k") shift = 10;
  if (suffix == "M" || suffix == "m") shift = 20;
  if (suffix == "G" || suffix == "g") shift = 30;
  VOLLEY_REQUIRE(error == std::errc() && shift >= 0 && number <= (SIZE_MAX >> shift), ValueError,
                 "VOLLEY_HOST_POOL_BYTES='{}' is not a byte count (e.g. 1073741824, 512M or 1G)",
                 value);
  return number << shift;
}

struct Block {
  void* data;
  uint64_t order;  // when it was let go: the smallest is retained longest
};

class Pool {
 public:
  Pool() : limit_(limit_from_environment()) {
    pthread_atfork([] { instance().mutex_.lock(); }, [] { instance().mutex_.unlock(); },
                   [] { instance().mutex_.unlock(); });
  }

  static Pool& instance() {
    static Pool* pool = new Pool();  // never destroyed: blocks may come back during exit
    return *pool;
  }

  void* allocate(size_t bytes, size_t* capacity) {
    const size_t block_bytes = host_pool_block_bytes(bytes);
    *capacity = block_bytes;
    {
      std::lock_guard lock(mutex_);
      auto found = free_.find(block_bytes);
      if (found != free_.end() && !found->second.empty()) {
        void* data = found->second.back().data;  // the most recent: likeliest still in cache
        found->second.pop_back();
        retained_bytes_ -= block_bytes;
        --retained_blocks_;
        ++reused_;
        return data;
      }
      ++mapped_;
    }
    void* data = map(block_bytes);
    if (data == nullptr) {
      trim();  // give the retained blocks back to the system and try once more
      data = map(block_bytes);
    }
    VOLLEY_REQUIRE(data != nullptr, RuntimeError, "out of memory allocating {} bytes: {}", bytes,
                   internal::errno_text(ENOMEM));
    return data;
  }

  void release(void* data, size_t block_bytes) noexcept {
    std::vector<std::pair<void*, size_t>> victims;
    {
      std::lock_guard lock(mutex_);
      if (block_bytes > limit_ / 4) {
        victims.emplace_back(data, block_bytes);
      } else {
        free_[block_bytes].push_back({data, next_order_++});
        retained_bytes_ += block_bytes;
        ++retained_blocks_;
        evict_over_limit(victims);
      }
      released_ += victims.size();
    }
    unmap(victims);
  }

  void set_limit(size_t bytes) {
    std::vector<std::pair<void*, size_t>> victims;
    {
      std::lock_guard lock(mutex_);
      limit_ = bytes;
      evict_over_limit(victims);
      released_ += victims.size();
    }
    unmap(victims);
  }

  void trim() noexcept {
    std::vector<std::pair<void*, size_t>> victims;
    {
      std::lock_guard lock(mutex_);
      for (auto& [block_bytes, blocks] : free_) {
        for (const Block& block : blocks) victims.emplace_back(block.data, block_bytes);
      }
      free_.clear();
      retained_bytes_ = 0;
      retained_blocks_ = 0;
      released_ += victims.size();
    }
    unmap(victims);
  }

  HostPoolStats stats() {
    std::lock_guard lock(mutex_);
    return {retained_bytes_, retained_blocks_, limit_, reused_, mapped_, released_};
  }

  size_t limit() {
    std::lock_guard lock(mutex_);
    return limit_;
  }

 private:
  // Blocks of 4 MiB and more ask for transparent huge pages (as numpy does for its large arrays):
  // a fresh block then faults once per 2 MiB instead of once per 4 KiB. Advice only: where huge
  // pages are off, or none is free, the kernel maps ordinary pages.
  static constexpr size_t kHugePageAdviceBytes = size_t{4} << 20;

  static void* map(size_t bytes) {
    void* data = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (data == MAP_FAILED) return nullptr;
#ifdef MADV_HUGEPAGE
    if (bytes >= kHugePageAdviceBytes) madvise(data, bytes, MADV_HUGEPAGE);
#endif
    return data;
  }

  static void unmap(const std::vector<std::pair<void*, size_t>>& blocks) noexcept {
    for (const auto& [data, bytes] : blocks) munmap(data, bytes);
  }

  // Moves the blocks retained longest into `victims` until the retained bytes fit the limit.
  void evict_over_limit(std::vector<std::pair<void*, size_t>>& victims) noexcept {
    while (retained_bytes_ > limit_) {
      auto oldest = free_.end();
      for (auto it = free_.begin(); it != free_.end(); ++it) {
        if (!it->second.empty() &&
            (oldest == free_.end() || it->second.front().order < oldest->second.front().order)) {
          oldest = it;
        }
      }
      if (oldest == free_.end()) break;  // cannot happen while retained_bytes_ > 0
      victims.emplace_back(oldest->second.front().data, oldest->first);
      oldest->second.pop_front();
      if (oldest->second.empty()) free_.erase(oldest);
      retained_bytes_ -= victims.back().second;
      --retained_blocks_;
    }
  }

  std::mutex mutex_;
  std::map<size_t, std::deque<Block>> free_;  // by block size; oldest first
  size_t limit_;
  size_t retained_bytes_ = 0;
  size_t retained_blocks_ = 0;
  uint64_t next_order_ = 0;
  uint64_t reused_ = 0;
  uint64_t mapped_ = 0;
  uint64_t released_ = 0;
};

}  // namespace

size_t host_pool_block_bytes(size_t bytes) {
  const size_t page = page_size();
  if (bytes <= page) return page;
  // Four classes per power of two: the block exceeds the request by at most 25%.
  const int width = std::bit_width(bytes - 1);
  const size_t step = std::max(page, size_t{1} << std::max(0, width - 3));
  return (bytes + step - 1) / step * step;
}

void* host_pool_allocate(size_t bytes, size_t* capacity) {
  return Pool::instance().allocate(bytes, capacity);
}

void host_pool_release(void* block, size_t capacity) noexcept {
  if (block != nullptr) Pool::instance().release(block, capacity);
}

HostPoolStats host_pool_stats() { return Pool::instance().stats(); }

size_t host_pool_limit() { return Pool::instance().limit(); }

void set_host_pool_limit(size_t bytes) { Pool::instance().set_limit(bytes); }

void trim_host_pool() { Pool::instance().trim(); }

void advise_huge_pages(void* data, size_t bytes) {
#ifdef MADV_HUGEPAGE
  constexpr uintptr_t kHuge = uintptr_t{2} << 20;
  const uintptr_t begin = (reinterpret_cast<uintptr_t>(data) + kHuge - 1) & ~(kHuge - 1);
  const uintptr_t end = (reinterpret_cast<uintptr_t>(data) + bytes) & ~(kHuge - 1);
  if (end > begin) madvise(reinterpret_cast<void*>(begin), end - begin, MADV_HUGEPAGE);
#endif
}

}  // namespace volley
