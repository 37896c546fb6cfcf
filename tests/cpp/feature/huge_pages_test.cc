// The huge-page collapse of a caller's large table (feature/internal/huge_pages.h): which tables
// get it, and that gathers read the right rows while it runs.
#include "volley/feature/internal/huge_pages.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <vector>

#include "volley/feature/feature_store.h"

namespace volley {
namespace {

namespace fi = feature_internal;

Array table_of(size_t bytes) {
  const auto rows = static_cast<int64_t>(bytes / (16 * sizeof(float)));
  Array table(Buffer::allocate(static_cast<size_t>(rows) * 16 * sizeof(float)), DType::kFloat32,
              {rows, 16});
  float* values = table.data<float>();
  for (int64_t i = 0; i < rows * 16; ++i) values[i] = static_cast<float>(i % 1000003);
  return table;
}

TEST(HugePages, OnlyLargeHostTablesOncePerRangeAndNotWhenTurnedOff) {
  EXPECT_FALSE(fi::collapse_huge_pages_async(table_of(size_t{1} << 20)));  // small
  const Array large = table_of(fi::kCollapseMinBytes);
  setenv("VOLLEY_HUGE_PAGES", "0", 1);
  EXPECT_FALSE(fi::collapse_huge_pages_async(large));
  unsetenv("VOLLEY_HUGE_PAGES");
  EXPECT_TRUE(fi::collapse_huge_pages_async(large));
  EXPECT_FALSE(fi::collapse_huge_pages_async(large));  // already started for this range
}

TEST(HugePages, AStoreOverALargeTableGathersTheRightRowsWhileCollapsing) {
  const Array table = table_of(fi::kCollapseMinBytes + (size_t{4} << 20));
  const FeatureStore store(table);  // starts the collapse
  const int64_t rows = table.shape()[0];
  std::vector<int64_t> ids(4096);
  for (size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<int64_t>((i * 7919) % rows);
  for (int round = 0; round < 3; ++round) {
    const Array out = store.gather(ids);
    for (size_t i = 0; i < ids.size(); ++i) {
      const float* row = out.data<float>() + i * 16;
      for (int c = 0; c < 16; ++c) {
        ASSERT_EQ(row[c], static_cast<float>((ids[i] * 16 + c) % 1000003)) << i;
      }
    }
  }
}

}  // namespace
}  // namespace volley
