// volley/feature/internal/huge_pages.h — transparent huge pages under a feature table the store
// did not allocate (a torch tensor or numpy array used zero-copy).
//
// A random-row gather over a large table held in 4 KiB pages misses the TLB on nearly every row:
// 900,000 random 64-byte rows of a 1.9 GB torch tensor took 116 ms with 4 KiB pages and 28 ms
// once the range was collapsed into 2 MiB pages (bench/RESULTS.md). The store's own tiers are
// advised before their first touch; a caller's memory is already faulted in, so only
// MADV_COLLAPSE (Linux >= 6.1) changes it, and that copies every page: seconds for gigabytes.
#pragma once

#include "volley/core/array.h"

namespace volley::feature_internal {

// Tables at least this large get collapsed (smaller ones fit the TLB's reach well enough).
inline constexpr size_t kCollapseMinBytes = size_t{256} << 20;

// When `matrix` is ordinary host memory (Location kHost or kExternal) of at least
// kCollapseMinBytes, starts a background thread that advises MADV_HUGEPAGE and collapses the
// table into huge pages, 32 MiB at a time, at low priority, holding a reference to the memory
// until it is done. Contents never change (the kernel copies pages in place); gathers meanwhile
// read correct rows and get faster as chunks are collapsed. A kernel without MADV_COLLAPSE, or
// THP disabled, ends the thread at its first chunk. Once per range and process. The cost is a
// one-time background copy (about 3 s per GB on the 2-core dev box, at nice 10): a job shorter
// than that pays without gaining (a 40-second benchmark did), a training run gains for its whole
// length (a loader carrying a 4 GB edge_attr: 0.75 -> 0.85 of its batches/s without it;
// bench/RESULTS.md). VOLLEY_HUGE_PAGES=0 turns it off. Returns whether a thread was started.
bool collapse_huge_pages_async(const Array& matrix);

}  // namespace volley::feature_internal
