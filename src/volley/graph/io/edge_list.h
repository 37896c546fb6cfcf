// volley/graph/io/edge_list.h — graphs as COO edge lists: text files and [2, E] arrays.
//
// A text edge list has one edge "SRC DST" or "SRC DST WEIGHT" per line, fields separated by
// spaces, tabs or commas. Lines starting with '#' or '%' (after leading blanks) are comments;
// blank lines are skipped; the first other line may be a header ("source,target") that is
// skipped. Either every edge line has a weight or none does. Ids are non-negative integers; a
// weight is a finite float >= 0.
//
//   EdgeList edges = read_edge_list("graph.tsv");              // header guessed
//   EdgeList edges = read_edge_list("g.csv", {.has_header = true, .num_nodes = 1000});
//   Csr graph = build_csr(edges.src, edges.dst, edges.weights);
//
// The file is memory-mapped and parsed with std::from_chars. Errors are IoError naming the file
// and the 1-based line: "g.txt:7: expected 2 or 3 numeric columns, found '3 x'".
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "volley/core/array.h"

namespace volley {

// Edge i goes from src[i] to dst[i].
struct EdgeList {
  Array src;                     // int64 [E]
  Array dst;                     // int64 [E]
  std::optional<Array> weights;  // float32 [E]
  int64_t num_edges() const { return src.numel(); }
};

struct EdgeListOptions {
  // Whether the first line that is neither blank nor a comment is a header. nullopt guesses:
  // it is a header when its first field is not a number.
  std::optional<bool> has_header;
  // When set, an id >= num_nodes is an error naming its line.
  std::optional<int64_t> num_nodes;
};

// Reads a text edge list. Throws IoError for an unreadable file or a malformed line, naming the
// file and line; an empty file (or one with only comments and a header) gives zero edges.
EdgeList read_edge_list(const std::string& path, const EdgeListOptions& options = {});

// Splits an integer array of edges into src/dst: shape [2, E] (row 0 holds the sources, as in
// PyG's edge_index) or [E, 2] (one edge per row); [2, 2] is read as [2, E]. int32 or int64 in,
// int64 out; negative ids are a ValueError naming `source` and the position.
EdgeList edge_list_from_array(const Array& edges, const std::string& source);

}  // namespace volley
