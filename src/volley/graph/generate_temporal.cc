// The temporal interaction model of `volley generate --model temporal` (generate.h).
#include <algorithm>
#include <vector>

#include "volley/graph/internal/generator.h"

namespace volley::generator_internal {
namespace {

constexpr double kSwitch = 0.05;  // chance per event that a user's interest moves elsewhere

struct Layout {
  int64_t users, items, clusters;
  // Item ids follow the users; item j (0-based) is in cluster j % clusters.
  int64_t item_node(int64_t j) const { return users + j; }
  int64_t cluster_size(int64_t c) const { return (items - c + clusters - 1) / clusters; }
};

Layout layout_of(const GeneratorOptions& options) {
  const int64_t items = std::max<int64_t>(options.num_nodes / 5, 1);
  return {options.num_nodes - items, items, options.num_classes};
}

}  // namespace

TemporalStream generate_temporal(const GeneratorOptions& options) {
  const Layout layout = layout_of(options);
  VOLLEY_REQUIRE(layout.users >= 1 && layout.items >= layout.clusters, ValueError,
                 "--model temporal needs at least one user and num_classes (--classes) <= the {} "
                 "items (num_nodes / 5), got {} nodes and {} classes",
                 layout.items, options.num_nodes, options.num_classes);
  const int64_t m = options.num_edges;
  std::vector<int64_t> interest(static_cast<size_t>(layout.users));
  for (int64_t u = 0; u < layout.users; ++u) {
    interest[static_cast<size_t>(u)] =
        static_cast<int64_t>(stream_for(options.seed, Purpose::kLabel, static_cast<uint64_t>(u))
                                 .bounded64(static_cast<uint64_t>(layout.clusters)));
  }
  TemporalStream out;
  std::vector<int64_t> src(static_cast<size_t>(m)), dst(static_cast<size_t>(m));
  std::vector<int64_t> node_time(static_cast<size_t>(options.num_nodes), m);
  // Sequential: each event depends on its user's current interest. Event e happens at time e.
  for (int64_t e = 0; e < m; ++e) {
    PhiloxStream rng = stream_for(options.seed, Purpose::kTemporalEvent, static_cast<uint64_t>(e));
    const auto user = static_cast<int64_t>(rng.bounded64(static_cast<uint64_t>(layout.users)));
    int64_t& cluster = interest[static_cast<size_t>(user)];
    if (rng.uniform_double() < kSwitch) {
      cluster = static_cast<int64_t>(rng.bounded64(static_cast<uint64_t>(layout.clusters)));
    }
    int64_t item;
    if (rng.uniform_double() < options.homophily) {
      item = cluster + layout.clusters * static_cast<int64_t>(rng.bounded64(
                                             static_cast<uint64_t>(layout.cluster_size(cluster))));
    } else {
      item = static_cast<int64_t>(rng.bounded64(static_cast<uint64_t>(layout.items)));
    }
    src[static_cast<size_t>(e)] = user;
    dst[static_cast<size_t>(e)] = layout.item_node(item);
    for (int64_t node : {user, layout.item_node(item)}) {
      node_time[static_cast<size_t>(node)] = std::min(node_time[static_cast<size_t>(node)], e);
    }
  }
  // Both directions (a reversed edge keeps its event's id), edge time = event time.
  const Csr graph = build_csr(Array::from_vector(src), Array::from_vector(dst), std::nullopt,
                              {.num_nodes = options.num_nodes, .symmetrize = true});
  Array edge_time = Array::empty(DType::kInt64, {graph.num_edges()});
  int64_t* time = edge_time.data<int64_t>();
  for (int64_t k = 0; k < graph.num_edges(); ++k) time[k] = graph.edge_id(k);
  out.graph = sort_rows_by_time(graph.with_times(Array::from_vector(node_time), edge_time),
                                TimeKind::kEdge);
  std::vector<int64_t> labels(static_cast<size_t>(options.num_nodes));
  for (int64_t u = 0; u < layout.users; ++u)
    labels[static_cast<size_t>(u)] = interest[static_cast<size_t>(u)];
  for (int64_t j = 0; j < layout.items; ++j)
    labels[static_cast<size_t>(layout.item_node(j))] = j % layout.clusters;
  out.labels = Array::from_vector(labels);
  out.src = Array::from_vector(src);
  out.dst = Array::from_vector(dst);
  return out;
}

}  // namespace volley::generator_internal
