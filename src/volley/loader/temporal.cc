// Temporal sampling in the loader: LoaderOptions::input_time checks, a batch's seed times, and
// the sources' sample_temporal (neighbor_loader.h, batch_source.h).
#include <vector>

#include "volley/loader/neighbor_loader.h"

namespace volley {

void BatchSource::sample_temporal(std::span<const int64_t> /*seeds*/,
                                  std::span<const int64_t> /*seed_times*/,
                                  const NeighborSamplerOptions& /*options*/,
                                  uint64_t /*batch_index*/, SampledSubgraph& /*out*/) const {
  throw ValueError(
      "this batch source does not sample by time; temporal sampling runs on a graph "
      "in this process (the CPU loader)");
}

void LocalBatchSource::sample_temporal(std::span<const int64_t> seeds,
                                       std::span<const int64_t> seed_times,
                                       const NeighborSamplerOptions& options, uint64_t batch_index,
                                       SampledSubgraph& out) const {
  thread_local SamplerScratch scratch;  // as in sample(): one per worker thread
  out = sample_neighbors(graph(), seeds, seed_times, options, batch_index, &scratch);
}

namespace loader_internal {

void check_input_time(const LoaderOptions& options, int64_t num_inputs) {
  const bool temporal = options.sampler.time_source != TimeSource::kNone;
  VOLLEY_REQUIRE(!temporal || options.input_time.has_value(), ValueError,
                 "temporal sampling (time_attr) needs input_time: one time per input node");
  VOLLEY_REQUIRE(temporal || !options.input_time.has_value(), ValueError,
                 "input_time was given, but sampling is not temporal (set time_attr)");
  if (!temporal) return;
  const Array& time = *options.input_time;
  VOLLEY_REQUIRE(time.defined() && time.ndim() == 1 && time.dtype() == DType::kInt64, ValueError,
                 "input_time must be a 1-d int64 array, got {}",
                 time.defined() ? time.describe() : std::string("nothing"));
  VOLLEY_REQUIRE(time.numel() == num_inputs, ValueError,
                 "input_time has {} entries, but there are {} input nodes (one time each)",
                 time.numel(), num_inputs);
  VOLLEY_REQUIRE(time.buffer().host_accessible(), ValueError,
                 "input_time must be in host memory, got {} memory",
                 location_name(time.buffer().location()));
}

std::vector<int64_t> seed_times_at(const Array& input_time, std::span<const int64_t> positions) {
  const int64_t* time = input_time.data<int64_t>();
  std::vector<int64_t> out(positions.size());
  for (size_t i = 0; i < positions.size(); ++i) out[i] = time[positions[i]];
  return out;
}

}  // namespace loader_internal
}  // namespace volley
