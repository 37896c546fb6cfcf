// volley/partition/internal/partitioned_dataset.h — writing the partitioned dataset directory
// (format: partition.h). Reading is public (load_partition and friends).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "volley/graph/dataset.h"
#include "volley/partition/partition.h"

namespace volley::internal {

// indptr[0] == 0, non-decreasing, indptr[N] == E: O(N), for graphs loaded without validation.
// ValueError naming `source` and the first bad position.
void check_indptr(const Csr& graph, const std::string& source);

// Writes `output` from `dataset` and `assignment` (int32 [N]) in one streaming pass per array
// kind (edges, then features), with K writers open at a time. `cached[p]` lists the old ids of
// partition p's cached remote nodes, hottest first (may be empty). `result` holds the book,
// loads and quality; `elapsed` gives the seconds spent so far, for the manifest.
void write_partitioned_dataset(const Dataset& dataset, const Array& assignment,
                               const std::vector<std::vector<int64_t>>& cached,
                               const PartitionOptions& options, const PartitionResult& result,
                               const std::string& output, const std::function<double()>& elapsed);

}  // namespace volley::internal
