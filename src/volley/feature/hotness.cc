#include "volley/feature/hotness.h"

#include <algorithm>
#include <atomic>
#include <numeric>
#include <vector>

#include "volley/core/parallel.h"

namespace volley {

Array order_by_counts(const Array& counts) {
  VOLLEY_REQUIRE(
      counts.ndim() == 1 && (counts.dtype() == DType::kInt64 || counts.dtype() == DType::kInt32),
      ValueError, "counts must be a 1-d int32 or int64 array, got {}", counts.describe());
  const Array values = counts.dtype() == DType::kInt64 ? counts : counts.cast(DType::kInt64);
  const int64_t* count = values.data<int64_t>();
  const int64_t n = values.numel();
  Array order = Array::empty(DType::kInt64, {n});
  int64_t* ids = order.data<int64_t>();
  std::iota(ids, ids + n, int64_t{0});
  std::stable_sort(ids, ids + n, [&](int64_t a, int64_t b) { return count[a] > count[b]; });
  return order;
}

Array hotness_by_degree(const Csr& graph) {
  const int64_t n = graph.num_nodes();
  Array degrees = Array::zeros(DType::kInt64, {n});
  int64_t* degree = degrees.data<int64_t>();
  if (graph.orientation() == Orientation::kIn) {
    for (int64_t v = 0; v < n; ++v) degree[v] = graph.degree(v);
  } else {
    for (int64_t k = 0; k < graph.num_edges(); ++k) ++degree[graph.neighbor(k)];
  }
  return order_by_counts(degrees);
}

Array hotness_by_sampling(const Csr& graph, std::span<const int64_t> seeds,
                          const NeighborSamplerOptions& options, int64_t batch_size,
                          int64_t max_batches) {
  VOLLEY_REQUIRE(batch_size >= 1, ValueError, "batch_size must be >= 1, got {}", batch_size);
  VOLLEY_REQUIRE(max_batches >= 0, ValueError, "max_batches must be >= 0, got {}", max_batches);
  validate_sampler_options(graph, options);
  const int64_t n = graph.num_nodes();
  const auto total = static_cast<int64_t>(seeds.size());
  int64_t batches = (total + batch_size - 1) / batch_size;
  if (max_batches > 0) batches = std::min(batches, max_batches);
  std::vector<std::atomic<int64_t>> counts(static_cast<size_t>(n));
  parallel_for(0, batches, 1, [&](int64_t begin, int64_t end) {
    SamplerScratch scratch;
    for (int64_t b = begin; b < end; ++b) {
      const int64_t first = b * batch_size;
      const auto part = seeds.subspan(static_cast<size_t>(first),
                                      static_cast<size_t>(std::min(batch_size, total - first)));
      const SampledSubgraph sampled =
          sample_neighbors(graph, part, options, static_cast<uint64_t>(b), &scratch);
      for (const int64_t node : sampled.nodes.span<int64_t>()) {
        counts[static_cast<size_t>(node)].fetch_add(1, std::memory_order_relaxed);
      }
    }
  });
  Array values = Array::empty(DType::kInt64, {n});
  int64_t* value = values.data<int64_t>();
  for (int64_t v = 0; v < n; ++v) value[v] = counts[static_cast<size_t>(v)].load();
  return order_by_counts(values);
}

}  // namespace volley
