// Timestamps on a Csr (with_times) and sorting rows by time (sort_rows_by_time); see csr.h.
#include <algorithm>
#include <atomic>
#include <limits>
#include <numeric>
#include <vector>

#include "volley/core/parallel.h"
#include "volley/graph/csr.h"

namespace volley {
namespace {

constexpr int64_t kRowGrain = 4096;

// The time of CSR entry k under `kind`.
struct EntryTime {
  const int64_t* edge_time = nullptr;  // kEdge
  const int64_t* node_time = nullptr;  // kNode
  const Csr* graph = nullptr;
  int64_t operator()(int64_t k) const {
    return edge_time != nullptr ? edge_time[k] : node_time[graph->neighbor(k)];
  }
};

// The first row of `graph` whose entries are not in non-decreasing `time` order, or -1.
int64_t first_unsorted_row(const Csr& graph, const EntryTime& time) {
  std::atomic<int64_t> first{std::numeric_limits<int64_t>::max()};
  parallel_for(0, graph.num_nodes(), kRowGrain, [&](int64_t begin, int64_t end) {
    for (int64_t row = begin; row < end && row < first.load(std::memory_order_relaxed); ++row) {
      for (int64_t k = graph.begin(row) + 1; k < graph.end(row); ++k) {
        if (time(k) < time(k - 1)) {
          int64_t current = first.load();
          while (row < current && !first.compare_exchange_weak(current, row)) {
          }
          return;
        }
      }
    }
  });
  const int64_t row = first.load();
  return row == std::numeric_limits<int64_t>::max() ? -1 : row;
}

template <typename Index>
void permute_rows(const Csr& graph, const EntryTime& time, Index* indices, int64_t* edge_ids,
                  float* weights, int64_t* edge_time) {
  const Index* old_indices = graph.indices().template data<Index>();
  const float* old_weights = graph.has_weights() ? graph.weights()->data<float>() : nullptr;
  const int64_t* old_time = graph.has_edge_time() ? graph.edge_time()->data<int64_t>() : nullptr;
  parallel_for(0, graph.num_nodes(), kRowGrain, [&](int64_t begin, int64_t end) {
    std::vector<int64_t> order;
    for (int64_t row = begin; row < end; ++row) {
      const int64_t first = graph.begin(row);
      order.resize(static_cast<size_t>(graph.degree(row)));
      std::iota(order.begin(), order.end(), first);
      std::stable_sort(order.begin(), order.end(),
                       [&](int64_t a, int64_t b) { return time(a) < time(b); });
      for (size_t i = 0; i < order.size(); ++i) {
        const int64_t from = order[i];
        const int64_t to = first + static_cast<int64_t>(i);
        indices[to] = old_indices[from];
        edge_ids[to] = graph.edge_id(from);
        if (weights != nullptr) weights[to] = old_weights[from];
        if (edge_time != nullptr) edge_time[to] = old_time[from];
      }
    }
  });
}

}  // namespace

Csr Csr::with_times(std::optional<Array> node_time, std::optional<Array> edge_time) const {
  if (node_time) check_time_array(*node_time, num_nodes_, "node_time", "node");
  if (edge_time) check_time_array(*edge_time, num_edges_, "edge_time", "edge");
  Csr out = *this;
  out.node_time_ = std::move(node_time);
  out.edge_time_ = std::move(edge_time);
  out.node_time_unsorted_row_ = -1;
  out.edge_time_unsorted_row_ = -1;
  if (out.node_time_) {
    out.node_time_unsorted_row_ =
        first_unsorted_row(out, {.node_time = out.node_time_->data<int64_t>(), .graph = &out});
  }
  if (out.edge_time_) {
    out.edge_time_unsorted_row_ =
        first_unsorted_row(out, {.edge_time = out.edge_time_->data<int64_t>(), .graph = &out});
  }
  return out;
}

Csr sort_rows_by_time(const Csr& graph, TimeKind kind) {
  const bool by_edge = kind == TimeKind::kEdge;
  VOLLEY_REQUIRE(by_edge ? graph.has_edge_time() : graph.has_node_time(), ValueError,
                 "sorting rows by {} time needs {}, but the graph has none",
                 by_edge ? "edge" : "node", by_edge ? "edge_time" : "node_time");
  const int64_t e = graph.num_edges();
  EntryTime time{.graph = &graph};
  if (by_edge) {
    time.edge_time = graph.edge_time()->data<int64_t>();
  } else {
    time.node_time = graph.node_time()->data<int64_t>();
  }
  Array indices = Array::empty(graph.index_dtype(), {e});
  Array edge_ids = Array::empty(DType::kInt64, {e});
  std::optional<Array> weights, edge_time;
  if (graph.has_weights()) weights = Array::empty(DType::kFloat32, {e});
  if (graph.has_edge_time()) edge_time = Array::empty(DType::kInt64, {e});
  float* w = weights ? weights->data<float>() : nullptr;
  int64_t* t = edge_time ? edge_time->data<int64_t>() : nullptr;
  if (graph.index_dtype() == DType::kInt32) {
    permute_rows(graph, time, indices.data<int32_t>(), edge_ids.data<int64_t>(), w, t);
  } else {
    permute_rows(graph, time, indices.data<int64_t>(), edge_ids.data<int64_t>(), w, t);
  }
  return Csr::from_arrays(graph.indptr(), std::move(indices), std::move(edge_ids),
                          std::move(weights), graph.orientation(), /*validate=*/false)
      .with_times(graph.node_time(), std::move(edge_time));
}

void check_time_array(const Array& time, int64_t expected, std::string_view what, const char* per) {
  VOLLEY_REQUIRE(time.defined() && time.dtype() == DType::kInt64 && time.ndim() == 1 &&
                     time.numel() == expected,
                 ValueError, "{} must be a 1-d int64 array with one entry per {} ({}), got {}",
                 what, per, expected, time.defined() ? time.describe() : std::string("nothing"));
  VOLLEY_REQUIRE(time.buffer().host_accessible(), ValueError,
                 "{} must be in host memory, got {} memory", what,
                 location_name(time.buffer().location()));
}

}  // namespace volley
