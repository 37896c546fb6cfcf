// volley/sampling/internal/pick.h — the per-target pick rules of neighbor sampling, written once
// for host and device (internal to src/volley/sampling).
//
// The CPU sampler (cpu/neighbor_kernel.cc) is the oracle; the CUDA sampler (cuda/) must return
// exactly what it returns. Everything here is VOLLEY_HOST_DEVICE and works in caller-provided
// fixed scratch (no allocation), so the GPU sampler's PickBody (cuda/neighbor_kernels.h) runs it
// one item per target on either executor, and tests/cpp/sampling/pick_test.cc runs the very same
// code against the CPU sampler.
//
// What makes host and device agree bit for bit:
//   * the random stream: Philox keyed by options.seed, counter neighbor_stream_counter(node, hop,
//     batch), the same draws in the same order per target as the CPU kernel;
//   * integer draws (Lemire / 64-bit rejection) and uniform doubles are exact on both sides;
//   * Efraimidis–Spirakis keys use deterministic_log() below, which uses only correctly rounded
//     IEEE operations (no FMA contraction on the device: explicit _rn intrinsics), so it returns
//     the same bits on every machine — std::log (glibc) and CUDA's log() may differ in the last
//     bit, which could reorder two nearly equal keys. The CPU kernel uses the same function;
//   * inverse-CDF draws sum weights in double in CSR order on both sides, and compare with `<`.
//
// The algorithms differ from the CPU kernel's only in how they keep state, never in result:
//   uniform without replacement  Floyd's algorithm; the CPU tests membership by a scan or a bitmap
//                                and sorts at the end, here the picks are kept sorted as they
//                                are drawn (binary search + insert), which is the same set;
//   weighted without replacement the k best (key, position) by a bounded heap instead of
//                                nth_element: the same set, since the order is total;
//   weighted with replacement    targets drawn first, then one merged pass over the running sum
//                                instead of a cumulative array and upper_bound per draw.
#pragma once

#include <cstdint>
#include <cstring>

#include "volley/core/host_device.h"
#include "volley/core/philox.h"

namespace volley::sampling_internal {

// The Philox counter of the random stream for expanding `node` at `hop` of batch `batch`.
// word[0] counts blocks within the stream. Nodes up to 2^48 and 256 hops are distinct.
VOLLEY_HOST_DEVICE inline PhiloxCounter neighbor_stream_counter(int64_t node, int hop,
                                                                uint64_t batch) {
  const auto id = static_cast<uint64_t>(node);
  return {{0u, static_cast<uint32_t>(id),
           static_cast<uint32_t>((id >> 32) & 0xffffu) | (static_cast<uint32_t>(hop) << 16),
           static_cast<uint32_t>(batch)}};
}

// --- deterministic_log ----------------------------------------------------------------------
namespace detail {
#if defined(__CUDA_ARCH__)
__device__ inline double add(double a, double b) { return __dadd_rn(a, b); }
__device__ inline double sub(double a, double b) { return __dsub_rn(a, b); }
__device__ inline double mul(double a, double b) { return __dmul_rn(a, b); }
__device__ inline uint64_t bits_of(double x) {
  return static_cast<uint64_t>(__double_as_longlong(x));
}
__device__ inline double double_of(uint64_t bits) {
  return __longlong_as_double(static_cast<long long>(bits));
}
#else
// The host build is ISO C++ (-std=c++20, no -ffp-contract=fast), so these are single roundings.
inline double add(double a, double b) { return a + b; }
inline double sub(double a, double b) { return a - b; }
inline double mul(double a, double b) { return a * b; }
inline uint64_t bits_of(double x) {
  uint64_t bits;
  std::memcpy(&bits, &x, sizeof bits);
  return bits;
}
inline double double_of(uint64_t bits) {
  double x;
  std::memcpy(&x, &bits, sizeof x);
  return x;
}
#endif
}  // namespace detail

// Natural logarithm, < 1 ulp error, bit-identical on host and device: fdlibm's __ieee754_log
// (Sun Microsystems, 1993; the algorithm of FreeBSD's and musl's log) with each operation a
// single correctly rounded step. log(0) = -inf, log(x < 0) = NaN, log(inf) = inf.
VOLLEY_HOST_DEVICE inline double deterministic_log(double x) {
  using detail::add;
  using detail::mul;
  using detail::sub;
  constexpr double kLn2Hi = 6.93147180369123816490e-01;  // 3fe62e42 fee00000
  constexpr double kLn2Lo = 1.90821492927058770002e-10;  // 3dea39ef 35793c76
  constexpr double kTwo54 = 1.80143985094819840000e+16;  // 43500000 00000000
  constexpr double kLg1 = 6.666666666666735130e-01;      // 3FE55555 55555593
  constexpr double kLg2 = 3.999999999940941908e-01;      // 3FD99999 9997FA04
  constexpr double kLg3 = 2.857142874366239149e-01;      // 3FD24924 94229359
  constexpr double kLg4 = 2.222219843214978396e-01;      // 3FCC71C5 1D8E78AF
  constexpr double kLg5 = 1.818357216161805012e-01;      // 3FC74664 96CB03DE
  constexpr double kLg6 = 1.531383769920937332e-01;      // 3FC39A09 D078C69F
  constexpr double kLg7 = 1.479819860511658591e-01;      // 3FC2F112 DF3E5244

  uint64_t bits = detail::bits_of(x);
  int32_t hx = static_cast<int32_t>(bits >> 32);
  const uint32_t lx = static_cast<uint32_t>(bits);
  int k = 0;
  if (hx < 0x00100000) {  // x < 2^-1022, or negative
    if (((hx & 0x7fffffff) | static_cast<int32_t>(lx)) == 0) {
      return detail::double_of(0xfff0000000000000ull);  // log(±0) = -inf
    }
    if (hx < 0) return detail::double_of(0x7ff8000000000000ull);  // log(negative) = NaN
    k -= 54;
    x = mul(x, kTwo54);  // subnormal: scale up
    bits = detail::bits_of(x);
    hx = static_cast<int32_t>(bits >> 32);
  }
  if (hx >= 0x7ff00000) return add(x, x);  // inf or NaN
  k += (hx >> 20) - 1023;
  hx &= 0x000fffff;
  int32_t i = (hx + 0x95f64) & 0x100000;
  // Normalise x (or x / 2) into [sqrt(2)/2, sqrt(2)).
  bits = (static_cast<uint64_t>(static_cast<uint32_t>(hx | (i ^ 0x3ff00000))) << 32) |
         (bits & 0xffffffffull);
  x = detail::double_of(bits);
  k += (i >> 20);
  const double f = sub(x, 1.0);
  const double dk = static_cast<double>(k);
  if ((0x000fffff & (2 + hx)) < 3) {  // |f| < 2^-20
    if (f == 0.0) {
      if (k == 0) return 0.0;
      return add(mul(dk, kLn2Hi), mul(dk, kLn2Lo));
    }
    const double r = mul(mul(f, f), sub(0.5, mul(0.33333333333333333, f)));
    if (k == 0) return sub(f, r);
    return sub(mul(dk, kLn2Hi), sub(sub(r, mul(dk, kLn2Lo)), f));
  }
  const double s = f / add(2.0, f);  // IEEE division: correctly rounded on host and device
  const double z = mul(s, s);
  i = hx - 0x6147a;
  const double w = mul(z, z);
  const int32_t j = 0x6b851 - hx;
  const double t1 = mul(w, add(kLg2, mul(w, add(kLg4, mul(w, kLg6)))));
  const double t2 = mul(z, add(kLg1, mul(w, add(kLg3, mul(w, add(kLg5, mul(w, kLg7)))))));
  i |= j;
  const double r = add(t2, t1);
  if (i > 0) {
    const double hfsq = mul(mul(0.5, f), f);
    if (k == 0) return sub(f, sub(hfsq, mul(s, add(hfsq, r))));
    return sub(mul(dk, kLn2Hi), sub(sub(hfsq, add(mul(s, add(hfsq, r)), mul(dk, kLn2Lo))), f));
  }
  if (k == 0) return sub(f, mul(s, sub(f, r)));
  return sub(mul(dk, kLn2Hi), sub(sub(mul(s, sub(f, r)), mul(dk, kLn2Lo)), f));
}

// The Efraimidis–Spirakis key of a neighbor of weight `weight` > 0 given u in (0, 1]; the
// largest keys win.
VOLLEY_HOST_DEVICE inline double weighted_key(double u, float weight) {
  return deterministic_log(u) / static_cast<double>(weight);
}

// --- the graph, as the pick rules see it ------------------------------------------------------
template <typename Index>
struct GraphRows {
  const int64_t* indptr = nullptr;    // [N + 1]
  const Index* indices = nullptr;     // [E]
  const int64_t* edge_ids = nullptr;  // [E] or null: edge id == CSR position
  const float* weights = nullptr;     // [E] when sampling is weighted, else null
};

struct PickRule {
  int64_t fanout = 0;  // -1: all neighbors
  bool replace = false;
  uint64_t seed = 0;
  int hop = 0;
  uint64_t batch = 0;
};

// Whether a target of degree `degree` takes all its neighbors in CSR order without drawing.
VOLLEY_HOST_DEVICE inline bool takes_all(int64_t degree, const PickRule& rule) {
  return rule.fanout == -1 || (!rule.replace && degree <= rule.fanout);
}

// How many neighbors a target of degree `degree` gets (`row_weights`: its weights, or null
// when unweighted). O(1) unweighted, O(degree) weighted.
VOLLEY_HOST_DEVICE inline int64_t pick_count(int64_t degree, const float* row_weights,
                                             const PickRule& rule) {
  if (degree == 0 || rule.fanout == 0) return 0;
  if (takes_all(degree, rule)) return degree;
  if (row_weights == nullptr) return rule.fanout;
  int64_t positive = 0;  // up to the fanout: a hub's count reads a few weights, not its row
  for (int64_t i = 0; i < degree && positive < rule.fanout; ++i) {
    positive += row_weights[i] > 0.0f ? 1 : 0;
  }
  if (rule.replace) return positive > 0 ? rule.fanout : 0;
  return positive < rule.fanout ? positive : rule.fanout;
}

namespace detail {
// In-place heapsort of items [0, n) under the strict weak order `before`; `swap(a, b)` exchanges
// items a and b. O(n log n) time, O(1) space.
template <typename Before, typename Swap>
VOLLEY_HOST_DEVICE void heap_sort(int64_t n, Before before, Swap swap) {
  auto sift_down = [&](int64_t root, int64_t end) {
    while (true) {
      int64_t child = 2 * root + 1;
      if (child >= end) return;
      if (child + 1 < end && before(child, child + 1)) ++child;
      if (!before(root, child)) return;
      swap(root, child);
      root = child;
    }
  };
  for (int64_t start = n / 2 - 1; start >= 0; --start) sift_down(start, n);
  for (int64_t end = n - 1; end > 0; --end) {
    swap(0, end);
    sift_down(0, end);
  }
}
}  // namespace detail

namespace detail {
// Uniform without replacement, 0 < k < degree: Floyd's algorithm with the picks kept sorted
// (picks at step j lie in [0, j), so j itself always goes at the end).
VOLLEY_HOST_DEVICE inline void pick_uniform_floyd(int64_t degree, int64_t k, PhiloxStream& rng,
                                                  int64_t* positions) {
  int64_t size = 0;
  for (int64_t j = degree - k; j < degree; ++j) {
    const int64_t t = static_cast<int64_t>(rng.bounded64(static_cast<uint64_t>(j + 1)));
    int64_t low = 0, high = size;
    while (low < high) {
      const int64_t middle = low + (high - low) / 2;
      if (positions[middle] < t) {
        low = middle + 1;
      } else {
        high = middle;
      }
    }
    if (low < size && positions[low] == t) {
      positions[size++] = j;
    } else {
      for (int64_t m = size; m > low; --m) positions[m] = positions[m - 1];
      positions[low] = t;
      ++size;
    }
  }
}

}  // namespace detail

// The k best (key, position) pairs offered, under (key desc, position asc): a min-heap whose root
// is the worst kept, in the caller's keys[k] / positions[k]. The selection of weighted sampling
// without replacement, whether one thread offers a whole row (pick_weighted_keys) or the lanes
// of a row each offer theirs and their bests are offered again (the GPU's WeightedLanesBody and
// WeightedMergeBody): the same k pairs either way, since the order is total.
struct BestKeys {
  double* keys;
  int64_t* positions;
  int64_t k;
  int64_t size = 0;

  VOLLEY_HOST_DEVICE bool worse(int64_t a, int64_t b) const {  // slot a holds a worse pair
    return keys[a] < keys[b] || (keys[a] == keys[b] && positions[a] > positions[b]);
  }
  VOLLEY_HOST_DEVICE void swap_slots(int64_t a, int64_t b) {
    const double key = keys[a];
    keys[a] = keys[b];
    keys[b] = key;
    const int64_t position = positions[a];
    positions[a] = positions[b];
    positions[b] = position;
  }
  VOLLEY_HOST_DEVICE void offer(double key, int64_t position) {
    if (size < k) {
      keys[size] = key;
      positions[size] = position;
      for (int64_t child = size++; child > 0;) {  // sift up
        const int64_t parent = (child - 1) / 2;
        if (!worse(child, parent)) break;
        swap_slots(child, parent);
        child = parent;
      }
      return;
    }
    if (!(key > keys[0] || (key == keys[0] && position < positions[0]))) return;
    keys[0] = key;
    positions[0] = position;
    for (int64_t root = 0;;) {  // sift down
      int64_t child = 2 * root + 1;
      if (child >= k) return;
      if (child + 1 < k && worse(child + 1, child)) ++child;
      if (!worse(child, root)) return;
      swap_slots(root, child);
      root = child;
    }
  }
  // Sorts the kept positions in increasing order (the keys are left behind).
  VOLLEY_HOST_DEVICE void sort_positions() {
    int64_t* p = positions;
    detail::heap_sort(
        size, [p](int64_t a, int64_t b) { return p[a] < p[b]; },
        [p](int64_t a, int64_t b) {
          const int64_t position = p[a];
          p[a] = p[b];
          p[b] = position;
        });
  }
};

namespace detail {
// Weighted without replacement, k <= the positive weights: Efraimidis–Spirakis, one uniform per
// neighbor in CSR order (zero weights draw too, which keeps the stream aligned with the CPU
// kernel; so uniform i of the stream belongs to position i, see uniform_pair); keeps the k best
// and sorts them by position.
VOLLEY_HOST_DEVICE inline void pick_weighted_keys(int64_t degree, const float* row_weights,
                                                  int64_t k, PhiloxStream& rng, int64_t* positions,
                                                  double* keys) {
  BestKeys best{keys, positions, k};
  for (int64_t i = 0; i < degree; ++i) {
    const double u = 1.0 - rng.uniform_double();  // (0, 1]
    if (!(row_weights[i] > 0.0f)) continue;
    best.offer(weighted_key(u, row_weights[i]), i);
  }
  best.sort_positions();
}

// Weighted with replacement (some weight positive): inverse CDF. The CPU kernel finds the first
// position whose running sum exceeds each target; here the targets are visited in increasing
// order during one pass over the running sum (the same sums: the same additions in the same
// order).
VOLLEY_HOST_DEVICE inline void pick_weighted_cdf(int64_t degree, const float* row_weights,
                                                 int64_t k, PhiloxStream& rng, int64_t* positions,
                                                 double* keys, int64_t* order) {
  double total = 0.0;
  for (int64_t i = 0; i < degree; ++i) total += static_cast<double>(row_weights[i]);
  for (int64_t j = 0; j < k; ++j) {
    keys[j] = rng.uniform_double() * total;
    order[j] = j;
  }
  heap_sort(
      k,
      [&](int64_t a, int64_t b) {
        const double ka = keys[order[a]], kb = keys[order[b]];
        return ka < kb || (ka == kb && order[a] < order[b]);
      },
      [&](int64_t a, int64_t b) {
        const int64_t o = order[a];
        order[a] = order[b];
        order[b] = o;
      });
  double running = 0.0;
  int64_t next = 0;
  for (int64_t i = 0; i < degree && next < k; ++i) {
    running += static_cast<double>(row_weights[i]);
    while (next < k && keys[order[next]] < running) positions[order[next++]] = i;
  }
  while (next < k) positions[order[next++]] = degree - 1;  // rounding at the top end
  for (int64_t j = 0; j < k; ++j) {
    int64_t position = positions[j];
    // Never land on a zero-weight neighbor (possible only through rounding at the top end).
    while (position > 0 && row_weights[position] == 0.0f) --position;
    positions[j] = position;
  }
}
}  // namespace detail

// Uniforms `pair` * 2 and `pair` * 2 + 1 of the stream that pick_positions draws for (target,
// hop, batch): uniform_double takes two words, so one Philox block holds a pair. Random access
// into that stream, for drawing one row's weighted keys on many threads.
VOLLEY_HOST_DEVICE inline void uniform_pair(const PickRule& rule, int64_t target, int64_t pair,
                                            double* out) {
  PhiloxCounter counter = neighbor_stream_counter(target, rule.hop, rule.batch);
  counter.word[0] += static_cast<uint32_t>(pair);
  const PhiloxCounter block = philox4x32<10>(counter, philox_key(rule.seed));
  for (int half = 0; half < 2; ++half) {
    const uint64_t bits =
        (static_cast<uint64_t>(block.word[2 * half]) << 21) ^ (block.word[2 * half + 1] >> 11);
    out[half] = static_cast<double>(bits & ((1ULL << 53) - 1)) * 0x1.0p-53;
  }
}

// Writes the positions (relative to the row start) of the `count` == pick_count(...) neighbors
// picked for `target`, in output order, to positions[0, count). Scratch: `keys` and `order`
// hold `count` doubles / int64 each (used by weighted sampling only). Draws exactly what the
// CPU kernel draws, in the same order.
VOLLEY_HOST_DEVICE inline void pick_positions(int64_t target, int64_t degree,
                                              const float* row_weights, const PickRule& rule,
                                              int64_t count, int64_t* positions, double* keys,
                                              int64_t* order) {
  if (count == 0) return;
  if (takes_all(degree, rule)) {
    for (int64_t p = 0; p < degree; ++p) positions[p] = p;
    return;
  }
  PhiloxStream rng(rule.seed, neighbor_stream_counter(target, rule.hop, rule.batch));
  const int64_t k = rule.fanout;
  if (row_weights == nullptr) {
    if (rule.replace) {
      for (int64_t j = 0; j < k; ++j) {
        positions[j] = static_cast<int64_t>(rng.bounded64(static_cast<uint64_t>(degree)));
      }
      return;
    }
    detail::pick_uniform_floyd(degree, k, rng, positions);
    return;
  }
  if (!rule.replace) {
    if (count < k) {  // fewer positive weights than the fanout: all of them, no draws needed
      int64_t size = 0;
      for (int64_t i = 0; i < degree; ++i) {
        if (row_weights[i] > 0.0f) positions[size++] = i;
      }
      return;
    }
    detail::pick_weighted_keys(degree, row_weights, k, rng, positions, keys);
    return;
  }
  detail::pick_weighted_cdf(degree, row_weights, k, rng, positions, keys, order);
}

// --- temporal sampling (neighbor_sampler.h) ---------------------------------------------------
// What the GPU bodies need of a temporal batch: the entries' times and each tree's seed time.
struct TemporalRows {
  const int64_t* edge_time = nullptr;   // [E] in CSR order (TimeSource::kEdge), else null
  const int64_t* node_time = nullptr;   // [N] (TimeSource::kNode), else null
  const int64_t* seed_times = nullptr;  // [seeds], device; null: not temporal
  bool last = false;                    // TemporalStrategy::kLast
  VOLLEY_HOST_DEVICE bool active() const { return seed_times != nullptr; }
};

// How many entries of a row sorted by time (`row_indices`, and `row_edge_time` or the
// `node_time` of the neighbors) have a time <= limit: the admissible prefix, by binary search.
template <typename Index>
VOLLEY_HOST_DEVICE inline int64_t admissible_prefix(const TemporalRows& time,
                                                    const Index* row_indices,
                                                    const int64_t* row_edge_time, int64_t degree,
                                                    int64_t limit) {
  int64_t low = 0, high = degree;
  while (low < high) {
    const int64_t middle = low + (high - low) / 2;
    const int64_t t =
        row_edge_time != nullptr ? row_edge_time[middle] : time.node_time[row_indices[middle]];
    if (t <= limit) {
      low = middle + 1;
    } else {
      high = middle;
    }
  }
  return low;
}

// How many neighbors a target with `admissible` admissible entries gets (the CPU kernel's
// pick_temporal rules).
VOLLEY_HOST_DEVICE inline int64_t temporal_pick_count(int64_t admissible, const PickRule& rule,
                                                      bool last) {
  if (admissible == 0 || rule.fanout == 0) return 0;
  if (rule.fanout == -1 || (admissible <= rule.fanout && (last || !rule.replace))) {
    return admissible;
  }
  return rule.fanout;
}

}  // namespace volley::sampling_internal
