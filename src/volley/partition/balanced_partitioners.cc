// The random and streaming (Fennel) partitioners, and the balance bookkeeping they share with
// the hotness partitioner.
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "volley/core/philox.h"
#include "volley/core/progress.h"
#include "volley/partition/internal/partitioners.h"

namespace volley::internal {

BalanceCaps balance_caps(const std::array<int64_t, kNumConstraints>& total, int64_t num_parts,
                         double tolerance) {
  BalanceCaps caps;
  caps.total = total;
  for (int c = 0; c < kNumConstraints; ++c) {
    const double mean = static_cast<double>(total[c]) / static_cast<double>(num_parts);
    caps.cap[c] = std::max((1.0 + tolerance) * mean, std::ceil(mean));
  }
  return caps;
}

std::vector<uint8_t> training_flags(int64_t n, const std::optional<Array>& train_idx) {
  std::vector<uint8_t> flags(static_cast<size_t>(n), 0);
  if (train_idx) {
    for (int64_t id : train_idx->span<int64_t>()) flags[static_cast<size_t>(id)] = 1;
  }
  return flags;
}

BalancedPlacer::BalancedPlacer(const BalanceCaps& caps, int64_t num_parts)
    : caps_(caps), load_(static_cast<size_t>(num_parts)) {
  for (auto& load : load_) load.fill(0);
}

bool BalancedPlacer::fits(int64_t part, int64_t degree, bool train) const {
  const auto& load = load_[static_cast<size_t>(part)];
  const int64_t weight[kNumConstraints] = {1, degree, train ? 1 : 0};
  for (int c = 0; c < kNumConstraints; ++c) {
    if (weight[c] > 0 && static_cast<double>(load[c] + weight[c]) > caps_.cap[c]) return false;
  }
  return true;
}

void BalancedPlacer::place(int64_t part, int64_t degree, bool train) {
  auto& load = load_[static_cast<size_t>(part)];
  load[0] += 1;
  load[1] += degree;
  load[2] += train ? 1 : 0;
}

void BalancedPlacer::remove(int64_t part, int64_t degree, bool train) {
  auto& load = load_[static_cast<size_t>(part)];
  load[0] -= 1;
  load[1] -= degree;
  load[2] -= train ? 1 : 0;
}

double BalancedPlacer::relative_load(int64_t part) const {
  const auto& load = load_[static_cast<size_t>(part)];
  const auto parts = static_cast<double>(load_.size());
  double worst = 0.0;
  for (int c = 0; c < kNumConstraints; ++c) {
    if (caps_.total[c] == 0) continue;
    worst =
        std::max(worst, static_cast<double>(load[c]) * parts / static_cast<double>(caps_.total[c]));
  }
  return worst;
}

bool BalancedPlacer::keeps_even(int64_t part, int64_t degree, bool train, double max_spread) const {
  const auto& load = load_[static_cast<size_t>(part)];
  const int64_t weight[kNumConstraints] = {1, degree, train ? 1 : 0};
  const auto parts = static_cast<double>(load_.size());
  double low_before = 1e300, high_before = 0.0, low_after = 1e300, high_after = 0.0;
  for (int c = 0; c < kNumConstraints; ++c) {
    if (caps_.total[c] == 0) continue;
    const double scale = parts / static_cast<double>(caps_.total[c]);
    const double before = static_cast<double>(load[c]) * scale;
    const double after = static_cast<double>(load[c] + weight[c]) * scale;
    low_before = std::min(low_before, before);
    high_before = std::max(high_before, before);
    low_after = std::min(low_after, after);
    high_after = std::max(high_after, after);
  }
  return high_after - low_after <= std::max(max_spread, high_before - low_before);
}

double BalancedPlacer::relative_after(int64_t part, int64_t degree, bool train) const {
  const auto& load = load_[static_cast<size_t>(part)];
  const int64_t weight[kNumConstraints] = {1, degree, train ? 1 : 0};
  double worst = 0.0;
  for (int c = 0; c < kNumConstraints; ++c) {
    if (caps_.cap[c] <= 0.0) continue;  // a constraint nobody carries (no training nodes)
    worst = std::max(worst, static_cast<double>(load[c] + weight[c]) / caps_.cap[c]);
  }
  return worst;
}

int64_t BalancedPlacer::least_loaded(int64_t degree, bool train) const {
  int64_t best = 0;
  double best_load = std::numeric_limits<double>::infinity();
  for (int64_t part = 0; part < static_cast<int64_t>(load_.size()); ++part) {
    const double load = relative_after(part, degree, train);
    if (load < best_load) {
      best_load = load;
      best = part;
    }
  }
  return best;
}

namespace {

std::array<int64_t, kNumConstraints> constraint_totals(const Dataset& dataset,
                                                       const std::vector<uint8_t>& train) {
  return {dataset.graph.num_nodes(), dataset.graph.num_edges(),
          std::accumulate(train.begin(), train.end(), int64_t{0})};
}

}  // namespace

Array place_in_random_order(int64_t n, const Csr* in_edges, const std::vector<uint8_t>& train,
                            BalancedPlacer placer, const PartitionOptions& options,
                            uint32_t stream) {
  // A seeded Fisher–Yates shuffle (Philox: the same order on every platform).
  std::vector<int64_t> order(static_cast<size_t>(n));
  std::iota(order.begin(), order.end(), int64_t{0});
  PhiloxStream rng(options.seed, {{0x72616e64u /* "rand" */, stream, 0, 0}});
  for (int64_t i = n - 1; i > 0; --i) {
    const auto j = static_cast<int64_t>(rng.bounded64(static_cast<uint64_t>(i) + 1));
    std::swap(order[static_cast<size_t>(i)], order[static_cast<size_t>(j)]);
  }
  Array assignment = Array::empty(DType::kInt32, {n});
  int32_t* part_of = assignment.data<int32_t>();
  for (int64_t v : order) {
    const int64_t degree = in_edges != nullptr ? in_edges->degree(v) : 0;
    const bool is_train = train[static_cast<size_t>(v)] != 0;
    const int64_t part = placer.least_loaded(degree, is_train);
    placer.place(part, degree, is_train);
    part_of[v] = static_cast<int32_t>(part);
  }
  return assignment;
}

Array assign_random(const Dataset& dataset, const PartitionOptions& options,
                    const std::vector<uint8_t>& train) {
  return place_in_random_order(
      dataset.graph.num_nodes(), &dataset.graph, train,
      BalancedPlacer(balance_caps(constraint_totals(dataset, train), options.num_parts,
                                  options.balance_tolerance),
                     options.num_parts),
      options, 0);
}

Array assign_stream(const Dataset& dataset, const PartitionOptions& options,
                    const std::vector<uint8_t>& train) {
  const Csr& graph = dataset.graph;
  const int64_t n = graph.num_nodes();
  const int64_t e = graph.num_edges();
  const int64_t k = options.num_parts;
  BalancedPlacer placer(
      balance_caps(constraint_totals(dataset, train), k, options.balance_tolerance), k);
  // Fennel's objective: neighbors in the partition - alpha * gamma * size^(gamma - 1), gamma 1.5,
  // alpha = sqrt(K) * E / N^1.5 (the paper's choice).
  constexpr double kGamma = 1.5;
  const double alpha = n > 0 ? std::sqrt(static_cast<double>(k)) * static_cast<double>(e) /
                                   std::pow(static_cast<double>(n), kGamma)
                             : 0.0;
  const double mean_nodes = static_cast<double>(n) / static_cast<double>(k);
  Array assignment = Array::empty(DType::kInt32, {n});
  int32_t* part_of = assignment.data<int32_t>();
  std::fill(part_of, part_of + n, -1);
  std::vector<int64_t> neighbors_in(static_cast<size_t>(k));
  const size_t index_bytes = dtype_size(graph.index_dtype());
  const int64_t chunk_edges =
      std::max<int64_t>(1, options.chunk_bytes / static_cast<int64_t>(index_bytes));

  ProgressBar bar("stream", e);
  int64_t row = 0;
  while (row < n) {
    // Rows [row, last) hold about chunk_edges edges (at least one row).
    const int64_t first_edge = graph.begin(row);
    int64_t last = row + 1;
    while (last < n && graph.end(last) - first_edge <= chunk_edges) ++last;
    for (int64_t v = row; v < last; ++v) {
      std::fill(neighbors_in.begin(), neighbors_in.end(), 0);
      for (int64_t pos = graph.begin(v); pos < graph.end(v); ++pos) {
        const int64_t u = graph.neighbor(pos);
        VOLLEY_REQUIRE(u >= 0 && u < n, IndexError,
                       "indices[{}] = {} out of range for a graph with {} nodes", pos, u, n);
        const int32_t owner = part_of[u];
        if (owner >= 0) ++neighbors_in[static_cast<size_t>(owner)];
      }
      const int64_t degree = graph.degree(v);
      const bool is_train = train[static_cast<size_t>(v)] != 0;
      int64_t best = -1;
      double best_score = -std::numeric_limits<double>::infinity();
      // First choice: partitions where v fits and whose constraints stay within `tolerance` of
      // each other (a partition that takes only hubs would fill its edge cap with few nodes and
      // leave the last nodes of the stream nowhere to go); then any partition where v fits.
      for (int attempt = 0; attempt < 2 && best < 0; ++attempt) {
        for (int64_t p = 0; p < k; ++p) {
          if (!placer.fits(p, degree, is_train)) continue;
          if (attempt == 0 && !placer.keeps_even(p, degree, is_train, options.balance_tolerance)) {
            continue;
          }
          // Fennel's size penalty, with the size measured by the partition's heaviest constraint
          // (nodes, in-edges or training nodes relative to their means), so that a partition full
          // of hubs looks as big as one full of leaves and the constraints fill evenly.
          const double size = placer.relative_load(p) * mean_nodes;
          const double score = static_cast<double>(neighbors_in[static_cast<size_t>(p)]) -
                               alpha * kGamma * std::sqrt(size);
          if (score > best_score || (score == best_score && best >= 0 &&
                                     placer.relative_load(p) < placer.relative_load(best))) {
            best_score = score;
            best = p;
          }
        }
      }
      if (best < 0) best = placer.least_loaded(degree, is_train);
      placer.place(best, degree, is_train);
      part_of[v] = static_cast<int32_t>(best);
    }
    const int64_t end_edge = graph.begin(last);
    release_mapped_pages(graph.indices(), static_cast<size_t>(first_edge) * index_bytes,
                         static_cast<size_t>(end_edge) * index_bytes);
    bar.advance(end_edge - first_edge);
    row = last;
  }
  return assignment;
}

void release_mapped_pages(const Array& array, size_t first_byte, size_t end_byte) {
  if (!array.defined() || array.buffer().location() != Location::kMappedFile) return;
  static const auto page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  const auto base = reinterpret_cast<uintptr_t>(array.raw_data());
  const uintptr_t begin = (base + first_byte + page - 1) / page * page;
  const uintptr_t end = (base + end_byte) / page * page;
  if (end > begin) {
    // Clean private pages of a read-only use: dropping them only means re-reading the file.
    madvise(reinterpret_cast<void*>(begin), end - begin, MADV_DONTNEED);
  }
}

}  // namespace volley::internal
