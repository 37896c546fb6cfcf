// volley/graph/internal/generator.h — what the graph generator's files share (internal): the
// layout of its random streams and Walker's alias method. See generate.h for the contract.
#pragma once

#include <cmath>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "volley/core/philox.h"
#include "volley/graph/generate.h"

namespace volley::generator_internal {

// What a random stream is for: word[3] of its Philox counter. Words 1 and 2 carry the id of the
// node, class or edge block the stream belongs to; word 0 counts blocks within the stream.
enum class Purpose : uint32_t {
  kRankPermutation = 1,
  kLabel,
  kRowSources,
  kCentroid,
  kFeatureNoise,
  kSplit,
  kRmatBlock,
  kRmatScramble,
  kTemporalEvent,
};

inline PhiloxStream stream_for(uint64_t seed, Purpose purpose, uint64_t id) {
  return PhiloxStream(seed, {{0, static_cast<uint32_t>(id), static_cast<uint32_t>(id >> 32),
                              static_cast<uint32_t>(purpose)}});
}

inline constexpr int64_t kMaxNodes = (int64_t{1} << 31) - 1;
inline constexpr int64_t kMaxClasses = int64_t{1}
                                       << 16;  // bounds the per-class tables and centroids

// A uniformly random permutation of [0, n) (Fisher–Yates, one stream).
std::vector<int32_t> seeded_permutation(int64_t n, uint64_t seed, Purpose purpose);

// Walker's alias method: one slot per item; a draw picks a slot uniformly and then either the
// slot's own item or its alias. Slots store item ids directly, so a draw touches one slot.
struct AliasSlot {
  uint32_t threshold;  // keep `accept` when the acceptance bits are below this
  int32_t accept;
  int32_t reject;
};

// Builds slots for `ids` drawn ∝ `weights` (Vose's method; sequential, so deterministic).
// Weights must be >= 0 with a positive sum.
void build_alias(std::span<const double> weights, std::span<const int32_t> ids,
                 std::span<AliasSlot> slots);

// One draw from `size` slots: `index_bits` picks the slot (multiply-shift; bias below
// size / 2^32), `accept_bits` decides between the item and its alias.
inline int32_t sample_alias(const AliasSlot* slots, uint32_t size, uint32_t index_bits,
                            uint32_t accept_bits) {
  const AliasSlot& slot = slots[(static_cast<uint64_t>(index_bits) * size) >> 32];
  return accept_bits < slot.threshold ? slot.accept : slot.reject;
}

// Sources drawn ∝ weight, overall or, when 32 random bits fall below the homophily threshold,
// among the members of the row's class (the power-law models of both graph kinds).
struct SourcePool {
  int64_t size = 0;
  std::vector<AliasSlot> global;      // every source ∝ weight
  std::vector<AliasSlot> by_class;    // per class, its members ∝ weight (empty: no classes)
  std::vector<int64_t> class_offset;  // class c's slots: [class_offset[c], class_offset[c+1])
  int64_t min_class_size = 1;         // a smaller class draws from `global` instead

  int32_t draw(PhiloxStream& rng, int32_t row_class, uint64_t homophily_threshold) const {
    const uint32_t coin = rng.next(), index_bits = rng.next(), accept_bits = rng.next();
    if (coin < homophily_threshold) {
      const int64_t begin = class_offset[static_cast<size_t>(row_class)];
      const int64_t count = class_offset[static_cast<size_t>(row_class) + 1] - begin;
      if (count >= min_class_size) {
        return sample_alias(by_class.data() + begin, static_cast<uint32_t>(count), index_bits,
                            accept_bits);
      }
    }
    return sample_alias(global.data(), static_cast<uint32_t>(size), index_bits, accept_bits);
  }

  // Fills `out` with `degree` distinct sorted sources other than `self` (none when self < 0):
  // draws in rounds (sort, drop duplicates, draw what is missing), then, if bounded rounds did
  // not suffice (rows nearly as long as the pool), the next free ids from a random start.
  void fill_row(PhiloxStream& rng, int32_t row_class, uint64_t homophily_threshold, int64_t self,
                int64_t degree, int32_t* out) const;
};

// A pool over `weights` (one per source); `classes` (one per source, in [0, num_classes)) adds
// the class tables, none when empty.
SourcePool build_source_pool(std::span<const double> weights, std::span<const int32_t> classes,
                             int64_t num_classes);

// The draw threshold of a homophily in [0, 1]: round(homophily * 2^32).
inline uint64_t homophily_threshold(double homophily) {
  return static_cast<uint64_t>(std::llround(std::ldexp(homophily, 32)));
}

// The R-MAT model (generate_rmat.cc); options already validated.
Csr generate_rmat(const GeneratorOptions& options);

// The temporal interaction model (generate_temporal.cc; generate.h): the graph (both
// directions, edge ids = event index, edge_time = event time, node_time = first event, rows
// sorted by time), labels (item cluster; user's last interest), and the events in time order.
struct TemporalStream {
  Csr graph;
  Array labels;  // int64 [N]
  Array src;     // int64 [M]: user of event e (time e)
  Array dst;     // int64 [M]: item node of event e
};
TemporalStream generate_temporal(const GeneratorOptions& options);

// Streams the features of options.num_nodes rows (generate_features's values) into a new .npy
// file at `path` ([num_nodes, feature_dim] of feature_dtype; options validated, feature_dim > 0);
// returns the CRC-32 of its data bytes. Either kind of dataset writer registers the file.
uint32_t stream_features(const GeneratorOptions& options, const std::string& path);

}  // namespace volley::generator_internal
