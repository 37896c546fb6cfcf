#include "volley/graph/hetero_graph.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <limits>

#include "volley/core/parallel.h"

namespace volley {

namespace {

constexpr size_t kMaxNameLength = 64;

// Smallest position in [0, n) where `bad(i)` holds, or -1. Parallel and deterministic.
template <typename Predicate>
int64_t first_bad(int64_t n, Predicate bad) {
  std::atomic<int64_t> first{std::numeric_limits<int64_t>::max()};
  parallel_for(0, n, 1 << 16, [&](int64_t begin, int64_t end) {
    if (begin >= first.load(std::memory_order_relaxed)) return;
    for (int64_t i = begin; i < end; ++i) {
      if (!bad(i)) continue;
      int64_t current = first.load();
      while (i < current && !first.compare_exchange_weak(current, i)) {
      }
      return;
    }
  });
  const int64_t result = first.load();
  return result == std::numeric_limits<int64_t>::max() ? -1 : result;
}

int64_t id_at(const Array& ids, int64_t i) {
  return ids.dtype() == DType::kInt32 ? ids.data<int32_t>()[i] : ids.data<int64_t>()[i];
}

// Checks a Csr's contents for edge type `name`: rows = dst ids, indices in [0, num_src).
void validate_contents(const Csr& csr, int64_t num_src, const std::string& name) {
  const int64_t* ptr = csr.indptr().data<int64_t>();
  const int64_t bad_ptr =
      first_bad(csr.num_nodes(), [&](int64_t i) { return ptr[i + 1] < ptr[i]; });
  VOLLEY_REQUIRE(bad_ptr < 0, ValueError,
                 "edge type {}: indptr must be non-decreasing: indptr[{}] = {} > indptr[{}] = {}",
                 name, bad_ptr, bad_ptr < 0 ? 0 : ptr[bad_ptr], bad_ptr + 1,
                 bad_ptr < 0 ? 0 : ptr[bad_ptr + 1]);
  const int64_t bad = first_bad(csr.num_edges(), [&](int64_t k) {
    const int64_t id = csr.neighbor(k);
    return id < 0 || id >= num_src;
  });
  VOLLEY_REQUIRE(bad < 0, IndexError,
                 "edge type {}: indices[{}] = {} out of range for source type with {} nodes", name,
                 bad, bad < 0 ? 0 : csr.neighbor(bad), num_src);
  if (csr.has_weights()) {
    const float* w = csr.weights()->data<float>();
    const int64_t bad_w =
        first_bad(csr.num_edges(), [&](int64_t k) { return !(std::isfinite(w[k]) && w[k] >= 0); });
    VOLLEY_REQUIRE(bad_w < 0, ValueError, "edge type {}: weights[{}] = {} must be finite and >= 0",
                   name, bad_w, bad_w < 0 ? 0.0f : w[bad_w]);
  }
}

}  // namespace

std::string EdgeType::name() const { return src + "__" + relation + "__" + dst; }

EdgeType EdgeType::from_name(std::string_view name) {
  const size_t first = name.find("__");
  const size_t second = first == std::string_view::npos ? first : name.find("__", first + 2);
  VOLLEY_REQUIRE(first != std::string_view::npos && second != std::string_view::npos &&
                     name.find("__", second + 2) == std::string_view::npos,
                 ValueError,
                 "'{}' is not an edge type name: expected 'src__relation__dst' (three names "
                 "joined by '__')",
                 name);
  EdgeType type{std::string(name.substr(0, first)),
                std::string(name.substr(first + 2, second - first - 2)),
                std::string(name.substr(second + 2))};
  check_type_name(type.src, "source node type");
  check_type_name(type.relation, "relation");
  check_type_name(type.dst, "destination node type");
  return type;
}

void check_type_name(std::string_view name, std::string_view what) {
  const bool chars_ok = std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '-';
  });
  VOLLEY_REQUIRE(!name.empty() && name.size() <= kMaxNameLength && chars_ok &&
                     name.front() != '_' && name.back() != '_' &&
                     name.find("__") == std::string_view::npos,
                 ValueError,
                 "bad {} name '{}': expected 1-{} characters of [A-Za-z0-9_-], not starting or "
                 "ending with '_' and without '__'",
                 what, name, kMaxNameLength);
}

HeteroGraph::HeteroGraph(std::vector<NodeTypeInfo> node_types,
                         std::vector<std::pair<EdgeType, Csr>> edge_types, bool validate)
    : node_types_(std::move(node_types)) {
  for (size_t i = 0; i < node_types_.size(); ++i) {
    const NodeTypeInfo& type = node_types_[i];
    check_type_name(type.name, "node type");
    VOLLEY_REQUIRE(type.num_nodes >= 0, ValueError, "node type {}: num_nodes must be >= 0, got {}",
                   type.name, type.num_nodes);
    VOLLEY_REQUIRE(find_node_type(type.name) == static_cast<int>(i), ValueError,
                   "node type '{}' is given twice", type.name);
  }
  for (auto& [type, csr] : edge_types) {
    const std::string name = type.name();
    check_type_name(type.relation, "relation");
    for (const std::string* end : {&type.src, &type.dst}) {
      VOLLEY_REQUIRE(find_node_type(*end) >= 0, ValueError,
                     "edge type {}: '{}' is not a node type (node types: {})", name, *end,
                     node_type_list());
    }
    VOLLEY_REQUIRE(find_edge_type(type) < 0, ValueError, "edge type {} is given twice", name);
    VOLLEY_REQUIRE(csr.indptr().defined(), ValueError, "edge type {}: the graph is undefined",
                   name);
    VOLLEY_REQUIRE(csr.orientation() == Orientation::kIn, ValueError,
                   "edge type {}: expected an in-neighbor Csr (rows = destination ids), got "
                   "orientation '{}'",
                   name, orientation_name(csr.orientation()));
    const int64_t num_dst = num_nodes(type.dst);
    VOLLEY_REQUIRE(csr.num_nodes() == num_dst, ValueError,
                   "edge type {}: the Csr has {} rows, expected one per '{}' node ({})", name,
                   csr.num_nodes(), type.dst, num_dst);
    if (validate) validate_contents(csr, num_nodes(type.src), name);
    edge_types_.push_back(type);
    csrs_.push_back(std::move(csr));
  }
}

int HeteroGraph::find_node_type(std::string_view name) const {
  for (size_t i = 0; i < node_types_.size(); ++i) {
    if (node_types_[i].name == name) return static_cast<int>(i);
  }
  return -1;
}

int HeteroGraph::find_edge_type(const EdgeType& type) const {
  for (size_t i = 0; i < edge_types_.size(); ++i) {
    if (edge_types_[i] == type) return static_cast<int>(i);
  }
  return -1;
}

int HeteroGraph::node_type_index(std::string_view name) const {
  const int index = find_node_type(name);
  VOLLEY_REQUIRE(index >= 0, ValueError, "unknown node type '{}' (node types: {})", name,
                 node_type_list());
  return index;
}

int HeteroGraph::edge_type_index(const EdgeType& type) const {
  const int index = find_edge_type(type);
  VOLLEY_REQUIRE(index >= 0, ValueError, "unknown edge type {} (edge types: {})", type.name(),
                 edge_type_list());
  return index;
}

int64_t HeteroGraph::num_nodes(std::string_view node_type) const {
  return node_types_[static_cast<size_t>(node_type_index(node_type))].num_nodes;
}

int64_t HeteroGraph::total_nodes() const {
  int64_t total = 0;
  for (const auto& type : node_types_) total += type.num_nodes;
  return total;
}

int64_t HeteroGraph::total_edges() const {
  int64_t total = 0;
  for (const auto& csr : csrs_) total += csr.num_edges();
  return total;
}

std::string HeteroGraph::node_type_list() const {
  std::vector<std::string_view> names;
  for (const auto& type : node_types_) names.push_back(type.name);
  return names.empty() ? "none" : fmt::format("{}", fmt::join(names, ", "));
}

std::string HeteroGraph::edge_type_list() const {
  std::vector<std::string> names;
  for (const auto& type : edge_types_) names.push_back(type.name());
  return names.empty() ? "none" : fmt::format("{}", fmt::join(names, ", "));
}

Csr build_bipartite_csr(const Array& src, const Array& dst, int64_t num_src, int64_t num_dst,
                        const std::optional<Array>& weights, std::string_view type) {
  const std::string where = type.empty() ? "" : fmt::format("edge type {}: ", type);
  VOLLEY_REQUIRE(num_src >= 0 && num_dst >= 0, ValueError,
                 "{}node counts must be >= 0, got {} sources and {} destinations", where, num_src,
                 num_dst);
  for (const auto& [ids, name, limit] :
       {std::tuple{&src, "src", num_src}, std::tuple{&dst, "dst", num_dst}}) {
    VOLLEY_REQUIRE(ids->defined() && ids->ndim() == 1 &&
                       (ids->dtype() == DType::kInt32 || ids->dtype() == DType::kInt64) &&
                       ids->buffer().host_accessible(),
                   ValueError, "{}{} must be a 1-d int32 or int64 host array, got {}", where, name,
                   ids->describe());
    const Array& array = *ids;
    const int64_t bound = limit;
    const int64_t bad = first_bad(array.numel(), [&](int64_t i) {
      const int64_t id = id_at(array, i);
      return id < 0 || id >= bound;
    });
    VOLLEY_REQUIRE(bad < 0, IndexError, "{}{}[{}] = {} out of range for a node type with {} nodes",
                   where, name, bad, bad < 0 ? 0 : id_at(array, bad), bound);
  }
  VOLLEY_REQUIRE(src.numel() == dst.numel(), ValueError,
                 "{}src and dst must have the same length, got {} and {}", where, src.numel(),
                 dst.numel());
  const int64_t wide = std::max(num_src, num_dst);
  CsrBuildOptions options;
  options.num_nodes = wide;
  Csr csr;
  try {
    csr = build_csr(src, dst, weights, options);
  } catch (const Error& error) {
    internal::throw_error(error.kind(), where + error.what());
  }
  if (wide == num_dst) return csr;
  // Rows past num_dst are empty: keep the first num_dst + 1 entries of indptr.
  Array indptr = Array::empty(DType::kInt64, {num_dst + 1});
  std::copy_n(csr.indptr().data<int64_t>(), num_dst + 1, indptr.data<int64_t>());
  return Csr::from_arrays(std::move(indptr), csr.indices(), csr.edge_ids(), csr.weights(),
                          Orientation::kIn, /*validate=*/false);
}

}  // namespace volley
