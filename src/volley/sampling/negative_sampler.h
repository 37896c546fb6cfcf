// volley/sampling/negative_sampler.h — seeded negative sampling for link prediction, and the
// seed set of a link batch.
//
// A link-prediction batch scores positive edges (src, dst) of the graph against negatives: node
// pairs drawn at random that should score low. Like neighbor sampling, negative sampling here
// is a pure function of (graph, options, batch index, position): negative i of batch b comes
// from Philox keyed by a mix of options.seed with the counter (draw, i, batch), so the result is
// bit-identical for any thread count.
//
//   NegativeSampler negatives(graph, {.distribution = NegativeDistribution::kDegree,
//                                     .reject_existing = true, .seed = 7});
//   auto pairs = negatives.sample_pairs(/*count=*/2048, /*batch_index=*/b);    // "binary"
//   auto dst_neg = negatives.sample_destinations(src, /*per_source=*/5, b);     // "triplet"
//   LinkSeeds seeds = link_seeds({src, dst, pairs.src, pairs.dst});  // unique nodes + local ids
//
// Distributions (over the graph's nodes, the same for sources and destinations):
//   * kUniform: every node equally likely;
//   * kDegree: P(v) ∝ degree(v)^degree_power (word2vec's 0.75 by default), degree being the
//     length of v's CSR row (in-degree for the default kIn orientation); nodes of degree 0 are
//     never drawn (ValueError when every node has degree 0);
//   * kWeights: P(v) ∝ weights[v] (float64 [N], finite, >= 0, not all 0) — PyG's
//     NegativeSampling(src_weight / dst_weight) when both are the same vector.
//
// Rejection of existing edges (reject_existing): a draw (s, d) that is an edge s → d of the graph
// (d ∈ row(s) for kOut, s ∈ row(d) for kIn) is drawn again, up to max_draws draws for that
// negative; if every draw hits an edge (e.g. s is linked to nearly every node), the last draw is
// kept and counted in `kept_existing` of the result, so callers can warn. Membership is a binary
// search in sorted rows (build_csr sorts them; checked once at construction) and a scan otherwise.
//
// The graph itself is only needed for its node count, its row lengths (kDegree) and the
// existence check; a sampler can also be built from those alone, the check being a batched
// EdgeOracle (e.g. a BatchSource's has_edges, which may ask remote servers). Rejection then runs
// in rounds: every negative draws its first candidate from its own Philox stream; one oracle call
// checks all candidates; each negative that hit an edge draws its next candidate from its own
// stream, and one call checks those; and so on, at most max_draws rounds. Each negative consumes
// its stream exactly as a sequential draw-check-redraw loop would, so the result does not depend
// on the rounds (nor on the thread count).
//
// Time bounds (temporal link sampling, PyG's neg_sample with node_time): with options.node_time
// [N] set, sample_pairs / sample_destinations may take a time bound per negative (per source for
// destinations); that negative is then drawn from the distribution restricted to the nodes whose
// node_time is <= its bound (exactly, from a prefix of the nodes sorted by time: no redraw
// loop). When no node of positive mass is early enough, the negative is the earliest node (the
// first of the least node_time), as PyG's fallback to node_time.argmin(). reject_existing
// redraws within the same restricted distribution. Without bounds, draws are those of a sampler
// without node_time.
//
// Typed edges (a bipartite graph: an edge type of a HeteroGraph): sources are drawn from the
// source type's nodes and destinations from the destination type's, each end with its own
// tables (NegativeNodes): kDegree counts a source's out-degree and a destination's in-degree in
// that edge type; kWeights weighs each end by its own weights (an end without weights is drawn
// uniformly, as PyG's NegativeSampling without src_weight / dst_weight); a time bound restricts
// an end that has node times (an end without them is unbounded). A homogeneous graph is the
// case of one node set at both ends: its tables are shared and draws are as before.
//
// Errors: ValueError for an unknown distribution, degree_power not finite, max_draws < 1,
// weights of the wrong length or with a negative / non-finite / all-zero mass, a graph with no
// nodes, count or per_source < 0; IndexError for a source id out of [0, num_nodes) (naming it and
// its position); ValueError for node_time of the wrong length, or time bounds of the wrong length
// or without node_time.
// Work runs on the default pool (parallel.h); results do not depend on its size.
// Thread safety: a NegativeSampler is immutable after construction; calls may run concurrently.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "volley/core/philox.h"
#include "volley/graph/csr.h"
#include "volley/graph/hetero_graph.h"

namespace volley {

enum class NegativeDistribution { kUniform, kDegree, kWeights };

struct NegativeSamplerOptions {
  NegativeDistribution distribution = NegativeDistribution::kUniform;
  double degree_power = 0.75;    // kDegree only
  std::vector<double> weights;   // kWeights only: one per node
  bool reject_existing = false;  // redraw negatives that are edges of the graph
  int max_draws = 16;            // draws per negative with reject_existing (>= 1)
  uint64_t seed = 0;
  std::vector<int64_t> node_time = {};  // empty, or one time per node: enables time bounds
};

// The nodes of one end of a typed edge (see Typed edges): their count, and what the options'
// distribution and time bounds read of them.
struct NegativeNodes {
  int64_t num_nodes = 0;
  std::vector<int64_t> degrees;    // kDegree: one per node
  std::vector<double> weights;     // kWeights: one per node; empty: uniform
  std::vector<int64_t> node_time;  // empty, or one per node
};

struct NegativePairs {
  std::vector<int64_t> src;
  std::vector<int64_t> dst;
  int64_t kept_existing = 0;  // negatives that are edges after max_draws draws
};

struct NegativeDestinations {
  std::vector<int64_t> dst;   // [sources.size() * per_source], negatives of source i at i*k..
  int64_t kept_existing = 0;  // as in NegativePairs
};

// A batched edge-existence check: out[i] = 1 when src[i] → dst[i] is an edge (in the meaning
// above), 0 otherwise; src.size() == dst.size(); ids are in [0, num_nodes). May throw (the
// sampling call then throws the same). Called from the thread that calls the sampler.
using EdgeOracle =
    std::function<void(std::span<const int64_t> src, std::span<const int64_t> dst, uint8_t* out)>;

// Whether every row of `graph` is sorted (O(E), on the default pool).
bool csr_rows_sorted(const Csr& graph);
// The EdgeOracle of `graph`: binary search when `rows_sorted` (csr_rows_sorted), a scan
// otherwise. IndexError naming the pair and its position for an id out of [0, N) (the
// neighbors' ids: out of [0, num_neighbors) when that is given, a typed edge's other end).
// Runs on the calling thread.
void csr_has_edges(const Csr& graph, bool rows_sorted, std::span<const int64_t> src,
                   std::span<const int64_t> dst, uint8_t* out, int64_t num_neighbors = -1);

class NegativeSampler {
 public:
  // Checks the options (ValueError) and prepares the distribution: O(N) for kDegree/kWeights,
  // O(E) once to learn whether rows are sorted when reject_existing is set. Keeps a copy of
  // `graph` (arrays are shared, not copied).
  NegativeSampler(const Csr& graph, NegativeSamplerOptions options);
  // The same sampler over a graph known by its node count, its row lengths `degrees` (one per
  // node; needed for kDegree, ignored otherwise: ValueError when kDegree and its length is not
  // num_nodes) and `has_edges` (needed with reject_existing: ValueError when empty then). Draws
  // are identical to the Csr constructor's on the same graph.
  NegativeSampler(int64_t num_nodes, std::span<const int64_t> degrees, EdgeOracle has_edges,
                  NegativeSamplerOptions options);
  // A typed edge's sampler (see Typed edges): sources drawn from `sources`, destinations from
  // `destinations`, edges checked by `has_edges` (needed with reject_existing). options.weights
  // and options.node_time must be empty (each end carries its own: ValueError otherwise).
  NegativeSampler(NegativeNodes sources, NegativeNodes destinations, EdgeOracle has_edges,
                  NegativeSamplerOptions options);

  // "binary": `count` pairs, each end drawn from the distribution independently. `time_bounds`
  // empty, or [count]: both ends of pair i no later than time_bounds[i] (see Time bounds).
  NegativePairs sample_pairs(int64_t count, uint64_t batch_index,
                             std::span<const int64_t> time_bounds = {}) const;

  // "triplet": `per_source` destinations for each of `sources` (ids in [0, N)); with
  // reject_existing none is an edge from its source unless counted in kept_existing.
  // `time_bounds` empty, or one per source: its destinations no later than that time.
  NegativeDestinations sample_destinations(std::span<const int64_t> sources, int64_t per_source,
                                           uint64_t batch_index,
                                           std::span<const int64_t> time_bounds = {}) const;

  // This sampler with options().seed = `seed` (tables copied, not rebuilt).
  NegativeSampler reseeded(uint64_t seed) const;

  // Whether s → d is an edge of the graph (in its orientation's meaning, see above); IndexError
  // for an id out of [0, N).
  bool has_edge(int64_t src, int64_t dst) const;

  const NegativeSamplerOptions& options() const { return options_; }
  // The node counts of the ends (equal for a homogeneous graph).
  int64_t num_sources() const { return src_->num_nodes; }
  int64_t num_destinations() const { return dst_->num_nodes; }

  // The tables of one end (shared by both ends of a homogeneous graph): the node count; for
  // kDegree / kWeights the inclusive prefix sums of the mass (empty: uniform) and the last node
  // with a positive mass (rounding guard); with node_time the nodes stably sorted by time,
  // their times, and the prefix sums of their mass in that order.
  struct End {
    int64_t num_nodes = 0;
    std::vector<double> cumulative;
    int64_t last_positive = 0;
    std::vector<int64_t> by_time;
    std::vector<int64_t> sorted_time;
    std::vector<double> cumulative_by_time;
  };

 private:
  void check_options() const;
  // time_bounds.data() after checking it has `expected` entries and an end has node times;
  // nullptr when it is empty.
  const int64_t* checked_bounds(std::span<const int64_t> time_bounds, size_t expected) const;
  // One node of `end` from the distribution; with `bound` (and node times at that end), among
  // the nodes no later than *bound.
  static int64_t draw(const End& end, PhiloxStream& rng, const int64_t* bound);
  PhiloxStream stream(uint64_t position, uint64_t batch_index) const;
  // Negatives 0..count-1 of batch `batch_index` into src / dst: dst drawn always, src drawn
  // unless `sources` is given (then src[i] = sources[i / per_source]); negative i bounded by
  // bounds[i / per_source] when `bounds` is given; rejection in rounds (see above). Returns how
  // many kept an existing edge.
  int64_t draw_negatives(int64_t count, const int64_t* sources, const int64_t* bounds,
                         int64_t per_source, uint64_t batch_index, int64_t* src,
                         int64_t* dst) const;

  EdgeOracle has_edges_;
  NegativeSamplerOptions options_;
  std::shared_ptr<const End> src_, dst_;  // the same tables for a homogeneous graph
};

// The sampler of edge type `type` of `graph` (Typed edges): its ends' node counts and degrees
// are read from the graph, `sources` / `destinations` give their weights and node times
// (their num_nodes and degrees are ignored); reject_existing checks the edge type's Csr. An
// edge type the graph lacks (supervision edges without message-passing ones) has no edges.
// ValueError naming an unknown node type, and those of the typed constructor.
NegativeSampler edge_type_negatives(const HeteroGraph& graph, const EdgeType& type,
                                    NegativeNodes sources, NegativeNodes destinations,
                                    NegativeSamplerOptions options);

// The seed nodes of a link batch: the sorted, distinct ids of every given id array (as PyG's
// `torch.cat(...).unique(return_inverse=True)`), and for each input array the local index
// (position in `nodes`) of each of its ids.
struct LinkSeeds {
  std::vector<int64_t> nodes;               // sorted, distinct
  std::vector<std::vector<int64_t>> local;  // local[a][i]: index in nodes of ids[a][i]
};

// Builds LinkSeeds of `ids` (each array's ids >= 0; IndexError naming the array, position and
// value otherwise).
LinkSeeds link_seeds(std::span<const std::span<const int64_t>> ids);

}  // namespace volley
