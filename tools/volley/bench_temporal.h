// tools/volley/bench_temporal.h — `volley bench sample --time`: what temporal sampling adds to
// untimed disjoint sampling, and the bound of the admissible-prefix searches.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "bench_util.h"
#include "volley/graph/csr.h"
#include "volley/sampling/neighbor_sampler.h"

namespace volley::cli {

// One thread sampling `batches` batches of `batch_size` seeds (batch b: slot b modulo the
// batches the pool holds), each seed with its time in `seed_times`.
struct TemporalRun {
  const Csr* graph = nullptr;
  std::span<const int64_t> seeds, seed_times;
  int64_t batch_size = 1024;
  int64_t batches = 50;
};

// The admissible-prefix searches alone over the rows the batches of `options` expand (every
// node of a batch but those of its last hop, at its tree's seed time; found in a pass first):
// the search temporal sampling makes for each row, timed without the picks. With temporal
// options these are the temporal pass's rows; with untimed disjoint ones, the disjoint pass's.
double search_seconds(const TemporalRun& run, const NeighborSamplerOptions& options);

// The bound: untimed disjoint sampling (`options`, disjoint) plus, after each batch, the
// admissible-prefix searches of the rows it expanded at their trees' seed times (the least
// work temporal sampling adds to it). Figures over both; the searches' share apart.
struct BoundFigures {
  SampleFigures figures;  // edges: the disjoint pass's; seconds: sampling and searches
  double search_seconds = 0;
};
BoundFigures run_bound(const TemporalRun& run, const NeighborSamplerOptions& options);

}  // namespace volley::cli
