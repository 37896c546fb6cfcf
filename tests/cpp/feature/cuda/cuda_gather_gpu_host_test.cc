// The two-tier GPU gather's body, run by the host executor (no GPU): it equals the CPU gather
// (gather_rows) at hot-cache ratios 0, 20% and 100% for float32, float16 and int64 rows, with
// the tiers in id order or in a hot order (int32 and int64 lookups), every vector width; an
// out-of-range id is reported at its position (the first one) and its row zero-filled. Tiers
// are laid out as FeatureStore's GPU tiers lay them out (gpu_tiers.cc). Label gpu-host.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <numeric>
#include <random>

#include "test_util.h"
#include "volley/feature/gather.h"
#include "volley/feature/internal/cuda_gather_kernel.h"

namespace volley {
namespace {

using feature_internal::DeviceGatherPlan;

enum class Lookup { kNone, kInt32, kInt64 };

// A matrix split into a "device" tier (hot rows) and a "pinned" tier (the rest), host memory.
struct HostTiers {
  Buffer device_rows, pinned_rows, lookup;
  DeviceGatherPlan plan;

  HostTiers(const Array& matrix, double hot_ratio, Lookup lookup_kind, uint64_t seed) {
    const int64_t n = matrix.dim(0);
    const size_t row_bytes = matrix.nbytes() / static_cast<size_t>(n);
    std::vector<int64_t> order(static_cast<size_t>(n));  // tier order: hot rows first
    std::iota(order.begin(), order.end(), int64_t{0});
    if (lookup_kind != Lookup::kNone)
      std::shuffle(order.begin(), order.end(), std::mt19937_64(seed));
    const auto hot = static_cast<int64_t>(hot_ratio * static_cast<double>(n));
    device_rows = Buffer::allocate(std::max<size_t>(static_cast<size_t>(hot) * row_bytes, 1));
    pinned_rows = Buffer::allocate(std::max<size_t>(static_cast<size_t>(n - hot) * row_bytes, 1));
    std::vector<int64_t> entries(static_cast<size_t>(n));
    for (int64_t slot = 0; slot < n; ++slot) {
      const int64_t id = order[static_cast<size_t>(slot)];
      std::byte* to = slot < hot ? device_rows.data() + slot * row_bytes
                                 : pinned_rows.data() + (slot - hot) * row_bytes;
      std::memcpy(to, matrix.raw_data() + id * row_bytes, row_bytes);
      entries[static_cast<size_t>(id)] = slot < hot ? slot : ~(slot - hot);
    }
    if (lookup_kind == Lookup::kInt32) {
      lookup = Buffer::allocate(static_cast<size_t>(n) * 4);
      for (int64_t id = 0; id < n; ++id) {
        reinterpret_cast<int32_t*>(lookup.data())[id] = static_cast<int32_t>(entries[id]);
      }
    } else if (lookup_kind == Lookup::kInt64) {
      lookup = Buffer::allocate(static_cast<size_t>(n) * 8);
      std::memcpy(lookup.data(), entries.data(), static_cast<size_t>(n) * 8);
    }
    plan.device_rows = device_rows.data();
    plan.pinned_rows = pinned_rows.data();
    plan.lookup = lookup.empty() ? nullptr : lookup.data();
    plan.lookup_is_32bit = lookup_kind == Lookup::kInt32;
    plan.hot_rows = hot;
    plan.num_rows = n;
    plan.row_bytes = row_bytes;
  }
};

Array random_matrix(DType dtype, int64_t n, int64_t width, uint64_t seed) {
  Array matrix = Array::zeros(dtype, {n, width});
  std::mt19937_64 rng(seed);
  for (size_t b = 0; b < matrix.nbytes(); ++b) {
    const_cast<std::byte*>(matrix.raw_data())[b] = static_cast<std::byte>(rng());
  }
  return matrix;
}

TEST(CudaGatherGpuHost, EqualsTheCpuGatherAtEveryHotRatio) {
  struct Case {
    DType dtype;
    int64_t width;
  };
  // Row sizes 20, 32, 6, 128, 8, 24 bytes: vector widths 4, 16, 2, 16, 8, 8.
  const std::vector<Case> cases = {{DType::kFloat32, 5}, {DType::kFloat32, 8},
                                   {DType::kFloat16, 3}, {DType::kFloat16, 64},
                                   {DType::kInt64, 1},   {DType::kInt64, 3}};
  std::mt19937_64 rng(11);
  int compared = 0;
  for (const Case& c : cases) {
    const int64_t n = 700;
    const Array matrix = random_matrix(c.dtype, n, c.width, rng());
    std::vector<int64_t> ids(900);
    for (auto& id : ids) id = static_cast<int64_t>(rng() % n);  // duplicates included
    const size_t row_bytes = static_cast<size_t>(c.width) * dtype_size(c.dtype);
    std::vector<std::byte> expected(ids.size() * row_bytes);
    gather_rows(matrix, ids, c.dtype, expected.data());
    for (double ratio : {0.0, 0.2, 1.0}) {
      for (Lookup lookup : {Lookup::kNone, Lookup::kInt32, Lookup::kInt64}) {
        const HostTiers tiers(matrix, ratio, lookup, rng());
        for (size_t misalign : {size_t{0}, size_t{2}, size_t{1}}) {  // narrower vectors
          Buffer out = Buffer::allocate(expected.size() + 16);
          std::byte* target = out.data() + misalign;
          const int64_t bad = feature_internal::launch_host_gather(
              tiers.plan, ids.data(), static_cast<int64_t>(ids.size()), target, true,
              {.threads = 8, .seed = rng()});
          EXPECT_EQ(bad, -1);
          EXPECT_EQ(std::memcmp(target, expected.data(), expected.size()), 0)
              << dtype_name(c.dtype) << " width " << c.width << " hot " << ratio << " lookup "
              << static_cast<int>(lookup) << " misalign " << misalign;
          ++compared;
        }
      }
    }
  }
  EXPECT_EQ(compared, 6 * 3 * 3 * 3);
}

TEST(CudaGatherGpuHost, OutOfRangeIdsAreReportedAtTheFirstPosition) {
  const int64_t n = 50;
  const Array matrix = random_matrix(DType::kFloat32, n, 6, 4);
  std::vector<int64_t> ids(200);
  std::mt19937_64 rng(5);
  for (auto& id : ids) id = static_cast<int64_t>(rng() % n);
  ids[150] = -1;
  ids[37] = n;  // the first bad one
  ids[90] = int64_t{1} << 40;
  const std::string cpu = message_of<IndexError>([&] {
    std::vector<float> scratch(ids.size() * 6);
    gather_rows(matrix, ids, DType::kFloat32, reinterpret_cast<std::byte*>(scratch.data()));
  });
  EXPECT_NE(cpu.find("row id 50 at position 37"), std::string::npos) << cpu;
  for (Lookup lookup : {Lookup::kNone, Lookup::kInt32}) {
    const HostTiers tiers(matrix, 0.2, lookup, 8);
    std::vector<float> out(ids.size() * 6, 1.0f);
    EXPECT_EQ(feature_internal::launch_host_gather(tiers.plan, ids.data(), 200, out.data(), true),
              37);
    const std::vector<float> zeros(6, 0.0f);
    for (int64_t bad : {37, 90, 150}) {
      EXPECT_EQ(std::memcmp(&out[bad * 6], zeros.data(), 24), 0) << "row " << bad;
    }
    // The good rows are the CPU's.
    std::vector<int64_t> good = ids;
    for (int64_t bad : {37, 90, 150}) good[bad] = 0;
    std::vector<float> expected(ids.size() * 6);
    gather_rows(matrix, good, DType::kFloat32, reinterpret_cast<std::byte*>(expected.data()));
    for (size_t row = 0; row < ids.size(); ++row) {
      if (row == 37 || row == 90 || row == 150) continue;
      ASSERT_EQ(std::memcmp(&out[row * 6], &expected[row * 6], 24), 0) << "row " << row;
    }
    // Without the check, nothing is reported (the rows are still zero-filled).
    EXPECT_EQ(feature_internal::launch_host_gather(tiers.plan, ids.data(), 200, out.data(), false),
              -1);
  }
  EXPECT_EQ(feature_internal::launch_host_gather(HostTiers(matrix, 0, Lookup::kNone, 1).plan,
                                                 ids.data(), 0, nullptr, true),
            -1);
}

}  // namespace
}  // namespace volley
