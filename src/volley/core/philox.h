// volley/core/philox.h — Philox4x32-10, the counter-based RNG behind every random choice.
//
// Philox (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", SC'11) maps a 128-bit
// counter and a 64-bit key to 128 random bits with no state. Sampling keys it by the user's seed
// and puts (batch, hop, node, draw) in the counter, so a result never depends on which thread or
// device computed it. Output matches the Random123 reference (known-answer tests in
// tests/cpp/core/philox_test.cc). Usable in host and CUDA device code.
//
//   PhiloxStream rng(seed, {draw0, node_lo, node_hi_and_hop, batch});
//   uint32_t r = rng.next();               // 32 random bits
//   uint32_t k = rng.bounded(degree);      // uniform in [0, degree)
//   float u = rng.uniform();               // uniform in [0, 1)
#pragma once

#include <cstdint>

#include "volley/core/host_device.h"

namespace volley {

struct PhiloxCounter {
  uint32_t word[4];
};

struct PhiloxKey {
  uint32_t word[2];
};

VOLLEY_HOST_DEVICE inline PhiloxKey philox_key(uint64_t seed) {
  return {{static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32)}};
}

namespace internal {
VOLLEY_HOST_DEVICE inline void mul_hi_lo(uint32_t a, uint32_t b, uint32_t* hi, uint32_t* lo) {
  const uint64_t product = static_cast<uint64_t>(a) * b;
  *hi = static_cast<uint32_t>(product >> 32);
  *lo = static_cast<uint32_t>(product);
}
}  // namespace internal

// One Philox4x32 block with `rounds` rounds (10 is the standard, crush-resistant choice).
template <int rounds = 10>
VOLLEY_HOST_DEVICE inline PhiloxCounter philox4x32(PhiloxCounter counter, PhiloxKey key) {
  constexpr uint32_t kMultiplier0 = 0xD2511F53u;
  constexpr uint32_t kMultiplier1 = 0xCD9E8D57u;
  constexpr uint32_t kWeyl0 = 0x9E3779B9u;
  constexpr uint32_t kWeyl1 = 0xBB67AE85u;
  uint32_t* x = counter.word;
  for (int round = 0; round < rounds; ++round) {
    if (round > 0) {
      key.word[0] += kWeyl0;
      key.word[1] += kWeyl1;
    }
    uint32_t hi0, lo0, hi1, lo1;
    internal::mul_hi_lo(kMultiplier0, x[0], &hi0, &lo0);
    internal::mul_hi_lo(kMultiplier1, x[2], &hi1, &lo1);
    const uint32_t next[4] = {hi1 ^ x[1] ^ key.word[0], lo1, hi0 ^ x[3] ^ key.word[1], lo0};
    x[0] = next[0];
    x[1] = next[1];
    x[2] = next[2];
    x[3] = next[3];
  }
  return counter;
}

// A stream of random numbers from consecutive Philox blocks: word[0] of the starting counter is
// incremented for each block of four outputs. Cheap to construct; keep one per (batch, hop, node).
class PhiloxStream {
 public:
  VOLLEY_HOST_DEVICE PhiloxStream(uint64_t seed, PhiloxCounter start)
      : key_(philox_key(seed)), counter_(start), used_(4) {}

  VOLLEY_HOST_DEVICE uint32_t next() {
    if (used_ == 4) {
      block_ = philox4x32<10>(counter_, key_);
      ++counter_.word[0];
      used_ = 0;
    }
    return block_.word[used_++];
  }

  // Uniform integer in [0, bound) for bound >= 1, by Lemire's multiply-and-reject (unbiased).
  VOLLEY_HOST_DEVICE uint32_t bounded(uint32_t bound) {
    uint64_t product = static_cast<uint64_t>(next()) * bound;
    uint32_t low = static_cast<uint32_t>(product);
    if (low < bound) {
      const uint32_t threshold = (0u - bound) % bound;
      while (low < threshold) {
        product = static_cast<uint64_t>(next()) * bound;
        low = static_cast<uint32_t>(product);
      }
    }
    return static_cast<uint32_t>(product >> 32);
  }

  // Uniform integer in [0, bound) for 64-bit bounds (bound >= 1), by rejection on 64 bits.
  VOLLEY_HOST_DEVICE uint64_t bounded64(uint64_t bound) {
    if (bound <= 0xffffffffULL) return bounded(static_cast<uint32_t>(bound));
    const uint64_t limit = ~0ULL - (~0ULL % bound);
    uint64_t value;
    do {
      value = (static_cast<uint64_t>(next()) << 32) | next();
    } while (value >= limit);
    return value % bound;
  }

  // Uniform float in [0, 1) with 24 random bits.
  VOLLEY_HOST_DEVICE float uniform() { return static_cast<float>(next() >> 8) * 0x1.0p-24f; }
  // Uniform double in [0, 1) with 53 random bits.
  VOLLEY_HOST_DEVICE double uniform_double() {
    const uint64_t bits = (static_cast<uint64_t>(next()) << 21) ^ (next() >> 11);
    return static_cast<double>(bits & ((1ULL << 53) - 1)) * 0x1.0p-53;
  }

 private:
  PhiloxKey key_;
  PhiloxCounter counter_;
  PhiloxCounter block_{};
  int used_;
};

}  // namespace volley
