// Packed id lists on the wire: the narrowest width that holds every id, read back appended and
// widened; malformed bytes leave the list unchanged.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "volley/dist/internal/wire.h"

namespace volley::dist::internal {
namespace {

std::vector<int64_t> round_trip(const std::vector<int64_t>& ids, uint32_t& width) {
  std::string bytes;
  width = pack_ids(ids, &bytes);
  EXPECT_EQ(bytes.size(), ids.size() * width);
  std::vector<int64_t> out = {-7};  // appended after what is there
  EXPECT_TRUE(append_ids(bytes, width, out));
  EXPECT_EQ(out.front(), -7);
  return {out.begin() + 1, out.end()};
}

TEST(WireIds, IdsBelowTwoToThe31TravelAsInt32AndComeBackEqual) {
  const std::vector<int64_t> ids = {0, 1, 5, (int64_t{1} << 31) - 1, 42};
  uint32_t width = 0;
  EXPECT_EQ(round_trip(ids, width), ids);
  EXPECT_EQ(width, 4u);
}

TEST(WireIds, OneLargeIdKeepsTheListInt64) {
  for (const int64_t large : {int64_t{1} << 31, int64_t{1} << 40, INT64_MAX}) {
    const std::vector<int64_t> ids = {3, large, 0};
    uint32_t width = 0;
    EXPECT_EQ(round_trip(ids, width), ids) << large;
    EXPECT_EQ(width, 8u) << large;
  }
}

TEST(WireIds, AnEmptyListAndWidthZeroReadAsInt64) {
  uint32_t width = 0;
  EXPECT_TRUE(round_trip({}, width).empty());
  const std::vector<int64_t> wide = {int64_t{1} << 33};
  std::string bytes(reinterpret_cast<const char*>(wide.data()), 8);
  std::vector<int64_t> out;
  ASSERT_TRUE(append_ids(bytes, 0, out));  // a reply without the field
  EXPECT_EQ(out, wide);
}

TEST(WireIds, MalformedBytesOrWidthsLeaveTheListUnchanged) {
  std::vector<int64_t> out = {1, 2};
  EXPECT_FALSE(append_ids(std::string(6, '\0'), 4, out));   // not a multiple of 4
  EXPECT_FALSE(append_ids(std::string(12, '\0'), 8, out));  // not a multiple of 8
  EXPECT_FALSE(append_ids(std::string(8, '\0'), 2, out));   // no such width
  EXPECT_EQ(out, (std::vector<int64_t>{1, 2}));
  std::vector<int32_t> counts = {9};
  EXPECT_FALSE(append(std::string(5, '\0'), counts));
  EXPECT_TRUE(append(std::string(8, '\0'), counts));
  EXPECT_EQ(counts, (std::vector<int32_t>{9, 0, 0}));
}

}  // namespace
}  // namespace volley::dist::internal
