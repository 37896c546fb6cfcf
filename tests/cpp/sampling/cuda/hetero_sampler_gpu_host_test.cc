// The GPU heterogeneous sampler (HeteroNeighborSampler over a CudaHeteroGraph) on the emulated
// device, i.e. its driver and kernels run by the host executor (8 threads, every launch's items
// shuffled): it returns exactly what the CPU heterogeneous sampler (the oracle) returns, in GPU
// and UVA placement — on a generated mag-shaped graph whose edge types mix weights, int32 and
// int64 indices and missing edge ids, for several fanout shapes (one list, per edge type, -1 on
// hubs, 0), with and without replacement, weighted and not, seeds of several types; on a graph
// whose frontiers empty; on a hub that outgrows the first hash table. Its errors are the CPU
// sampler's. Label gpu-host.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <random>

#include "sampling/expect_subgraph.h"
#include "sampling/hetero_test_graphs.h"
#include "test_util.h"
#include "volley/core/internal/emulated_device.h"
#include "volley/sampling/cuda_graph.h"
#include "volley/sampling/hetero_sampler.h"

namespace volley {
namespace {

// Seed groups with their own storage (HeteroSeeds holds spans).
struct SeedGroups {
  std::vector<std::pair<std::string, std::vector<int64_t>>> groups;
  std::vector<HeteroSeeds> seeds() const {
    std::vector<HeteroSeeds> out;
    for (const auto& [type, ids] : groups) out.push_back({type, ids});
    return out;
  }
};

// Batch `batch` of every (placement, replace, weighted) on both samplers; returns the edges
// compared.
int64_t compare_with_cpu(const HeteroGraph& graph, HeteroSamplerOptions options,
                         const std::vector<SeedGroups>& batches, const std::string& name) {
  internal::ScopedCudaEmulation emulated;
  int64_t compared = 0;
  for (auto mode : {CudaSamplingMode::kGpu, CudaSamplingMode::kUva}) {
    const CudaHeteroGraph placed = CudaHeteroGraph::place(graph, {.mode = mode});
    EXPECT_EQ(placed.mode(), mode);
    for (int variant = 0; variant < 4; ++variant) {
      options.replace = (variant & 1) != 0;
      options.weighted = (variant & 2) != 0;
      options.seed = 101 * static_cast<uint64_t>(variant) + 7;
      HeteroNeighborSampler cpu(graph, options);
      HeteroNeighborSampler gpu(placed, options);
      EXPECT_TRUE(gpu.on_cuda());
      for (uint64_t batch = 0; batch < batches.size(); ++batch) {
        const auto seeds = batches[batch].seeds();
        const HeteroSampledSubgraph expected = cpu.sample(seeds, batch);
        expect_same_hetero(
            gpu.sample(seeds, batch), expected,
            fmt::format("{} {} replace {} weighted {} batch {}", name,
                        cuda_sampling_mode_name(mode), options.replace, options.weighted, batch));
        compared += expected.total_edges();
        if (::testing::Test::HasFailure()) return compared;
      }
    }
  }
  return compared;
}

EdgeType edge(const char* src, const char* relation, const char* dst) {
  return {src, relation, dst};
}

std::vector<SeedGroups> mag_batches(const HeteroGraph& graph, uint64_t seed) {
  std::mt19937_64 rng(seed);
  auto ids = [&](const char* type, size_t count) {
    return std::make_pair(std::string(type), distinct_ids(graph.num_nodes(type), count, rng));
  };
  return {SeedGroups{{ids("paper", 64)}},
          SeedGroups{{ids("author", 20), ids("paper", 300), ids("institution", 3)}},
          SeedGroups{{ids("field_of_study", 1)}}, SeedGroups{{ids("paper", 1)}}};
}

TEST(HeteroSamplerGpuHost, EqualsTheCpuSamplerOnAMagGraph) {
  const HeteroGraph graph = varied_mag_graph(3000, /*reverse=*/true, 1);
  const auto batches = mag_batches(graph, 3);
  std::vector<HeteroSamplerOptions> shapes(6);
  shapes[0].fanouts = {15, 10};
  shapes[1].fanouts = {-1, 3};
  shapes[2].fanouts = {5, 0, 4};
  shapes[3].fanouts = {2};
  // Per edge type with a default: institutions' hubs (about 120 authors each) taken whole.
  shapes[4].fanouts = {4, 2};
  shapes[4].fanouts_by_type = {{edge("author", "affiliated_with", "institution"), {-1, -1}},
                               {edge("institution", "rev_affiliated_with", "author"), {-1, 2}},
                               {edge("paper", "cites", "paper"), {0, 3}}};
  // Every edge type listed, no default; some sample nothing at all.
  for (const EdgeType& type : graph.edge_types()) {
    const bool none = type.relation == "has_topic" || type.relation == "rev_writes";
    shapes[5].fanouts_by_type.push_back(
        {type, none ? std::vector<int64_t>{0, 0, 0} : std::vector<int64_t>{3, 1, 2}});
  }
  int64_t compared = 0;
  for (size_t s = 0; s < shapes.size(); ++s) {
    compared += compare_with_cpu(graph, shapes[s], batches, fmt::format("shape {}", s));
    if (HasFailure()) return;
  }
  EXPECT_GT(compared, 100000);
}

// Forward edges only: authors are nobody's destination, so author seeds reach nothing and
// frontiers empty early; an empty seed group, no seeds at all, a seed type without in-edges.
TEST(HeteroSamplerGpuHost, EmptyFrontiersAndSeedlessTypes) {
  const HeteroGraph graph = varied_mag_graph(500, /*reverse=*/false, 2);
  std::mt19937_64 rng(5);
  const std::vector<SeedGroups> batches = {
      SeedGroups{{{"author", distinct_ids(graph.num_nodes("author"), 30, rng)}}},
      SeedGroups{{{"paper", {}}, {"institution", {0, 1, 2}}}},
      SeedGroups{},
      SeedGroups{{{"field_of_study", distinct_ids(graph.num_nodes("field_of_study"), 10, rng)},
                  {"author", {5}}}},
  };
  HeteroSamplerOptions options;
  options.fanouts = {3, -1, 2};
  EXPECT_GT(compare_with_cpu(graph, options, batches, "forward"), 100);
}

// An institution with 6000 authors, each writing papers (and papers written by them): fanout -1
// brings in more authors than the first table holds (rehash mid-batch), then their papers.
TEST(HeteroSamplerGpuHost, HubsOutgrowTheFirstTable) {
  const int64_t authors = 6000, papers = 800;
  std::vector<int64_t> member, institution, writer, paper;
  std::mt19937_64 rng(9);
  for (int64_t a = 0; a < authors; ++a) {
    member.push_back(a);
    institution.push_back(a % 7 == 0 ? 1 : 0);
    for (int k = 0; k < 2; ++k) {
      writer.push_back(a);
      paper.push_back(static_cast<int64_t>(rng() % papers));
    }
  }
  auto csr = [](const std::vector<int64_t>& src, const std::vector<int64_t>& dst, int64_t sources,
                int64_t rows) {
    return build_bipartite_csr(Array::from_vector(src), Array::from_vector(dst), sources, rows);
  };
  const HeteroGraph graph(
      {{"author", authors}, {"institution", 2}, {"paper", papers}},
      {{edge("author", "affiliated_with", "institution"), csr(member, institution, authors, 2)},
       {edge("author", "writes", "paper"), csr(writer, paper, authors, papers)},
       {edge("paper", "written_by", "author"), csr(paper, writer, papers, authors)}});
  HeteroSamplerOptions options;
  options.fanouts = {-1, -1, 3};
  const std::vector<SeedGroups> batches = {SeedGroups{{{"institution", {0, 1}}}},
                                           SeedGroups{{{"institution", {1}}, {"paper", {3, 4}}}}};
  EXPECT_GT(compare_with_cpu(graph, options, batches, "hub"), 6000);
}

// Bad seeds and options give the CPU sampler's errors; disjoint and temporal sampling are
// refused by name.
TEST(HeteroSamplerGpuHost, ErrorsAreTheCpuSamplers) {
  internal::ScopedCudaEmulation emulated;
  const HeteroGraph graph = varied_mag_graph(200, /*reverse=*/false, 4);
  const CudaHeteroGraph placed = CudaHeteroGraph::place(graph);
  HeteroSamplerOptions options;
  options.fanouts = {2, 2};
  HeteroNeighborSampler cpu(graph, options), gpu(placed, options);
  const std::vector<int64_t> good{1, 2}, twice{4, 9, 4}, far{0, 200};
  for (const auto& seeds : std::vector<std::vector<HeteroSeeds>>{
           {{"venue", good}}, {{"paper", twice}}, {{"paper", good}, {"paper", good}}}) {
    const std::string want = message_of<ValueError>([&] { cpu.sample(seeds, 0); });
    EXPECT_NE(want, "<no exception>");
    EXPECT_EQ(message_of<ValueError>([&] { gpu.sample(seeds, 0); }), want);
  }
  const std::vector<HeteroSeeds> out_of_range{{"paper", far}};
  EXPECT_EQ(message_of<IndexError>([&] { gpu.sample(out_of_range, 0); }),
            message_of<IndexError>([&] { cpu.sample(out_of_range, 0); }));
  HeteroSamplerOptions bad = options;
  bad.fanouts_by_type = {{edge("paper", "cites", "author"), {1, 1}}};
  EXPECT_EQ(message_of<ValueError>([&] { HeteroNeighborSampler(placed, bad); }),
            message_of<ValueError>([&] { HeteroNeighborSampler(graph, bad); }));
  bad = options;
  bad.disjoint = true;
  EXPECT_THAT(message_of<ValueError>([&] { HeteroNeighborSampler(placed, bad); }),
              ::testing::HasSubstr("non-disjoint, untimed subgraphs only, got disjoint=true"));
  bad.disjoint = false;
  bad.time_source = TimeSource::kNode;
  EXPECT_THAT(message_of<ValueError>([&] { HeteroNeighborSampler(placed, bad); }),
              ::testing::HasSubstr("time_source=set; use the CPU sampler"));
  EXPECT_THAT(message_of<ValueError>([&] { HeteroNeighborSampler(CudaHeteroGraph(), options); }),
              ::testing::HasSubstr("needs a placed graph"));
}

// A placed typed graph rebuilt from its edge types' placed graphs (what another process opens
// by handle) samples what the placement does; shareable placement copies nothing; a part that
// disagrees with the types is refused naming its edge type.
TEST(HeteroSamplerGpuHost, FromPartsAndShareablePlacement) {
  internal::ScopedCudaEmulation emulated;
  const HeteroGraph graph = varied_mag_graph(200, /*reverse=*/true, 5);
  HeteroSamplerOptions options;
  options.fanouts = {3, 2};
  const std::vector<int64_t> seeds{1, 5, 9, 40};
  for (auto mode : {CudaSamplingMode::kGpu, CudaSamplingMode::kUva}) {
    const CudaHeteroGraph placed = CudaHeteroGraph::place(graph, {.mode = mode});
    EXPECT_FALSE(placed.shareable());
    const CudaHeteroGraph shared = placed.to_shareable();
    ASSERT_TRUE(shared.shareable());
    EXPECT_EQ(shared.device_bytes(), placed.device_bytes());
    EXPECT_EQ(shared.pinned_bytes(), placed.pinned_bytes());
    const CudaHeteroGraph again = shared.to_shareable();  // already shareable: the same arrays
    std::vector<CudaGraph> parts;
    for (int e = 0; e < graph.num_edge_types(); ++e) {
      EXPECT_EQ(again.edges(e).indices().raw_data(), shared.edges(e).indices().raw_data());
      parts.push_back(CudaGraph::from_arrays(shared.edges(e).arrays()));
    }
    const CudaHeteroGraph rebuilt = CudaHeteroGraph::from_parts(
        graph.node_types(), graph.edge_types(), parts, mode, /*device=*/0);
    expect_same_hetero(HeteroNeighborSampler(rebuilt, options).sample({{"paper", seeds}}, 3),
                       HeteroNeighborSampler(graph, options).sample({{"paper", seeds}}, 3),
                       std::string(cuda_sampling_mode_name(mode)));
  }
  const CudaHeteroGraph placed = CudaHeteroGraph::place(graph);
  std::vector<CudaGraph> parts;
  for (int e = 0; e < graph.num_edge_types(); ++e) parts.push_back(placed.edges(e));
  const auto from = [&](std::vector<CudaGraph> edges, CudaSamplingMode mode) {
    return message_of<ValueError>([&] {
      CudaHeteroGraph::from_parts(graph.node_types(), graph.edge_types(), std::move(edges), mode,
                                  0);
    });
  };
  EXPECT_THAT(from({parts.begin(), parts.end() - 1}, CudaSamplingMode::kGpu),
              ::testing::HasSubstr("placed graphs for"));
  const std::string first = graph.edge_types()[0].name();
  EXPECT_THAT(from(parts, CudaSamplingMode::kUva),
              ::testing::HasSubstr("edge type " + first +
                                   ": its graph is in GPU mode on device 0, "
                                   "not placed in UVA mode"));
  std::vector<CudaGraph> swapped = parts;
  int other = 1;
  while (other < graph.num_edge_types() &&
         graph.edges(other).num_nodes() == graph.edges(0).num_nodes())
    ++other;
  ASSERT_LT(other, graph.num_edge_types());
  std::swap(swapped[0], swapped[static_cast<size_t>(other)]);
  EXPECT_THAT(from(swapped, CudaSamplingMode::kGpu),
              ::testing::HasSubstr("edge type " + first + ": its graph has"));
  swapped = parts;
  swapped[0] = CudaGraph();
  EXPECT_THAT(from(swapped, CudaSamplingMode::kGpu), ::testing::HasSubstr("is not placed"));
}

}  // namespace
}  // namespace volley
