// volley/graph/edge_split.h — seeded train / validation / test splits of the *edges*, for link
// prediction, written as a dataset directory.
//
//   EdgeSplitSummary s = split_edges("data/products", "/tmp/products-link",
//                                    {.val_fraction = 0.05, .test_fraction = 0.1,
//                                     .undirected = true, .seed = 1});
//
// What is split. An edge (src, dst) of the graph (row v of an "in" graph lists the sources of the
// edges into v) belongs to one *unit*: the ordered pair (src, dst), or with `undirected` the
// unordered pair {src, dst}, so that an edge and its reverse are one unit and always land on the
// same side. Parallel edges (repeats of a pair) are one unit too. The units are put in a seeded
// random order; the first floor(val_fraction * U) are validation, the next
// floor(test_fraction * U) test, the rest training (U: the number of units).
//
// What is written into `output` (a dataset directory, dataset.h):
//   indptr / indices (/ edge_ids / weights)  the training message-passing graph: every edge of the
//        input whose unit is a training unit (both directions of an undirected one), in the input's
//        orientation, with the input's edge ids and weights
//   features, labels, train_idx, val_idx, test_idx  copied from the input when it has them
//   train_edges, val_edges, test_edges  int64 [2, M]: one (src, dst) row pair per unit (with
//        `undirected`, src <= dst), in the seeded random order
//   val_neg_edges, test_neg_edges  int64 [2, round(neg_ratio * M)]: seeded negatives, pairs of
//        distinct nodes that are no edge of the input graph in either direction (with `undirected`;
//        in the given direction otherwise), all different from each other (val and test
//        negatives included); src <= dst with `undirected`. Absent when neg_ratio is 0.
//
// The result is a pure function of (graph, options): the same bytes for any thread count. The
// work streams over the CSR in parallel (hash-bucketed, no global sort); memory is about 8 bytes
// per edge beyond the input graph and the output graph.
//
// Errors (nothing is written): ValueError when a fraction is outside [0, 1), the two sum to 1 or
// more, neg_ratio is negative or not finite, the graph has 2^32 nodes or more, or too few
// non-edges exist for the negatives asked (the message names the values); IoError when `output`
// exists and is not an empty directory, or cannot be written, or the input cannot be read.
// Not thread-safe against another writer of the same `output`.
#pragma once

#include <cstdint>
#include <string>

#include "volley/graph/dataset.h"

namespace volley {

struct EdgeSplitOptions {
  double val_fraction = 0.05;
  double test_fraction = 0.1;
  bool undirected = false;
  uint64_t seed = 0;
  double neg_ratio = 1.0;  // negatives per validation / test unit
};

struct EdgeSplitSummary {
  int64_t num_units = 0;  // distinct (ordered or unordered) pairs
  int64_t num_train = 0;  // training units (columns of train_edges)
  int64_t num_val = 0;
  int64_t num_test = 0;
  int64_t num_val_neg = 0;
  int64_t num_test_neg = 0;
  int64_t num_train_graph_edges = 0;  // edges of the message-passing graph written
};

// Splits `dataset` and writes the result into `output` (see above).
EdgeSplitSummary split_edges(const Dataset& dataset, const std::string& output,
                             const EdgeSplitOptions& options);
// The same for the dataset directory `input` (memory-mapped; IoError when it is missing).
EdgeSplitSummary split_edges(const std::string& input, const std::string& output,
                             const EdgeSplitOptions& options);

// Checks the options as split_edges does (ValueError naming the value); for the CLI and bindings.
void check_edge_split_options(const EdgeSplitOptions& options);

}  // namespace volley
