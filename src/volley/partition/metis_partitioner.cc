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

Adjacency symmetrised_adjacency(const Csr& graph) {
  const int64_t n = graph.num_nodes();
  std::vector<idx_t> xadj(static_cast<size_t>(n) + 1, 0);
  for (int64_t v = 0; v < n; ++v) {
    for (int64_t pos = graph.begin(v); pos < graph.end(v); ++pos) {
      const int64_t u = graph.neighbor(pos);
      if (u == v) continue;
      ++xadj[static_cast<size_t>(v) + 1];
      ++xadj[static_cast<size_t>(u) + 1];
    }
  }
  for (int64_t v = 0; v < n; ++v) xadj[static_cast<size_t>(v) + 1] += xadj[static_cast<size_t>(v)];
  std::vector<idx_t> adjncy(static_cast<size_t>(xadj[static_cast<size_t>(n)]));
  {
    std::vector<idx_t> next(xadj.begin(), xadj.end() - 1);
    for (int64_t v = 0; v < n; ++v) {
      for (int64_t pos = graph.begin(v); pos < graph.end(v); ++pos) {
        const int64_t u = graph.neighbor(pos);
        if (u == v) continue;
        adjncy[static_cast<size_t>(next[static_cast<size_t>(v)]++)] = static_cast<idx_t>(u);
        adjncy[static_cast<size_t>(next[static_cast<size_t>(u)]++)] = static_cast<idx_t>(v);
      }
    }
  }
  release_mapped_pages(graph.indices(), 0, graph.indices().nbytes());
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

Array assign_metis(const Dataset& dataset, const PartitionOptions& options,
                   const std::vector<uint8_t>& train) {
  const Csr& graph = dataset.graph;
  const int64_t n = graph.num_nodes();
  const int64_t e = graph.num_edges();
  Array assignment = Array::zeros(DType::kInt32, {n});
  if (n == 0 || options.num_parts == 1) return assignment;
  constexpr int64_t kIdxMax = std::numeric_limits<idx_t>::max();
  VOLLEY_REQUIRE(n < kIdxMax && 2 * e < kIdxMax, ValueError,
                 "METIS: a graph of {} nodes and {} edges (up to {} adjacency entries when "
                 "symmetrised) exceeds this METIS build's {}-bit idx_t; use --method stream",
                 n, e, 2 * e, IDXTYPEWIDTH);

  Adjacency adjacency = symmetrised_adjacency(graph);
  std::vector<idx_t>& xadj = adjacency.xadj;
  std::vector<idx_t>& adjncy = adjacency.adjncy;
  const idx_t written = xadj[static_cast<size_t>(n)];

  // Constraints: nodes always; in-edges when there are edges; training nodes when there are any.
  const bool has_train = std::find(train.begin(), train.end(), 1) != train.end();
  std::vector<int> constraints = {0};
  if (e > 0) constraints.push_back(1);
  if (has_train) constraints.push_back(2);
  idx_t ncon = static_cast<idx_t>(constraints.size());
  std::vector<idx_t> vwgt(static_cast<size_t>(n) * constraints.size());
  for (int64_t v = 0; v < n; ++v) {
    for (size_t c = 0; c < constraints.size(); ++c) {
      idx_t weight = 1;
      if (constraints[c] == 1) weight = static_cast<idx_t>(graph.degree(v));
      if (constraints[c] == 2) weight = train[static_cast<size_t>(v)];
      vwgt[static_cast<size_t>(v) * constraints.size() + c] = weight;
    }
  }
  std::vector<real_t> ubvec(constraints.size(),
                            static_cast<real_t>(1.0 + options.balance_tolerance));
  idx_t options_array[METIS_NOPTIONS];
  METIS_SetDefaultOptions(options_array);
  options_array[METIS_OPTION_NUMBERING] = 0;
  options_array[METIS_OPTION_SEED] = static_cast<idx_t>(options.seed & 0x7fffffff);
  idx_t nvtxs = static_cast<idx_t>(n);
  idx_t nparts = static_cast<idx_t>(options.num_parts);
  idx_t objective = 0;
  std::vector<idx_t> part(static_cast<size_t>(n));
  const int status =
      METIS_PartGraphKway(&nvtxs, &ncon, xadj.data(), adjncy.data(), vwgt.data(), nullptr, nullptr,
                          &nparts, nullptr, ubvec.data(), options_array, &objective, part.data());
  VOLLEY_REQUIRE(status == METIS_OK, RuntimeError,
                 "METIS_PartGraphKway failed on {} nodes, {} adjacency entries, {} parts: {}", n,
                 written, options.num_parts, metis_status_text(status));
  int32_t* part_of = assignment.data<int32_t>();
  for (int64_t v = 0; v < n; ++v) part_of[v] = static_cast<int32_t>(part[static_cast<size_t>(v)]);
  return assignment;
}

}  // namespace volley::internal
#else
namespace volley::internal {

Array assign_metis(const Dataset&, const PartitionOptions&, const std::vector<uint8_t>&) {
  throw RuntimeError(
      "the metis and hotness methods need METIS, but this Volley was built without it "
      "(apt install libmetis-dev and rebuild); use --method stream or random");
}

}  // namespace volley::internal
#endif
