// volley/core/ipc.h — device and pinned memory that other processes of one machine open by
// handle (the DDP ranks of one machine share one copy of a placed graph).
//
// Host memory is shared by memfd handles (Buffer::create_shareable). This extends the same idea
// to the two GPU locations:
//   kCuda        device memory; on a real GPU a cudaIpcMemHandle_t (cudaIpcGetMemHandle in the
//                allocating process, cudaIpcOpenMemHandle in the others); on an emulated device
//                (cuda_emulated(), internal/emulated_device.h) a memfd segment, so that the
//                hand-off runs in CI on the very same bytes;
//   kPinnedHost  a memfd segment, page-locked (cudaHostRegister) once in each process that maps
//                it: one copy in host memory whichever process reads it.
//
//   Buffer block = allocate_shareable(1 << 20, Location::kCuda, /*device=*/0);
//   std::string text = ipc_handle(block).to_string();   // "ipc:cuda:0:cuda-ipc:..." or
//                                                       // "ipc:cuda:0:memfd:<pid>:..."
//   Buffer same = open_ipc(IpcHandle::parse(text));      // in another process: the same bytes
//
// A shareable block's Buffer::shared_name() is its handle's text. Lifetime: a handle refers to
// the memory of the process that allocated it (or, for memfd kinds, of any process that opened
// it: its shared_name() names that process). Opening a handle after that process exited throws
// IoError naming the handle; the memory itself is freed when the last process lets go. A
// cuda-ipc handle cannot be re-exported: a process that opened one hands on the original handle,
// which stays valid while the allocating process holds the block. Opened in the allocating
// process itself, a cuda-ipc handle gives back that process's block (CUDA opens a handle only
// in another process).
//
// Thread safety: as Buffer. Errors: ValueError for a malformed handle or a location that is not
// kCuda / kPinnedHost; RuntimeError when the handle's device is not present in this process, or
// its kind does not match this process (a real GPU's handle in a process that emulates devices,
// or the reverse), and without CUDA; IoError when the memory is gone (stale handle).
#pragma once

#include <array>
#include <cstddef>
#include <string>
#include <string_view>

#include "volley/core/array.h"
#include "volley/core/buffer.h"

namespace volley {

// The handle of one shareable block.
struct IpcHandle {
  enum class Kind {
    kMemfd,    // a memfd segment: pinned memory, or an emulated device's memory
    kCudaIpc,  // a real GPU's memory: cudaIpcMemHandle_t
  };
  Kind kind = Kind::kMemfd;
  Location location = Location::kCuda;       // kCuda or kPinnedHost
  int device = -1;                           // kCuda: the device ordinal; -1 for kPinnedHost
  size_t bytes = 0;                          // the block's size
  long pid = 0;                              // the process whose memory the handle names
  std::string memfd;                         // kMemfd: the segment's memfd handle ("memfd:...")
  std::array<unsigned char, 64> cuda_ipc{};  // kCudaIpc: the cudaIpcMemHandle_t's bytes

  // "ipc:<cuda|pinned_host>:<device>:memfd:<pid>:<fd>:<bytes>:<token>" or
  // "ipc:cuda:<device>:cuda-ipc:<pid>:<bytes>:<128 hex digits>".
  std::string to_string() const;
  // The handle of to_string()'s text; ValueError naming the text when it is not one.
  static IpcHandle parse(std::string_view text);
};

// `bytes` of memory other processes can open by handle: device memory of CUDA device `device`
// (location kCuda) or pinned host memory (kPinnedHost; `device` ignored). Uninitialised for
// kCuda, zero-filled for kPinnedHost. ValueError for another location or a negative device;
// RuntimeError for a device that is not present, or without CUDA (unless emulated).
Buffer allocate_shareable(size_t bytes, Location location, int device = -1);
// Whether `buffer` (or the block it views) came from allocate_shareable or open_ipc.
bool ipc_shareable(const Buffer& buffer);
// The handle of the block `buffer` views (the view's offset in it is buffer.offset()).
// ValueError naming the buffer's location when it is not shareable.
IpcHandle ipc_handle(const Buffer& buffer);
// Opens the block of `handle` in this process: the same memory, never a copy. Errors as the
// header says; each names the handle.
Buffer open_ipc(const IpcHandle& handle);
// `array` in shareable memory of its own location (device memory of its device, or pinned):
// itself when it already is, else one copy (synchronous). ValueError for an array in any other
// location, naming it.
Array shareable_array(const Array& array);

}  // namespace volley
