// The batch-sized id map of the distributed merge: first insert wins, growth keeps entries,
// clear() forgets them.
#include "volley/dist/internal/id_map.h"

#include <gtest/gtest.h>

#include <random>
#include <unordered_map>

namespace volley::dist::internal {
namespace {

TEST(IdMap, AgreesWithAStandardMapAcrossGrowthAndClears) {
  IdMap map;
  std::mt19937_64 rng(7);
  for (int round = 0; round < 5; ++round) {
    map.clear();
    std::unordered_map<int64_t, int32_t> expected;
    // Far more ids than the initial capacity (forces several rehashes), with repeats, spread
    // over a range like a large graph's and clustered like a partition's.
    for (int32_t i = 0; i < 50'000; ++i) {
      const int64_t id = (i % 3 == 0) ? static_cast<int64_t>(rng() % 4'000'000'000ULL)
                                      : static_cast<int64_t>(rng() % 20'000);
      const auto [it, inserted] = expected.emplace(id, i);
      const int32_t got = map.insert(id, i);
      if (inserted) {
        ASSERT_EQ(got, -1) << "id " << id << " reported as present";
      } else {
        ASSERT_EQ(got, it->second) << "id " << id;
      }
    }
    EXPECT_EQ(map.size(), expected.size());
  }
}

TEST(IdMap, ClearForgetsEverything) {
  IdMap map;
  EXPECT_EQ(map.insert(42, 0), -1);
  EXPECT_EQ(map.insert(42, 5), 0);
  map.clear();
  EXPECT_EQ(map.size(), 0u);
  EXPECT_EQ(map.insert(42, 3), -1);
  EXPECT_EQ(map.insert(42, 9), 3);
  EXPECT_EQ(map.insert(0, 1), -1);  // id 0 is an ordinary key
  EXPECT_EQ(map.insert(0, 2), 1);
}

}  // namespace
}  // namespace volley::dist::internal
