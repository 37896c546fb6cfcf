// volley/graph/io/hetero_edges.h — a heterogeneous graph from a directory of per-edge-type edge
// files (`volley convert` of a heterogeneous input).
//
// The directory holds, for each edge type, one file whose stem is the edge type's name
// "SRC__RELATION__DST" (hetero_graph.h):
//   SRC__RELATION__DST.npy                      int32/int64 [2, E] (PyG's edge_index: row 0 the
//                                               source ids) or [E, 2]
//   SRC__RELATION__DST.txt / .csv / .tsv / .el  a text edge list "src dst [weight]" (edge_list.h)
// and optionally, per node type T:
//   T.features.npy [N_T, D], T.labels.npy int [N_T], T.train_idx.npy / T.val_idx.npy /
//   T.test_idx.npy int ids, T.num_nodes (a text file holding the count).
// Ids are per type. A node type's count is T.num_nodes when present, else the largest of: its
// features' / labels' rows, 1 + the largest id of that type in any edge file. Edge and node
// types come in name order (node types: first seen as a source or destination). Other files
// are ignored; a file "a__b.npy" whose stem is not a valid edge type name is an error.
//
// Throws IoError for an unreadable or malformed file (naming it), ValueError for a directory
// without edge files, a count smaller than an id or than feature rows (naming the type),
// IndexError for an id >= a given T.num_nodes.
#pragma once

#include <string>

#include "volley/graph/hetero_dataset.h"

namespace volley {

// Whether `directory` holds at least one file named like an edge type (see above).
bool is_hetero_edge_directory(const std::string& directory);

// Reads the directory into a dataset (name: the directory's name). Labels' num_classes = the
// largest label + 1.
HeteroDataset read_hetero_edge_directory(const std::string& directory);

}  // namespace volley
