#include "volley/partition/partition_book.h"

#include <algorithm>

#include "volley/core/error.h"

namespace volley {

PartitionBook::PartitionBook(std::vector<int64_t> offsets) : offsets_(std::move(offsets)) {
  VOLLEY_REQUIRE(offsets_.size() >= 2, ValueError,
                 "PartitionBook: expected at least 2 offsets (one partition), found {}",
                 offsets_.size());
  VOLLEY_REQUIRE(offsets_[0] == 0, ValueError, "PartitionBook: offsets[0] must be 0, found {}",
                 offsets_[0]);
  for (size_t i = 1; i < offsets_.size(); ++i) {
    VOLLEY_REQUIRE(offsets_[i] >= offsets_[i - 1], ValueError,
                   "PartitionBook: offsets must be non-decreasing, found offsets[{}] = {} < "
                   "offsets[{}] = {}",
                   i, offsets_[i], i - 1, offsets_[i - 1]);
  }
}

int64_t PartitionBook::begin(int64_t part) const {
  VOLLEY_REQUIRE(part >= 0 && part < num_parts(), IndexError,
                 "partition {} out of range for a book of {} partitions", part, num_parts());
  return offsets_[static_cast<size_t>(part)];
}

int64_t PartitionBook::end(int64_t part) const {
  VOLLEY_REQUIRE(part >= 0 && part < num_parts(), IndexError,
                 "partition {} out of range for a book of {} partitions", part, num_parts());
  return offsets_[static_cast<size_t>(part) + 1];
}

int64_t PartitionBook::owner_of(int64_t node) const {
  VOLLEY_REQUIRE(node >= 0 && node < num_nodes(), IndexError,
                 "node id {} out of range for a partitioned graph with {} nodes", node,
                 num_nodes());
  // The last offset <= node whose partition is not empty: upper_bound skips empty ranges.
  const auto it = std::upper_bound(offsets_.begin(), offsets_.end(), node);
  return static_cast<int64_t>(it - offsets_.begin()) - 1;
}

void PartitionBook::owner_of(std::span<const int64_t> nodes, std::span<int64_t> owners) const {
  VOLLEY_REQUIRE(nodes.size() == owners.size(), ValueError,
                 "PartitionBook::owner_of: {} ids but room for {} owners", nodes.size(),
                 owners.size());
  for (size_t i = 0; i < nodes.size(); ++i) {
    const int64_t node = nodes[i];
    VOLLEY_REQUIRE(node >= 0 && node < num_nodes(), IndexError,
                   "node id {} at position {} out of range for a partitioned graph with {} nodes",
                   node, i, num_nodes());
    owners[i] = static_cast<int64_t>(std::upper_bound(offsets_.begin(), offsets_.end(), node) -
                                     offsets_.begin()) -
                1;
  }
}

}  // namespace volley
