// volley/loader/link_loader.h — mini-batches for link prediction (PyG's LinkNeighborLoader).
//
// The input is a list of supervision edges `edge_label_index` (int64 [2, M]: sources, then
// destinations), optionally with labels `edge_label` [M]. An epoch shuffles the edges (seeded),
// cuts them into batches of batch_size edges, and for each batch: draws negatives (seeded),
// samples the neighborhood of every end point, and gathers features / labels / attributes of
// the sampled nodes, on the same worker-thread pipeline as NeighborLoader (Epoch, batch.h).
//
//   LinkLoader loader(source, edge_label_index, std::nullopt,
//                     {.loader = {.batch_size = 1024, .shuffle = true, .num_threads = 2,
//                                 .sampler = {.fanouts = {15, 10, 5}}},
//                      .negatives = {.mode = NegativeMode::kBinary, .amount = 1.0}});
//   auto epoch = loader.start_epoch(0);
//   while (auto batch = epoch->next()) { ... batch->edge_label_index ... batch->x ... }
//
// Batch layout (PyG 2.5's edge_sample, non-disjoint). Let B be the batch's positive edges
// (src, dst) and input_ids their positions in edge_label_index.
//   * kNone: the seed nodes are the distinct end points, sorted (torch.unique); edge_label_index
//     [2, B] holds their local ids; edge_label the given labels (undefined without labels).
//   * kBinary: N = ceil(amount × B) negative pairs (both ends drawn) follow the positives:
//     edge_label_index [2, B + N]; edge_label = the given labels (same dtype) or float32 ones for
//     positives, then zeros. PyG adds 1 to given labels whose minimum is 0 so that 0 means
//     "negative": the Python loader does that, this class takes labels as they are.
//   * kTriplet (amount an integer >= 1; no labels): amount negative destinations per positive
//     source; src_index [B], dst_pos_index [B], dst_neg_index [B, amount] local ids
//     (Python squeezes [B, 1] to [B], as PyG does); edge_label_index / edge_label undefined.
//   Batch::nodes starts with the seed nodes (sorted, distinct), then the sampled neighbors, as
//   NeighborLoader's batches; edge_index / edge_ids / x / y / attributes are NeighborLoader's.
//
// Disjoint (options.loader.sampler.disjoint; PyG's disjoint=True) and temporal sampling: every
// end point is its own seed and tree, in PyG's layout — the seed list is the sources, then the
// destinations, then (triplet) the negatives of round k for every source, round by round; local
// ids are positions in that list (no dedupe); Batch::batch_ids is each node's seed position
// modulo B (its supervision edge; negatives by position, as PyG). Temporal sampling
// (sampler.time_source set) forces disjoint; loader.input_time then holds edge_label_time, one
// int64 per supervision edge, and each end point is sampled with its edge's time (negative i of
// either list with edge i mod B's, as PyG's repeat). With node time (sampler.time_source kNode),
// negatives are drawn only among the nodes no later than that time (PyG's neg_sample; the
// earliest node when none is): a negative's own tree never holds a node later than its seed
// time. The source must give node_times() then. With edge time negatives are unrestricted (PyG
// has no node time to bound them by).
//
// Negatives (NegativeSampler, negative_sampler.h): the distribution (uniform, degree^power from
// the source's degrees(), or weights) over all nodes; with reject_existing a negative that is an
// edge of the graph is redrawn (checked by the source's has_edges, batched), up to max_draws
// draws; Batch::negatives_kept_existing counts those still edges after that.
//
// Leakage (exclude_edges): PyG's LinkNeighborLoader relies on the user passing disjoint
// message-passing and supervision edges (RandomLinkSplit). With exclude_edges the loader also
// removes, from each batch's sampled edge_index, every edge (global u → v) that equals one of
// the batch's positive supervision pairs (src → dst), and, with undirected, its reverse
// (dst → src) too. Only the batch's own positives are removed (not negatives, not other
// batches' edges); nodes stay (a node reached only through a removed edge is still in the
// batch); edges_per_hop is recounted.
//
// Determinism: batch b of epoch e is a pure function of (inputs, options, e, b): the shuffle is
// keyed by (seed, e), negatives and neighbor sampling by (a mix of seed and e, b), for any
// thread count; options.loader.rank / world_size split the edges as NeighborLoader splits
// nodes (input_ids index the full edge list).
//
// Typed graphs (a HeteroNeighborSampler): the supervision edges are those of one edge type (row
// 0 ids of its source type, row 1 of its destination type) and each end point is a seed of its
// own node type. The seeds of each type are built as above (sorted and distinct; disjoint: as
// they come, sources then destinations then negatives) — when both ends have one type, its
// seeds are all the end points together, exactly as a homogeneous batch's. The Batch is typed
// (Batch::node_types / edge_types, the NeighborLoader typed constructor's layout) and its link
// fields are local ids into their type's nodes: edge_label_index row 0 and src_index into the
// source type's, row 1, dst_pos_index and dst_neg_index into the destination type's; in
// disjoint batches each node type's batch_ids are its tree modulo B. Negatives come from the
// NegativeSampler given (edge_type_negatives: each end over its own type), which carries the
// distribution. exclude_edges removes the batch's positives from the supervision edge type's
// sampled edges, and with undirected their reverses from every edge type going from the
// destination type to the source type (the supervision type itself when both ends have one).
//
// Errors (constructor, ValueError / IndexError naming the value): edge_label_index not int64
// [2, M]; an id out of [0, num_nodes) (naming it, its row and position); edge_label not 1-d of
// M numbers (bool or numeric); amount negative or not finite; triplet with a fractional amount,
// amount 0, or labels; edge_label_time (loader.input_time) without temporal sampling, missing
// with it, not int64 [M] in host memory; degree distribution or
// reject_existing on a source that cannot give degrees / check edges, negatives under node-time
// sampling on a source that cannot give node times (the source's ValueError); the
// LoaderOptions errors of NeighborLoader. M = 0 gives epochs without batches.
// Thread safety: one consumer per epoch; a LinkLoader may run several epochs concurrently.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "volley/core/array.h"
#include "volley/loader/batch.h"
#include "volley/loader/batch_source.h"
#include "volley/loader/neighbor_loader.h"
#include "volley/sampling/negative_sampler.h"

namespace volley {

enum class NegativeMode { kNone, kBinary, kTriplet };

struct LinkNegativeOptions {
  NegativeMode mode = NegativeMode::kNone;
  double amount = 1.0;  // kBinary: ratio (N = ceil(amount × B)); kTriplet: per positive
  NegativeDistribution distribution = NegativeDistribution::kUniform;
  double degree_power = 0.75;
  std::vector<double> weights;  // kWeights: one per node
  bool reject_existing = false;
  int max_draws = 16;
};

struct LinkLoaderOptions {
  LoaderOptions loader;  // batch_size counts positive supervision edges; seeds derived as there
  LinkNegativeOptions negatives;
  bool exclude_edges = false;  // remove the batch's positives from its message-passing edges
  bool undirected = false;     // with exclude_edges: their reverses too
};

class LinkLoader {
 public:
  // `edge_label_index` int64 [2, M]; `edge_label` [M] or nullopt. `attributes` as in
  // NeighborLoader (rows = the source's nodes / graph edges; `num_graph_edges` is the edge
  // count they are checked against, needed only when attributes.edge is not empty).
  LinkLoader(std::shared_ptr<const BatchSource> source, Array edge_label_index,
             std::optional<Array> edge_label, LinkLoaderOptions options,
             LoaderAttributes attributes = {}, int64_t num_graph_edges = -1);
  // The same over a graph and optional features / labels of this process (LocalBatchSource).
  LinkLoader(Csr graph, std::optional<FeatureStore> features, std::optional<FeatureStore> labels,
             Array edge_label_index, std::optional<Array> edge_label, LinkLoaderOptions options,
             LoaderAttributes attributes = {});

  // The same pipeline over a typed graph (see Typed graphs): supervision edges of `edge_type`,
  // sampled by `source` (batch_source.h; its options are the sampling options:
  // options.loader.sampler is ignored, and temporal sampling is the source's), negatives drawn
  // by `negatives` (needed unless options.negatives.mode is kNone; its distribution replaces
  // options.negatives'), `attributes` and the source's own fields gathered per type. Lookahead
  // does not apply. ValueError for an unknown edge type or end type (naming the known ones), a
  // missing source, negatives or their end counts other than the edge type's, and the errors
  // above (ids checked against their end's type).
  LinkLoader(std::shared_ptr<const TypedBatchSource> source, const EdgeType& edge_type,
             Array edge_label_index, std::optional<Array> edge_label, LinkLoaderOptions options,
             std::optional<NegativeSampler> negatives, TypedAttributes attributes = {});
  // The same over a sampler of this process (TypedSamplerSource).
  LinkLoader(std::shared_ptr<HeteroNeighborSampler> sampler, const EdgeType& edge_type,
             Array edge_label_index, std::optional<Array> edge_label, LinkLoaderOptions options,
             std::optional<NegativeSampler> negatives, TypedAttributes attributes = {});

  // Supervision edges (all ranks') and batches per epoch of this rank.
  int64_t num_inputs() const { return num_inputs_; }
  int64_t num_batches() const;
  const LinkLoaderOptions& options() const { return options_; }
  // Positions into the supervision edges that this rank visits in epoch `epoch_index`, in batch
  // order: the batches' input_ids, concatenated.
  Array epoch_positions(int64_t epoch_index) const;

  // Starts epoch `epoch_index` (workers begin at once). Any number of epochs, in any order.
  // `first_batch` > 0 resumes the epoch there: its batches [first_batch, num_batches()), each
  // the same as in a whole epoch.
  std::unique_ptr<Epoch> start_epoch(int64_t epoch_index, int64_t first_batch = 0) const;

 private:
  struct Shared;
  struct EpochWork;
  // The checks and options every kind shares, once the supervision edges are read.
  void adopt_inputs(Shared& shared, std::optional<Array> edge_label);
  std::shared_ptr<const Shared> shared_;
  int64_t num_inputs_ = 0;
  LinkLoaderOptions options_;
};

}  // namespace volley
