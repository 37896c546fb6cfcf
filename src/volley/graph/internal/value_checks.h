// volley/graph/internal/value_checks.h — what the readers of both dataset kinds share (internal;
// defined in dataset.cc): the manifest's path and parsed text, and the value checks of a node
// field (the homogeneous dataset's, and each node type's of a heterogeneous one).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "volley/core/array.h"
#include "volley/graph/json_checker.h"

namespace volley::graph_internal {

// `directory`/volley.json.
std::string manifest_path(const std::string& directory);

// The manifest at check.path(), parsed (IoError for a missing or unreadable file, naming
// `directory`; the checker's error for bad JSON).
JsonChecker::Json read_manifest_json(const std::string& directory, const JsonChecker& check);

// Label values in [-1, num_classes) (-1: unlabelled), split ids (`*_idx`) and link-split
// endpoints (`*_edges`) in [0, num_nodes): "" or the first bad value, such as
// "train_idx[3] = 5000 out of range for 2708 nodes". Other fields: "".
std::string value_problem(std::string_view field, const Array& array, int64_t num_nodes,
                          int64_t num_classes);

}  // namespace volley::graph_internal
