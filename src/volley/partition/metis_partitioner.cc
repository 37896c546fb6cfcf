// k-way METIS on the symmetrised graph, with node, in-edge and training-node balance.
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

}  // namespace

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

Array assign_metis(const Dataset& dataset, const PartitionOptions& options,
                   const std::vector<uint8_t>& train) {
  const Csr& graph = dataset.graph;
  const int64_t n = graph.num_nodes();
  const int64_t e = graph.num_edges();
  // Constraints: nodes always; in-edges when there are edges; training nodes when there are any.
  const bool has_train = std::find(train.begin(), train.end(), 1) != train.end();
  std::vector<int> constraints = {0};
  if (e > 0) constraints.push_back(1);
  if (has_train) constraints.push_back(2);
  std::vector<int64_t> weights(static_cast<size_t>(n) * constraints.size());
  for (int64_t v = 0; v < n; ++v) {
    for (size_t c = 0; c < constraints.size(); ++c) {
      int64_t weight = 1;
      if (constraints[c] == 1) weight = graph.degree(v);
      if (constraints[c] == 2) weight = train[static_cast<size_t>(v)];
      weights[static_cast<size_t>(v) * constraints.size() + c] = weight;
    }
  }
  const EdgeVisitor for_each_edge = [&](const std::function<void(int64_t, int64_t)>& visit) {
    for (int64_t v = 0; v < n; ++v) {
      for (int64_t pos = graph.begin(v); pos < graph.end(v); ++pos) visit(v, graph.neighbor(pos));
    }
  };
  return metis_kway(n, e, for_each_edge, std::move(weights),
                    static_cast<int64_t>(constraints.size()), options,
                    [&] { release_mapped_pages(graph.indices(), 0, graph.indices().nbytes()); });
}

}  // namespace volley::internal
#else
namespace volley::internal {

Array metis_kway(int64_t, int64_t, const EdgeVisitor&, std::vector<int64_t>, int64_t,
                 const PartitionOptions&, const std::function<void()>&) {
  throw RuntimeError(
      "the metis method needs METIS, but this Volley was built without it (apt install "
      "libmetis-dev and rebuild); use --method random");
}

Array assign_metis(const Dataset&, const PartitionOptions&, const std::vector<uint8_t>&) {
  throw RuntimeError(
      "the metis and hotness methods need METIS, but this Volley was built without it "
      "(apt install libmetis-dev and rebuild); use --method stream or random");
}

}  // namespace volley::internal
#endif
