// Argument checks and dispatch of sample_neighbors; the CPU kernel is in cpu/neighbor_kernel.h.
#include "volley/sampling/neighbor_sampler.h"

#include "volley/sampling/cpu/neighbor_kernel.h"

namespace volley {

SamplerScratch::SamplerScratch() = default;
SamplerScratch::~SamplerScratch() = default;
SamplerScratch::SamplerScratch(SamplerScratch&&) noexcept = default;
SamplerScratch& SamplerScratch::operator=(SamplerScratch&&) noexcept = default;

struct SamplerScratch::State : cpu::NeighborScratch {};

struct SamplerScratchAccess {
  static cpu::NeighborScratch& get(SamplerScratch& scratch) {
    if (!scratch.state_) scratch.state_ = std::make_unique<SamplerScratch::State>();
    return *scratch.state_;
  }
};

void validate_sampler_options(const NeighborSamplerOptions& options, bool graph_has_weights) {
  VOLLEY_REQUIRE(!options.fanouts.empty(), ValueError,
                 "fanouts must list at least one hop (e.g. [15, 10]), got an empty list");
  for (size_t hop = 0; hop < options.fanouts.size(); ++hop) {
    VOLLEY_REQUIRE(options.fanouts[hop] >= -1, ValueError,
                   "fanout {} at hop {} is invalid: use a count >= 0, or -1 for all neighbors",
                   options.fanouts[hop], hop);
  }
  VOLLEY_REQUIRE(!options.weighted || graph_has_weights, ValueError,
                 "weighted sampling needs edge weights, but the graph has none");
  VOLLEY_REQUIRE(options.fanouts.size() < 256, ValueError, "at most 255 hops are supported, got {}",
                 options.fanouts.size());
}

void validate_sampler_options(const Csr& graph, const NeighborSamplerOptions& options) {
  validate_sampler_options(options, graph.has_weights());
}

void sample_neighbors(const Csr& graph, std::span<const int64_t> seeds,
                      const NeighborSamplerOptions& options, uint64_t batch_index,
                      SampledSubgraph& out, SamplerScratch* scratch) {
  validate_sampler_options(graph, options);
  const auto borrowed = scratch != nullptr ? nullptr : cpu::borrow_scratch();
  cpu::sample_neighbors_cpu(graph, seeds, options, batch_index,
                            borrowed ? *borrowed : SamplerScratchAccess::get(*scratch), out);
}

SampledSubgraph sample_neighbors(const Csr& graph, std::span<const int64_t> seeds,
                                 const NeighborSamplerOptions& options, uint64_t batch_index,
                                 SamplerScratch* scratch) {
  SampledSubgraph result;
  sample_neighbors(graph, seeds, options, batch_index, result, scratch);
  return result;
}

void sample_hop(const Csr& graph, int64_t first_node, std::span<const int64_t> targets, int hop,
                int64_t fanout, const NeighborSamplerOptions& options, uint64_t batch_index,
                HopSample& out, SamplerScratch* scratch) {
  VOLLEY_REQUIRE(fanout >= -1, ValueError,
                 "fanout {} at hop {} is invalid: use a count >= 0, or -1 for all neighbors",
                 fanout, hop);
  VOLLEY_REQUIRE(hop >= 0 && hop < 256, ValueError, "hop {} out of range [0, 256)", hop);
  VOLLEY_REQUIRE(!options.weighted || graph.has_weights(), ValueError,
                 "weighted sampling needs edge weights, but the graph has none");
  const auto borrowed = scratch != nullptr ? nullptr : cpu::borrow_scratch();
  cpu::sample_hop_cpu(graph, first_node, targets, hop, fanout, options, batch_index,
                      borrowed ? *borrowed : SamplerScratchAccess::get(*scratch), out);
}

}  // namespace volley
