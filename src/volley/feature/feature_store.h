// volley/feature/feature_store.h — node features (or labels) held in tiers, gathered by id.
//
// A FeatureStore holds an N×D row-major matrix (or an [N] vector: labels and other per-node
// arrays) of float32, float16, bfloat16, int8, uint8 — any Volley dtype, in fact — spread over
// tiers, fastest first. Each tier holds some rows in a Buffer of one Location:
//   host memory       heap rows (a copy of the hottest rows, or the caller's array as it is);
//   shared memory     a segment another process attaches to by name (attach_shared);
//   mapped file       a read-only map of an .npy file: rows are paged in on demand, never
//                     copied up front, so a matrix larger than RAM opens;
//   disk              the same file read past the page cache (io_uring + O_DIRECT, see "Disk
//                     tier" below), behind an optional host-memory row cache;
//   device memory     (kCuda) a GPU cache of the hottest rows;
//   pinned host       (kPinnedHost) page-locked host memory the GPU reads directly (UVA).
// A store whose tiers are GPU tiers (a device tier and/or a pinned tier, or a device tier over
// the disk tier) is gathered by a CUDA kernel on its device; a store of host tiers by the CPU
// kernel. gather() picks the kernel from where the tiers live and writes where `out` lives.
//
//   FeatureStore x(features);                              // one tier: the array itself, no copy
//   FeatureStore big = FeatureStore::from_npy("papers/features.npy");   // mapped, not loaded
//   FeatureStore tiered = FeatureStore::build(
//       big_matrix, {.tiers = {{.location = Location::kHost, .byte_budget = 4ull << 30}},
//                    .hot_order = hotness_by_degree(graph)});  // hottest 4 GiB on the heap
//   Array batch = tiered.gather(ids, {.out_dtype = DType::kFloat32});  // [ids.size(), D]
//   tiered.gather(ids, slot.data(), {.threads = 1});       // into the caller's memory
//   FeatureStore gpu = FeatureStore::build(               // hottest 8 GiB on cuda:0, the rest
//       big_matrix, {.tiers = {{.location = Location::kCuda, .byte_budget = 8ull << 30}},
//                    .hot_order = hotness_by_degree(graph)});   // in pinned host memory
//   gpu.gather(device_ids, device_out, {.stream = stream.handle()});   // on the GPU
//   FeatureStore four = FeatureStore::build(              // 8 GiB of hot rows per GPU: sharded
//       big_matrix, {.tiers = {{.location = Location::kCuda, .byte_budget = 8ull << 30,
//                               .devices = {0, 1, 2, 3}}}});   // over peers, replicated across
//   four.gather(ids_on_2, out_on_2, {.stream = stream_on_2});    // cliques; gathered on cuda:2
//   FeatureStore far = FeatureStore::from_npy("papers/features.npy",   // 8 GiB per GPU, the
//       {.tiers = {{.location = Location::kCuda, .byte_budget = 8ull << 30,  // rest read from
//                   .devices = {0, 1}}}, .source_reads = SourceReads::kDisk});  // the disk
//
// Ids → rows: with a single tier in id order there is no lookup (row id is slot id). Otherwise
// one packed lookup entry per row gives (tier, slot): uint32 with the tier in bits 28–31 when
// N < 2^28, else uint64 with the tier in bits 56–63. A gather reads one entry per row.
//
// Gather: multi-threaded over the default thread pool (or on the calling thread only, with
// threads = 1: what the loader's batch workers use), writes straight into the caller's buffer,
// prefetches rows ahead, streams large outputs past the caches, converts the dtype when asked
// (see gather.h for the conversions). Out-of-range ids throw IndexError naming the first bad id
// and its position before anything out of bounds is read. Host tiers the store allocates, and
// the arrays gather() returns, are advised to use transparent huge pages: with 4 KiB pages nearly
// every random row read misses the TLB, and a fresh 100 MB output costs 25,000 page faults.
//
// GPU tiers: with a hot order, one device-side lookup entry per row (int32 when N < 2^31, else
// int64): slot s >= 0 in the device tier, or ~s in the pinned tier; without one, the device tier
// holds rows [0, device rows) and no lookup is needed. The kernel copies whole rows with up to
// 16-byte loads and stores, a group of threads per row. It does not convert dtypes: a GPU store
// gathers its stored dtype (ValueError for another out_dtype). Work is queued on
// options.stream (a cudaStream_t as void*; nullptr = the legacy default stream); with
// check_ids (the default) the call then waits for the stream and throws IndexError naming the
// first out-of-range id and its position; without, it returns at once and rows of
// out-of-range ids are zero-filled (nothing is read out of bounds either way).
//
// Several devices (TierSpec::devices, Quiver's p2p_clique_replicate): the devices are grouped
// into peer-access cliques (cuda_peer_cliques: every member reads every other's memory; a
// device without peer access to the others is a clique of one, the fallback). Each clique
// caches the hottest byte_budget × (its size) bytes of rows, dealt round-robin over its
// members (the i-th hottest row on member i mod size), so each device holds up to byte_budget;
// every clique holds its own replica. Peer access is enabled between the members of a clique.
// A gather on device d reads a row from d's shard, from a peer's shard of d's clique, or from
// pinned host memory (the rows no clique of d caches); the lookup (placement slot per row) is
// replicated on every device. The gathering device is options.device, else the device `out`
// lives on, else the device the ids live on, else the first device. One device is the case of
// one clique of one.
//
// GPU tiers over the disk: the rows no clique caches need not be copied to pinned memory. For
// GPU tiers of a cuda tier alone over a mapped file, options.source_reads chooses as for a host
// store (kDisk, or kAuto with a file past kDiskTierRamShare of RAM): then they stay in the file,
// which is the store's last tier (every row, in id order; locate() gives slot = id), behind a
// disk tier (see "Disk tier" below: its row cache in host memory, kDynamic or kLookahead, and
// its reader). A gather on device d reads the ids on the host (device ids are copied there in
// stream order, and checked there), reads the rows d's clique does not cache through the disk
// tier into a pinned staging buffer at their batch positions (allocated per gather), then runs
// the one gather kernel, which takes rows from d's shard, a peer's shard or that staging
// buffer; the call then waits for the stream. A failed read (IoError) or a bad id (IndexError)
// is raised before the kernel runs: `out` is left as it was. A store whose cliques cache every
// row drops the disk tier (an ordinary GPU store). Refused (ValueError): kDisk with a
// kPinnedHost tier listed, kDisk over a matrix that is not a mapped file, cache_policy kStatic;
// such a store has no GpuParts (its cold rows are a file: open it in each process). Verified on
// emulated devices only (the host executor, gpu-host tests), not yet on GPUs.
//
// Disk tier: the last (source) tier of a store over a mapped file may be read from the disk
// instead of through the map. The rows a gather needs that no faster tier or the row cache
// holds are sorted, adjacent ones coalesced into one read, and read with io_uring and O_DIRECT,
// up to 64 reads in flight, then copied into the caller's output (feature/internal/
// disk_reader.h). Where io_uring is refused it reads with pread (disk_io_support() says which,
// detected at open; `volley info` shows it). SourceReads::kAuto picks the disk tier when the
// matrix is a mapped file larger than kDiskTierRamShare of the physical RAM: then the page cache
// cannot hold it, and paging rows in through the map reads ~128 KiB of readahead per 3 KiB row.
// The row cache in front of it (cache_bytes, cache_policy):
//   kStatic   the hottest rows of hot_order (or id order) in a host tier, filled at build;
//   kDynamic  SIEVE over cache_bytes of slots, filled by misses: hits take no lock (a per-slot
//             version check), inserts and evictions one mutex.
//   kLookahead  Belady over the batches a loader announces (see CachePolicy); with read_ahead,
//             a thread of the store reads each announced batch's missing rows that the policy
//             would admit straight into cache slots, once the batch is at most 2 past the latest
//             begun (32 batches queued at most; a request beyond is dropped), and begin_batch(b)
//             cancels b's read not started and waits for its chunk in flight (at most 4 MiB of
//             rows): a slow disk shows as back-pressure.
// A file that was truncated or changed on disk after open raises IoError naming it ("changed on
// disk"), in the disk tier and in a mapped tier alike (the map's reads are guarded,
// core/internal/fault_guard.h: the SIGBUS of a page past the new end becomes the error); no read
// waits longer than 60 s (IoError). A read ahead that fails is dropped: the batch's own gather
// reads those rows and raises the error there. Memory: cache_bytes plus per-thread staging
// (8 MiB; with read_ahead one more thread and the ids of the queued batches).
//
// Thread safety: a FeatureStore is immutable after construction (the dynamic cache's contents
// change, behind its own synchronisation); copies share its tiers and
// any number of threads may gather concurrently (GPU stores: on their own streams).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "volley/core/array.h"

namespace volley {

// One tier: rows [slots, D] (or [slots]) in a Buffer of some Location.
class Tier {
 public:
  explicit Tier(Array rows) : rows_(std::move(rows)) {}
  const Array& rows() const { return rows_; }
  Location location() const { return rows_.buffer().location(); }
  int64_t num_slots() const { return rows_.ndim() == 0 ? 0 : rows_.dim(0); }
  size_t nbytes() const { return rows_.nbytes(); }

 private:
  Array rows_;
};

// A cache tier to fill with the hottest rows not yet placed.
//   Host tiers: kHost or kSharedMemory, any number (at most 7), fastest first.
//   GPU tiers: {kCuda} (device cache; the rows it cannot hold go to pinned host memory),
//   {kCuda, kPinnedHost} (the same, said explicitly) or {kPinnedHost} (every row pinned: UVA
//   only). The pinned tier always takes every remaining row (its budget is ignored): the GPU
//   cannot read the pageable source matrix. {kCuda} over a mapped file may leave the remaining
//   rows in the file instead, read through the disk tier ("GPU tiers over the disk" above).
//   Host and GPU tiers do not mix in one list.
struct TierSpec {
  Location location = Location::kHost;  // kHost, kSharedMemory, kCuda or kPinnedHost
  size_t byte_budget = Buffer::npos;    // rows that fit entirely; npos = all remaining rows
  std::string shared_name;              // kSharedMemory: segment name ("" = a unique one)
  int device = 0;                       // kCuda / kPinnedHost: the CUDA device that reads it
  // kCuda: the devices of a sharded cache (each holds up to byte_budget; see "Several devices"
  // above), distinct ordinals of visible devices; empty: {device}. The pinned tier's device
  // must be one of them.
  std::vector<int> devices;
};

// How the source tier of a mapped file is read (see "Disk tier" above).
enum class SourceReads {
  kAuto,    // the disk tier when the matrix is a mapped file > kDiskTierRamShare of RAM
  kMapped,  // through the map (page cache)
  kDisk,    // the disk tier (ValueError when the matrix is not a mapped file)
};
// The row cache in front of the disk tier. kLookahead: the cache_bytes of rows, pre-filled with
// the hottest (hot_order), evicted by Belady's rule over the batches announced with
// announce_batch (rows used soonest are kept; rows no announced batch uses go coldest first), a
// missed row not admitted when it would be the first to go. Without announcements it behaves as
// static hotness; see cache_simulation.h for the rule replayed on a trace.
enum class CachePolicy { kStatic, kDynamic, kLookahead };
// The share of physical RAM above which kAuto reads a mapped matrix from the disk.
inline constexpr double kDiskTierRamShare = 0.5;
// cache_bytes when an automatic disk tier is picked without one: a quarter of physical RAM.
inline constexpr double kDefaultCacheRamShare = 0.25;

struct FeatureStoreOptions {
  // Cache tiers, fastest first. Rows that fit in none are read from the source matrix itself
  // (its own Location: host, shared, mapped file, borrowed), which becomes the last tier.
  std::vector<TierSpec> tiers;
  // int64 row ids, hottest first (see hotness.h); may list fewer than N rows (the rest follow in
  // id order). Absent: id order. Must hold distinct ids in [0, N).
  std::optional<Array> hot_order;
  // Disk tier (stores over a mapped file: host tiers, or a cuda tier alone, see "GPU tiers over
  // the disk").
  SourceReads source_reads = SourceReads::kAuto;
  // Host memory for the row cache in front of the disk tier; npos = the default share of RAM
  // (for a store without a disk tier: none). With kStatic, any store gets a host tier of the
  // hottest rows that fit cache_bytes, before `tiers`.
  size_t cache_bytes = Buffer::npos;
  CachePolicy cache_policy = CachePolicy::kDynamic;
  bool allow_io_uring = true;  // false: pread only
  // kLookahead only (ignored otherwise): a thread of the store reads each announced batch's rows
  // that the cache misses and would admit from the disk into the cache, while earlier batches are
  // gathered; begin_batch waits for such a batch's read in flight (see "Disk tier"). Off by
  // default: on a 2-core machine it did not pay (bench/RESULTS.md).
  bool read_ahead = false;
};

// How this process would read a disk tier: "io_uring" or "pread (io_uring refused: ...)".
std::string disk_io_support();

struct GatherOptions {
  std::optional<DType> out_dtype;  // default: the stored dtype
  int threads = 0;  // 1: the calling thread only; otherwise the default pool (set_num_threads)
  std::optional<bool> streaming_stores;  // non-temporal output stores; default: when >= 8 MiB
  // GPU stores: the CUDA stream the gather is queued on (a cudaStream_t as void*), and whether
  // to wait for it and throw IndexError for an out-of-range id (see above).
  void* stream = nullptr;
  bool check_ids = true;
  // GPU stores: the device whose kernel gathers (one of devices(); -1: where out lives, else
  // where the ids live, else the first device). ValueError for a device without a shard.
  int device = -1;
};

struct RowLocation {
  int tier;
  int64_t slot;
};

class FeatureStore {
 public:
  // An empty store (defined() == false).
  FeatureStore() = default;
  // One tier over `matrix` as it is (no copy): [N, D] or [N], host-accessible memory of any
  // Location (a mapped file larger than kDiskTierRamShare of RAM: the disk tier and a row cache
  // of the default size, as build() with default options). ValueError otherwise. Implicit, so an
  // Array of rows is accepted wherever a store is (the loader).
  FeatureStore(Array matrix);  // NOLINT(google-explicit-constructor)
  // Maps an .npy file read-only (IoError for a missing or malformed file); with the default
  // options a file larger than kDiskTierRamShare of RAM gets the disk tier.
  static FeatureStore from_npy(const std::string& path, const FeatureStoreOptions& options = {});
  // Copies `matrix` into a new shared-memory segment that other processes can attach to (by
  // shared_name()) while any process holds the store: an anonymous memfd segment when `name` is
  // empty (nothing can leak, even after kill -9), else a /dev/shm segment of that name.
  static FeatureStore create_shared(const Array& matrix, const std::string& name = "");
  // Attaches to a segment made by create_shared, in this or another process (IoError when it
  // does not exist or is not a feature segment).
  static FeatureStore attach_shared(const std::string& name);
  // A tiered store: the hottest rows go to options.tiers in order, as their byte budgets allow;
  // the rest stay in `matrix` (not copied) — or, for GPU tiers, go to pinned host memory unless
  // they stay on the disk ("GPU tiers over the disk").
  // ValueError for a bad option (a tier location not listed at TierSpec, host and GPU tiers
  // mixed, more than 7 tiers, a malformed hot order, a negative device, a device listed twice,
  // zero-width rows for GPU tiers, a disk option GPU tiers refuse), IndexError for a hot order
  // id out of range; RuntimeError for
  // GPU tiers in a build without CUDA ("this build of Volley has no CUDA support"), a missing
  // device, or a failed allocation or copy.
  static FeatureStore build(const Array& matrix, const FeatureStoreOptions& options);

  bool defined() const { return state_ != nullptr; }
  int64_t num_rows() const;
  // Elements per row (1 for a vector store).
  int64_t width() const;
  // 1 for a vector store ([N] → gathers [n]), 2 for a matrix.
  int64_t ndim() const;
  DType dtype() const;
  size_t row_bytes() const;
  const std::vector<Tier>& tiers() const;
  // Whether ids go through a lookup (false: one tier in id order).
  bool has_lookup() const;
  // Whether the tiers are GPU tiers (gathered by the CUDA kernel), and their device (-1 if not;
  // the first of devices() for a sharded cache).
  bool on_cuda() const;
  int device() const;
  // Every device that holds a shard of the cache, in the order given (empty for a host store).
  std::vector<int> devices() const;

  // A GPU store's arrays and layout, what another process of this machine opens by handle
  // (core/ipc.h) to gather from the same device and pinned memory, as placed graphs are shared.
  struct GpuParts {
    std::vector<int> devices;                   // one shard per device, in devices() order
    std::vector<Array> shards;                  // device memory of devices[v]: its cached rows
    std::vector<std::optional<Array>> lookups;  // on devices[v]: every row's placement slot
                                                // (int32 or int64); none in id order
    Array pinned;  // pinned memory: the slots no clique caches, [min(hot_rows), N)
    std::vector<std::vector<int>> cliques;  // indices into devices, members in shard order
    std::vector<int64_t> hot_rows;          // per clique: the slots [0, hot_rows) it caches
  };
  // The parts of a GPU store (shared, not copied); ValueError for a host store or a GPU store
  // over the disk.
  GpuParts gpu_parts() const;
  // The GPU store of `parts` (e.g. each array opened by handle): nothing is copied but each
  // device's table of its clique's shard pointers (and, in a hot order, the host copy of the
  // lookup); peer access enabled within each clique. ValueError naming what disagrees: an array
  // not on its device or not pinned, shapes or dtypes that differ, a clique naming no device.
  static FeatureStore from_gpu_parts(GpuParts parts);
  // Whether every array of a GPU store is shareable by IPC handle (false for a host store and a
  // GPU store over the disk).
  bool shareable() const;
  // This GPU store with every array shareable: itself when it is, else the arrays that are not
  // are copied once into shareable memory of the same place (core/ipc.h shareable_array);
  // ValueError as gpu_parts().
  FeatureStore to_shareable() const;
  // Tier and slot of row `id` (IndexError when out of range). GPU stores: as a gather on
  // `device` reads it (-1: the first device; ValueError for a device without a shard), so the
  // tier is that device's shard, a peer's shard or the pinned tier (over the disk: the file,
  // slot = id).
  RowLocation locate(int64_t id, int device = -1) const;
  // The segment name when the store is a single shared-memory tier made by create_shared, else "".
  const std::string& shared_name() const;
  // "float32[2449029, 100] in 2 tiers: host 1.2 GB (300000 rows), mapped_file (2149029 rows)"
  std::string describe() const;
  // The disk tier's reads ("io_uring, O_DIRECT, 64 reads in flight"), "" without a disk tier.
  std::string disk_io() const;
  // Row-cache counters of the disk tier since construction (zeros without one): rows served by
  // the faster tiers or the cache, and rows read from the disk.
  struct DiskStats {
    int64_t hits = 0;
    int64_t misses = 0;      // rows a gather read from the disk
    int64_t read_ahead = 0;  // rows read into the cache ahead of their batch (read_ahead)
  };
  DiskStats disk_stats() const;
  // kLookahead disk stores (no-ops for any other store): announce_batch says that batch `batch`
  // (a number in [0, 2^62) the caller chooses, larger for later batches; ValueError otherwise)
  // will gather `ids`; begin_batch, called before that batch's gather, takes its uses out of the
  // window. The rows gathered never depend on these calls, only which are read from the disk.
  // IndexError for an id out of [0, N). Thread-safe.
  void announce_batch(int64_t batch, std::span<const int64_t> ids) const;
  void begin_batch(int64_t batch) const;
  // Whether announce_batch steers this store's cache (a kLookahead disk tier with a cache).
  bool wants_lookahead() const;

  // The one gather: out[i, :] = row ids[i]. `ids` is a 1-d int64 array, `out` [n, D] (or [n])
  // of the output dtype. Host stores: both in host-accessible memory. GPU stores: ids in host
  // memory, or in memory of the store's device (or pinned); `out` in device memory of the
  // store's device or in pinned host memory (the kernel writes it, in stream order), or in
  // pageable host memory (gathered on the device, then copied back; the call waits; over the
  // disk it always waits). Throws
  // IndexError / ValueError as described above (a bad shape, dtype or location of ids / out).
  void gather(const Array& ids, const Array& out, const GatherOptions& options = {}) const;
  // Host ids into host memory `out` (ids.size() × width() elements of the output dtype), for
  // any store; the CPU loader's entry.
  void gather(std::span<const int64_t> ids, std::byte* out,
              const GatherOptions& options = {}) const;
  // Same into a new host Array [ids.size(), D] (or [ids.size()] for a vector store).
  Array gather(std::span<const int64_t> ids, const GatherOptions& options = {}) const;

  struct State;  // the implementation's (feature_store.cc)

 private:
  std::shared_ptr<const State> state_;
};

// Uninitialised host memory for gathered rows, backed by transparent huge pages where the system
// allows: a fresh 100 MB batch then costs ~50 page faults instead of ~25,000, which otherwise
// cost more than the gather itself. Used by gather() and the loader's batch buffers.
Buffer allocate_gather_buffer(size_t bytes);

}  // namespace volley
