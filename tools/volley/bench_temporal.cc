// `volley bench sample --time --modes ...,bound`: the admissible-prefix searches timed apart
// (bench_temporal.h). The searches run through volley::temporal_degrees, the kernel's own
// search (chunks of rows searched together) over the rows a batch expanded.
#include "bench_temporal.h"

#include "volley/core/error.h"

namespace volley::cli {
namespace {

// The rows one batch expanded (every node but those of the last hop) and their trees' times.
struct Searches {
  std::vector<int64_t> nodes, times;
};

std::span<const int64_t> batch_of(std::span<const int64_t> list, const TemporalRun& run,
                                  int64_t b) {
  const int64_t available = static_cast<int64_t>(run.seeds.size()) / run.batch_size;
  VOLLEY_REQUIRE(available >= 1, ValueError, "--batch-size {} exceeds the {} seeds available",
                 run.batch_size, run.seeds.size());
  const int64_t slot = b % available;
  return list.subspan(static_cast<size_t>(slot * run.batch_size),
                      static_cast<size_t>(run.batch_size));
}

SampledSubgraph sample(const TemporalRun& run, const NeighborSamplerOptions& options, int64_t b,
                       SamplerScratch& scratch) {
  const auto seeds = batch_of(run.seeds, run, b);
  if (options.time_source == TimeSource::kNone) {
    return sample_neighbors(*run.graph, seeds, options, static_cast<uint64_t>(b), &scratch);
  }
  return sample_neighbors(*run.graph, seeds, batch_of(run.seed_times, run, b), options,
                          static_cast<uint64_t>(b), &scratch);
}

Searches expanded_rows(const SampledSubgraph& batch, std::span<const int64_t> tree_times) {
  int64_t expanded = 0;
  for (size_t h = 0; h + 1 < batch.nodes_per_hop.size(); ++h) expanded += batch.nodes_per_hop[h];
  const int64_t* nodes = batch.nodes.data<int64_t>();
  const int64_t* trees = batch.batch.data<int64_t>();
  Searches out;
  out.nodes.assign(nodes, nodes + expanded);
  out.times.resize(static_cast<size_t>(expanded));
  for (int64_t i = 0; i < expanded; ++i) out.times[i] = tree_times[trees[i]];
  return out;
}

std::vector<Searches> all_expanded_rows(const TemporalRun& run,
                                        const NeighborSamplerOptions& options) {
  SamplerScratch scratch;
  std::vector<Searches> rows;
  for (int64_t b = 0; b < run.batches; ++b) {
    rows.push_back(
        expanded_rows(sample(run, options, b, scratch), batch_of(run.seed_times, run, b)));
  }
  return rows;
}

void search(const Csr& graph, const Searches& rows, std::vector<int64_t>& degrees) {
  degrees.resize(rows.nodes.size());
  temporal_degrees(graph, rows.nodes, rows.times, TimeKind::kEdge, degrees);
}

}  // namespace

double search_seconds(const TemporalRun& run, const NeighborSamplerOptions& options) {
  const std::vector<Searches> rows = all_expanded_rows(run, options);
  std::vector<int64_t> degrees;
  const auto start = Clock::now();
  for (const Searches& batch : rows) search(*run.graph, batch, degrees);
  return seconds_since(start);
}

BoundFigures run_bound(const TemporalRun& run, const NeighborSamplerOptions& options) {
  VOLLEY_REQUIRE(options.time_source == TimeSource::kNone && options.disjoint, ValueError,
                 "the bound samples untimed and disjoint");
  const std::vector<Searches> rows = all_expanded_rows(run, options);
  SamplerScratch scratch;
  std::vector<int64_t> degrees;
  BoundFigures out;
  const double cpu_start = process_cpu_seconds();
  for (int64_t b = 0; b < run.batches; ++b) {
    const auto start = Clock::now();
    const SampledSubgraph batch = sample(run, options, b, scratch);
    const auto sampled = Clock::now();
    search(*run.graph, rows[static_cast<size_t>(b)], degrees);
    out.figures.edges += batch.num_edges();
    out.figures.nodes += batch.num_nodes();
    out.figures.seconds += seconds_since(start);
    out.search_seconds += seconds_since(sampled);
  }
  out.figures.cpu_seconds = process_cpu_seconds() - cpu_start;
  return out;
}

}  // namespace volley::cli
