// Device and pinned memory shared between processes by handle (ipc.h). Plain C++: the CUDA
// calls go through the internal/cuda_memory.h seam (stubs without CUDA).
#include "volley/core/ipc.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdint>
#include <cstring>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <utility>

#include "volley/core/cuda_device.h"
#include "volley/core/error.h"
#include "volley/core/internal/cuda_memory.h"
#include "volley/core/internal/emulated_device.h"

namespace volley {
namespace {

constexpr std::string_view kPrefix = "ipc:";

// What keeps a shareable block alive in this process: a memfd segment (page-locked here when
// `registered`), or a real GPU's device memory (allocated here, or opened from another process).
struct IpcBlock {
  Buffer segment;
  void* registered = nullptr;     // cudaHostRegister'ed start in `segment`
  void* device_memory = nullptr;  // kCudaIpc
  bool opened = false;            // device_memory came from cuda_ipc_open
  int device = -1;
  IpcBlock() = default;
  IpcBlock(const IpcBlock&) = delete;
  IpcBlock& operator=(const IpcBlock&) = delete;
  ~IpcBlock() {
    if (registered != nullptr) internal::cuda_host_unregister(registered);
    if (device_memory == nullptr) return;
    if (opened) {
      internal::cuda_ipc_close(device_memory, device);
    } else {
      internal::cuda_free_device(device_memory, device);
    }
  }
};

// The payload's start in a memfd segment of `bytes` + one page: the first page boundary, so that
// cudaHostRegister gets whole pages and every process finds the payload at the same offset.
std::byte* payload_of(const Buffer& segment) {
  const auto page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  const auto address = reinterpret_cast<uintptr_t>(segment.data());
  return segment.data() + (page - address % page) % page;
}

// The Buffer a caller sees: the block's bytes, tagged with the handle's location and device, and
// named by the handle (Buffer::shared_name).
Buffer wrap(std::byte* data, const IpcHandle& handle, std::shared_ptr<IpcBlock> block) {
  return Buffer::borrow(data, handle.bytes, std::move(block), /*writable=*/true, handle.location,
                        handle.location == Location::kCuda ? handle.device : -1,
                        handle.to_string());
}

// The block of a memfd segment: `segment` (this process's descriptor) with `handle`'s tags.
Buffer wrap_segment(Buffer segment, IpcHandle handle) {
  auto block = std::make_shared<IpcBlock>();
  std::byte* data = payload_of(segment);
  if (handle.location == Location::kPinnedHost && !cuda_emulated()) {
    internal::cuda_host_register(data, std::max<size_t>(handle.bytes, 1));
    block->registered = data;
  }
  handle.memfd = segment.shared_name();
  handle.pid = static_cast<long>(getpid());
  block->segment = std::move(segment);
  return wrap(data, handle, std::move(block));
}

void check_device_present(const IpcHandle& handle, const std::string& text) {
  if (handle.location != Location::kCuda) return;
  const int count = cuda_device_count();
  VOLLEY_REQUIRE(handle.device < count, RuntimeError,
                 "cannot open IPC handle '{}': it names cuda:{}, but {} CUDA device(s) are "
                 "visible in this process{}",
                 text, handle.device, count, cuda_emulated() ? " (emulated)" : "");
}

// The handle's kind must be this process's: memfd for emulated device memory, cuda-ipc for a
// real GPU's (pinned memory is memfd everywhere).
void check_kind(const IpcHandle& handle, const std::string& text) {
  if (handle.location != Location::kCuda) return;
  const bool emulated_handle = handle.kind == IpcHandle::Kind::kMemfd;
  VOLLEY_REQUIRE(emulated_handle == cuda_emulated(), RuntimeError,
                 "cannot open IPC handle '{}': it names {} device memory, but this process {}",
                 text, emulated_handle ? "emulated (VOLLEY_HOST_EXECUTOR=1)" : "real CUDA",
                 cuda_emulated() ? "emulates its CUDA devices" : "does not emulate CUDA devices");
}

Buffer open_memfd(const IpcHandle& handle, const std::string& text) {
  Buffer segment;
  try {
    segment = Buffer::attach_shared(handle.memfd);
  } catch (const IoError& error) {
    throw IoError(fmt::format("cannot open IPC handle '{}': {}", text, error.what()));
  }
  const auto page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  VOLLEY_REQUIRE(segment.size() == handle.bytes + page, IoError,
                 "cannot open IPC handle '{}': its segment holds {} bytes, not {} + one page", text,
                 segment.size(), handle.bytes);
  return wrap_segment(std::move(segment), handle);
}

// The real GPU blocks this process allocated shareable, by handle text: CUDA refuses to open a
// handle in the process that made it, so that process gets its own block back instead.
std::mutex own_blocks_mutex;
std::unordered_map<std::string, std::weak_ptr<IpcBlock>> own_blocks;

void remember_own_block(const std::string& text, const std::shared_ptr<IpcBlock>& block) {
  const std::lock_guard lock(own_blocks_mutex);
  std::erase_if(own_blocks, [](const auto& entry) { return entry.second.expired(); });
  own_blocks[text] = block;
}

std::shared_ptr<IpcBlock> own_block(const std::string& text) {
  const std::lock_guard lock(own_blocks_mutex);
  const auto found = own_blocks.find(text);
  return found == own_blocks.end() ? nullptr : found->second.lock();
}

Buffer open_cuda_ipc(const IpcHandle& handle, const std::string& text) {
  if (std::shared_ptr<IpcBlock> mine = own_block(text)) {
    auto* data = static_cast<std::byte*>(mine->device_memory);
    return wrap(data, handle, std::move(mine));
  }
  VOLLEY_REQUIRE(kill(static_cast<pid_t>(handle.pid), 0) == 0 || errno != ESRCH, IoError,
                 "cannot open IPC handle '{}': process {}, which holds the memory, has exited",
                 text, handle.pid);
  auto block = std::make_shared<IpcBlock>();
  block->device = handle.device;
  try {
    block->device_memory = internal::cuda_ipc_open(handle.cuda_ipc.data(), handle.device);
  } catch (const RuntimeError& error) {
    throw IoError(fmt::format("cannot open IPC handle '{}': {}", text, error.what()));
  }
  block->opened = true;
  return wrap(static_cast<std::byte*>(block->device_memory), handle, std::move(block));
}

// Reads one ':'-terminated (or final) field of `text` from `cursor`.
std::string_view next_field(std::string_view text, size_t& cursor) {
  const size_t end = std::min(text.find(':', cursor), text.size());
  const std::string_view field = text.substr(cursor, end - cursor);
  cursor = end + 1;
  return field;
}

template <typename T>
bool parse_number(std::string_view field, T& value, int base = 10) {
  const auto [next, error] =
      std::from_chars(field.data(), field.data() + field.size(), value, base);
  return error == std::errc() && next == field.data() + field.size() && !field.empty();
}

// The pid and size fields of a memfd handle "memfd:<pid>:<fd>:<bytes>:<token>".
bool parse_memfd(std::string_view memfd, IpcHandle& handle) {
  size_t cursor = 0;
  if (next_field(memfd, cursor) != "memfd") return false;
  const bool pid_ok = parse_number(next_field(memfd, cursor), handle.pid);
  next_field(memfd, cursor);  // the descriptor: checked by Buffer::attach_shared
  size_t segment_bytes = 0;
  if (!pid_ok || !parse_number(next_field(memfd, cursor), segment_bytes)) return false;
  const auto page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  if (segment_bytes < page) return false;
  handle.bytes = segment_bytes - page;
  handle.memfd = std::string(memfd);
  return true;
}

bool parse_cuda_ipc(std::string_view rest, IpcHandle& handle) {
  size_t cursor = 0;
  if (!parse_number(next_field(rest, cursor), handle.pid) ||
      !parse_number(next_field(rest, cursor), handle.bytes)) {
    return false;
  }
  const std::string_view hex = next_field(rest, cursor);
  if (hex.size() != 2 * handle.cuda_ipc.size() || cursor <= rest.size()) return false;
  for (size_t i = 0; i < handle.cuda_ipc.size(); ++i) {
    if (!parse_number(hex.substr(2 * i, 2), handle.cuda_ipc[i], 16)) return false;
  }
  return true;
}

}  // namespace

std::string IpcHandle::to_string() const {
  const std::string head = fmt::format("ipc:{}:{}:", location_name(location), device);
  if (kind == Kind::kMemfd) return head + memfd;
  std::string hex;
  for (const unsigned char byte : cuda_ipc) hex += fmt::format("{:02x}", byte);
  return head + fmt::format("cuda-ipc:{}:{}:{}", pid, bytes, hex);
}

IpcHandle IpcHandle::parse(std::string_view text) {
  IpcHandle handle;
  bool ok = text.substr(0, kPrefix.size()) == kPrefix;
  size_t cursor = kPrefix.size();
  const std::string_view location = ok ? next_field(text, cursor) : "";
  handle.location = location == "pinned_host" ? Location::kPinnedHost : Location::kCuda;
  ok = ok && (location == "cuda" || location == "pinned_host") &&
       parse_number(next_field(text, cursor), handle.device) &&
       (handle.location == Location::kCuda ? handle.device >= 0 : handle.device == -1);
  const std::string_view rest = ok && cursor < text.size() ? text.substr(cursor) : "";
  if (rest.substr(0, 9) == "cuda-ipc:") {
    handle.kind = Kind::kCudaIpc;
    ok = handle.location == Location::kCuda && parse_cuda_ipc(rest.substr(9), handle);
  } else {
    ok = ok && parse_memfd(rest, handle);
  }
  VOLLEY_REQUIRE(ok, ValueError,
                 "'{}' is not an IPC handle (expected ipc:<cuda|pinned_host>:<device>:memfd:... "
                 "or ipc:cuda:<device>:cuda-ipc:<pid>:<bytes>:<hex>)",
                 text);
  return handle;
}

Buffer allocate_shareable(size_t bytes, Location location, int device) {
  VOLLEY_REQUIRE(location == Location::kCuda || location == Location::kPinnedHost, ValueError,
                 "shareable memory is device (cuda) or pinned_host memory, got {}",
                 location_name(location));
  IpcHandle handle;
  handle.location = location;
  handle.bytes = bytes;
  handle.device = location == Location::kCuda ? device : -1;
  if (location == Location::kCuda) {
    VOLLEY_REQUIRE(device >= 0, ValueError, "CUDA device ordinal must be >= 0, got {}", device);
    if (cuda_emulated()) internal::check_emulated_ordinal(device);
  }
  if (location == Location::kPinnedHost || cuda_emulated()) {
    const auto page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    return wrap_segment(Buffer::create_shareable(bytes + page), handle);
  }
  auto block = std::make_shared<IpcBlock>();
  block->device = device;
  block->device_memory = internal::cuda_allocate_device(std::max<size_t>(bytes, 1), device);
  internal::cuda_ipc_get_handle(block->device_memory, device, handle.cuda_ipc.data());
  handle.kind = IpcHandle::Kind::kCudaIpc;
  handle.pid = static_cast<long>(getpid());
  remember_own_block(handle.to_string(), block);
  return wrap(static_cast<std::byte*>(block->device_memory), handle, std::move(block));
}

bool ipc_shareable(const Buffer& buffer) {
  return buffer.shared_name().substr(0, kPrefix.size()) == kPrefix;
}

IpcHandle ipc_handle(const Buffer& buffer) {
  VOLLEY_REQUIRE(ipc_shareable(buffer), ValueError,
                 "this {} buffer of {} bytes has no IPC handle: only device or pinned memory "
                 "allocated shareable (allocate_shareable) or opened by handle can be shared",
                 location_name(buffer.location()), buffer.size());
  return IpcHandle::parse(buffer.shared_name());
}

Buffer open_ipc(const IpcHandle& handle) {
  const std::string text = handle.to_string();
  check_kind(handle, text);
  check_device_present(handle, text);
  return handle.kind == IpcHandle::Kind::kMemfd ? open_memfd(handle, text)
                                                : open_cuda_ipc(handle, text);
}

Array shareable_array(const Array& array) {
  const Buffer& buffer = array.buffer();
  VOLLEY_REQUIRE(buffer.location() == Location::kCuda || buffer.location() == Location::kPinnedHost,
                 ValueError,
                 "{} is in {} memory: only device or pinned arrays are shared by IPC handle (host "
                 "arrays by share_memory_)",
                 array.describe(), location_name(buffer.location()));
  if (ipc_shareable(buffer)) return array;
  Buffer copy = allocate_shareable(array.nbytes(), buffer.location(), buffer.device());
  if (array.nbytes() > 0) {
    cuda_copy(copy.data(), array.raw_data(), array.nbytes(), nullptr);
    cuda_synchronize(nullptr);
  }
  return Array(std::move(copy), array.dtype(), array.shape());
}

}  // namespace volley
