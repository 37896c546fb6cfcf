// Whole-graph aggregation (aggregate.h): on the host, rows split over the pool, each summed in
// CSR order with the source rows of the next neighbors prefetched, an AVX2 clone of the row
// update; x on a CUDA device goes to the GPU kernel (cuda/aggregate_driver.h), which sums in the
// same order with the same operations.
#include "volley/feature/aggregate.h"

#include <cmath>
#include <cstring>
#include <vector>

#include "volley/core/cuda_device.h"
#include "volley/core/error.h"
#include "volley/core/internal/cpu_clones.h"
#include "volley/core/parallel.h"
#include "volley/feature/internal/cuda_aggregate_kernel.h"

namespace volley {
namespace {

// out[k] += scale * row[k], 8 floats wide where the CPU allows.
VOLLEY_CPU_CLONES void add_scaled(int64_t dim, float* __restrict out, const float* __restrict row,
                                  float scale) {
  for (int64_t k = 0; k < dim; ++k) out[k] += scale * row[k];
}

// Neighbors whose source rows are requested ahead of their use.
constexpr int64_t kPrefetchAhead = 8;

// The weight of CSR position k as float (1 without weights).
class EdgeWeights {
 public:
  EdgeWeights(const Csr& graph, bool weighted) {
    if (!weighted) return;
    VOLLEY_REQUIRE(graph.has_weights(), ValueError,
                   "aggregate: weighted=true, but the graph has no edge weights");
    const Array& weights = *graph.weights();
    VOLLEY_REQUIRE(weights.dtype() == DType::kFloat32 || weights.dtype() == DType::kFloat64,
                   ValueError, "aggregate: edge weights must be float32 or float64, got {}",
                   weights.describe());
    f32_ = weights.dtype() == DType::kFloat32 ? weights.data<float>() : nullptr;
    f64_ = weights.dtype() == DType::kFloat64 ? weights.data<double>() : nullptr;
  }
  float operator()(int64_t k) const {
    return f32_ ? f32_[k] : f64_ ? static_cast<float>(f64_[k]) : 1.0f;
  }

 private:
  const float* f32_ = nullptr;
  const double* f64_ = nullptr;
};

// A graph row's d(v) as the kernels count it: the self loop's 1 first, then each edge's weight.
float gcn_degree(const Csr& graph, int64_t v, const EdgeWeights& weight, bool self_loops) {
  float degree = self_loops ? 1.0f : 0.0f;
  for (int64_t k = graph.begin(v); k < graph.end(v); ++k) degree += weight(k);
  return degree;
}

}  // namespace

Aggregation aggregation_from_name(std::string_view name) {
  if (name == "sum") return Aggregation::kSum;
  if (name == "mean") return Aggregation::kMean;
  if (name == "gcn") return Aggregation::kGcn;
  throw ValueError(fmt::format("aggregation must be 'sum', 'mean' or 'gcn', got '{}'", name));
}

std::string_view aggregation_name(Aggregation op) {
  return op == Aggregation::kSum ? "sum" : op == Aggregation::kMean ? "mean" : "gcn";
}

namespace {

// The GPU kernel (cuda/aggregate_driver.h) over x on CUDA device `device`: the CSR's neighbor ids
// checked here (a kernel cannot throw), the weights as float32, out a new device array.
Array aggregate_on_device(const Csr& graph, const Array& x, const AggregateOptions& options) {
  const int64_t rows = graph.num_nodes(), sources = x.dim(0), dim = x.dim(1);
  const bool gcn = options.op == Aggregation::kGcn;
  VOLLEY_REQUIRE(!(gcn && options.self_loops) || sources >= rows, ValueError,
                 "aggregate: gcn's self loops need a row of x per node ({}), x has {}", rows,
                 sources);
  for (int64_t k = 0; k < graph.num_edges(); ++k) {
    const int64_t u = graph.neighbor(k);
    VOLLEY_REQUIRE(u >= 0 && u < sources, IndexError,
                   "aggregate: CSR position {} holds neighbor {}, outside x's {} rows", k, u,
                   sources);
  }
  const EdgeWeights weight(graph, options.weighted);
  std::vector<float> weights;
  if (options.weighted) {
    weights.resize(static_cast<size_t>(graph.num_edges()));
    for (int64_t k = 0; k < graph.num_edges(); ++k) weights[static_cast<size_t>(k)] = weight(k);
  }
  const int device = x.buffer().device();
  Array out(
      Buffer::allocate_device(static_cast<size_t>(std::max<int64_t>(rows * dim, 1)) * 4, device),
      DType::kFloat32, {rows, dim});
  const feature_internal::AggregatePlan plan{
      .indptr = graph.indptr().data<int64_t>(),
      .indices = graph.indices().raw_data(),
      .indices_32bit = graph.indices().dtype() == DType::kInt32,
      .weights = options.weighted ? weights.data() : nullptr,
      .rows = rows,
      .sources = sources,
      .edges = graph.num_edges(),
      .dim = dim,
      .op = static_cast<int>(options.op),
      .self_loops = gcn && options.self_loops,
      .x = x.data<float>(),
      .out = out.data<float>(),
      .device = device};
#if defined(VOLLEY_WITH_GPU_HOST)
  if (cuda_emulated()) {
    feature_internal::launch_host_aggregate(plan);
    return out;
  }
#endif
  feature_internal::launch_device_aggregate(plan, nullptr);
  return out;
}

}  // namespace

Array aggregate(const Csr& graph, const Array& x, const AggregateOptions& options) {
  if (x.buffer().location() == Location::kCuda) {
    VOLLEY_REQUIRE(x.dtype() == DType::kFloat32 && x.ndim() == 2, ValueError,
                   "aggregate: x must be float32 [num_nodes, dim], got {}", x.describe());
    return aggregate_on_device(graph, x, options);
  }
  const int64_t dim = x.ndim() == 2 ? x.dim(1) : 0;
  Array out = Array::empty(DType::kFloat32, {graph.num_nodes(), dim});
  aggregate_into(graph, x, options, out.data<float>());
  return out;
}

void aggregate_into(const Csr& graph, const Array& x, const AggregateOptions& options, float* out) {
  aggregate_into(graph, x, SourceRows{}, options, out);
}

void aggregate_into(const Csr& graph, const Array& x, const SourceRows& sources,
                    const AggregateOptions& options, float* out) {
  VOLLEY_REQUIRE(x.dtype() == DType::kFloat32 && x.ndim() == 2, ValueError,
                 "aggregate: x must be float32 [num_nodes, dim], got {}", x.describe());
  VOLLEY_REQUIRE(x.buffer().host_accessible(), ValueError, "aggregate: x must be in host memory");
  const int64_t rows = graph.num_nodes(), count = x.dim(0), dim = x.dim(1);
  const bool gcn = options.op == Aggregation::kGcn;
  const bool self_loops = gcn && options.self_loops;
  const bool by_position = !sources.positions.empty();
  VOLLEY_REQUIRE(sources.positions.empty() ||
                     static_cast<int64_t>(sources.positions.size()) == graph.num_edges(),
                 ValueError, "aggregate: {} source positions for {} edges",
                 sources.positions.size(), graph.num_edges());
  VOLLEY_REQUIRE(!(self_loops || !sources.positions.empty()) || count >= rows, ValueError,
                 "aggregate: gcn's self loops need a row of x per node ({}), x has {}", rows,
                 count);
  VOLLEY_REQUIRE(!gcn || sources.positions.empty() ||
                     static_cast<int64_t>(sources.degrees.size()) >= count - rows,
                 ValueError, "aggregate: {} degrees for x's {} rows beyond the graph's {}",
                 sources.degrees.size(), count - rows, rows);
  const EdgeWeights weight(graph, options.weighted);
  const float* data = x.data<float>();
  auto source = [&](int64_t k) { return by_position ? sources.positions[k] : graph.neighbor(k); };
  // gcn: 1 / sqrt(d(v)) for every node that is a row or a source.
  std::vector<float> inverse_root;
  if (gcn) {
    inverse_root.assign(static_cast<size_t>(std::max(rows, count)), self_loops ? 1.0f : 0.0f);
    auto root = [](float degree) { return degree > 0 ? 1.0f / std::sqrt(degree) : 0.0f; };
    parallel_for(0, rows, 4096, [&](int64_t begin, int64_t end) {
      for (int64_t v = begin; v < end; ++v) {
        inverse_root[v] = root(gcn_degree(graph, v, weight, self_loops));
      }
    });
    if (!sources.positions.empty()) {
      for (int64_t r = rows; r < count; ++r) inverse_root[r] = root(sources.degrees[r - rows]);
    }
  }
  parallel_for(0, rows, 256, [&](int64_t begin, int64_t end) {
    for (int64_t v = begin; v < end; ++v) {
      float* target = out + v * dim;
      std::memset(target, 0, static_cast<size_t>(dim) * sizeof(float));
      const int64_t first = graph.begin(v), last = graph.end(v);
      for (int64_t k = first; k < last; ++k) {
        if (k + kPrefetchAhead < last) {
          const int64_t ahead = source(k + kPrefetchAhead);
          if (ahead >= 0 && ahead < count) {
            const float* row = data + ahead * dim;
            for (int64_t j = 0; j < dim; j += 16) __builtin_prefetch(row + j);
            if (gcn) __builtin_prefetch(inverse_root.data() + ahead);
          }
        }
        const int64_t u = source(k);
        VOLLEY_REQUIRE(u >= 0 && u < count, IndexError,
                       "aggregate: row {} has neighbor {}, outside x's {} rows", v, u, count);
        const float scale = gcn ? weight(k) * inverse_root[u] * inverse_root[v] : weight(k);
        add_scaled(dim, target, data + u * dim, scale);
      }
      if (options.op == Aggregation::kMean && last > first) {
        const float inverse = 1.0f / static_cast<float>(last - first);
        for (int64_t j = 0; j < dim; ++j) target[j] *= inverse;
      }
      if (self_loops) {
        add_scaled(dim, target, data + v * dim, inverse_root[v] * inverse_root[v]);
      }
    }
  });
}

}  // namespace volley
