// volley/graph/split.h — seeded train / validation / test splits of the nodes.
//
//   Split split = planetoid_split(dataset.labels.value(), dataset.num_classes, {.seed = 0});
//   Split split = random_split(num_nodes, {.train_fraction = 0.6, .val_fraction = 0.2});
//
// Both are pure functions of their arguments: the shuffles are Fisher–Yates driven by Philox
// (core/philox.h), not std::shuffle (which differs between standard libraries), so a seed gives
// the same split on every platform. The three id lists are disjoint and sorted ascending.
#pragma once

#include <cstdint>

#include "volley/core/array.h"

namespace volley {

struct Split {
  Array train;  // int64 [*], sorted node ids
  Array val;
  Array test;
};

struct PlanetoidSplitOptions {
  int64_t per_class = 20;   // training nodes per class (all of a class when it has fewer)
  int64_t num_val = 500;    // validation nodes, drawn from the labelled non-training nodes
  int64_t num_test = 1000;  // test nodes, drawn from the labelled nodes left after that
  uint64_t seed = 0;
};

// The split of Kipf & Welling / PyG's Planetoid(split="random"): `per_class` random nodes of
// each class for training, then `num_val` and `num_test` random nodes of the rest. `labels` is an
// integer array [N]; -1 marks an unlabelled node, which is never chosen. Throws ValueError for a
// label outside [-1, num_classes) (naming the node) or when fewer than num_val + num_test
// labelled nodes remain after training.
Split planetoid_split(const Array& labels, int64_t num_classes,
                      const PlanetoidSplitOptions& options = {});

struct RandomSplitOptions {
  double train_fraction = 0.6;
  double val_fraction = 0.2;  // the rest is the test set
  uint64_t seed = 0;
};

// A uniform random split of nodes [0, num_nodes): floor(train_fraction * N) training nodes,
// floor(val_fraction * N) validation nodes, the rest for testing. Throws ValueError when a
// fraction is outside [0, 1] or they sum to more than 1.
Split random_split(int64_t num_nodes, const RandomSplitOptions& options = {});

}  // namespace volley
