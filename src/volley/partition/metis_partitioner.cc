// k-way METIS on the symmetrised type-merged graph: one node constraint per node type, and for a
// homogeneous graph (the one-type case) in-edge and training-node balance too.
//
// Memory: the symmetrised adjacency is built once as METIS's idx_t (32-bit on Debian) arrays —
// 4 bytes per directed adjacency entry (at most 2E) plus 4 per node and 4 per node and
// constraint — and the source's mapped pages are dropped before METIS runs; METIS then holds
// its coarsened copies (a few times the input at most).
#ifdef VOLLEY_WITH_METIS
#include <metis.h>
#endif

#include <algorithm>
#include <limits>

#include "volley/core/parallel.h"
#include "volley/partition/internal/partitioners.h"

namespace volley {

bool metis_available() {
#ifdef VOLLEY_WITH_METIS
  return true;
#else
  return false;
#endif
}

}  // namespace volley

#ifdef VOLLEY_WITH_METIS
namespace volley::internal {
namespace {

// Calls its argument visit(v, u) once per directed edge of a graph.
using EdgeVisitor = std::function<void(const std::function<void(int64_t, int64_t)>& visit)>;

const char* metis_status_text(int status) {
  switch (status) {
    case METIS_ERROR_INPUT:
      return "METIS_ERROR_INPUT (invalid input)";
    case METIS_ERROR_MEMORY:
      return "METIS_ERROR_MEMORY (out of memory)";
    default:
      return "METIS_ERROR";
  }
}

// The symmetrised adjacency METIS takes (CSR, no self loops, each row sorted and deduplicated):
// count, fill, then sort, deduplicate and compact each row.
struct Adjacency {
  std::vector<idx_t> xadj;
  std::vector<idx_t> adjncy;
};

// `for_each_edge(visit)` calls visit(v, u) once per directed edge (ids in [0, n)), twice in all.
Adjacency symmetrised_adjacency(int64_t n, const EdgeVisitor& for_each_edge) {
  std::vector<idx_t> xadj(static_cast<size_t>(n) + 1, 0);
  for_each_edge([&](int64_t v, int64_t u) {
    if (u == v) return;
    ++xadj[static_cast<size_t>(v) + 1];
    ++xadj[static_cast<size_t>(u) + 1];
  });
  for (int64_t v = 0; v < n; ++v) xadj[static_cast<size_t>(v) + 1] += xadj[static_cast<size_t>(v)];
  std::vector<idx_t> adjncy(static_cast<size_t>(xadj[static_cast<size_t>(n)]));
  {
    std::vector<idx_t> next(xadj.begin(), xadj.end() - 1);
    for_each_edge([&](int64_t v, int64_t u) {
      if (u == v) return;
      adjncy[static_cast<size_t>(next[static_cast<size_t>(v)]++)] = static_cast<idx_t>(u);
      adjncy[static_cast<size_t>(next[static_cast<size_t>(u)]++)] = static_cast<idx_t>(v);
    });
  }
  std::vector<idx_t> unique_degree(static_cast<size_t>(n));
  parallel_for(0, n, 4096, [&](int64_t first, int64_t last) {
    for (int64_t v = first; v < last; ++v) {
      idx_t* begin = adjncy.data() + xadj[static_cast<size_t>(v)];
      idx_t* end = adjncy.data() + xadj[static_cast<size_t>(v) + 1];
      std::sort(begin, end);
      unique_degree[static_cast<size_t>(v)] = static_cast<idx_t>(std::unique(begin, end) - begin);
    }
  });
  idx_t written = 0;
  for (int64_t v = 0; v < n; ++v) {
    const idx_t start = xadj[static_cast<size_t>(v)];
    const idx_t count = unique_degree[static_cast<size_t>(v)];
    xadj[static_cast<size_t>(v)] = written;
    std::copy(adjncy.begin() + start, adjncy.begin() + start + count, adjncy.begin() + written);
    written += count;
  }
  xadj[static_cast<size_t>(n)] = written;
  adjncy.resize(static_cast<size_t>(written));  // no shrink: that would copy it
  std::vector<idx_t>().swap(unique_degree);

  return {std::move(xadj), std::move(adjncy)};
}

// k-way METIS (options.num_parts, .seed, .balance_tolerance as every constraint's ubvec) on the
// symmetrised graph of `n` nodes whose `e` directed edges `for_each_edge` visits (twice; self
// loops and duplicates dropped), with `num_constraints` weights per node (`weights`, row-major
// [n, num_constraints]). `after_adjacency` runs once the adjacency is built (before METIS: to
// drop mapped pages). int32 [n] assignment.
Array metis_kway(int64_t n, int64_t e, const EdgeVisitor& for_each_edge,
                 std::vector<int64_t> weights, int64_t num_constraints,
                 const PartitionOptions& options, const std::function<void()>& after_adjacency) {
  Array assignment = Array::zeros(DType::kInt32, {n});
  if (n == 0 || options.num_parts == 1) return assignment;
  constexpr int64_t kIdxMax = std::numeric_limits<idx_t>::max();
  VOLLEY_REQUIRE(n < kIdxMax && 2 * e < kIdxMax, ValueError,
                 "METIS: a graph of {} nodes and {} edges (up to {} adjacency entries when "
                 "symmetrised) exceeds this METIS build's {}-bit idx_t; use --method stream",
                 n, e, 2 * e, IDXTYPEWIDTH);
  Adjacency adjacency = symmetrised_adjacency(n, for_each_edge);
  if (after_adjacency) after_adjacency();
  std::vector<idx_t>& xadj = adjacency.xadj;
  const idx_t written = xadj[static_cast<size_t>(n)];
  std::vector<idx_t> vwgt(weights.begin(), weights.end());
  std::vector<int64_t>().swap(weights);
  auto ncon = static_cast<idx_t>(num_constraints);
  std::vector<real_t> ubvec(static_cast<size_t>(num_constraints),
                            static_cast<real_t>(1.0 + options.balance_tolerance));
  idx_t options_array[METIS_NOPTIONS];
  METIS_SetDefaultOptions(options_array);
  options_array[METIS_OPTION_NUMBERING] = 0;
  options_array[METIS_OPTION_SEED] = static_cast<idx_t>(options.seed & 0x7fffffff);
  auto nvtxs = static_cast<idx_t>(n);
  auto nparts = static_cast<idx_t>(options.num_parts);
  idx_t objective = 0;
  std::vector<idx_t> part(static_cast<size_t>(n));
  const int status = METIS_PartGraphKway(&nvtxs, &ncon, xadj.data(), adjacency.adjncy.data(),
                                         vwgt.data(), nullptr, nullptr, &nparts, nullptr,
                                         ubvec.data(), options_array, &objective, part.data());
  VOLLEY_REQUIRE(status == METIS_OK, RuntimeError,
                 "METIS_PartGraphKway failed on {} nodes, {} adjacency entries, {} parts: {}", n,
                 written, options.num_parts, metis_status_text(status));
  int32_t* part_of = assignment.data<int32_t>();
  for (int64_t v = 0; v < n; ++v) part_of[v] = static_cast<int32_t>(part[static_cast<size_t>(v)]);
  return assignment;
}

// The weights of the type-merged graph's nodes (row-major [n, constraints]): one one-hot node
// constraint per node type; with balance_in_edges also the in-degree (when there are edges) and
// whether the node trains (when any does).
std::vector<int64_t> merged_weights(const TypedGraph& graph, const std::vector<int64_t>& offset,
                                    int64_t* num_constraints) {
  const size_t types = graph.node_types.size();
  bool has_train = false;
  for (const TypedGraph::NodeType& type : graph.node_types) {
    has_train |= std::find(type.train.begin(), type.train.end(), 1) != type.train.end();
  }
  const bool degree = graph.balance_in_edges && graph.total_edges() > 0;
  const bool train = graph.balance_in_edges && has_train;
  const size_t width = types + (degree ? 1 : 0) + (train ? 1 : 0);
  std::vector<int64_t> weights(static_cast<size_t>(offset.back()) * width, 0);
  for (size_t t = 0; t < types; ++t) {
    for (int64_t v = 0; v < graph.node_types[t].num_nodes; ++v) {
      const size_t row = static_cast<size_t>(offset[t] + v) * width;
      weights[row + t] = 1;
      if (train) weights[row + width - 1] = graph.node_types[t].train[static_cast<size_t>(v)];
    }
  }
  if (degree) {
    for (const TypedGraph::EdgeType& type : graph.edge_types) {
      for (int64_t v = 0; v < type.csr->num_nodes(); ++v) {
        weights[static_cast<size_t>(offset[static_cast<size_t>(type.dst)] + v) * width + types] +=
            type.csr->degree(v);
      }
    }
  }
  *num_constraints = static_cast<int64_t>(width);
  return weights;
}

}  // namespace

std::vector<Array> assign_metis(const TypedGraph& graph, const PartitionOptions& options) {
  const size_t types = graph.node_types.size();
  std::vector<int64_t> offset(types + 1, 0);
  for (size_t t = 0; t < types; ++t) offset[t + 1] = offset[t] + graph.node_types[t].num_nodes;
  int64_t num_constraints = 0;
  std::vector<int64_t> weights = merged_weights(graph, offset, &num_constraints);
  const EdgeVisitor for_each_edge = [&](const std::function<void(int64_t, int64_t)>& visit) {
    for (const TypedGraph::EdgeType& type : graph.edge_types) {
      const int64_t src = offset[static_cast<size_t>(type.src)];
      const int64_t dst = offset[static_cast<size_t>(type.dst)];
      const Csr& csr = *type.csr;
      for (int64_t v = 0; v < csr.num_nodes(); ++v) {
        for (int64_t pos = csr.begin(v); pos < csr.end(v); ++pos) {
          visit(dst + v, src + csr.neighbor(pos));
        }
      }
    }
  };
  const Array merged =
      metis_kway(offset.back(), graph.total_edges(), for_each_edge, std::move(weights),
                 num_constraints, options, [&] {
                   for (const TypedGraph::EdgeType& type : graph.edge_types) {
                     release_mapped_pages(type.csr->indices(), 0, type.csr->indices().nbytes());
                   }
                 });
  std::vector<Array> result;
  for (size_t t = 0; t < types; ++t) {
    Array part = Array::empty(DType::kInt32, {graph.node_types[t].num_nodes});
    std::copy_n(merged.data<int32_t>() + offset[t], graph.node_types[t].num_nodes,
                part.data<int32_t>());
    result.push_back(std::move(part));
  }
  return result;
}

}  // namespace volley::internal
#else
namespace volley::internal {

std::vector<Array> assign_metis(const TypedGraph&, const PartitionOptions&) {
  throw RuntimeError(
      "the metis and hotness methods need METIS, but this Volley was built without it "
      "(apt install libmetis-dev and rebuild); use --method stream or random");
}

}  // namespace volley::internal
#endif
