// The simulated epoch (who reads which node) and the hotness partitioner built on it.
#include <algorithm>
#include <atomic>
#include <numeric>

#include "volley/core/parallel.h"
#include "volley/core/philox.h"
#include "volley/core/progress.h"
#include "volley/partition/internal/partitioners.h"
#include "volley/sampling/neighbor_sampler.h"

namespace volley::internal {

void simulate_epoch(
    const Dataset& dataset, const Array& assignment, const PartitionOptions& options,
    const std::function<void(int64_t part, std::span<const uint32_t> reads)>& on_part) {
  const Csr& graph = dataset.graph;
  const int64_t n = graph.num_nodes();
  const int64_t k = options.num_parts;
  const int32_t* part_of = assignment.data<int32_t>();
  // Each partition's seeds: the training nodes it owns, in id order before shuffling.
  std::vector<std::vector<int64_t>> seeds(static_cast<size_t>(k));
  int64_t num_train = 0;
  if (dataset.train_idx) {
    std::vector<int64_t> train = dataset.train_idx->to_vector<int64_t>();
    std::sort(train.begin(), train.end());
    train.erase(std::unique(train.begin(), train.end()), train.end());
    for (int64_t t : train) seeds[static_cast<size_t>(part_of[t])].push_back(t);
    num_train = static_cast<int64_t>(train.size());
  }
  NeighborSamplerOptions sampler{.fanouts = options.fanouts, .seed = options.seed};
  std::vector<uint32_t> reads(static_cast<size_t>(n));
  ProgressBar bar("simulate", num_train);
  for (int64_t p = 0; p < k; ++p) {
    std::fill(reads.begin(), reads.end(), 0u);
    std::vector<int64_t>& mine = seeds[static_cast<size_t>(p)];
    PhiloxStream rng(options.seed, {{0x686f7421u /* "hot!" */, static_cast<uint32_t>(p), 0, 0}});
    for (int64_t i = static_cast<int64_t>(mine.size()) - 1; i > 0; --i) {
      const auto j = static_cast<int64_t>(rng.bounded64(static_cast<uint64_t>(i) + 1));
      std::swap(mine[static_cast<size_t>(i)], mine[static_cast<size_t>(j)]);
    }
    const int64_t num_seeds = static_cast<int64_t>(mine.size());
    const int64_t num_batches = (num_seeds + options.batch_size - 1) / options.batch_size;
    parallel_for(0, num_batches, 1, [&](int64_t first, int64_t last) {
      thread_local SamplerScratch scratch;
      for (int64_t b = first; b < last; ++b) {
        const int64_t begin = b * options.batch_size;
        const int64_t count = std::min(options.batch_size, num_seeds - begin);
        const std::span<const int64_t> batch_seeds(mine.data() + begin, static_cast<size_t>(count));
        const uint64_t batch_index = (static_cast<uint64_t>(p) << 32) | static_cast<uint64_t>(b);
        const SampledSubgraph batch =
            sample_neighbors(graph, batch_seeds, sampler, batch_index, &scratch);
        for (int64_t node : batch.nodes.span<int64_t>()) {
          std::atomic_ref<uint32_t>(reads[static_cast<size_t>(node)])
              .fetch_add(1, std::memory_order_relaxed);
        }
        bar.advance(count);
      }
    });
    on_part(p, reads);
  }
}

AccessFigures measure_accesses(const Dataset& dataset, const Array& assignment,
                               const PartitionOptions& options, int64_t cache_rows,
                               std::vector<uint32_t>* reads_per_part) {
  const int64_t n = dataset.graph.num_nodes();
  const int32_t* part_of = assignment.data<int32_t>();
  AccessFigures figures;
  figures.cached.resize(static_cast<size_t>(options.num_parts));
  if (reads_per_part != nullptr) {
    reads_per_part->assign(static_cast<size_t>(options.num_parts) * static_cast<size_t>(n), 0u);
  }
  simulate_epoch(dataset, assignment, options, [&](int64_t p, std::span<const uint32_t> reads) {
    int64_t total = 0;
    int64_t remote = 0;
    std::vector<std::pair<uint32_t, int64_t>> remote_nodes;  // (reads, node) of read remote nodes
    for (int64_t v = 0; v < n; ++v) {
      const uint32_t r = reads[static_cast<size_t>(v)];
      if (r == 0) continue;
      total += r;
      if (part_of[v] != p) {
        remote += r;
        if (cache_rows > 0) remote_nodes.emplace_back(r, v);
      }
    }
    int64_t cache_hits = 0;
    if (cache_rows > 0 && !remote_nodes.empty()) {
      // Hottest first; ties by id, so the cache is deterministic.
      auto hotter = [](const auto& a, const auto& b) {
        return a.first != b.first ? a.first > b.first : a.second < b.second;
      };
      const auto keep = static_cast<size_t>(
          std::min<int64_t>(cache_rows, static_cast<int64_t>(remote_nodes.size())));
      std::partial_sort(remote_nodes.begin(), remote_nodes.begin() + static_cast<ptrdiff_t>(keep),
                        remote_nodes.end(), hotter);
      auto& cached = figures.cached[static_cast<size_t>(p)];
      cached.reserve(keep);
      for (size_t i = 0; i < keep; ++i) {
        cached.push_back(remote_nodes[i].second);
        cache_hits += remote_nodes[i].first;
      }
    }
    figures.reads += total;
    figures.remote_reads += remote;
    figures.remote_reads_after_cache += remote - cache_hits;
    if (reads_per_part != nullptr) {
      std::copy(reads.begin(), reads.end(),
                reads_per_part->begin() + static_cast<ptrdiff_t>(p * n));
    }
  });
  return figures;
}

Array refine_by_hotness(const Dataset& dataset, const Array& initial,
                        const PartitionOptions& options, const std::vector<uint8_t>& train,
                        const std::vector<uint32_t>& reads_per_part) {
  const Csr& graph = dataset.graph;
  const int64_t n = graph.num_nodes();
  const int64_t k = options.num_parts;
  auto reads = [&](int64_t p, int64_t v) { return reads_per_part[static_cast<size_t>(p * n + v)]; };
  std::vector<uint32_t> hottest(static_cast<size_t>(n), 0);
  for (int64_t p = 0; p < k; ++p) {
    for (int64_t v = 0; v < n; ++v) {
      hottest[static_cast<size_t>(v)] = std::max(hottest[static_cast<size_t>(v)], reads(p, v));
    }
  }
  // Hottest nodes move first; nodes nobody reads stay where they are, and so do training nodes:
  // they are the seeds of the simulated epoch, so keeping them keeps every partition's reads
  // exactly as simulated, and each move then strictly lowers the remote reads of the epoch.
  std::vector<int64_t> order;
  for (int64_t v = 0; v < n; ++v) {
    if (hottest[static_cast<size_t>(v)] > 0 && train[static_cast<size_t>(v)] == 0) {
      order.push_back(v);
    }
  }
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
    return hottest[static_cast<size_t>(a)] > hottest[static_cast<size_t>(b)];
  });
  std::vector<uint32_t>().swap(hottest);

  // Moves from a balanced start: a node moves only into a partition with room, so no cap that
  // held at the start is ever broken (the source partition only gets lighter).
  const int64_t num_train = std::accumulate(train.begin(), train.end(), int64_t{0});
  BalancedPlacer placer(
      balance_caps({n, graph.num_edges(), num_train}, k, options.balance_tolerance), k);
  Array assignment = initial.clone();
  int32_t* part_of = assignment.data<int32_t>();
  for (int64_t v = 0; v < n; ++v) {
    placer.place(part_of[v], graph.degree(v), train[static_cast<size_t>(v)] != 0);
  }
  constexpr int kPasses = 2;
  for (int pass = 0; pass < kPasses; ++pass) {
    int64_t moved = 0;
    for (int64_t v : order) {
      const int64_t degree = graph.degree(v);
      const bool is_train = train[static_cast<size_t>(v)] != 0;
      const int64_t home = part_of[v];
      int64_t best = home;
      uint32_t best_reads = reads(home, v);
      for (int64_t p = 0; p < k; ++p) {
        const uint32_t r = reads(p, v);
        if (r > best_reads && placer.fits(p, degree, is_train)) {
          best = p;
          best_reads = r;
        }
      }
      if (best != home) {
        placer.remove(home, degree, is_train);
        placer.place(best, degree, is_train);
        part_of[v] = static_cast<int32_t>(best);
        ++moved;
      }
    }
    if (moved == 0) break;
  }
  return assignment;
}

}  // namespace volley::internal
