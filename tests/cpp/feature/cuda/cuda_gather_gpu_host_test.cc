// The two-tier GPU gather's body, run by the host executor (no GPU): it equals the CPU gather
// (gather_rows) at hot-cache ratios 0, 20% and 100% for float32, float16 and int64 rows, with
// the tiers in id order or in a hot order (int32 and int64 lookups), every vector width; an
// out-of-range id is reported at its position (the first one) and its row zero-filled. Tiers
// are laid out as FeatureStore's GPU tiers lay them out (gpu_tiers.cc). Then the whole store on
// emulated devices: a cache sharded over 4 devices with full, partial, non-transitive and no
// peer access gathers on every device what one device and the CPU gather, each row routed to
// the own shard, a peer's or pinned memory as an independent model of the placement says.
// Label gpu-host.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <numeric>
#include <random>

#include "test_util.h"
#include "volley/core/cuda_device.h"
#include "volley/core/internal/emulated_device.h"
#include "volley/feature/feature_store.h"
#include "volley/feature/gather.h"
#include "volley/feature/internal/cuda_gather_kernel.h"

namespace volley {
namespace {

using feature_internal::DeviceGatherPlan;

enum class Lookup { kNone, kInt32, kInt64 };

// A matrix split into a "device" tier (hot rows) and a "pinned" tier (the rest), host memory.
struct HostTiers {
  Buffer device_rows, pinned_rows, lookup;
  const std::byte* shard_table[1] = {};  // one device: one shard
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
      entries[static_cast<size_t>(id)] = slot;
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
    shard_table[0] = device_rows.data();
    plan.shard_rows = shard_table;
    plan.shard_address_bits = reinterpret_cast<uintptr_t>(device_rows.data());
    plan.pinned_rows = pinned_rows.data();
    plan.pinned_first = hot;
    plan.lookup = lookup.empty() ? nullptr : lookup.data();
    plan.lookup_is_32bit = lookup_kind == Lookup::kInt32;
    plan.hot_rows = hot;
    plan.num_rows = n;
    plan.row_bytes = row_bytes;
  }
  HostTiers(const HostTiers&) = delete;  // the plan points into this object
  HostTiers& operator=(const HostTiers&) = delete;
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

// --- a cache sharded over emulated devices ------------------------------------------------------

// A topology of 4 emulated devices and the cliques it must give for devices {0, 1, 2, 3}.
struct Topology {
  const char* name;
  const char* peers;  // VOLLEY_HOST_EXECUTOR_PEERS syntax
  std::vector<std::vector<int>> cliques;
};

const std::vector<Topology>& topologies() {
  static const std::vector<Topology> all = {
      {"full", "all", {{0, 1, 2, 3}}},
      {"none", "none", {{0}, {1}, {2}, {3}}},
      {"pairs", "1100,1100,0011,0011", {{0, 1}, {2, 3}}},
      // 0-1 and 1-2 are peers, 0-2 are not; 3 reads 2 but 2 does not read 3.
      {"chain", "1100,1110,0110,0011", {{0, 1}, {2}, {3}}}};
  return all;
}

internal::EmulatedDevices devices_of(const Topology& topology) {
  return internal::parse_emulated_devices("4", topology.peers);
}

FeatureStoreOptions sharded(size_t budget, std::vector<int> devices,
                            std::optional<Array> hot_order) {
  return {.tiers = {{.location = Location::kCuda,
                     .byte_budget = budget,
                     .devices = std::move(devices)}},
          .hot_order = std::move(hot_order)};
}

// Where the model says a gather on `device` reads the row of placement slot `slot`: the device
// of the shard (-1: pinned memory) and the slot there.
std::pair<int, int64_t> modelled_place(const Topology& topology, int device, int64_t slot,
                                       int64_t per_device, int64_t n) {
  int64_t pinned_first = n;
  for (const auto& clique : topology.cliques) {
    pinned_first =
        std::min(pinned_first, std::min(n, per_device * static_cast<int64_t>(clique.size())));
  }
  for (const auto& clique : topology.cliques) {
    if (std::find(clique.begin(), clique.end(), device) == clique.end()) continue;
    const auto size = static_cast<int64_t>(clique.size());
    if (slot < std::min(n, per_device * size)) {
      return {clique[static_cast<size_t>(slot % size)], slot / size};
    }
  }
  return {-1, slot - pinned_first};
}

TEST(ShardedCacheGpuHost, CliquesFollowThePeerMatrix) {
  for (const Topology& topology : topologies()) {
    internal::ScopedCudaEmulation emulated(devices_of(topology));
    EXPECT_EQ(cuda_device_count(), 4);
    EXPECT_EQ(cuda_peer_cliques(std::vector<int>{0, 1, 2, 3}), topology.cliques) << topology.name;
    // A device reads its own memory; a pair without access is refused, not silently allowed.
    EXPECT_TRUE(cuda_can_access_peer(2, 2));
    for (int a = 0; a < 4; ++a) {
      for (int b = 0; b < 4; ++b) {
        if (cuda_can_access_peer(a, b)) {
          EXPECT_NO_THROW(cuda_enable_peer_access(a, b));
        } else {
          EXPECT_NE(message_of<RuntimeError>([&] {
                      cuda_enable_peer_access(a, b);
                    }).find(fmt::format("cuda:{} cannot read cuda:{}'s memory", a, b)),
                    std::string::npos);
        }
      }
    }
  }
  internal::ScopedCudaEmulation pairs(devices_of(topologies()[2]));
  EXPECT_EQ(cuda_peer_cliques(std::vector<int>{3, 0, 2}),
            (std::vector<std::vector<int>>{{3, 2}, {0}}));
  EXPECT_NE(message_of<RuntimeError>([] {
              Buffer::allocate_device(8, 4);
            }).find("CUDA device 4 requested, but 4 CUDA device(s) are visible"),
            std::string::npos);
}

// Every device of every topology gathers the CPU's rows and one device's rows, with the hot
// rows in id order and in a shuffled hot order; each row is where the model puts it, and the
// ids cover rows on the own shard, on a peer's shard and in pinned memory.
TEST(ShardedCacheGpuHost, EveryDeviceGathersTheSingleDeviceRowsFromEveryPlacement) {
  const int64_t n = 400, width = 5, per_device = 30;
  const Array matrix = random_matrix(DType::kFloat32, n, width, 21);
  const size_t row_bytes = width * sizeof(float);
  std::mt19937_64 rng(3);
  std::vector<int64_t> ids(1000);
  for (auto& id : ids) id = static_cast<int64_t>(rng() % n);
  for (int64_t id = 0; id < n; ++id) ids.push_back(id);  // every row at least once
  const Array id_array = Array::from_vector(ids);
  std::vector<std::byte> expected(ids.size() * row_bytes);
  gather_rows(matrix, ids, DType::kFloat32, expected.data());
  std::vector<int64_t> shuffled(n);
  std::iota(shuffled.begin(), shuffled.end(), int64_t{0});
  std::shuffle(shuffled.begin(), shuffled.end(), rng);
  for (const Topology& topology : topologies()) {
    internal::ScopedCudaEmulation emulated(devices_of(topology));
    for (const bool hot_order : {false, true}) {
      std::optional<Array> order;
      if (hot_order) order = Array::from_vector(shuffled);
      const FeatureStore store =
          FeatureStore::build(matrix, sharded(per_device * row_bytes, {0, 1, 2, 3}, order));
      EXPECT_EQ(store.devices(), (std::vector<int>{0, 1, 2, 3}));
      for (int device = 0; device < 4; ++device) {
        SCOPED_TRACE(
            fmt::format("{} peers, hot order {}, cuda:{}", topology.name, hot_order, device));
        const FeatureStore alone =
            FeatureStore::build(matrix, sharded(per_device * row_bytes, {device}, order));
        std::vector<std::byte> got(expected.size()), single(expected.size());
        store.gather(ids, got.data(), {.device = device});
        alone.gather(ids, single.data());
        EXPECT_EQ(std::memcmp(got.data(), expected.data(), got.size()), 0);
        EXPECT_EQ(std::memcmp(single.data(), expected.data(), single.size()), 0);
        int local = 0, peer = 0, pinned = 0;
        for (int64_t id = 0; id < n; ++id) {
          const int64_t slot =
              hot_order ? std::find(shuffled.begin(), shuffled.end(), id) - shuffled.begin() : id;
          const auto [owner, owner_slot] = modelled_place(topology, device, slot, per_device, n);
          const RowLocation at = store.locate(id, device);
          const Array& rows = store.tiers()[static_cast<size_t>(at.tier)].rows();
          ASSERT_EQ(rows.buffer().location(), owner < 0 ? Location::kPinnedHost : Location::kCuda)
              << id;
          if (owner >= 0) ASSERT_EQ(rows.buffer().device(), owner) << id;
          ASSERT_EQ(at.slot, owner_slot) << id;
          ASSERT_EQ(std::memcmp(rows.raw_data() + at.slot * row_bytes,
                                matrix.raw_data() + id * row_bytes, row_bytes),
                    0)
              << id;
          (owner == device ? local : owner < 0 ? pinned : peer) += 1;
        }
        const auto clique_size =
            std::find_if(topology.cliques.begin(), topology.cliques.end(), [&](const auto& c) {
              return std::find(c.begin(), c.end(), device) != c.end();
            })->size();
        EXPECT_EQ(local, per_device);
        EXPECT_EQ(peer, per_device * static_cast<int64_t>(clique_size - 1));
        EXPECT_EQ(pinned, n - per_device * static_cast<int64_t>(clique_size));
      }
    }
  }
}

// The gathering device follows `out` (or the ids); bad device lists name the offending device.
TEST(ShardedCacheGpuHost, DevicesAreCheckedAndTheGatherFollowsOut) {
  internal::ScopedCudaEmulation emulated(devices_of(topologies()[2]));  // pairs
  const Array matrix = random_matrix(DType::kFloat32, 50, 4, 9);
  const auto build = [&](std::vector<int> devices) {
    return FeatureStore::build(matrix, sharded(10 * 16, std::move(devices), std::nullopt));
  };
  EXPECT_NE(message_of<ValueError>([&] {
              build({0, 2, 0});
            }).find("CUDA device 0 is listed twice in devices [0, 2, 0]"),
            std::string::npos);
  EXPECT_NE(message_of<ValueError>([&] {
              build({1, -2});
            }).find("CUDA device must be >= 0, got -2"),
            std::string::npos);
  EXPECT_NE(message_of<RuntimeError>([&] {
              build({0, 7});
            }).find("CUDA device 7 requested, but 4 CUDA device(s) are visible"),
            std::string::npos);
  FeatureStoreOptions pinned_elsewhere = sharded(160, {0, 1}, std::nullopt);
  pinned_elsewhere.tiers.push_back({.location = Location::kPinnedHost, .device = 3});
  EXPECT_NE(message_of<ValueError>([&] {
              FeatureStore::build(matrix, pinned_elsewhere);
            }).find("the pinned tier is read by cuda:3, the device tier lives on [0, 1]"),
            std::string::npos);
  const FeatureStore store = build({2, 0});  // two cliques of one: each caches rows 0..9
  EXPECT_EQ(store.device(), 2);
  EXPECT_NE(store.describe().find("cuda:2 (10 rows"), std::string::npos) << store.describe();
  const std::vector<int64_t> ids = {3, 49, 0, 12};
  const Array id_array = Array::from_vector(ids);
  std::vector<float> expected(ids.size() * 4);
  gather_rows(matrix, ids, DType::kFloat32, reinterpret_cast<std::byte*>(expected.data()));
  for (const int device : {0, 2}) {
    const Array out(Buffer::allocate_device(ids.size() * 16, device), DType::kFloat32, {4, 4});
    store.gather(id_array, out);  // on `device`: out lives there
    EXPECT_EQ(std::memcmp(out.raw_data(), expected.data(), out.nbytes()), 0) << device;
  }
  const Array on_one(Buffer::allocate_device(ids.size() * 16, 1), DType::kFloat32, {4, 4});
  EXPECT_NE(message_of<ValueError>([&] {
              store.gather(id_array, on_one);
            }).find("out lives on cuda:1, the feature store gathers on cuda:2"),
            std::string::npos);
  EXPECT_NE(
      message_of<ValueError>([&] {
        std::vector<float> out(16);
        store.gather(ids, reinterpret_cast<std::byte*>(out.data()), {.device = 3});
      }).find("cannot gather on cuda:3: it holds no shard of this feature store (devices [2, 0])"),
      std::string::npos);
  EXPECT_NE(message_of<ValueError>([&] {
              store.locate(5, 1);
            }).find("cuda:1 holds no shard of this feature store (devices [2, 0])"),
            std::string::npos);
}

// Labels (an [N] vector store) with no budget given: every clique caches every row, so nothing
// is left in pinned memory and each gather reads its own shard and its peers'.
TEST(ShardedCacheGpuHost, AnUnboundedBudgetCachesEveryRowInEveryClique) {
  internal::ScopedCudaEmulation emulated(devices_of(topologies()[3]));  // chain: {0, 1}, {2}, {3}
  std::vector<int64_t> labels(97);
  for (size_t i = 0; i < labels.size(); ++i) labels[i] = static_cast<int64_t>(i * i) - 50;
  const Array vector = Array::from_vector(labels);
  const FeatureStore store =
      FeatureStore::build(vector, sharded(Buffer::npos, {0, 1, 2, 3}, std::nullopt));
  ASSERT_EQ(store.tiers().size(), 5u);
  EXPECT_EQ(store.tiers()[0].num_slots(), 49);  // slots 0, 2, ..., 96
  EXPECT_EQ(store.tiers()[1].num_slots(), 48);
  EXPECT_EQ(store.tiers()[2].num_slots(), 97);
  EXPECT_EQ(store.tiers()[4].num_slots(), 0);
  const std::vector<int64_t> ids = {96, 0, 1, 50, 50, 13};
  for (int device = 0; device < 4; ++device) {
    std::vector<int64_t> got(ids.size());
    store.gather(ids, reinterpret_cast<std::byte*>(got.data()), {.device = device});
    for (size_t i = 0; i < ids.size(); ++i) EXPECT_EQ(got[i], labels[static_cast<size_t>(ids[i])]);
    EXPECT_NE(store.locate(50, device).tier, 4);
  }
}

// A GPU store rebuilt from its parts (what another process opens by handle) gathers the same
// rows on every device and places them where the original does; to_shareable moves every array
// to shareable memory once (a shareable store is kept); parts that disagree are refused by name.
TEST(ShardedCacheGpuHost, PartsRebuildTheStoreAndShareableCopiesOnce) {
  const int64_t n = 300, width = 4, per_device = 25;
  const Array matrix = random_matrix(DType::kFloat32, n, width, 9);
  const size_t row_bytes = width * sizeof(float);
  std::vector<int64_t> ids(n), shuffled(n);
  std::iota(ids.begin(), ids.end(), int64_t{0});
  std::iota(shuffled.begin(), shuffled.end(), int64_t{0});
  std::shuffle(shuffled.begin(), shuffled.end(), std::mt19937_64(5));
  internal::ScopedCudaEmulation emulated(devices_of(topologies()[2]));  // pairs
  for (const bool hot_order : {false, true}) {
    SCOPED_TRACE(fmt::format("hot order {}", hot_order));
    std::optional<Array> order;
    if (hot_order) order = Array::from_vector(shuffled);
    const FeatureStore store =
        FeatureStore::build(matrix, sharded(per_device * row_bytes, {2, 0, 1, 3}, order));
    EXPECT_FALSE(store.shareable());
    const FeatureStore shared = store.to_shareable();
    ASSERT_TRUE(shared.shareable());
    EXPECT_EQ(shared.to_shareable().tiers()[0].rows().raw_data(),
              shared.tiers()[0].rows().raw_data());  // kept, not copied again
    const FeatureStore rebuilt = FeatureStore::from_gpu_parts(shared.gpu_parts());
    EXPECT_EQ(rebuilt.devices(), store.devices());
    EXPECT_EQ(rebuilt.num_rows(), n);
    for (const int device : {0, 1, 2, 3}) {
      std::vector<std::byte> want(n * row_bytes), got(n * row_bytes);
      store.gather(ids, want.data(), {.device = device});
      rebuilt.gather(ids, got.data(), {.device = device});
      EXPECT_EQ(std::memcmp(want.data(), got.data(), got.size()), 0) << device;
      for (const int64_t id : {int64_t{0}, int64_t{77}, n - 1}) {
        const RowLocation a = store.locate(id, device), b = rebuilt.locate(id, device);
        EXPECT_EQ(std::make_pair(a.tier, a.slot), std::make_pair(b.tier, b.slot)) << id;
      }
    }
  }
  const FeatureStore store =
      FeatureStore::build(matrix, sharded(per_device * row_bytes, {0, 1}, {}));
  const auto refused = [&](auto edit) {
    FeatureStore::GpuParts parts = store.gpu_parts();
    edit(parts);
    return message_of<ValueError>([&] { FeatureStore::from_gpu_parts(parts); });
  };
  EXPECT_THAT(refused([](auto& p) { p.shards.pop_back(); }),
              ::testing::HasSubstr("2 devices, 1 shards"));
  EXPECT_THAT(refused([](auto& p) { std::swap(p.devices[0], p.devices[1]); }),
              ::testing::HasSubstr("the shard of cuda:1 must be device memory there"));
  EXPECT_THAT(refused([](auto& p) { p.pinned = p.shards[0]; }),
              ::testing::HasSubstr("the cold rows must be in pinned memory"));
  EXPECT_THAT(refused([](auto& p) {
                p.cliques = {{0, 1}, {1}};
                p.hot_rows = {50, 25};
              }),
              ::testing::HasSubstr("clique member 1 is not a device index of [0, 2) or is in two"));
  EXPECT_THAT(message_of<ValueError>([&] { FeatureStore(matrix).gpu_parts(); }),
              ::testing::HasSubstr("has no GPU tiers"));
  EXPECT_FALSE(FeatureStore(matrix).shareable());
}

}  // namespace
}  // namespace volley
