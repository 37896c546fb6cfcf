// The temporal kernel's admissible-prefix search (volley/sampling/cpu/time_filter.h): it starts
// from an interpolated guess, counts windows and bisects, and must give std::upper_bound's answer
// on every row, whatever the times' spread: evenly spread, clustered, duplicated, one value, and
// every limit from below the first time to above the last.
#include "volley/sampling/cpu/time_filter.h"

#include "volley/graph/csr.h"
#include "volley/sampling/neighbor_sampler.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <optional>
#include <random>
#include <vector>

namespace volley::cpu {
namespace {

// Checks every limit in [row.front() - 2, row.back() + 2] (and the extremes of int64) against
// std::upper_bound, for edge time and for node time (the same times reached through indices).
void expect_prefixes_exact(const std::vector<int64_t>& row) {
  std::vector<int32_t> indices(row.size());
  for (size_t k = 0; k < row.size(); ++k) indices[k] = static_cast<int32_t>(k);
  TimeFilter by_edge, by_node;
  by_edge.edge_time = row.data();
  by_node.node_time = row.data();
  const auto degree = static_cast<int64_t>(row.size());
  std::vector<int64_t> limits = {std::numeric_limits<int64_t>::min(),
                                 std::numeric_limits<int64_t>::max()};
  if (!row.empty()) {
    for (int64_t t = row.front() - 2; t <= row.back() + 2; ++t) limits.push_back(t);
  }
  for (const int64_t limit : limits) {
    const auto expected = std::upper_bound(row.begin(), row.end(), limit) - row.begin();
    ASSERT_EQ(admissible_prefix(by_edge, indices.data(), 0, degree, limit), expected)
        << "degree " << degree << ", limit " << limit;
    ASSERT_EQ(admissible_prefix(by_node, indices.data(), 0, degree, limit), expected)
        << "node time, degree " << degree << ", limit " << limit;
  }
}

TEST(AdmissiblePrefix, EqualsUpperBoundOnEvenClusteredAndDuplicatedRows) {
  std::mt19937_64 rng(7);
  for (int64_t degree : {0, 1, 2, 3, 7, 8, 9, 15, 16, 17, 63, 64, 65, 200, 1000}) {
    std::vector<int64_t> even(static_cast<size_t>(degree));
    for (auto& t : even) t = static_cast<int64_t>(rng() % 4096);
    std::sort(even.begin(), even.end());
    expect_prefixes_exact(even);
    // Clustered: most times at the start, a few far later (interpolation guesses badly).
    std::vector<int64_t> clustered(static_cast<size_t>(degree));
    for (size_t k = 0; k < clustered.size(); ++k) {
      clustered[k] = k + 3 < clustered.size() ? static_cast<int64_t>(rng() % 16) : 4000 + k;
    }
    std::sort(clustered.begin(), clustered.end());
    expect_prefixes_exact(clustered);
    expect_prefixes_exact(std::vector<int64_t>(static_cast<size_t>(degree), 42));  // one value
  }
}

TEST(AdmissiblePrefix, RowsInsideALargerArrayAndExtremeTimes) {
  // A row at an offset of a larger array, with times near the int64 limits (no overflow in the
  // interpolation).
  const int64_t big = std::numeric_limits<int64_t>::max() - 10;
  std::vector<int64_t> times = {5, 6, -big, -big, 0, 1, big, big, 9, 9};
  std::vector<int32_t> indices(times.size(), 0);
  TimeFilter filter;
  filter.edge_time = times.data();
  for (int64_t limit : {-big - 1, -big, int64_t{-1}, int64_t{0}, int64_t{1}, big - 1, big}) {
    const auto expected =
        std::upper_bound(times.begin() + 2, times.begin() + 8, limit) - (times.begin() + 2);
    EXPECT_EQ(admissible_prefix(filter, indices.data(), 2, 6, limit), expected) << limit;
  }
}

// admissible_prefixes interleaves many searches (a ring of 16, refilled as searches end): every
// answer must still be std::upper_bound's, for rows of every kind and length in one array, queried
// in a shuffled order with repeats, through edge time and node time.
TEST(AdmissiblePrefixes, EqualUpperBoundForManyInterleavedRows) {
  std::mt19937_64 rng(11);
  std::vector<int64_t> times;
  std::vector<std::pair<int64_t, int64_t>> rows;  // first, degree
  const int64_t big = std::numeric_limits<int64_t>::max() - 10;
  for (int64_t degree : {0, 1, 2, 5, 8, 9, 16, 17, 100, 1000, 5000}) {
    for (int kind = 0; kind < 4; ++kind) {
      std::vector<int64_t> row(static_cast<size_t>(degree));
      for (size_t k = 0; k < row.size(); ++k) {
        switch (kind) {
          case 0:
            row[k] = static_cast<int64_t>(rng() % 100000);
            break;  // even
          case 1:
            row[k] = k + 3 < row.size() ? static_cast<int64_t>(rng() % 16) : 90000;
            break;
          case 2:
            row[k] = 42;
            break;  // one value
          default:
            row[k] = k % 2 == 0 ? -big : big;
            break;  // extremes
        }
      }
      std::sort(row.begin(), row.end());
      rows.emplace_back(static_cast<int64_t>(times.size()), degree);
      times.insert(times.end(), row.begin(), row.end());
    }
  }
  std::vector<int32_t> indices(times.size());
  for (size_t k = 0; k < indices.size(); ++k) indices[k] = static_cast<int32_t>(k);
  std::vector<PrefixQuery> queries;
  std::vector<int64_t> expected;
  for (int repeat = 0; repeat < 20; ++repeat) {
    for (const auto& [first, degree] : rows) {
      const int64_t limits[] = {std::numeric_limits<int64_t>::min(),  -big,  0,  15, 42,
                                static_cast<int64_t>(rng() % 100000), 90000, big};
      const int64_t limit = limits[rng() % std::size(limits)];
      queries.push_back({first, degree, limit});
      const auto row = times.begin() + first;
      expected.push_back(std::upper_bound(row, row + degree, limit) - row);
    }
  }
  TimeFilter by_edge, by_node;
  by_edge.edge_time = times.data();
  by_node.node_time = times.data();
  for (const TimeFilter* filter : {&by_edge, &by_node}) {
    std::vector<int64_t> prefixes(queries.size(), -1);
    admissible_prefixes<int32_t>(*filter, indices.data(), queries, prefixes.data());
    for (size_t q = 0; q < queries.size(); ++q) {
      ASSERT_EQ(prefixes[q], expected[q])
          << (filter == &by_edge ? "edge" : "node") << " time, query " << q << ": row at "
          << queries[q].first << " of degree " << queries[q].degree << ", limit "
          << queries[q].limit;
    }
  }
  std::vector<int64_t> none(1, -1);
  admissible_prefixes<int32_t>(by_edge, indices.data(), {}, none.data());  // no queries: no write
  EXPECT_EQ(none[0], -1);
}

// volley::temporal_degrees, the search as a public function: on rows sorted by edge time and
// on the same rows unsorted (counted), every answer is the count of entries <= the time.
TEST(TemporalDegrees, CountsEntriesNoLaterThanEachTime) {
  std::mt19937_64 rng(11);
  const int64_t nodes = 300;
  std::vector<int64_t> src, dst;
  for (int64_t v = 0; v < nodes; ++v) {
    for (int64_t k = 0; k < v % 41 + (v % 7 == 0 ? 400 : 0); ++k) {
      src.push_back(static_cast<int64_t>(rng() % nodes));
      dst.push_back(v);
    }
  }
  const Csr plain = build_csr(Array::from_vector(src), Array::from_vector(dst), std::nullopt,
                              {.num_nodes = nodes});
  std::vector<int64_t> times(static_cast<size_t>(plain.num_edges()));
  for (auto& t : times) t = static_cast<int64_t>(rng() % 1000);
  const Csr unsorted = plain.with_times(std::nullopt, Array::from_vector(times));
  const Csr sorted = sort_rows_by_time(unsorted, TimeKind::kEdge);
  ASSERT_LT(sorted.first_row_unsorted_by_edge_time(), 0);
  ASSERT_GE(unsorted.first_row_unsorted_by_edge_time(), 0);
  std::vector<int64_t> rows, limits;
  for (int i = 0; i < 2000; ++i) {
    rows.push_back(static_cast<int64_t>(rng() % nodes));
    limits.push_back(static_cast<int64_t>(rng() % 1100) - 50);
  }
  for (const Csr* graph : {&sorted, &unsorted}) {
    std::vector<int64_t> degrees(rows.size());
    temporal_degrees(*graph, rows, limits, TimeKind::kEdge, degrees);
    const int64_t* edge_time = graph->edge_time()->data<int64_t>();
    for (size_t i = 0; i < rows.size(); ++i) {
      int64_t expected = 0;
      for (int64_t k = graph->begin(rows[i]); k < graph->end(rows[i]); ++k) {
        expected += edge_time[k] <= limits[i];
      }
      ASSERT_EQ(degrees[i], expected) << "row " << rows[i] << ", time " << limits[i];
    }
  }
  std::vector<int64_t> one(1);
  EXPECT_THROW(temporal_degrees(sorted, std::vector<int64_t>{nodes}, std::vector<int64_t>{0},
                                TimeKind::kEdge, one),
               IndexError);
  EXPECT_THROW(temporal_degrees(sorted, std::vector<int64_t>{0}, std::vector<int64_t>{0},
                                TimeKind::kNode, one),
               ValueError);
}

}  // namespace
}  // namespace volley::cpu
