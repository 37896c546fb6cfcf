#include "volley/graph/csr.h"

#include <gtest/gtest.h>

#include "test_util.h"

#include <algorithm>
#include <map>
#include <random>
#include <set>
#include <tuple>

#include "volley/core/parallel.h"

namespace volley {
namespace {

struct Edge {
  int64_t row, col, eid;
  float w;
  bool operator<(const Edge& o) const {
    return std::tie(row, col, eid) < std::tie(o.row, o.col, o.eid);
  }
  bool operator==(const Edge& o) const {
    return row == o.row && col == o.col && eid == o.eid && w == o.w;
  }
};

// The simple reference: list every (row, neighbor, edge id) the options call for, sorted.
std::vector<Edge> reference(const std::vector<int64_t>& src, const std::vector<int64_t>& dst,
                            const std::vector<float>& w, const CsrBuildOptions& options) {
  std::vector<Edge> edges;
  const bool in = options.orientation == Orientation::kIn;
  for (size_t i = 0; i < src.size(); ++i) {
    const int64_t row = in ? dst[i] : src[i], col = in ? src[i] : dst[i];
    if (options.drop_self_loops && row == col) continue;
    edges.push_back({row, col, static_cast<int64_t>(i), w.empty() ? 0.0f : w[i]});
    if (options.symmetrize && row != col)
      edges.push_back({col, row, static_cast<int64_t>(i), w.empty() ? 0.0f : w[i]});
  }
  std::sort(edges.begin(), edges.end());
  if (options.drop_duplicates) {
    edges.erase(
        std::unique(edges.begin(), edges.end(),
                    [](const Edge& a, const Edge& b) { return a.row == b.row && a.col == b.col; }),
        edges.end());
  }
  return edges;
}

std::vector<Edge> listed(const Csr& csr) {
  std::vector<Edge> edges;
  const float* w = csr.has_weights() ? csr.weights()->data<float>() : nullptr;
  for (int64_t row = 0; row < csr.num_nodes(); ++row) {
    for (int64_t k = csr.begin(row); k < csr.end(row); ++k) {
      edges.push_back({row, csr.neighbor(k), csr.edge_id(k), w ? w[k] : 0.0f});
    }
  }
  return edges;
}

TEST(Csr, BuildMatchesReferenceOnRandomGraphs) {
  std::mt19937_64 rng(7);
  for (int trial = 0; trial < 40; ++trial) {
    const int64_t n = 1 + static_cast<int64_t>(rng() % 50);
    const int64_t m = static_cast<int64_t>(rng() % 400);
    std::vector<int64_t> src(m), dst(m);
    std::vector<float> w(m);
    for (int64_t i = 0; i < m; ++i) {
      src[i] = static_cast<int64_t>(rng() % n);
      dst[i] = static_cast<int64_t>(rng() % n);
      w[i] = static_cast<float>(rng() % 100) / 10.0f;
    }
    CsrBuildOptions options;
    options.num_nodes = n;
    options.orientation = trial % 2 ? Orientation::kOut : Orientation::kIn;
    options.symmetrize = trial % 3 == 0;
    options.drop_self_loops = trial % 5 == 0;
    options.drop_duplicates = trial % 4 == 0;
    options.force_int64_indices = trial % 7 == 0;
    const Csr csr =
        build_csr(Array::from_vector(src), Array::from_vector(dst), Array::from_vector(w), options);
    ASSERT_EQ(csr.num_nodes(), n);
    EXPECT_EQ(csr.index_dtype(), options.force_int64_indices ? DType::kInt64 : DType::kInt32);
    const auto expected = reference(src, dst, w, options);
    ASSERT_EQ(listed(csr), expected) << "trial " << trial;
    // Validation of the built arrays passes.
    Csr::from_arrays(csr.indptr(), csr.indices(), csr.edge_ids(), csr.weights(), csr.orientation());
  }
}

TEST(Csr, DeterministicForAnyThreadCount) {
  std::mt19937_64 rng(3);
  const int64_t n = 5000, m = 200'000;
  std::vector<int64_t> src(m), dst(m);
  for (int64_t i = 0; i < m; ++i) {
    src[i] = static_cast<int64_t>(rng() % n);
    dst[i] = static_cast<int64_t>(rng() % 100);  // hubs
  }
  std::vector<Edge> first;
  for (int threads : {1, 2, 5}) {
    set_num_threads(threads);
    const Csr csr = build_csr(Array::from_vector(src), Array::from_vector(dst), std::nullopt,
                              {.num_nodes = n, .symmetrize = true, .drop_duplicates = true});
    auto edges = listed(csr);
    if (first.empty()) first = edges;
    ASSERT_EQ(edges, first) << threads << " threads";
  }
  set_num_threads(2);
}

TEST(Csr, InfersNumNodesAndTransposes) {
  const Csr csr =
      build_csr(Array::from_vector<int64_t>({0, 0, 2}), Array::from_vector<int64_t>({1, 2, 1}));
  EXPECT_EQ(csr.num_nodes(), 3);
  EXPECT_EQ(csr.num_edges(), 3);
  // In-neighbors: row 1 <- {0, 2}, row 2 <- {0}.
  EXPECT_EQ(csr.degree(0), 0);
  EXPECT_EQ(csr.degree(1), 2);
  EXPECT_EQ(csr.neighbor(csr.begin(1)), 0);
  EXPECT_EQ(csr.neighbor(csr.begin(1) + 1), 2);
  const Csr out = csr.transposed();
  EXPECT_EQ(out.orientation(), Orientation::kOut);
  EXPECT_EQ(out.degree(0), 2);
  EXPECT_EQ(out.edge_id(out.begin(2)), 2);  // edge 2 -> 1 keeps id 2
  const Csr back = out.transposed();
  EXPECT_EQ(listed(back), listed(csr));
  const Csr empty = build_csr(Array::from_vector<int64_t>({}), Array::from_vector<int64_t>({}));
  EXPECT_EQ(empty.num_nodes(), 0);
}

TEST(Csr, RejectsBadInputWithPreciseMessages) {
  auto ids = [](std::vector<int64_t> v) { return Array::from_vector(v); };
  EXPECT_EQ(message_of<IndexError>([&] {
              build_csr(ids({0, 1, 5}), ids({1, 2, 0}), std::nullopt, {.num_nodes = 3});
            }),
            "src[2] = 5 out of range for num_nodes = 3");
  EXPECT_EQ(message_of<IndexError>([&] {
              build_csr(ids({0, 1}), ids({1, -4}));
            }),
            "dst[1] = -4 is negative; node ids must be >= 0");
  EXPECT_EQ(message_of<ValueError>([&] {
              build_csr(ids({0, 1}), ids({1}));
            }),
            "src and dst must have the same length, got 2 and 1");
  EXPECT_EQ(message_of<ValueError>(
                [&] { build_csr(ids({0}), ids({1}), Array::from_vector<float>({-1.0f})); }),
            "weights[0] = -1 must be finite and >= 0");
  EXPECT_THROW(build_csr(Array::from_vector<float>({0.0f}), ids({1})), ValueError);

  EXPECT_EQ(message_of<ValueError>([&] {
              Csr::from_arrays(ids({0, 2, 1, 3}), Array::from_vector<int32_t>({0, 1, 2}));
            }),
            "indptr must be non-decreasing: indptr[1] = 2 > indptr[2] = 1");
  EXPECT_EQ(message_of<IndexError>([&] {
              Csr::from_arrays(ids({0, 1, 2}), Array::from_vector<int32_t>({0, 9}));
            }),
            "indices[1] = 9 out of range for a graph with 2 nodes");
  EXPECT_EQ(message_of<ValueError>([&] {
              Csr::from_arrays(ids({0, 1, 3}), Array::from_vector<int32_t>({0, 1}));
            }),
            "indptr[2] = 3 must equal the number of indices (2)");
  EXPECT_THROW(Csr::from_arrays(ids({1, 1}), Array::from_vector<int32_t>({})), ValueError);
  EXPECT_THROW(Csr::from_arrays(ids({0, 1}), Array::from_vector<int32_t>({0}),
                                Array::from_vector<int64_t>({0, 1})),
               ValueError);
}

}  // namespace
}  // namespace volley
