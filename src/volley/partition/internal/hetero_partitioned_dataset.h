// volley/partition/internal/hetero_partitioned_dataset.h — writing the heterogeneous partitioned
// directory (format: hetero_partition.h) and the names its writer and reader share.
#pragma once

#include <fmt/format.h>

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "volley/core/array.h"
#include "volley/graph/hetero_dataset.h"
#include "volley/partition/hetero_partition.h"

namespace volley::internal {

inline constexpr int64_t kHeteroFormatVersion = 2;

// "<type>.node_map.npy": node type T's old → new ids at the partitioned directory's root.
inline std::string hetero_node_map_file(std::string_view node_type) {
  return fmt::format("{}.node_map.npy", node_type);
}

// Writes `output` from `dataset` and `assignment` (int32 [N_T] per node type): the node maps,
// each part's heterogeneous dataset directory (edges one edge type at a time, features
// streamed) and part.json, then partition.json, in a staging directory renamed onto `output`.
// `result` holds the books, loads and quality; `elapsed` the seconds so far, for the manifest.
void write_hetero_partitioned_dataset(const HeteroDataset& dataset,
                                      const std::vector<Array>& assignment,
                                      const PartitionOptions& options,
                                      const HeteroPartitionResult& result,
                                      const std::string& output,
                                      const std::function<double()>& elapsed);

}  // namespace volley::internal
