// volley/graph/io/ogb_hetero.h — OGB's heterogeneous node-property layout (ogbn-mag) into a
// heterogeneous dataset directory (volley/graph/hetero_dataset.h).
//
// The input directory is what the `ogb` package downloads and unpacks, e.g. dataset/ogbn_mag/:
//   raw/num-node-dict.csv.gz                 line 1: node type names, line 2: their counts
//   raw/relations/SRC___REL___DST/edge.csv.gz  one edge "src,dst" per line (type-local ids)
//   raw/node-feat/TYPE/node-feat.csv.gz      N_TYPE lines of D floats              (optional)
//   raw/node-label/TYPE/node-label.csv.gz    N_TYPE class ids ("nan": unlabelled)   (optional)
//   split/<name>/TYPE/train.csv.gz, valid.csv.gz, test.csv.gz                        (optional)
// Other files (num-edge-list, edge_reltype, node_year, edge features) are not read. Relations
// come in name order; node types in num-node-dict's order. Features are streamed into
// TYPE.features.npy (float32); each relation's edges are held in memory (16 bytes an edge) while
// its Csr is built, one relation at a time.
//
// Errors: IoError for a missing or corrupt file, ValueError / IndexError naming the file and
// 1-based line of malformed content or an id out of its type's range.
#pragma once

#include <string>

#include "volley/graph/io/ogb.h"

namespace volley {

// Whether `directory` looks like a heterogeneous OGB dataset (raw/num-node-dict.csv.gz and
// raw/relations/).
bool is_ogb_hetero_directory(const std::string& directory);

// Converts it into `output`. Uses options.split and options.name (undirected, drop_self_loops
// and a feature_dtype other than float32 are a ValueError: not supported for heterogeneous
// datasets). `num_nodes` / `num_edges` of the result are totals over all types.
OgbConversion convert_ogb_hetero_dataset(const std::string& input, const std::string& output,
                                         const OgbConvertOptions& options = {});

}  // namespace volley
