// volley/loader/link_parts.cc — see internal/link_parts.h.
#include "volley/loader/internal/link_parts.h"

#include <algorithm>
#include <cmath>

#include "volley/core/error.h"

namespace volley::loader_internal {

void check_negative_options(const LinkNegativeOptions& negatives, bool has_labels) {
  const double amount = negatives.amount;
  VOLLEY_REQUIRE(std::isfinite(amount) && amount >= 0, ValueError,
                 "negative sampling amount must be finite and >= 0, got {}", amount);
  if (negatives.mode == NegativeMode::kTriplet) {
    VOLLEY_REQUIRE(amount >= 1 && amount == std::floor(amount), ValueError,
                   "triplet negative sampling needs a whole amount >= 1 (negatives per positive), "
                   "got {}",
                   amount);
    VOLLEY_REQUIRE(!has_labels, ValueError,
                   "edge_label must be left out for triplet negative sampling (PyG's rule)");
  }
  VOLLEY_REQUIRE(negatives.mode == NegativeMode::kNone || negatives.mode == NegativeMode::kBinary ||
                     negatives.mode == NegativeMode::kTriplet,
                 ValueError, "unknown negative sampling mode {}", static_cast<int>(negatives.mode));
}

void read_edges(const Array& edge_label_index, int64_t num_sources, int64_t num_destinations,
                std::vector<int64_t>& src, std::vector<int64_t>& dst, const std::string& src_what,
                const std::string& dst_what) {
  VOLLEY_REQUIRE(edge_label_index.defined() && edge_label_index.ndim() == 2 &&
                     edge_label_index.shape()[0] == 2 && edge_label_index.dtype() == DType::kInt64,
                 ValueError, "edge_label_index must be an int64 array [2, M], got {}",
                 edge_label_index.defined() ? edge_label_index.describe() : std::string("none"));
  const int64_t m = edge_label_index.shape()[1];
  const int64_t* ids = edge_label_index.data<int64_t>();
  for (int64_t row = 0; row < 2; ++row) {
    const int64_t n = row == 0 ? num_sources : num_destinations;
    const std::string& what = row == 0 ? src_what : dst_what;
    for (int64_t i = 0; i < m; ++i) {
      const int64_t id = ids[row * m + i];
      if (id >= 0 && id < n) continue;
      if (what.empty()) {
        throw IndexError(
            fmt::format("edge_label_index[{}, {}] = {} is out of range for a graph with {} nodes",
                        row, i, id, n));
      }
      throw IndexError(
          fmt::format("edge_label_index[{}, {}] = {} is out of range for {}", row, i, id, what));
    }
  }
  src.assign(ids, ids + m);
  dst.assign(ids + m, ids + 2 * m);
}

void check_edge_label(const Array& edge_label, int64_t num_edges) {
  VOLLEY_REQUIRE(edge_label.ndim() == 1 && edge_label.numel() == num_edges &&
                     (is_integer(edge_label.dtype()) || is_floating(edge_label.dtype()) ||
                      edge_label.dtype() == DType::kBool),
                 ValueError, "edge_label must be a 1-d numeric array of {} labels, got {}",
                 num_edges, edge_label.describe());
}

void check_edge_label_time(const LoaderOptions& loader, int64_t num_edges) {
  const bool temporal = loader.sampler.time_source != TimeSource::kNone;
  VOLLEY_REQUIRE(!temporal || loader.input_time.has_value(), ValueError,
                 "temporal link sampling (time_attr) needs edge_label_time: one time per "
                 "supervision edge");
  VOLLEY_REQUIRE(temporal || !loader.input_time.has_value(), ValueError,
                 "edge_label_time was given, but sampling is not temporal (set time_attr)");
  if (!temporal) return;
  const Array& time = *loader.input_time;
  VOLLEY_REQUIRE(time.defined() && time.ndim() == 1 && time.dtype() == DType::kInt64 &&
                     time.buffer().host_accessible(),
                 ValueError, "edge_label_time must be a 1-d int64 array in host memory, got {}",
                 time.defined() ? time.describe() : std::string("nothing"));
  VOLLEY_REQUIRE(time.numel() == num_edges, ValueError,
                 "edge_label_time has {} entries, but there are {} supervision edges (one time "
                 "each)",
                 time.numel(), num_edges);
}

NegativeSampler make_negative_sampler(const std::shared_ptr<const BatchSource>& source,
                                      const LinkLoaderOptions& options) {
  const LinkNegativeOptions& negatives = options.negatives;
  std::vector<int64_t> degrees;
  if (negatives.distribution == NegativeDistribution::kDegree) degrees = source->degrees();
  EdgeOracle oracle;
  if (negatives.reject_existing) {
    const int64_t probe = 0;
    uint8_t hit = 0;
    source->has_edges({&probe, 1}, {&probe, 1}, &hit);
    oracle = [source](std::span<const int64_t> src, std::span<const int64_t> dst, uint8_t* out) {
      source->has_edges(src, dst, out);
    };
  }
  std::vector<int64_t> node_time;
  if (options.loader.sampler.time_source == TimeSource::kNode) node_time = source->node_times();
  return NegativeSampler(source->num_nodes(), degrees, std::move(oracle),
                         {.distribution = negatives.distribution,
                          .degree_power = negatives.degree_power,
                          .weights = negatives.weights,
                          .reject_existing = negatives.reject_existing,
                          .max_draws = negatives.max_draws,
                          .seed = 0,
                          .node_time = std::move(node_time)});
}

SeedGroups seed_groups(std::span<const std::span<const int64_t>> arrays,
                       std::span<const int> group_of, int num_groups, bool disjoint) {
  SeedGroups out;
  out.nodes.resize(static_cast<size_t>(num_groups));
  out.local.resize(arrays.size());
  for (int g = 0; g < num_groups; ++g) {
    std::vector<std::span<const int64_t>> members;
    std::vector<size_t> which;
    for (size_t a = 0; a < arrays.size(); ++a) {
      if (group_of[a] != g) continue;
      members.push_back(arrays[a]);
      which.push_back(a);
    }
    if (disjoint) {  // the ids as they come, one tree each
      for (size_t k = 0; k < members.size(); ++k) {
        std::vector<int64_t>& local = out.local[which[k]];
        for (const int64_t id : members[k]) {
          local.push_back(static_cast<int64_t>(out.nodes[g].size()));
          out.nodes[g].push_back(id);
        }
      }
      continue;
    }
    LinkSeeds seeds = link_seeds(members);
    out.nodes[g] = std::move(seeds.nodes);
    for (size_t k = 0; k < members.size(); ++k) out.local[which[k]] = std::move(seeds.local[k]);
  }
  return out;
}

NodePairs node_pairs(std::span<const int64_t> src, std::span<const int64_t> dst, bool forward,
                     bool reverse) {
  NodePairs pairs;
  pairs.reserve(src.size() * (forward && reverse ? 2 : 1));
  for (size_t i = 0; i < src.size(); ++i) {
    if (forward) pairs.emplace_back(src[i], dst[i]);
    if (reverse) pairs.emplace_back(dst[i], src[i]);
  }
  std::sort(pairs.begin(), pairs.end());
  return pairs;
}

std::vector<int64_t> edges_outside(const NodePairs& pairs, const int64_t* sources,
                                   const int64_t* destinations, const int64_t* rows,
                                   const int64_t* cols, std::vector<int64_t>& per_hop) {
  std::vector<int64_t> kept;
  int64_t k = 0;
  for (int64_t& count : per_hop) {
    const int64_t end = k + count;
    count = 0;
    for (; k < end; ++k) {
      const std::pair<int64_t, int64_t> edge{sources[cols[k]], destinations[rows[k]]};
      if (std::binary_search(pairs.begin(), pairs.end(), edge)) continue;
      kept.push_back(k);
      ++count;
    }
  }
  return kept;
}

Array pair_index(const std::vector<int64_t>& first, const std::vector<int64_t>& second) {
  const auto count = static_cast<int64_t>(first.size());
  Array out = Array::empty(DType::kInt64, {2, count});
  std::copy(first.begin(), first.end(), out.data<int64_t>());
  std::copy(second.begin(), second.end(), out.data<int64_t>() + count);
  return out;
}

}  // namespace volley::loader_internal
