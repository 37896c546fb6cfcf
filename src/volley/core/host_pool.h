// volley/core/host_pool.h — recycling of large host memory blocks.
//
// A fresh large allocation is a fresh mapping: the first write to each of its pages faults and
// the kernel zeroes the page, which for a sampler's or a gather's per-batch outputs costs about
// as much as the work itself. The host pool keeps the blocks that were let go and hands them out
// again, pages still mapped:
//
//   Buffer a = Buffer::allocate(64 << 20);   // a fresh mapping (first use)
//   a = Buffer();                            // the block goes back to the pool
//   Buffer b = Buffer::allocate(60 << 20);   // the same block again: no fault, no zeroing
//
// What goes through the pool: Buffer::allocate / Buffer::zeros (so Array::empty, gather
// outputs, loader batches) of at least kHostPoolMinBytes. A block returns when its last owner lets
// go: the last Buffer or Array view of it, including a numpy array or torch tensor viewing it
// zero-copy (Python holds a Buffer handle for it).
//
// Bound: the pool retains at most host_pool_limit() bytes of free blocks (default: 1 GiB or an
// eighth of physical memory, whichever is smaller; the environment variable
// VOLLEY_HOST_POOL_BYTES, read at first use, or set_host_pool_limit() change it; 0 turns
// retention off). A block larger than a quarter of the limit is unmapped at once; otherwise the
// blocks retained longest are unmapped first to stay within the limit. Memory in use is never
// counted nor limited. Blocks are page-aligned; contents of a reused block are arbitrary.
//
// Thread safety: every function may be called from any thread. Forking is safe (the child gets
// an unlocked pool holding copy-on-write copies of the parent's free blocks).
#pragma once

#include <cstddef>
#include <cstdint>

namespace volley {

// Requests below this size go to the C library's allocator (its heap recycles them well).
inline constexpr size_t kHostPoolMinBytes = size_t{256} << 10;

struct HostPoolStats {
  size_t retained_bytes = 0;  // free blocks held for reuse
  size_t retained_blocks = 0;
  size_t limit_bytes = 0;  // host_pool_limit()
  uint64_t reused = 0;     // requests served from a retained block
  uint64_t mapped = 0;     // requests that mapped a new block
  uint64_t released = 0;   // blocks unmapped (over the bound, trimmed, or too large)
};

HostPoolStats host_pool_stats();
size_t host_pool_limit();
// Sets the bound on retained bytes and releases blocks over it at once.
void set_host_pool_limit(size_t bytes);
// Unmaps every retained block (memory in use is untouched).
void trim_host_pool();

// A page-aligned block of at least `bytes` (>= kHostPoolMinBytes) from the pool, or a new
// mapping. `*capacity` receives its usable size. Throws RuntimeError when the system has no
// memory left (after releasing every retained block and trying again).
void* host_pool_allocate(size_t bytes, size_t* capacity);
// Gives back a block from host_pool_allocate, with the capacity it reported.
void host_pool_release(void* block, size_t capacity) noexcept;

// The capacity host_pool_allocate reports for a request of `bytes`: its size class (a multiple of
// the page size, at most 25% above `bytes`). Blocks are reused within one class only.
size_t host_pool_block_bytes(size_t bytes);

// Asks the kernel to back the 2 MiB-aligned part of [data, data + bytes) with transparent huge
// pages (a hint for memory not yet touched; never fails). Memory read at random over tens of
// MiB (a feature table's rows, a sampler's maps) then misses the TLB far less: with 4 KiB pages
// nearly every access costs a page walk.
void advise_huge_pages(void* data, size_t bytes);

}  // namespace volley
