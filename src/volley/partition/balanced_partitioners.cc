// The random and streaming (Fennel) partitioners, and the balance bookkeeping they share with
// the hotness partitioner.
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "volley/core/philox.h"
#include "volley/core/progress.h"
#include "volley/partition/internal/partitioners.h"

namespace volley::internal {

BalanceCaps balance_caps(const std::array<int64_t, kNumConstraints>& total, int64_t num_parts,
                         double tolerance) {
  BalanceCaps caps;
  caps.total = total;
  for (int c = 0; c < kNumConstraints; ++c) {
    const double mean = static_cast<double>(total[c]) / static_cast<double>(num_parts);
    caps.cap[c] = std::max((1.0 + tolerance) * mean, std::ceil(mean));
  }
  return caps;
}

std::vector<uint8_t> training_flags(int64_t n, const std::optional<Array>& train_idx) {
  std::vector<uint8_t> flags(static_cast<size_t>(n), 0);
  if (train_idx) {
    for (int64_t id : train_idx->span<int64_t>()) flags[static_cast<size_t>(id)] = 1;
  }
  return flags;
}

BalancedPlacer::BalancedPlacer(const BalanceCaps& caps, int64_t num_parts)
    : caps_(caps), load_(static_cast<size_t>(num_parts)) {
  for (auto& load : load_) load.fill(0);
}

bool BalancedPlacer::fits(int64_t part, int64_t degree, bool train) const {
  const auto& load = load_[static_cast<size_t>(part)];
  const int64_t weight[kNumConstraints] = {1, degree, train ? 1 : 0};
  for (int c = 0; c < kNumConstraints; ++c) {
    if (weight[c] > 0 && static_cast<double>(load[c] + weight[c]) > caps_.cap[c]) return false;
  }
  return true;
}

void BalancedPlacer::place(int64_t part, int64_t degree, bool train) {
  auto& load = load_[static_cast<size_t>(part)];
  load[0] += 1;
  load[1] += degree;
  load[2] += train ? 1 : 0;
}

void BalancedPlacer::remove(int64_t part, int64_t degree, bool train) {
  auto& load = load_[static_cast<size_t>(part)];
  load[0] -= 1;
  load[1] -= degree;
  load[2] -= train ? 1 : 0;
}

double BalancedPlacer::relative_load(int64_t part) const {
  const auto& load = load_[static_cast<size_t>(part)];
  const auto parts = static_cast<double>(load_.size());
  double worst = 0.0;
  for (int c = 0; c < kNumConstraints; ++c) {
    if (caps_.total[c] == 0) continue;
    worst =
        std::max(worst, static_cast<double>(load[c]) * parts / static_cast<double>(caps_.total[c]));
  }
  return worst;
}

bool BalancedPlacer::keeps_even(int64_t part, int64_t degree, bool train, double max_spread) const {
  const auto& load = load_[static_cast<size_t>(part)];
  const int64_t weight[kNumConstraints] = {1, degree, train ? 1 : 0};
  const auto parts = static_cast<double>(load_.size());
  double low_before = 1e300, high_before = 0.0, low_after = 1e300, high_after = 0.0;
  for (int c = 0; c < kNumConstraints; ++c) {
    if (caps_.total[c] == 0) continue;
    const double scale = parts / static_cast<double>(caps_.total[c]);
    const double before = static_cast<double>(load[c]) * scale;
    const double after = static_cast<double>(load[c] + weight[c]) * scale;
    low_before = std::min(low_before, before);
    high_before = std::max(high_before, before);
    low_after = std::min(low_after, after);
    high_after = std::max(high_after, after);
  }
  return high_after - low_after <= std::max(max_spread, high_before - low_before);
}

double BalancedPlacer::relative_after(int64_t part, int64_t degree, bool train) const {
  const auto& load = load_[static_cast<size_t>(part)];
  const int64_t weight[kNumConstraints] = {1, degree, train ? 1 : 0};
  double worst = 0.0;
  for (int c = 0; c < kNumConstraints; ++c) {
    if (caps_.cap[c] <= 0.0) continue;  // a constraint nobody carries (no training nodes)
    worst = std::max(worst, static_cast<double>(load[c] + weight[c]) / caps_.cap[c]);
  }
  return worst;
}

int64_t BalancedPlacer::least_loaded(int64_t degree, bool train) const {
  int64_t best = 0;
  double best_load = std::numeric_limits<double>::infinity();
  for (int64_t part = 0; part < static_cast<int64_t>(load_.size()); ++part) {
    const double load = relative_after(part, degree, train);
    if (load < best_load) {
      best_load = load;
      best = part;
    }
  }
  return best;
}

int64_t TypedGraph::total_edges() const {
  int64_t total = 0;
  for (const EdgeType& type : edge_types) total += type.csr->num_edges();
  return total;
}

TypedGraph typed_graph(const Dataset& dataset) {
  TypedGraph graph;
  graph.node_types.push_back({dataset.graph.num_nodes(), training_flags(dataset)});
  graph.edge_types.push_back({0, 0, &dataset.graph});
  graph.balance_in_edges = true;
  return graph;
}

TypedGraph typed_graph(const HeteroDataset& dataset) {
  const HeteroGraph& hetero = dataset.graph;
  TypedGraph graph;
  for (int t = 0; t < hetero.num_node_types(); ++t) {
    graph.node_types.push_back(
        {hetero.num_nodes(t),
         training_flags(hetero.num_nodes(t), dataset.node_data[static_cast<size_t>(t)].train_idx)});
  }
  for (int r = 0; r < hetero.num_edge_types(); ++r) {
    const auto& type = hetero.edge_types()[static_cast<size_t>(r)];
    graph.edge_types.push_back(
        {hetero.node_type_index(type.src), hetero.node_type_index(type.dst), &hetero.edges(r)});
  }
  return graph;
}

namespace {

// The edge types ending at one node type, and a node's in-edges over all of them.
struct InEdges {
  std::vector<const TypedGraph::EdgeType*> types;
  int64_t degree(int64_t v) const {
    int64_t degree = 0;
    for (const auto* type : types) degree += type->csr->degree(v);
    return degree;
  }
  int64_t total() const {
    int64_t total = 0;
    for (const auto* type : types) total += type->csr->num_edges();
    return total;
  }
};
InEdges edges_into(const TypedGraph& graph, size_t t) {
  InEdges edges;
  for (const TypedGraph::EdgeType& type : graph.edge_types) {
    if (static_cast<size_t>(type.dst) == t) edges.types.push_back(&type);
  }
  return edges;
}
// The in-edges that are a balance constraint of node type t: all with balance_in_edges, else none.
InEdges constrained_edges(const TypedGraph& graph, size_t t) {
  return graph.balance_in_edges ? edges_into(graph, t) : InEdges{};
}

// Node type t's placer: its nodes, constrained in-edges and training nodes under hard caps.
BalancedPlacer type_placer(const TypedGraph& graph, size_t t, const InEdges& constrained,
                           const PartitionOptions& options) {
  const std::vector<uint8_t>& train = graph.node_types[t].train;
  const std::array<int64_t, kNumConstraints> totals{
      graph.node_types[t].num_nodes, constrained.total(),
      std::accumulate(train.begin(), train.end(), int64_t{0})};
  return BalancedPlacer(balance_caps(totals, options.num_parts, options.balance_tolerance),
                        options.num_parts);
}

}  // namespace

std::vector<Array> assign_random(const TypedGraph& graph, const PartitionOptions& options) {
  std::vector<Array> result;
  for (size_t t = 0; t < graph.node_types.size(); ++t) {
    const int64_t n = graph.node_types[t].num_nodes;
    const std::vector<uint8_t>& train = graph.node_types[t].train;
    const InEdges constrained = constrained_edges(graph, t);
    BalancedPlacer placer = type_placer(graph, t, constrained, options);
    // A seeded Fisher–Yates shuffle (Philox: the same order on every platform).
    const auto stream = static_cast<uint32_t>(graph.balance_in_edges ? 0 : t + 1);
    std::vector<int64_t> order(static_cast<size_t>(n));
    std::iota(order.begin(), order.end(), int64_t{0});
    PhiloxStream rng(options.seed, {{0x72616e64u /* "rand" */, stream, 0, 0}});
    for (int64_t i = n - 1; i > 0; --i) {
      const auto j = static_cast<int64_t>(rng.bounded64(static_cast<uint64_t>(i) + 1));
      std::swap(order[static_cast<size_t>(i)], order[static_cast<size_t>(j)]);
    }
    Array assignment = Array::empty(DType::kInt32, {n});
    int32_t* part_of = assignment.data<int32_t>();
    for (int64_t v : order) {
      const int64_t node_degree = constrained.degree(v);
      const bool is_train = train[static_cast<size_t>(v)] != 0;
      const int64_t part = placer.least_loaded(node_degree, is_train);
      placer.place(part, node_degree, is_train);
      part_of[v] = static_cast<int32_t>(part);
    }
    result.push_back(std::move(assignment));
  }
  return result;
}

namespace {

// Fennel's objective: neighbors in the partition - alpha * gamma * size^(gamma - 1), gamma 1.5,
// alpha = sqrt(K) * E / N^1.5 (the paper's choice; E the in-edges of the node's type).
constexpr double kGamma = 1.5;

// One node type's streaming pass: what stays fixed while its nodes are placed.
struct FennelType {
  BalancedPlacer placer;
  InEdges constrained;
  double penalty = 0.0;  // alpha * gamma
  double mean_nodes = 0.0;
  bool even_first = false;  // balance_in_edges: see choose
  double tolerance = 0.0;

  // The partition for a node with `neighbors_in` placed in-neighbors per partition. With
  // `even_first`, first among partitions where it fits and whose constraints stay within
  // `tolerance` of each other (a partition that takes only hubs would fill its edge cap with few
  // nodes and leave the last nodes of the stream nowhere to go), ties to the less loaded; then
  // any partition where it fits; then the least loaded.
  int64_t choose(const std::vector<int64_t>& neighbors_in, int64_t degree, bool is_train) const {
    int64_t best = -1;
    double best_score = -std::numeric_limits<double>::infinity();
    for (int attempt = even_first ? 0 : 1; attempt < 2 && best < 0; ++attempt) {
      for (int64_t p = 0; p < static_cast<int64_t>(neighbors_in.size()); ++p) {
        if (!placer.fits(p, degree, is_train)) continue;
        if (attempt == 0 && !placer.keeps_even(p, degree, is_train, tolerance)) continue;
        // Fennel's size penalty, with the size measured by the partition's heaviest constraint
        // (nodes, in-edges or training nodes relative to their means), so that a partition full
        // of hubs looks as big as one full of leaves and the constraints fill evenly.
        const double size = placer.relative_load(p) * mean_nodes;
        const double score =
            static_cast<double>(neighbors_in[static_cast<size_t>(p)]) - penalty * std::sqrt(size);
        if (score > best_score || (even_first && score == best_score && best >= 0 &&
                                   placer.relative_load(p) < placer.relative_load(best))) {
          best_score = score;
          best = p;
        }
      }
    }
    return best >= 0 ? best : placer.least_loaded(degree, is_train);
  }
};

FennelType fennel_type(const TypedGraph& graph, size_t t, const PartitionOptions& options) {
  InEdges constrained = constrained_edges(graph, t);
  BalancedPlacer placer = type_placer(graph, t, constrained, options);
  const int64_t n = graph.node_types[t].num_nodes;
  const int64_t edges_in = edges_into(graph, t).total();
  const auto k = static_cast<double>(options.num_parts);
  const double alpha = n > 0 ? std::sqrt(k) * static_cast<double>(edges_in) /
                                   std::pow(static_cast<double>(n), kGamma)
                             : 0.0;
  return {.placer = std::move(placer),
          .constrained = std::move(constrained),
          .penalty = alpha * kGamma,
          .mean_nodes = static_cast<double>(n) / k,
          .even_first = graph.balance_in_edges,
          .tolerance = options.balance_tolerance};
}

// The in-edges of rows [first, end) of `edges`, in bytes of their indices.
int64_t chunk_bytes_of(const InEdges& edges, int64_t first, int64_t end) {
  int64_t bytes = 0;
  for (const auto* type : edges.types) {
    bytes += (type->csr->begin(end) - type->csr->begin(first)) *
             static_cast<int64_t>(dtype_size(type->csr->index_dtype()));
  }
  return bytes;
}

}  // namespace

std::vector<Array> assign_stream(const TypedGraph& graph, const PartitionOptions& options) {
  std::vector<Array> result;
  for (const TypedGraph::NodeType& type : graph.node_types) {
    result.push_back(Array::empty(DType::kInt32, {type.num_nodes}));
    std::fill_n(result.back().data<int32_t>(), type.num_nodes, -1);
  }
  std::vector<int64_t> neighbors_in(static_cast<size_t>(options.num_parts));
  ProgressBar bar("stream", graph.total_edges());
  for (size_t t = 0; t < graph.node_types.size(); ++t) {
    const int64_t n = graph.node_types[t].num_nodes;
    const InEdges edges = edges_into(graph, t);
    FennelType fennel = fennel_type(graph, t, options);
    int32_t* part_of = result[t].data<int32_t>();
    int64_t row = 0;
    while (row < n) {
      // Rows [row, last) hold about chunk_bytes of indices (at least one row).
      int64_t last = row + 1;
      while (last < n && chunk_bytes_of(edges, row, last + 1) <= options.chunk_bytes) ++last;
      for (int64_t v = row; v < last; ++v) {
        std::fill(neighbors_in.begin(), neighbors_in.end(), 0);
        for (const auto* type : edges.types) {
          const Csr& csr = *type->csr;
          const int32_t* source_part = result[static_cast<size_t>(type->src)].data<int32_t>();
          const int64_t sources = graph.node_types[static_cast<size_t>(type->src)].num_nodes;
          for (int64_t pos = csr.begin(v); pos < csr.end(v); ++pos) {
            const int64_t u = csr.neighbor(pos);
            VOLLEY_REQUIRE(u >= 0 && u < sources, IndexError,
                           "indices[{}] = {} out of range for a graph with {} nodes", pos, u,
                           sources);
            const int32_t owner = source_part[u];
            if (owner >= 0) ++neighbors_in[static_cast<size_t>(owner)];
          }
        }
        const int64_t degree = fennel.constrained.degree(v);
        const bool is_train = graph.node_types[t].train[static_cast<size_t>(v)] != 0;
        const int64_t best = fennel.choose(neighbors_in, degree, is_train);
        fennel.placer.place(best, degree, is_train);
        part_of[v] = static_cast<int32_t>(best);
      }
      for (const auto* type : edges.types) {
        const size_t index_bytes = dtype_size(type->csr->index_dtype());
        release_mapped_pages(type->csr->indices(),
                             static_cast<size_t>(type->csr->begin(row)) * index_bytes,
                             static_cast<size_t>(type->csr->begin(last)) * index_bytes);
        bar.advance(type->csr->begin(last) - type->csr->begin(row));
      }
      row = last;
    }
  }
  return result;
}

void release_mapped_pages(const Array& array, size_t first_byte, size_t end_byte) {
  if (!array.defined() || array.buffer().location() != Location::kMappedFile) return;
  static const auto page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  const auto base = reinterpret_cast<uintptr_t>(array.raw_data());
  const uintptr_t begin = (base + first_byte + page - 1) / page * page;
  const uintptr_t end = (base + end_byte) / page * page;
  if (end > begin) {
    // Clean private pages of a read-only use: dropping them only means re-reading the file.
    madvise(reinterpret_cast<void*>(begin), end - begin, MADV_DONTNEED);
  }
}

}  // namespace volley::internal
