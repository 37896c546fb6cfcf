// volley/graph/hetero_graph.h — a heterogeneous graph: typed nodes, typed edges.
//
// Node types have names and counts; ids are per type (node 5 of "author" and node 5 of "paper"
// are different nodes), as in PyG's HeteroData. An edge type is a triple (src, relation, dst)
// of node type names; its edges are stored as a Csr over the *destination* type's ids whose
// indices are *source*-type ids (in-neighbors: row v of "author__writes__paper" lists the
// authors of paper v), with optional edge ids and weights, exactly as the homogeneous Csr
// (csr.h) but with indices bounded by the source type's count, not the row count.
//
//   HeteroGraph graph({{"paper", 736389}, {"author", 1134649}},
//                     {{{"author", "writes", "paper"}, writes_csr}});
//   const Csr& writes = graph.edges({"author", "writes", "paper"});
//   int64_t papers = graph.num_nodes("paper");
//
// Names: a node type or relation name is 1-64 characters of [A-Za-z0-9_-], neither starting
// nor ending with '_' and without "__" (so "src__relation__dst", an edge type's canonical name
// and file-name stem, splits back unambiguously).
//
// Order: node types and edge types keep the order they were given in (PyG's insertion order);
// the sampler and the dataset directory use it.
//
// Errors (all name the offending value): ValueError for a bad or repeated name, a negative
// count, an edge type whose src or dst is not a node type (the known types listed), a Csr whose
// row count is not the dst count or whose orientation is not kIn; IndexError for an index >=
// the src count (with `validate`). Lookups of an unknown type throw ValueError listing the
// known ones. A HeteroGraph is immutable after construction and safe to read from many
// threads; copies share arrays.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "volley/graph/csr.h"

namespace volley {

struct EdgeType {
  std::string src;
  std::string relation;
  std::string dst;

  // "src__relation__dst".
  std::string name() const;
  // Parses "src__relation__dst" (ValueError naming the text when it has not three parts).
  static EdgeType from_name(std::string_view name);
  bool operator==(const EdgeType&) const = default;
};

// Throws ValueError unless `name` is a valid type or relation name (see above); `what` names it
// in the message ("node type", "relation").
void check_type_name(std::string_view name, std::string_view what);

struct NodeTypeInfo {
  std::string name;
  int64_t num_nodes = 0;
};

class HeteroGraph {
 public:
  HeteroGraph() = default;
  // Validates names, counts and each Csr's shape against its types; with `validate` also each
  // Csr's contents (indptr monotone, indices in [0, src count), weights finite >= 0): O(E).
  HeteroGraph(std::vector<NodeTypeInfo> node_types,
              std::vector<std::pair<EdgeType, Csr>> edge_types, bool validate = true);

  int num_node_types() const { return static_cast<int>(node_types_.size()); }
  int num_edge_types() const { return static_cast<int>(edge_types_.size()); }
  const std::vector<NodeTypeInfo>& node_types() const { return node_types_; }
  const std::vector<EdgeType>& edge_types() const { return edge_types_; }

  // Index of a node / edge type in the order above; ValueError listing the known types.
  int node_type_index(std::string_view name) const;
  int edge_type_index(const EdgeType& type) const;
  // -1 instead of throwing.
  int find_node_type(std::string_view name) const;
  int find_edge_type(const EdgeType& type) const;

  int64_t num_nodes(std::string_view node_type) const;
  int64_t num_nodes(int node_type) const { return node_types_.at(node_type).num_nodes; }
  const Csr& edges(const EdgeType& type) const { return csrs_[edge_type_index(type)]; }
  const Csr& edges(int edge_type) const { return csrs_.at(edge_type); }
  int64_t num_edges(const EdgeType& type) const { return edges(type).num_edges(); }
  int64_t total_nodes() const;
  int64_t total_edges() const;

  // "paper, author" / "author__writes__paper, paper__cites__paper" for messages.
  std::string node_type_list() const;
  std::string edge_type_list() const;

 private:
  std::vector<NodeTypeInfo> node_types_;
  std::vector<EdgeType> edge_types_;
  std::vector<Csr> csrs_;
};

// Builds one edge type's Csr from a COO list: edge i goes from src[i] (a src-type id) to dst[i]
// (a dst-type id). Rows are dst ids (num_dst of them); each row's neighbors sorted by (source,
// edge id); edge ids are COO positions. `weights`: optional float32 [E]. IndexError names the
// position and value of an id out of its type's range (`type` names the edge type).
Csr build_bipartite_csr(const Array& src, const Array& dst, int64_t num_src, int64_t num_dst,
                        const std::optional<Array>& weights = std::nullopt,
                        std::string_view type = "");

}  // namespace volley
