// The host-executor devices' switch, peer-access matrix and memory (every build; see
// internal/emulated_device.h).
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <new>
#include <string>

#include "volley/core/cuda_device.h"
#include "volley/core/error.h"
#include "volley/core/internal/emulated_device.h"

namespace volley {
namespace {

constexpr int kUnset = -1;
constexpr int kMaxEmulatedDevices = 64;
std::atomic<int> emulated_state{kUnset};
// The emulated devices (behind the mutex: tests switch them while other threads may query).
std::mutex devices_mutex;
internal::EmulatedDevices emulated{};

const char* environment(const char* name) {
  const char* value = std::getenv(name);
  return value == nullptr ? "" : value;
}

bool from_environment() {
  const bool on = std::strcmp(environment("VOLLEY_HOST_EXECUTOR"), "1") == 0 &&
                  internal::cuda_emulation_built();
  if (on) {
    internal::EmulatedDevices devices = internal::parse_emulated_devices(
        environment("VOLLEY_HOST_EXECUTOR_DEVICES"), environment("VOLLEY_HOST_EXECUTOR_PEERS"));
    const std::lock_guard lock(devices_mutex);
    emulated = std::move(devices);
  }
  return on;
}

void check_devices(const internal::EmulatedDevices& devices) {
  VOLLEY_REQUIRE(devices.count >= 1 && devices.count <= kMaxEmulatedDevices, ValueError,
                 "emulated CUDA devices: the count must be in [1, {}], got {}", kMaxEmulatedDevices,
                 devices.count);
  const auto cells = static_cast<size_t>(devices.count) * static_cast<size_t>(devices.count);
  VOLLEY_REQUIRE(devices.peer_access.empty() || devices.peer_access.size() == cells, ValueError,
                 "emulated CUDA devices: the peer-access matrix of {} devices needs {} entries, "
                 "got {}",
                 devices.count, cells, devices.peer_access.size());
}

}  // namespace

bool cuda_emulated() {
  int state = emulated_state.load(std::memory_order_acquire);
  if (state == kUnset) {
    int expected = kUnset;
    emulated_state.compare_exchange_strong(expected, from_environment() ? 1 : 0);
    state = emulated_state.load(std::memory_order_acquire);
  }
  return state == 1;
}

namespace internal {

bool cuda_emulation_built() {
#if defined(VOLLEY_WITH_GPU_HOST)
  return true;
#else
  return false;
#endif
}

void set_cuda_emulated(bool on, const EmulatedDevices& devices) {
  VOLLEY_REQUIRE(!on || cuda_emulation_built(), RuntimeError,
                 "the host-executor device needs a build with the host executor (the CUDA "
                 "toolkit's CCCL headers at build time, VOLLEY_GPU_HOST)");
  check_devices(devices);
  {
    const std::lock_guard lock(devices_mutex);
    emulated = on ? devices : EmulatedDevices{};
  }
  emulated_state.store(on ? 1 : 0, std::memory_order_release);
}

EmulatedDevices emulated_devices() {
  if (!cuda_emulated()) return {};
  const std::lock_guard lock(devices_mutex);
  return emulated;
}

bool emulated_can_access_peer(int device, int peer) {
  if (!cuda_emulated()) return false;
  const std::lock_guard lock(devices_mutex);
  const int count = emulated.count;
  if (device < 0 || peer < 0 || device >= count || peer >= count) return false;
  if (device == peer || emulated.peer_access.empty()) return true;
  return emulated.peer_access[static_cast<size_t>(device) * static_cast<size_t>(count) +
                              static_cast<size_t>(peer)] != 0;
}

void check_emulated_ordinal(int device) {
  const int count = emulated_devices().count;
  VOLLEY_REQUIRE(device >= 0 && device < count, RuntimeError,
                 "CUDA device {} requested, but {} CUDA device(s) are visible (emulated)", device,
                 count);
}

void enable_emulated_peer_access(int device, int peer) {
  check_emulated_ordinal(device);
  check_emulated_ordinal(peer);
  VOLLEY_REQUIRE(emulated_can_access_peer(device, peer), RuntimeError,
                 "cuda:{} cannot read cuda:{}'s memory (no peer access between them; emulated "
                 "peer-access matrix)",
                 device, peer);
}

EmulatedDevices parse_emulated_devices(std::string_view count, std::string_view peers) {
  EmulatedDevices devices;
  if (!count.empty()) {
    const std::string text(count);
    char* end = nullptr;
    const long value = std::strtol(text.c_str(), &end, 10);
    VOLLEY_REQUIRE(
        end != text.c_str() && *end == '\0' && value >= 1 && value <= kMaxEmulatedDevices,
        ValueError, "VOLLEY_HOST_EXECUTOR_DEVICES must be a count in [1, {}], got \"{}\"",
        kMaxEmulatedDevices, text);
    devices.count = static_cast<int>(value);
  }
  const auto n = static_cast<size_t>(devices.count);
  if (peers.empty() || peers == "all") return devices;
  if (peers == "none") {
    devices.peer_access.assign(n * n, 0);
    return devices;
  }
  const std::string rule = fmt::format(
      "VOLLEY_HOST_EXECUTOR_PEERS for {} device(s) must be \"all\", \"none\" or {} rows of {} "
      "0/1 digits separated by ',' (row a, column b: a reads b's memory), got \"{}\"",
      n, n, n, peers);
  size_t row_length = 0;
  for (const char c : peers) {
    if (c == ',') {
      VOLLEY_REQUIRE(row_length == n, ValueError, "{}", rule);
      row_length = 0;
      continue;
    }
    VOLLEY_REQUIRE(c == '0' || c == '1', ValueError, "{}", rule);
    devices.peer_access.push_back(c == '1' ? 1 : 0);
    ++row_length;
  }
  VOLLEY_REQUIRE(row_length == n && devices.peer_access.size() == n * n, ValueError, "{}", rule);
  return devices;
}

void* emulated_allocate(size_t bytes) {
  const size_t size = (std::max<size_t>(bytes, 1) + 255) & ~size_t{255};
  void* pointer = std::aligned_alloc(256, size);
  if (pointer == nullptr) throw std::bad_alloc();
  return pointer;
}

void emulated_free(void* pointer) noexcept { std::free(pointer); }

size_t host_available_memory() {
  const long pages = sysconf(_SC_AVPHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  return pages > 0 && page > 0 ? static_cast<size_t>(pages) * static_cast<size_t>(page) : 0;
}

ScopedCudaEmulation::ScopedCudaEmulation(bool on, const EmulatedDevices& devices)
    : previous_(cuda_emulated()), previous_devices_(emulated_devices()) {
  set_cuda_emulated(on, devices);
}

ScopedCudaEmulation::~ScopedCudaEmulation() {
  {
    const std::lock_guard lock(devices_mutex);
    emulated = previous_devices_;
  }
  emulated_state.store(previous_ ? 1 : 0);
}

}  // namespace internal
}  // namespace volley
