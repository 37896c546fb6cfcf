// volley/graph/internal/hetero_manifest.h — the version-2 (heterogeneous) manifest's fields and
// checks, shared by the reader (hetero_dataset.cc) and the writer (hetero_dataset_writer.cc).
// Contract in hetero_dataset.h.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "volley/core/array.h"

namespace volley::hetero_internal {

inline constexpr int64_t kHeteroFormatVersion = 2;
inline constexpr const char* kNodeFields[] = {"features", "labels", "train_idx", "val_idx",
                                              "test_idx"};
inline constexpr const char* kEdgeFields[] = {"indptr", "indices", "edge_ids", "weights"};

bool is_node_field(std::string_view field);
bool is_edge_field(std::string_view field);
size_t node_field_rank(std::string_view field);
size_t edge_field_rank(std::string_view field);

// "<owner>.<field>.npy"
std::string file_name(std::string_view owner, std::string_view field);

// "" when an array of `dtype`/`shape` suits the node field for a type of `num_nodes` nodes,
// else "FIELD-PART: expected X, found Y".
std::string node_shape_problem(std::string_view field, DType dtype,
                               const std::vector<int64_t>& shape, int64_t num_nodes);
// The same for an edge field of an edge type with `num_dst` rows and `num_edges` edges.
std::string edge_shape_problem(std::string_view field, DType dtype,
                               const std::vector<int64_t>& shape, int64_t num_dst,
                               int64_t num_edges);

}  // namespace volley::hetero_internal
