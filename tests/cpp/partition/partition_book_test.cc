#include "volley/partition/partition_book.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "volley/core/error.h"

namespace volley {
namespace {

using ::testing::HasSubstr;

TEST(PartitionBookTest, OwnerOfFindsTheRange) {
  const PartitionBook book({0, 600, 1200, 1800, 2708});
  EXPECT_EQ(book.num_parts(), 4);
  EXPECT_EQ(book.num_nodes(), 2708);
  EXPECT_EQ(book.owner_of(0), 0);
  EXPECT_EQ(book.owner_of(599), 0);
  EXPECT_EQ(book.owner_of(600), 1);
  EXPECT_EQ(book.owner_of(1500), 2);
  EXPECT_EQ(book.owner_of(2707), 3);
  EXPECT_EQ(book.begin(2), 1200);
  EXPECT_EQ(book.end(2), 1800);
  EXPECT_EQ(book.size(3), 908);
}

TEST(PartitionBookTest, EmptyPartitionsOwnNothing) {
  const PartitionBook book({0, 0, 3, 3, 5});
  EXPECT_EQ(book.owner_of(0), 1);
  EXPECT_EQ(book.owner_of(2), 1);
  EXPECT_EQ(book.owner_of(3), 3);
  EXPECT_EQ(book.owner_of(4), 3);
  std::vector<int64_t> ids = {4, 0, 3}, owners(3);
  book.owner_of(ids, owners);
  EXPECT_EQ(owners, (std::vector<int64_t>{3, 1, 3}));
}

TEST(PartitionBookTest, RefusesBadInput) {
  EXPECT_THROW(PartitionBook({0}), ValueError);
  EXPECT_THROW(PartitionBook({1, 2}), ValueError);
  try {
    PartitionBook({0, 5, 3});
    FAIL();
  } catch (const ValueError& error) {
    EXPECT_THAT(error.what(), HasSubstr("offsets[2] = 3 < offsets[1] = 5"));
  }
  const PartitionBook book({0, 2, 4});
  try {
    book.owner_of(4);
    FAIL();
  } catch (const IndexError& error) {
    EXPECT_THAT(error.what(), HasSubstr("node id 4 out of range for a partitioned graph with 4"));
  }
  EXPECT_THROW(book.owner_of(-1), IndexError);
  EXPECT_THROW(book.begin(2), IndexError);
}

}  // namespace
}  // namespace volley
