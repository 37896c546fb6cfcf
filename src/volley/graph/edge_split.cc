#include "volley/graph/edge_split.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>
#include <utility>
#include <vector>

#include "volley/core/error.h"
#include "volley/core/parallel.h"
#include "volley/core/philox.h"
#include "volley/core/progress.h"
#include "volley/graph/io/npy.h"

namespace volley {
namespace {

namespace fs = std::filesystem;

// --- a seeded bijection of pair codes --------------------------------------------------------

constexpr uint64_t inverse_of_odd(uint64_t a) {
  uint64_t x = a;  // Newton's iteration doubles the correct low bits each step
  for (int i = 0; i < 6; ++i) x *= 2 - a * x;
  return x;
}
constexpr uint64_t kMix1 = 0xff51afd7ed558ccdULL;
constexpr uint64_t kMix2 = 0xc4ceb9fe1a85ec53ULL;
static_assert(kMix1 * inverse_of_odd(kMix1) == 1 && kMix2 * inverse_of_odd(kMix2) == 1);

// MurmurHash3's 64-bit finalizer, a bijection (each step is invertible), and its inverse.
uint64_t mix(uint64_t x) {
  x ^= x >> 33;
  x *= kMix1;
  x ^= x >> 33;
  x *= kMix2;
  x ^= x >> 33;
  return x;
}
uint64_t unmix(uint64_t x) {
  x ^= x >> 33;
  x *= inverse_of_odd(kMix2);
  x ^= x >> 33;
  x *= inverse_of_odd(kMix1);
  x ^= x >> 33;
  return x;
}

uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// A unit (ordered or unordered pair) as a 64-bit code src * n + dst, and its seeded key. The key
// is a bijection of the code, so distinct units have distinct keys, and the keys' order is the
// split's random order of the units.
struct PairKeys {
  uint64_t n = 0;
  bool undirected = false;
  uint64_t salt1 = 0;
  uint64_t salt2 = 0;

  uint64_t code(uint64_t src, uint64_t dst) const {
    if (undirected && src > dst) std::swap(src, dst);
    return src * n + dst;
  }
  uint64_t key(uint64_t code) const { return mix(mix(code ^ salt1) ^ salt2); }
  uint64_t code_of_key(uint64_t key) const { return unmix(unmix(key) ^ salt2) ^ salt1; }
  uint64_t key_of(int64_t src, int64_t dst) const {
    return key(code(static_cast<uint64_t>(src), static_cast<uint64_t>(dst)));
  }
};

// --- the units, bucketed by their key's top bits ----------------------------------------------

constexpr int64_t kChunkEdges = int64_t{1} << 20;

// Calls fn(src, dst) for the edges [first, last) of `graph` in CSR order.
template <typename Fn>
void for_each_edge(const Csr& graph, int64_t first, int64_t last, Fn&& fn) {
  const int64_t* indptr = graph.indptr().data<int64_t>();
  int64_t row = std::upper_bound(indptr, indptr + graph.num_nodes() + 1, first) - indptr - 1;
  const bool in = graph.orientation() == Orientation::kIn;
  for (int64_t k = first; k < last; ++k) {
    while (indptr[row + 1] <= k) ++row;
    const int64_t other = graph.neighbor(k);
    if (in) {
      fn(other, row);
    } else {
      fn(row, other);
    }
  }
}

class UnitTable {
 public:
  UnitTable(const Csr& graph, const PairKeys& keys, ProgressBar& bar);

  int64_t size() const { return rank_start_.back(); }
  // The keys of a bucket are close to uniform over its range, so the search starts where the
  // key would sit (interpolation) and walks from there: a cache miss or two instead of ten.
  bool contains(uint64_t key) const {
    const int64_t b = bucket(key);
    const uint64_t* first = keys_.data() + start_[b];
    const int64_t count = rank_start_[b + 1] - rank_start_[b];
    if (count == 0) return false;
    const uint64_t offset = bits_ == 0 ? key : key - (static_cast<uint64_t>(b) << shift_);
    int64_t i = static_cast<int64_t>(
        (static_cast<unsigned __int128>(offset) * static_cast<uint64_t>(count)) >> shift_);
    i = std::min(i, count - 1);
    if (first[i] < key) {
      while (i + 1 < count && first[i + 1] <= key) ++i;
    } else {
      while (i > 0 && first[i] > key) --i;
    }
    return first[i] == key;
  }
  // The key of rank `rank` in [0, size()).
  uint64_t key_at(int64_t rank) const {
    const int64_t b =
        std::upper_bound(rank_start_.begin(), rank_start_.end(), rank) - rank_start_.begin() - 1;
    return keys_[static_cast<size_t>(start_[b] + rank - rank_start_[b])];
  }
  // Calls fn(key) for ranks [first, last), in order.
  template <typename Fn>
  void for_each_key(int64_t first, int64_t last, Fn&& fn) const {
    if (first >= last) return;
    int64_t b =
        std::upper_bound(rank_start_.begin(), rank_start_.end(), first) - rank_start_.begin() - 1;
    for (int64_t rank = first; rank < last; ++rank) {
      while (rank_start_[b + 1] <= rank) ++b;
      fn(keys_[static_cast<size_t>(start_[b] + rank - rank_start_[b])]);
    }
  }

 private:
  int64_t bucket(uint64_t key) const {
    return bits_ == 0 ? 0 : static_cast<int64_t>(key >> shift_);
  }

  int bits_ = 0;
  int shift_ = 64;
  std::vector<int64_t> start_;       // [B + 1] where each bucket's keys begin
  std::vector<int64_t> rank_start_;  // [B + 1] ranks: the distinct keys before each bucket
  std::vector<uint64_t> keys_;       // each bucket: its distinct keys sorted, then leftovers
};

// Two passes over the edges in fixed chunks (count per (chunk, bucket), then scatter), then each
// bucket sorted and deduplicated: the result does not depend on the thread count.
UnitTable::UnitTable(const Csr& graph, const PairKeys& keys, ProgressBar& bar) {
  const int64_t e = graph.num_edges();
  while (bits_ < 20 && (e >> bits_) > 1024) ++bits_;
  shift_ = 64 - bits_;
  const int64_t buckets = int64_t{1} << bits_;
  const int64_t chunks = (e + kChunkEdges - 1) / kChunkEdges;
  std::vector<int64_t> offset(static_cast<size_t>(chunks * buckets), 0);
  auto chunk_range = [&](int64_t c) {
    return std::pair{c * kChunkEdges, std::min(e, (c + 1) * kChunkEdges)};
  };
  parallel_for(0, chunks, 1, [&](int64_t c0, int64_t c1) {
    for (int64_t c = c0; c < c1; ++c) {
      int64_t* count = offset.data() + c * buckets;
      const auto [first, last] = chunk_range(c);
      for_each_edge(graph, first, last,
                    [&](int64_t s, int64_t d) { ++count[bucket(keys.key_of(s, d))]; });
      bar.advance(last - first);
    }
  });
  start_.assign(static_cast<size_t>(buckets + 1), 0);
  int64_t running = 0;
  for (int64_t b = 0; b < buckets; ++b) {  // bucket-major, chunk-minor offsets
    start_[static_cast<size_t>(b)] = running;
    for (int64_t c = 0; c < chunks; ++c) {
      int64_t& slot = offset[static_cast<size_t>(c * buckets + b)];
      const int64_t count = slot;
      slot = running;
      running += count;
    }
  }
  start_[static_cast<size_t>(buckets)] = running;
  keys_.resize(static_cast<size_t>(e));
  parallel_for(0, chunks, 1, [&](int64_t c0, int64_t c1) {
    for (int64_t c = c0; c < c1; ++c) {
      int64_t* next = offset.data() + c * buckets;
      const auto [first, last] = chunk_range(c);
      for_each_edge(graph, first, last, [&](int64_t s, int64_t d) {
        const uint64_t key = keys.key_of(s, d);
        keys_[static_cast<size_t>(next[bucket(key)]++)] = key;
      });
      bar.advance(last - first);
    }
  });
  std::vector<int64_t> distinct(static_cast<size_t>(buckets), 0);
  parallel_for(0, buckets, 256, [&](int64_t b0, int64_t b1) {
    for (int64_t b = b0; b < b1; ++b) {
      uint64_t* first = keys_.data() + start_[b];
      uint64_t* last = keys_.data() + start_[b + 1];
      std::sort(first, last);
      distinct[static_cast<size_t>(b)] = std::unique(first, last) - first;
    }
  });
  rank_start_.assign(static_cast<size_t>(buckets + 1), 0);
  for (int64_t b = 0; b < buckets; ++b) {
    rank_start_[static_cast<size_t>(b + 1)] =
        rank_start_[static_cast<size_t>(b)] + distinct[static_cast<size_t>(b)];
  }
}

// --- sides -----------------------------------------------------------------------------------

enum Side : uint8_t { kTrain = 0, kVal = 1, kTest = 2 };

struct Thresholds {
  int64_t num_val = 0;
  int64_t num_test = 0;
  uint64_t val_end = 0;   // keys below: validation
  uint64_t test_end = 0;  // keys in [val_end, test_end): test

  Side side(uint64_t key) const {
    if (key < val_end) return kVal;
    return key < test_end ? kTest : kTrain;
  }
};

Thresholds thresholds(const UnitTable& units, const EdgeSplitOptions& options) {
  Thresholds t;
  const int64_t u = units.size();
  if (u == 0) return t;
  t.num_val = static_cast<int64_t>(std::floor(options.val_fraction * static_cast<double>(u)));
  t.num_test = static_cast<int64_t>(std::floor(options.test_fraction * static_cast<double>(u)));
  // val + test < 1, so num_val + num_test < u: both ranks name a unit.
  t.num_test = std::min(t.num_test, u - 1 - t.num_val);
  t.val_end = units.key_at(t.num_val);
  t.test_end = units.key_at(t.num_val + t.num_test);
  return t;
}

// The message-passing graph: the edges whose unit is a training unit, rows kept in order.
Csr training_graph(const Csr& graph, const PairKeys& keys, const Thresholds& t, ProgressBar& bar) {
  const int64_t n = graph.num_nodes();
  const bool in = graph.orientation() == Orientation::kIn;
  auto is_train = [&](int64_t row, int64_t k) {
    const int64_t other = graph.neighbor(k);
    return t.side(in ? keys.key_of(other, row) : keys.key_of(row, other)) == kTrain;
  };
  Array indptr = Array::empty(DType::kInt64, {n + 1});
  int64_t* out_ptr = indptr.data<int64_t>();
  out_ptr[0] = 0;
  parallel_for(0, n, 4096, [&](int64_t r0, int64_t r1) {
    for (int64_t row = r0; row < r1; ++row) {
      int64_t kept = 0;
      for (int64_t k = graph.begin(row); k < graph.end(row); ++k) kept += is_train(row, k);
      out_ptr[row + 1] = kept;
    }
    bar.advance(graph.begin(r1) - graph.begin(r0));
  });
  for (int64_t row = 0; row < n; ++row) out_ptr[row + 1] += out_ptr[row];
  const int64_t kept = out_ptr[n];
  Array indices = Array::empty(graph.index_dtype(), {kept});
  std::optional<Array> edge_ids, weights;
  if (graph.has_edge_ids()) edge_ids = Array::empty(DType::kInt64, {kept});
  if (graph.has_weights()) weights = Array::empty(DType::kFloat32, {kept});
  const bool narrow = graph.index_dtype() == DType::kInt32;
  const float* in_weights = graph.has_weights() ? graph.weights()->data<float>() : nullptr;
  parallel_for(0, n, 4096, [&](int64_t r0, int64_t r1) {
    for (int64_t row = r0; row < r1; ++row) {
      int64_t j = out_ptr[row];
      for (int64_t k = graph.begin(row); k < graph.end(row); ++k) {
        if (!is_train(row, k)) continue;
        if (narrow) {
          indices.data<int32_t>()[j] = static_cast<int32_t>(graph.neighbor(k));
        } else {
          indices.data<int64_t>()[j] = graph.neighbor(k);
        }
        if (edge_ids) edge_ids->data<int64_t>()[j] = graph.edge_id(k);
        if (weights) weights->data<float>()[j] = in_weights[k];
        ++j;
      }
    }
    bar.advance(graph.begin(r1) - graph.begin(r0));
  });
  return Csr::from_arrays(std::move(indptr), std::move(indices), std::move(edge_ids),
                          std::move(weights), graph.orientation(), /*validate=*/false);
}

// --- negatives -------------------------------------------------------------------------------

constexpr uint32_t kMaxDraws = 1000;  // per negative and round
constexpr int kMaxRounds = 64;

// A uniform pair of distinct nodes that is no unit, drawn for negative `index` from attempt
// `attempt` on; `attempt` is advanced past the accepted draw.
uint64_t draw_negative(const UnitTable& units, const PairKeys& keys, uint64_t seed, uint64_t index,
                       uint32_t& attempt) {
  const uint32_t n = static_cast<uint32_t>(keys.n);
  for (uint32_t tries = 0; tries < kMaxDraws; ++tries) {
    PhiloxStream rng(seed, {{static_cast<uint32_t>(index), static_cast<uint32_t>(index >> 32),
                             attempt++, 0x6e656773u}});
    const uint64_t src = rng.bounded(n);
    const uint64_t dst = rng.bounded(n);
    if (src == dst) continue;
    const uint64_t code = keys.code(src, dst);
    if (!units.contains(keys.key(code))) return code;
  }
  throw ValueError(fmt::format(
      "split_edges: no non-edge found in {} uniform draws for negative {}: the graph ({} nodes, "
      "{} distinct pairs) is too dense for negatives; pass neg_ratio=0",
      kMaxDraws, index, keys.n, units.size()));
}

// `count` distinct negative codes, a pure function of (graph, seed): each is drawn
// independently, then repeats are redrawn (the lowest index keeps its pair) until none is left.
std::vector<uint64_t> draw_negatives(const UnitTable& units, const PairKeys& keys, uint64_t seed,
                                     int64_t count, ProgressBar& bar) {
  const double pairs =
      static_cast<double>(keys.n) * static_cast<double>(keys.n - 1) / (keys.undirected ? 2.0 : 1.0);
  const double free_pairs = pairs - static_cast<double>(units.size());
  VOLLEY_REQUIRE(static_cast<double>(count) * 2 <= free_pairs, ValueError,
                 "split_edges: {} negatives asked, but the graph ({} nodes, {} distinct pairs) "
                 "has at most {:.0f} non-edges; the negatives may take at most half of them "
                 "(lower neg_ratio)",
                 count, keys.n, units.size(), std::max(0.0, free_pairs));
  std::vector<uint64_t> codes(static_cast<size_t>(count));
  std::vector<uint32_t> attempts(static_cast<size_t>(count), 0);
  parallel_for(0, count, 4096, [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; ++i) {
      const size_t at = static_cast<size_t>(i);
      codes[at] = draw_negative(units, keys, seed, static_cast<uint64_t>(i), attempts[at]);
    }
    bar.advance(i1 - i0);
  });
  // Repeats (few: about count^2 / (2 * non-edges)) are found by one sort; each is redrawn, in
  // index order, until it differs from every pair kept so far.
  std::vector<std::pair<uint64_t, int64_t>> order(codes.size());
  for (size_t i = 0; i < codes.size(); ++i) order[i] = {codes[i], static_cast<int64_t>(i)};
  std::sort(order.begin(), order.end());
  std::vector<int64_t> redraw;
  std::vector<uint64_t> kept;
  kept.reserve(codes.size());
  for (size_t j = 0; j < order.size(); ++j) {
    if (j > 0 && order[j].first == order[j - 1].first) {
      redraw.push_back(order[j].second);
    } else {
      kept.push_back(order[j].first);
    }
  }
  std::sort(redraw.begin(), redraw.end());
  std::vector<uint64_t> fresh;  // the redrawn pairs kept so far (few)
  for (const int64_t i : redraw) {
    const size_t at = static_cast<size_t>(i);
    for (int round = 0;; ++round) {
      VOLLEY_REQUIRE(round < kMaxRounds, ValueError,
                     "split_edges: negative {} still repeats another after {} redraws; the graph "
                     "has too few non-edges (lower neg_ratio)",
                     i, kMaxRounds);
      codes[at] = draw_negative(units, keys, seed, static_cast<uint64_t>(i), attempts[at]);
      if (!std::binary_search(kept.begin(), kept.end(), codes[at]) &&
          std::find(fresh.begin(), fresh.end(), codes[at]) == fresh.end()) {
        break;
      }
    }
    fresh.push_back(codes[at]);
  }
  return codes;
}

// --- writing ---------------------------------------------------------------------------------

constexpr int64_t kWriteBlock = int64_t{1} << 16;

// Writes `count` pairs as an int64 [2, count] array: get(i) is pair i's code.
template <typename Get>
void write_pairs(DatasetWriter& writer, const std::string& field, const PairKeys& keys,
                 int64_t count, Get&& get) {
  NpyWriter out(writer.path_of(field), DType::kInt64, {2, count});
  std::vector<int64_t> block;
  for (int row = 0; row < 2; ++row) {
    for (int64_t first = 0; first < count; first += kWriteBlock) {
      const int64_t last = std::min(count, first + kWriteBlock);
      block.resize(static_cast<size_t>(last - first));
      get(first, last, [&](int64_t i, uint64_t code) {
        block[static_cast<size_t>(i - first)] =
            static_cast<int64_t>(row == 0 ? code / keys.n : code % keys.n);
      });
      out.write(block.data(), block.size() * sizeof(int64_t));
    }
  }
  out.close();
  writer.add_written(field, DType::kInt64, {2, count}, out.crc32());
}

void write_units(DatasetWriter& writer, const std::string& field, const UnitTable& units,
                 const PairKeys& keys, int64_t first_rank, int64_t count) {
  write_pairs(writer, field, keys, count, [&](int64_t first, int64_t last, auto&& put) {
    int64_t i = first;
    units.for_each_key(first_rank + first, first_rank + last,
                       [&](uint64_t key) { put(i++, keys.code_of_key(key)); });
  });
}

void write_codes(DatasetWriter& writer, const std::string& field, const PairKeys& keys,
                 const std::vector<uint64_t>& codes, int64_t begin, int64_t count) {
  write_pairs(writer, field, keys, count, [&](int64_t first, int64_t last, auto&& put) {
    for (int64_t i = first; i < last; ++i) put(i, codes[static_cast<size_t>(begin + i)]);
  });
}

void require_empty_output(const std::string& output) {
  std::error_code error;
  const fs::file_status status = fs::status(output, error);
  if (!fs::exists(status)) return;
  VOLLEY_REQUIRE(fs::is_directory(status), IoError,
                 "split_edges: the output '{}' exists and is not a directory", output);
  VOLLEY_REQUIRE(fs::is_empty(output, error) && !error, IoError,
                 "split_edges: the output directory '{}' exists and is not empty (choose a new "
                 "directory; the split never overwrites)",
                 output);
}

}  // namespace

void check_edge_split_options(const EdgeSplitOptions& options) {
  auto fraction_ok = [](double f) { return std::isfinite(f) && f >= 0.0 && f < 1.0; };
  VOLLEY_REQUIRE(fraction_ok(options.val_fraction), ValueError,
                 "split_edges: val fraction {} is outside [0, 1)", options.val_fraction);
  VOLLEY_REQUIRE(fraction_ok(options.test_fraction), ValueError,
                 "split_edges: test fraction {} is outside [0, 1)", options.test_fraction);
  VOLLEY_REQUIRE(options.val_fraction + options.test_fraction < 1.0, ValueError,
                 "split_edges: val fraction {} + test fraction {} = {} leaves no training edges "
                 "(the sum must be < 1)",
                 options.val_fraction, options.test_fraction,
                 options.val_fraction + options.test_fraction);
  VOLLEY_REQUIRE(std::isfinite(options.neg_ratio) && options.neg_ratio >= 0.0, ValueError,
                 "split_edges: neg_ratio {} must be a finite number >= 0", options.neg_ratio);
  // Negatives per positive: round(neg_ratio × edges) must stay far inside int64.
  VOLLEY_REQUIRE(options.neg_ratio <= 2147483648.0, ValueError,
                 "split_edges: neg_ratio {} must be at most 2147483648 (negatives per edge)",
                 options.neg_ratio);
}

EdgeSplitSummary split_edges(const Dataset& dataset, const std::string& output,
                             const EdgeSplitOptions& options) {
  check_edge_split_options(options);
  const Csr& graph = dataset.graph;
  VOLLEY_REQUIRE(graph.indptr().defined(), ValueError, "split_edges: the dataset has no graph");
  const int64_t n = graph.num_nodes();
  VOLLEY_REQUIRE(n < (int64_t{1} << 32), ValueError,
                 "split_edges: {} nodes; edge splits support fewer than 2^32 nodes", n);
  require_empty_output(output);

  PairKeys keys{static_cast<uint64_t>(n), options.undirected, splitmix64(options.seed),
                splitmix64(options.seed ^ 0x5eed5eed5eed5eedULL)};
  EdgeSplitSummary summary;
  ProgressBar bar("split edges", 4 * graph.num_edges());
  const UnitTable units(graph, keys, bar);
  const Thresholds t = thresholds(units, options);
  const Csr train = training_graph(graph, keys, t, bar);
  bar.finish();
  summary.num_units = units.size();
  summary.num_val = t.num_val;
  summary.num_test = t.num_test;
  summary.num_train = summary.num_units - t.num_val - t.num_test;
  summary.num_train_graph_edges = train.num_edges();
  summary.num_val_neg =
      static_cast<int64_t>(std::llround(options.neg_ratio * static_cast<double>(t.num_val)));
  summary.num_test_neg =
      static_cast<int64_t>(std::llround(options.neg_ratio * static_cast<double>(t.num_test)));
  std::vector<uint64_t> negatives;
  if (options.neg_ratio > 0) {
    ProgressBar neg_bar("negatives", summary.num_val_neg + summary.num_test_neg);
    negatives = draw_negatives(units, keys, splitmix64(options.seed + 0x6e6567),
                               summary.num_val_neg + summary.num_test_neg, neg_bar);
  }

  DatasetWriter writer(output, dataset.name);
  writer.add_array("indptr", train.indptr());
  writer.add_array("indices", train.indices());
  if (train.edge_ids()) writer.add_array("edge_ids", *train.edge_ids());
  if (train.weights()) writer.add_array("weights", *train.weights());
  auto copy = [&](const char* field, const std::optional<Array>& array) {
    if (array) writer.add_array(field, *array);
  };
  copy("features", dataset.features);
  copy("labels", dataset.labels);
  copy("train_idx", dataset.train_idx);
  copy("val_idx", dataset.val_idx);
  copy("test_idx", dataset.test_idx);
  write_units(writer, "val_edges", units, keys, 0, t.num_val);
  write_units(writer, "test_edges", units, keys, t.num_val, t.num_test);
  write_units(writer, "train_edges", units, keys, t.num_val + t.num_test, summary.num_train);
  if (options.neg_ratio > 0) {
    write_codes(writer, "val_neg_edges", keys, negatives, 0, summary.num_val_neg);
    write_codes(writer, "test_neg_edges", keys, negatives, summary.num_val_neg,
                summary.num_test_neg);
  }
  writer.finish(n, train.num_edges(), dataset.num_classes, graph.orientation());
  return summary;
}

EdgeSplitSummary split_edges(const std::string& input, const std::string& output,
                             const EdgeSplitOptions& options) {
  check_edge_split_options(options);
  VOLLEY_REQUIRE(is_dataset_directory(input), IoError,
                 "split_edges: '{}' is not a dataset directory (no volley.json there)", input);
  require_empty_output(output);
  return split_edges(load_dataset(input), output, options);
}

}  // namespace volley
