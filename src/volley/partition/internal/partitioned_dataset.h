// volley/partition/internal/partitioned_dataset.h — writing the partitioned dataset directory of
// either kind (formats: partition.h, hetero_partition.h). Reading is public (load_partition and
// friends; the one reader: partitioned_directory.h).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "volley/graph/dataset.h"
#include "volley/graph/hetero_dataset.h"
#include "volley/graph/io/npy.h"
#include "volley/partition/hetero_partition.h"
#include "volley/partition/partition.h"

namespace volley::internal {

// indptr[0] == 0, non-decreasing, indptr[N] == E: O(N), for graphs loaded without validation.
// ValueError naming `source` and the first bad position.
void check_indptr(const Csr& graph, const std::string& source);

// The output directory (partitioned_output.cc), shared by both writers. write_staged checks
// `output` (IoError before anything is written when it exists and is neither empty nor a
// partitioned dataset), raises the soft limit on open files for about 3 files of each of
// `num_parts` parts, calls `write` with a staging directory beside `output`
// ("<output>.partial-PID", trailing slashes of `output` ignored) and renames it onto `output` when
// `write` returns; on an error the staging directory is removed and the error rethrown.
// prepare_output creates the empty staging directory (a crashed run's removed).
void write_staged(const std::string& output, int64_t num_parts,
                  const std::function<void(const std::string& staging)>& write);
void prepare_output(const std::string& staging);

// Streams the rows of `features` ([N, D], N the rows of one node type; possibly mapped) to the
// writer of each row's part (`part_of`, int32 [N]), in row order, `chunk_bytes` at a time.
void write_features(const Array& features, const int32_t* part_of, int64_t num_parts,
                    std::vector<std::unique_ptr<NpyWriter>>& writers, int64_t chunk_bytes);

// Writes `output` from `dataset` and `assignment` (int32 [N]) in one streaming pass per array
// kind (edges, then features), with K writers open at a time. `cached[p]` lists the old ids of
// partition p's cached remote nodes, hottest first (may be empty). `result` holds the book,
// loads and quality; `elapsed` gives the seconds spent so far, for the manifest.
void write_partitioned_dataset(const Dataset& dataset, const Array& assignment,
                               const std::vector<std::vector<int64_t>>& cached,
                               const PartitionOptions& options, const PartitionResult& result,
                               const std::string& output, const std::function<double()>& elapsed);

// Writes `output` from `dataset` and `assignment` (int32 [N_T] per node type): the node maps,
// each part's heterogeneous dataset directory and part.json, then partition.json, in a staging
// directory renamed onto `output`. `result` holds the books, loads and quality; `elapsed` the
// seconds so far, for the manifest.
void write_hetero_partitioned_dataset(const HeteroDataset& dataset,
                                      const std::vector<Array>& assignment,
                                      const PartitionOptions& options,
                                      const HeteroPartitionResult& result,
                                      const std::string& output,
                                      const std::function<double()>& elapsed);

}  // namespace volley::internal
