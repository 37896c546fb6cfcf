// volley/partition/partition_book.h — which partition owns a node, from a list of offsets.
//
// A partitioned graph is renumbered so that partition p owns the contiguous range of new node
// ids [offsets[p], offsets[p + 1]). The book is therefore K + 1 integers, not an array sized to
// the graph (GLT and DistDGL keep an int per node on every machine).
//
//   PartitionBook book({0, 600, 1200, 1800, 2708});   // 4 partitions of a 2708-node graph
//   book.owner_of(1500);                               // 2
//   book.begin(2), book.end(2), book.size(2);          // 1200, 1800, 600
//
// owner_of is a binary search over the offsets (O(log K)); empty partitions are allowed. The book
// is immutable and safe to read from many threads.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace volley {

class PartitionBook {
 public:
  // An empty book (no partitions, no nodes).
  PartitionBook() : offsets_{0} {}
  // `offsets` has K + 1 >= 2 entries, offsets[0] == 0, non-decreasing. ValueError otherwise,
  // naming the first bad position.
  explicit PartitionBook(std::vector<int64_t> offsets);

  int64_t num_parts() const { return static_cast<int64_t>(offsets_.size()) - 1; }
  int64_t num_nodes() const { return offsets_.back(); }
  // First new id owned by `part`, one past the last, and the count. IndexError for a bad part.
  int64_t begin(int64_t part) const;
  int64_t end(int64_t part) const;
  int64_t size(int64_t part) const { return end(part) - begin(part); }
  const std::vector<int64_t>& offsets() const { return offsets_; }

  // The partition owning new id `node`; IndexError when node is outside [0, num_nodes()).
  int64_t owner_of(int64_t node) const;
  // owner_of for every id of `nodes` into `owners` (same length; ValueError otherwise).
  void owner_of(std::span<const int64_t> nodes, std::span<int64_t> owners) const;

  bool operator==(const PartitionBook& other) const = default;

 private:
  std::vector<int64_t> offsets_;
};

}  // namespace volley
