// The CUDA neighbor-sampling kernels and their host driver (CUDA builds only).
//
// One batch, hop by hop, everything on the caller's stream:
//   1. count    one thread per frontier target: how many neighbors it gets (pick.h's
//               pick_count); exclusive scan → each target's output offset; the total E is read
//               back (first wait);
//   2. pick     one thread per target runs pick.h's pick_positions — the CPU kernel's draws in
//               the CPU kernel's order — with the output slices of that target as its scratch,
//               then writes rows, edge ids and the neighbors' global ids at its offset. The
//               edge order is therefore the CPU's: targets in node-list order, each target's
//               neighbors in pick order;
//   3. relabel  first appearance in that order, with a hash table global id → value:
//               earlier nodes hold their local id (< n, the nodes so far); each neighbor at
//               hop position j inserts n + j with atomicMin, so a new node's entry ends up
//               holding the position of its first occurrence; j is a first occurrence iff the
//               entry equals n + j; an exclusive scan of those flags numbers the new nodes in
//               position order (second wait, for their count); the first occurrences append
//               their node and store the final local id in the table; then every edge reads
//               its column from the table.
// The table lives through the batch (cleared once, grown by rehashing when a hop could
// overflow half of it); all buffers are GrowableBuffers kept by the sampler between batches.
#include <cub/device/device_scan.cuh>

#include <algorithm>
#include <mutex>

#include "volley/core/cuda/cuda_check.h"
#include "volley/core/cuda/growable_buffer.h"
#include "volley/sampling/internal/cuda_sampler_backend.h"
#include "volley/sampling/internal/pick.h"

namespace volley::sampling_internal {
namespace {

constexpr int kBlock = 256;
constexpr unsigned long long kEmpty = ~0ull;  // empty key; also the initial (max) value

unsigned grid_for(int64_t items) { return static_cast<unsigned>((items + kBlock - 1) / kBlock); }

// --- global id → value hash table (open addressing, linear probing) ---------------------------
struct Table {
  unsigned long long* keys;
  unsigned long long* values;
  unsigned long long mask;  // capacity - 1 (capacity a power of two)
};

__device__ inline unsigned long long hash_id(unsigned long long x) {  // murmur3's finaliser
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ull;
  x ^= x >> 33;
  return x;
}

// Inserts `key` (if absent) and lowers its value to `value`.
__device__ inline void table_insert_min(Table table, unsigned long long key,
                                        unsigned long long value) {
  unsigned long long slot = hash_id(key) & table.mask;
  while (true) {
    const unsigned long long previous = atomicCAS(&table.keys[slot], kEmpty, key);
    if (previous == kEmpty || previous == key) {
      atomicMin(&table.values[slot], value);
      return;
    }
    slot = (slot + 1) & table.mask;
  }
}

// The slot of `key`, which must be present (inserted by an earlier kernel).
__device__ inline unsigned long long table_find(Table table, unsigned long long key) {
  unsigned long long slot = hash_id(key) & table.mask;
  while (table.keys[slot] != key) slot = (slot + 1) & table.mask;
  return slot;
}

// --- kernels ----------------------------------------------------------------------------------
// Inserts nodes[i] with value i (seeds; re-insertion after the table grew).
__global__ void insert_nodes_kernel(Table table, const int64_t* nodes, int64_t count) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < count) {
    table_insert_min(table, static_cast<unsigned long long>(nodes[i]),
                     static_cast<unsigned long long>(i));
  }
}

template <typename Index>
__global__ void count_kernel(GraphRows<Index> graph, const int64_t* frontier, int64_t count,
                             PickRule rule, int64_t* counts) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i == 0) counts[count] = 0;  // the scan's last element becomes the total
  if (i >= count) return;
  const int64_t target = frontier[i];
  const int64_t begin = graph.indptr[target];
  const int64_t degree = graph.indptr[target + 1] - begin;
  counts[i] = pick_count(degree, graph.weights != nullptr ? graph.weights + begin : nullptr, rule);
}

// Target i's picks go to [offsets[i], offsets[i + 1]) of rows / edge_ids / neighbors; the same
// slices of edge_ids (positions), cols (keys, as doubles) and rows (order) are its scratch.
template <typename Index>
__global__ void pick_kernel(GraphRows<Index> graph, const int64_t* frontier, int64_t count,
                            int64_t first_local, PickRule rule, const int64_t* offsets,
                            int64_t* rows, int64_t* cols, int64_t* edge_ids, int64_t* neighbors) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= count) return;
  const int64_t start = offsets[i];
  const int64_t picks = offsets[i + 1] - start;
  if (picks == 0) return;
  const int64_t target = frontier[i];
  const int64_t begin = graph.indptr[target];
  const int64_t degree = graph.indptr[target + 1] - begin;
  int64_t* positions = edge_ids + start;
  pick_positions(target, degree, graph.weights != nullptr ? graph.weights + begin : nullptr, rule,
                 picks, positions, reinterpret_cast<double*>(cols + start), rows + start);
  for (int64_t j = 0; j < picks; ++j) {
    const int64_t k = begin + positions[j];
    neighbors[start + j] = static_cast<int64_t>(graph.indices[k]);
    edge_ids[start + j] = graph.edge_ids != nullptr ? graph.edge_ids[k] : k;
    rows[start + j] = first_local + i;
  }
}

__global__ void insert_neighbors_kernel(Table table, const int64_t* neighbors, int64_t count,
                                        int64_t base) {
  const int64_t j = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (j < count) {
    table_insert_min(table, static_cast<unsigned long long>(neighbors[j]),
                     static_cast<unsigned long long>(base + j));
  }
}

__global__ void flag_first_kernel(Table table, const int64_t* neighbors, int64_t count,
                                  int64_t base, int64_t* flags) {
  const int64_t j = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (j == 0) flags[count] = 0;
  if (j >= count) return;
  const unsigned long long slot = table_find(table, static_cast<unsigned long long>(neighbors[j]));
  flags[j] = table.values[slot] == static_cast<unsigned long long>(base + j) ? 1 : 0;
}

__global__ void assign_kernel(Table table, const int64_t* neighbors, int64_t count, int64_t base,
                              const int64_t* flags, const int64_t* ranks, int64_t* nodes) {
  const int64_t j = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (j >= count || flags[j] == 0) return;
  const int64_t local = base + ranks[j];
  nodes[local] = neighbors[j];
  table.values[table_find(table, static_cast<unsigned long long>(neighbors[j]))] =
      static_cast<unsigned long long>(local);
}

__global__ void cols_kernel(Table table, const int64_t* neighbors, int64_t count, int64_t* cols) {
  const int64_t j = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (j < count) {
    cols[j] = static_cast<int64_t>(
        table.values[table_find(table, static_cast<unsigned long long>(neighbors[j]))]);
  }
}

// --- driver -----------------------------------------------------------------------------------
int64_t next_power_of_two(int64_t value) {
  int64_t power = 1;
  while (power < value) power <<= 1;
  return power;
}

class Backend final : public CudaSamplerBackend {
 public:
  explicit Backend(int device)
      : device_(device),
        nodes_(Location::kCuda, device),
        rows_(Location::kCuda, device),
        cols_(Location::kCuda, device),
        edge_ids_(Location::kCuda, device),
        neighbors_(Location::kCuda, device),
        counts_(Location::kCuda, device),
        offsets_(Location::kCuda, device),
        flags_(Location::kCuda, device),
        ranks_(Location::kCuda, device),
        scan_temp_(Location::kCuda, device),
        table_(Location::kCuda, device),
        seeds_staging_(Location::kPinnedHost, device),
        readback_(Location::kPinnedHost, device) {
    cuda::DeviceGuard guard(device_);
    VOLLEY_CUDA_CHECK(cudaEventCreateWithFlags(&seeds_copied_, cudaEventDisableTiming));
  }

  ~Backend() override {
    if (seeds_copied_ != nullptr) {
      cudaEventSynchronize(seeds_copied_);
      cudaEventDestroy(seeds_copied_);
    }
  }

  void sample(const DeviceGraphView& graph, std::span<const int64_t> seeds,
              const BackendOptions& options, uint64_t batch_index, void* stream_handle,
              BackendResult& out) override {
    std::lock_guard lock(mutex_);
    cuda::DeviceGuard guard(device_);
    stream_ = static_cast<cudaStream_t>(stream_handle);
    if (graph.indices_are_32bit) {
      run<int32_t>(graph, seeds, options, batch_index, out);
    } else {
      run<int64_t>(graph, seeds, options, batch_index, out);
    }
  }

 private:
  template <typename T>
  static T* as(cuda::GrowableBuffer& buffer) {
    return reinterpret_cast<T*>(buffer.data());
  }

  // Exclusive prefix sum of in[0, count) into out[0, count) (int64), on the stream.
  void exclusive_scan(const int64_t* in, int64_t* out, int64_t count) {
    size_t temp_bytes = 0;
    VOLLEY_CUDA_CHECK(cub::DeviceScan::ExclusiveSum(nullptr, temp_bytes, in, out, count, stream_));
    void* temp = scan_temp_.reserve(temp_bytes, stream_);
    VOLLEY_CUDA_CHECK(cub::DeviceScan::ExclusiveSum(temp, temp_bytes, in, out, count, stream_));
  }

  // Waits for the stream and returns device value *source.
  int64_t read_back(const int64_t* source) {
    VOLLEY_CUDA_CHECK(cudaMemcpyAsync(readback_.data(), source, sizeof(int64_t),
                                      cudaMemcpyDeviceToHost, stream_));
    VOLLEY_CUDA_CHECK(cudaStreamSynchronize(stream_));
    return *reinterpret_cast<const int64_t*>(readback_.data());
  }

  Table table() {
    Table table;
    table.keys = reinterpret_cast<unsigned long long*>(table_.data());
    table.values = table.keys + table_capacity_;
    table.mask = static_cast<unsigned long long>(table_capacity_ - 1);
    return table;
  }

  // A cleared table of `capacity` entries holding nodes[0, node_count) → local id.
  void reset_table(int64_t capacity, int64_t node_count) {
    table_capacity_ = capacity;
    const size_t bytes = static_cast<size_t>(capacity) * 2 * sizeof(unsigned long long);
    table_.reserve(bytes, stream_);
    VOLLEY_CUDA_CHECK(cudaMemsetAsync(table_.data(), 0xff, bytes, stream_));
    if (node_count > 0) {
      insert_nodes_kernel<<<grid_for(node_count), kBlock, 0, stream_>>>(
          table(), as<int64_t>(nodes_), node_count);
      VOLLEY_CUDA_CHECK_LAUNCH("insert_nodes_kernel");
    }
  }

  template <typename Index>
  void run(const DeviceGraphView& graph, std::span<const int64_t> seeds,
           const BackendOptions& options, uint64_t batch_index, BackendResult& out) {
    GraphRows<Index> rows_of;
    rows_of.indptr = graph.indptr;
    rows_of.indices = static_cast<const Index*>(graph.indices);
    rows_of.edge_ids = graph.edge_ids;
    rows_of.weights = graph.weights;

    const int64_t num_seeds = static_cast<int64_t>(seeds.size());
    const size_t seed_bytes = seeds.size() * sizeof(int64_t);
    // The staging buffer may still feed the previous call's upload: wait for that copy only.
    VOLLEY_CUDA_CHECK(cudaEventSynchronize(seeds_copied_));
    std::copy(seeds.begin(), seeds.end(),
              reinterpret_cast<int64_t*>(seeds_staging_.reserve(seed_bytes, stream_)));
    readback_.reserve(sizeof(int64_t), stream_);
    nodes_.reserve(seed_bytes * 4, stream_);  // fresh if the caller holds the last batch
    rows_.reserve(seed_bytes * 8, stream_);
    cols_.reserve(seed_bytes * 8, stream_);
    edge_ids_.reserve(seed_bytes * 8, stream_);
    VOLLEY_CUDA_CHECK(cudaMemcpyAsync(nodes_.data(), seeds_staging_.data(), seed_bytes,
                                      cudaMemcpyHostToDevice, stream_));
    VOLLEY_CUDA_CHECK(cudaEventRecord(seeds_copied_, stream_));
    // Start with the table size the last batch ended with: no rehash in steady state.
    reset_table(std::max(next_power_of_two(4 * num_seeds), std::max<int64_t>(last_capacity_, 1024)),
                num_seeds);

    out.nodes_per_hop.assign(1, num_seeds);
    out.edges_per_hop.clear();
    int64_t node_count = num_seeds, edge_count = 0, frontier_begin = 0;
    for (size_t hop = 0; hop < options.fanouts.size(); ++hop) {
      const int64_t fanout = options.fanouts[hop];
      const int64_t frontier = node_count - frontier_begin;
      int64_t hop_edges = 0, hop_nodes = 0;
      if (fanout != 0 && frontier > 0) {
        const PickRule rule{fanout, options.replace, options.seed, static_cast<int>(hop),
                            batch_index};
        const int64_t* frontier_nodes = as<int64_t>(nodes_) + frontier_begin;
        // 1. count and offsets
        const size_t frontier_bytes = static_cast<size_t>(frontier + 1) * sizeof(int64_t);
        counts_.reserve(frontier_bytes, stream_);
        offsets_.reserve(frontier_bytes, stream_);
        count_kernel<Index><<<grid_for(frontier), kBlock, 0, stream_>>>(
            rows_of, frontier_nodes, frontier, rule, as<int64_t>(counts_));
        VOLLEY_CUDA_CHECK_LAUNCH("count_kernel");
        exclusive_scan(as<int64_t>(counts_), as<int64_t>(offsets_), frontier + 1);
        hop_edges = read_back(as<int64_t>(offsets_) + frontier);
      }
      if (hop_edges > 0) {
        const PickRule rule{fanout, options.replace, options.seed, static_cast<int>(hop),
                            batch_index};
        // 2. pick
        const size_t kept = static_cast<size_t>(edge_count) * sizeof(int64_t);
        const size_t needed = static_cast<size_t>(edge_count + hop_edges) * sizeof(int64_t);
        rows_.reserve(needed, stream_, kept);
        cols_.reserve(needed, stream_, kept);
        edge_ids_.reserve(needed, stream_, kept);
        neighbors_.reserve(static_cast<size_t>(hop_edges) * sizeof(int64_t), stream_);
        pick_kernel<Index><<<grid_for(frontier), kBlock, 0, stream_>>>(
            rows_of, as<int64_t>(nodes_) + frontier_begin, frontier, frontier_begin, rule,
            as<int64_t>(offsets_), as<int64_t>(rows_) + edge_count, as<int64_t>(cols_) + edge_count,
            as<int64_t>(edge_ids_) + edge_count, as<int64_t>(neighbors_));
        VOLLEY_CUDA_CHECK_LAUNCH("pick_kernel");
        // 3. relabel
        const int64_t bound = node_count + hop_edges;  // most nodes the batch can hold now
        if (2 * bound > table_capacity_) reset_table(next_power_of_two(2 * bound), node_count);
        const unsigned grid = grid_for(hop_edges);
        insert_neighbors_kernel<<<grid, kBlock, 0, stream_>>>(table(), as<int64_t>(neighbors_),
                                                              hop_edges, node_count);
        VOLLEY_CUDA_CHECK_LAUNCH("insert_neighbors_kernel");
        const size_t flag_bytes = static_cast<size_t>(hop_edges + 1) * sizeof(int64_t);
        flags_.reserve(flag_bytes, stream_);
        ranks_.reserve(flag_bytes, stream_);
        flag_first_kernel<<<grid, kBlock, 0, stream_>>>(table(), as<int64_t>(neighbors_), hop_edges,
                                                        node_count, as<int64_t>(flags_));
        VOLLEY_CUDA_CHECK_LAUNCH("flag_first_kernel");
        exclusive_scan(as<int64_t>(flags_), as<int64_t>(ranks_), hop_edges + 1);
        hop_nodes = read_back(as<int64_t>(ranks_) + hop_edges);
        if (node_count + hop_nodes >= (int64_t{1} << 31)) {
          throw_batch_too_large(node_count + hop_nodes);
        }
        nodes_.reserve(static_cast<size_t>(node_count + hop_nodes) * sizeof(int64_t), stream_,
                       static_cast<size_t>(node_count) * sizeof(int64_t));
        assign_kernel<<<grid, kBlock, 0, stream_>>>(table(), as<int64_t>(neighbors_), hop_edges,
                                                    node_count, as<int64_t>(flags_),
                                                    as<int64_t>(ranks_), as<int64_t>(nodes_));
        VOLLEY_CUDA_CHECK_LAUNCH("assign_kernel");
        cols_kernel<<<grid, kBlock, 0, stream_>>>(table(), as<int64_t>(neighbors_), hop_edges,
                                                  as<int64_t>(cols_) + edge_count);
        VOLLEY_CUDA_CHECK_LAUNCH("cols_kernel");
      }
      out.edges_per_hop.push_back(hop_edges);
      out.nodes_per_hop.push_back(hop_nodes);
      frontier_begin = node_count;
      node_count += hop_nodes;
      edge_count += hop_edges;
    }
    last_capacity_ = table_capacity_;

    out.nodes = nodes_.buffer();
    out.rows = rows_.buffer();
    out.cols = cols_.buffer();
    out.edge_ids = edge_ids_.buffer();
    out.num_nodes = node_count;
    out.num_edges = edge_count;
  }

  std::mutex mutex_;
  int device_;
  cudaStream_t stream_ = nullptr;
  cudaEvent_t seeds_copied_ = nullptr;
  int64_t table_capacity_ = 0;
  int64_t last_capacity_ = 0;
  cuda::GrowableBuffer nodes_, rows_, cols_, edge_ids_;  // the outputs
  cuda::GrowableBuffer neighbors_, counts_, offsets_, flags_, ranks_, scan_temp_, table_;
  cuda::GrowableBuffer seeds_staging_, readback_;  // pinned host
};

}  // namespace

std::unique_ptr<CudaSamplerBackend> make_cuda_sampler_backend(int device) {
  return std::make_unique<Backend>(device);
}

}  // namespace volley::sampling_internal
