// volley/graph/internal/generator.h — what the graph generator's files share (internal): the
// layout of its random streams and Walker's alias method. See generate.h for the contract.
#pragma once

#include <cstdint>
#include <span>
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

}  // namespace volley::generator_internal
