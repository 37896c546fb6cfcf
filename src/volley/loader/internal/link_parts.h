// volley/loader/internal/link_parts.h — the parts of a link batch that LinkLoader composes for
// both graph kinds (link_loader.h): the checks of its inputs, the seed groups of its end points
// (one per node type of the ends; one for a homogeneous graph) and the removal of its positives
// from the sampled edges.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "volley/core/array.h"
#include "volley/loader/batch_source.h"
#include "volley/loader/link_loader.h"

namespace volley::loader_internal {

// ValueError naming the value: amount negative or not finite; triplet with a fractional amount,
// amount 0 or labels; an unknown mode.
void check_negative_options(const LinkNegativeOptions& negatives, bool has_labels);

// The supervision edges of `edge_label_index` (int64 [2, M]) into `src` / `dst`: row 0 checked
// against `num_sources` ids, row 1 against `num_destinations`; `what` names the ids' range in
// the IndexError ("a graph with N nodes" by default).
void read_edges(const Array& edge_label_index, int64_t num_sources, int64_t num_destinations,
                std::vector<int64_t>& src, std::vector<int64_t>& dst,
                const std::string& src_what = "", const std::string& dst_what = "");

// edge_label: 1-d, M numbers (bool or numeric); ValueError otherwise.
void check_edge_label(const Array& edge_label, int64_t num_edges);

// Temporal link sampling: loader.input_time holds edge_label_time, one time per supervision edge,
// needed exactly when loader.sampler.time_source is set (ValueError naming what is wrong).
void check_edge_label_time(const LoaderOptions& loader, int64_t num_edges);

// A homogeneous loader's negative sampler over `source` (seed 0; reseeded per epoch), with the
// source's checks (degrees, edge check, node times) made now. Under node-time sampling,
// negatives are bounded by node time.
NegativeSampler make_negative_sampler(const std::shared_ptr<const BatchSource>& source,
                                      const LinkLoaderOptions& options);

// The seeds of a link batch's id arrays by group: array a belongs to group group_of[a] (in
// [0, num_groups)). A group's seeds are its arrays' ids sorted and distinct (link_seeds) or, when
// `disjoint`, as they come, array after array; local[a] holds array a's ids as positions in its
// group's seeds.
struct SeedGroups {
  std::vector<std::vector<int64_t>> nodes;  // per group
  std::vector<std::vector<int64_t>> local;  // per array
};
SeedGroups seed_groups(std::span<const std::span<const int64_t>> arrays,
                       std::span<const int> group_of, int num_groups, bool disjoint);

// Node pairs (global ids, source then destination), sorted.
using NodePairs = std::vector<std::pair<int64_t, int64_t>>;
// The pairs (src[i], dst[i]) when `forward`, and (dst[i], src[i]) when `reverse`, sorted.
NodePairs node_pairs(std::span<const int64_t> src, std::span<const int64_t> dst, bool forward,
                     bool reverse);

// Of sampled edges k (source sources[cols[k]], destination destinations[rows[k]]), hop h holding
// the next per_hop[h] of them: the positions of those whose pair is not in `pairs`, in order;
// per_hop is recounted.
std::vector<int64_t> edges_outside(const NodePairs& pairs, const int64_t* sources,
                                   const int64_t* destinations, const int64_t* rows,
                                   const int64_t* cols, std::vector<int64_t>& per_hop);

// int64 [2, L]: first, then second.
Array pair_index(const std::vector<int64_t>& first, const std::vector<int64_t>& second);

}  // namespace volley::loader_internal
