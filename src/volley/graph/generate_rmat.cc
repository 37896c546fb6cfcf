// R-MAT graphs (Chakrabarti et al.): each edge picks a quadrant of the adjacency matrix level by
// level, four levels per 32-bit draw; see generate.h for the model's contract.
#include <algorithm>
#include <atomic>
#include <numeric>
#include <vector>

#include "volley/core/parallel.h"
#include "volley/core/progress.h"
#include "volley/graph/internal/generator.h"

namespace volley::generator_internal {
namespace {

constexpr int kLevelsPerDraw = 4;  // quadrant choices per 32-bit draw (alias over 4^4 outcomes)
constexpr int kOutcomes = 1 << (2 * kLevelsPerDraw);
constexpr int64_t kRmatBlock = int64_t{1} << 18;  // edges per random stream

// Outcome o of one draw: the quadrants of four consecutive levels, two bits each (first level
// in the lowest bits); quadrant q sets source bit q >> 1 and target bit q & 1. The outcomes'
// probabilities are products over levels, so using only the first k levels of a draw (the
// last, partial group) samples exactly the k-level distribution.
std::vector<AliasSlot> outcome_table(const GeneratorOptions& options) {
  const double quadrant[4] = {options.rmat_a, options.rmat_b, options.rmat_c, options.rmat_d};
  std::vector<double> outcome_weights(kOutcomes);
  std::vector<int32_t> outcome_ids(kOutcomes);
  for (int o = 0; o < kOutcomes; ++o) {
    double p = 1.0;
    for (int level = 0; level < kLevelsPerDraw; ++level) p *= quadrant[(o >> (2 * level)) & 3];
    outcome_weights[static_cast<size_t>(o)] = p;
    outcome_ids[static_cast<size_t>(o)] = o;
  }
  std::vector<AliasSlot> outcomes(kOutcomes);
  build_alias(outcome_weights, outcome_ids, outcomes);
  return outcomes;
}

struct EdgeList {
  std::vector<int32_t> source, target;
};

// 1. Edges, block by block (each block its own stream), as (source, target) pairs.
EdgeList draw_edges(const GeneratorOptions& options) {
  const int64_t n = options.num_nodes, m = options.num_edges;
  int scale = 0;
  while ((int64_t{1} << scale) < n) ++scale;
  const std::vector<AliasSlot> outcomes = outcome_table(options);
  const std::vector<int32_t> scramble = seeded_permutation(n, options.seed, Purpose::kRmatScramble);
  EdgeList edges{std::vector<int32_t>(static_cast<size_t>(m)),
                 std::vector<int32_t>(static_cast<size_t>(m))};
  const int64_t num_blocks = (m + kRmatBlock - 1) / kRmatBlock;
  ProgressBar progress("rmat edges", m);
  parallel_for(0, num_blocks, 1, [&](int64_t begin, int64_t end) {
    for (int64_t block = begin; block < end; ++block) {
      PhiloxStream rng =
          stream_for(options.seed, Purpose::kRmatBlock, static_cast<uint64_t>(block));
      const int64_t first = block * kRmatBlock, last = std::min(m, first + kRmatBlock);
      for (int64_t e = first; e < last; ++e) {
        int64_t source, target;
        do {
          source = 0;
          target = 0;
          for (int level = 0; level < scale; level += kLevelsPerDraw) {
            const uint32_t bits = rng.next();
            const int32_t o = sample_alias(outcomes.data(), kOutcomes, bits, bits << 8);
            for (int k = 0; k < std::min(kLevelsPerDraw, scale - level); ++k) {
              const int q = (o >> (2 * k)) & 3;
              source = (source << 1) | (q >> 1);
              target = (target << 1) | (q & 1);
            }
          }
        } while (source >= n || target >= n);
        edges.source[static_cast<size_t>(e)] = scramble[static_cast<size_t>(source)];
        edges.target[static_cast<size_t>(e)] = scramble[static_cast<size_t>(target)];
      }
      progress.advance(last - first);
    }
  });
  return edges;
}

// 2. Counting sort into rows (in-neighbors: row = target), self loops left out. Positions
// within a row depend on scheduling, but each row is sorted afterwards, so the result does not.
// Returns the sources; row_start gets the N + 1 row offsets.
std::vector<int32_t> scatter_into_rows(EdgeList edges, int64_t n, std::vector<int64_t>& row_start) {
  const auto m = static_cast<int64_t>(edges.source.size());
  row_start.assign(static_cast<size_t>(n) + 1, 0);
  parallel_for(0, m, 1 << 16, [&](int64_t begin, int64_t end) {
    for (int64_t e = begin; e < end; ++e) {
      const int32_t target = edges.target[static_cast<size_t>(e)];
      if (edges.source[static_cast<size_t>(e)] == target) continue;
      std::atomic_ref<int64_t>(row_start[static_cast<size_t>(target) + 1])
          .fetch_add(1, std::memory_order_relaxed);
    }
  });
  std::partial_sum(row_start.begin(), row_start.end(), row_start.begin());
  std::vector<int32_t> scattered(static_cast<size_t>(row_start.back()));
  std::vector<int64_t> cursor(row_start.begin(), row_start.end() - 1);
  parallel_for(0, m, 1 << 16, [&](int64_t begin, int64_t end) {
    for (int64_t e = begin; e < end; ++e) {
      const int32_t source = edges.source[static_cast<size_t>(e)];
      const int32_t target = edges.target[static_cast<size_t>(e)];
      if (source == target) continue;
      const int64_t k = std::atomic_ref<int64_t>(cursor[static_cast<size_t>(target)])
                            .fetch_add(1, std::memory_order_relaxed);
      scattered[static_cast<size_t>(k)] = source;
    }
  });
  return scattered;
}

// 3. Sort each row, drop duplicates, compact.
Csr sort_and_compact(std::vector<int32_t>& scattered, const std::vector<int64_t>& row_start,
                     int64_t n) {
  Array indptr = Array::empty(DType::kInt64, {n + 1});
  int64_t* kept = indptr.data<int64_t>();
  kept[0] = 0;
  parallel_for(0, n, 4096, [&](int64_t begin, int64_t end) {
    for (int64_t v = begin; v < end; ++v) {
      int32_t* first = scattered.data() + row_start[static_cast<size_t>(v)];
      int32_t* last = scattered.data() + row_start[static_cast<size_t>(v) + 1];
      std::sort(first, last);
      kept[v + 1] = std::unique(first, last) - first;
    }
  });
  std::partial_sum(kept, kept + n + 1, kept);
  Array indices = Array::empty(DType::kInt32, {kept[n]});
  int32_t* out = indices.data<int32_t>();
  parallel_for(0, n, 4096, [&](int64_t begin, int64_t end) {
    for (int64_t v = begin; v < end; ++v) {
      std::copy_n(scattered.data() + row_start[static_cast<size_t>(v)], kept[v + 1] - kept[v],
                  out + kept[v]);
    }
  });
  return Csr::from_arrays(std::move(indptr), std::move(indices), std::nullopt, std::nullopt,
                          Orientation::kIn, /*validate=*/false);
}

}  // namespace

Csr generate_rmat(const GeneratorOptions& options) {
  std::vector<int64_t> row_start;
  std::vector<int32_t> scattered =
      scatter_into_rows(draw_edges(options), options.num_nodes, row_start);
  return sort_and_compact(scattered, row_start, options.num_nodes);
}

}  // namespace volley::generator_internal
