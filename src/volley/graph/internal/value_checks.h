// volley/graph/internal/value_checks.h — the value checks of a dataset's node fields, shared by
// the homogeneous dataset (dataset.cc, which defines it) and each node type of a heterogeneous
// one (internal).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "volley/core/array.h"

namespace volley::graph_internal {

// Label values in [-1, num_classes) (-1: unlabelled), split ids (`*_idx`) and link-split
// endpoints (`*_edges`) in [0, num_nodes): "" or the first bad value, such as
// "train_idx[3] = 5000 out of range for 2708 nodes". Other fields: "".
std::string value_problem(std::string_view field, const Array& array, int64_t num_nodes,
                          int64_t num_classes);

}  // namespace volley::graph_internal
