// volley/feature/hotness.h — which rows a training epoch reads most: the order a tiered
// FeatureStore fills its fastest tiers in.
//
//   Array order = hotness_by_degree(graph);                       // most in-edges first
//   Array order = hotness_by_sampling(graph, train_ids, {.fanouts = {15, 10, 5}, .seed = 0},
//                                     /*batch_size=*/1024, /*max_batches=*/100);
//   FeatureStore store = FeatureStore::build(x, {.tiers = {{.byte_budget = budget}},
//                                                .hot_order = order});
//
// Both return an int64 [N] permutation of the rows, hottest first, ties broken by smaller id:
// deterministic for any thread count.
//  * by degree: a row's in-degree, i.e. how many edges lead into the node. For the default
//    kIn graph that is the row's neighbor count; for a kOut graph, how often it appears as a
//    neighbor.
//  * by sampling (what Quiver and GLT call sampling probability): runs the sampler over a
//    simulated epoch — `seeds` cut in order into batches of `batch_size`, at most `max_batches`
//    of them (0: all), batch b sampled with batch index b — and counts in how many batches each
//    row is among the sampled nodes (the rows the loader gathers). Uses the default thread pool.
// Throws what sample_neighbors throws for bad seeds or options, ValueError for batch_size < 1.
#pragma once

#include <cstdint>
#include <span>

#include "volley/core/array.h"
#include "volley/graph/csr.h"
#include "volley/sampling/neighbor_sampler.h"

namespace volley {

Array hotness_by_degree(const Csr& graph);

Array hotness_by_sampling(const Csr& graph, std::span<const int64_t> seeds,
                          const NeighborSamplerOptions& options, int64_t batch_size,
                          int64_t max_batches = 0);

// Row ids ordered by `counts` (int32 or int64 [N]) descending, ties by id: the shared last step.
Array order_by_counts(const Array& counts);

}  // namespace volley
