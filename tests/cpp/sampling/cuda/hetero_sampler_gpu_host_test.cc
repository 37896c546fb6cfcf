// The GPU heterogeneous sampler (HeteroNeighborSampler over a CudaHeteroGraph) on the emulated
// device, i.e. its driver and kernels run by the host executor (8 threads, every launch's items
// shuffled): it returns exactly what the CPU heterogeneous sampler (the oracle) returns, in GPU
// and UVA placement — on a generated mag-shaped graph whose edge types mix weights, int32 and
// int64 indices and missing edge ids, for several fanout shapes (one list, per edge type, -1 on
// hubs, 0), with and without replacement, weighted and not, seeds of several types; on a graph
// whose frontiers empty; on a hub that outgrows the first hash table; disjoint and temporal
// (node and edge time, uniform and last) batches on mag graphs and random typed graphs, seeds
// repeating and trees numbered across seed groups out of graph order. Its errors are the CPU
// sampler's. Label gpu-host.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <random>

#include "sampling/expect_subgraph.h"
#include "sampling/hetero_test_graphs.h"
#include "test_graphs.h"
#include "test_util.h"
#include "volley/core/internal/emulated_device.h"
#include "volley/sampling/cuda_graph.h"
#include "volley/sampling/hetero_sampler.h"

namespace volley {
namespace {

// Seed groups with their own storage (HeteroSeeds holds spans); `times`: per group (temporal),
// none where missing or empty.
struct SeedGroups {
  std::vector<std::pair<std::string, std::vector<int64_t>>> groups;
  std::vector<std::vector<int64_t>> times = {};
  std::vector<HeteroSeeds> seeds() const {
    std::vector<HeteroSeeds> out;
    for (size_t g = 0; g < groups.size(); ++g) {
      out.push_back({groups[g].first, groups[g].second});
      if (g < times.size()) out.back().times = times[g];
    }
    return out;
  }
};

// Batch `batch` of every (placement, replace, weighted) on both samplers — temporal (`times`,
// options.time_source set): (placement, replace, uniform or last), the GPU's graph placed from
// attach_hetero_times; returns the edges compared.
int64_t compare_with_cpu(const HeteroGraph& graph, HeteroSamplerOptions options,
                         const std::vector<SeedGroups>& batches, const std::string& name,
                         const HeteroTimes& times = {}) {
  internal::ScopedCudaEmulation emulated;
  const bool temporal = options.time_source != TimeSource::kNone;
  const HeteroGraph timed = attach_hetero_times(graph, options, times);
  int64_t compared = 0;
  for (auto mode : {CudaSamplingMode::kGpu, CudaSamplingMode::kUva}) {
    const CudaHeteroGraph placed = CudaHeteroGraph::place(timed, {.mode = mode});
    EXPECT_EQ(placed.mode(), mode);
    for (int variant = 0; variant < 4; ++variant) {
      options.replace = (variant & 1) != 0;
      options.weighted = !temporal && (variant & 2) != 0;
      options.temporal_strategy =
          temporal && (variant & 2) != 0 ? TemporalStrategy::kLast : TemporalStrategy::kUniform;
      options.seed = 101 * static_cast<uint64_t>(variant) + 7;
      HeteroNeighborSampler cpu(graph, options, times);
      HeteroNeighborSampler gpu(placed, options, times);
      EXPECT_TRUE(gpu.on_cuda());
      for (uint64_t batch = 0; batch < batches.size(); ++batch) {
        const auto seeds = batches[batch].seeds();
        const HeteroSampledSubgraph expected = cpu.sample(seeds, batch);
        EXPECT_EQ(expected.batch.empty(), !options.disjoint && !temporal);
        expect_same_hetero(gpu.sample(seeds, batch), expected,
                           fmt::format("{} {} replace {} weighted {} variant {} batch {}", name,
                                       cuda_sampling_mode_name(mode), options.replace,
                                       options.weighted, variant, batch));
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

// `count` values in [0, bound).
std::vector<int64_t> draw(std::mt19937_64& rng, int64_t count, uint64_t bound) {
  std::vector<int64_t> out(static_cast<size_t>(count));
  for (auto& value : out) value = static_cast<int64_t>(rng() % bound);
  return out;
}

// A seed group of `count` ids of node type `type`: distinct, or (`repeat`) with some repeating,
// as a disjoint batch's seeds may.
std::pair<std::string, std::vector<int64_t>> seed_group(const HeteroGraph& graph, const char* type,
                                                        size_t count, std::mt19937_64& rng,
                                                        bool repeat = false) {
  std::vector<int64_t> ids = distinct_ids(graph.num_nodes(type), count, rng);
  for (size_t i = 3; repeat && i < ids.size(); i += 4) ids[i] = ids[i - 2];
  return {type, std::move(ids)};
}

std::vector<SeedGroups> mag_batches(const HeteroGraph& graph, uint64_t seed) {
  std::mt19937_64 rng(seed);
  auto ids = [&](const char* type, size_t count) { return seed_group(graph, type, count, rng); };
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

// Disjoint batches: trees numbered across the groups in the order given (not the graph's), a
// seed repeating within a group, empty groups, no seeds at all.
std::vector<SeedGroups> disjoint_batches(const HeteroGraph& graph, uint64_t seed) {
  std::mt19937_64 rng(seed);
  auto ids = [&](const char* type, size_t count) {
    return seed_group(graph, type, count, rng, /*repeat=*/true);
  };
  return {SeedGroups{{ids("paper", 40)}},
          SeedGroups{{ids("institution", 2), ids("author", 12), ids("paper", 30)}},
          SeedGroups{{ids("field_of_study", 3), {"author", {}}}}, SeedGroups{}};
}

TEST(HeteroSamplerGpuHost, DisjointEqualsTheCpuSampler) {
  const HeteroGraph varied = varied_mag_graph(800, /*reverse=*/true, 6);
  HeteroSamplerOptions options;
  options.disjoint = true;
  options.fanouts = {3, 2};
  int64_t compared = compare_with_cpu(varied, options, disjoint_batches(varied, 2), "varied");
  options.fanouts_by_type = {{edge("paper", "cites", "paper"), {-1, 1}}};
  compared += compare_with_cpu(small_mag(), options, disjoint_batches(small_mag(), 3), "mag");
  EXPECT_GT(compared, 10000);
}

// small_mag()'s times: papers and authors timed (institutions and fields of study not), or the
// edges of three edge types (the others untimed); times in [0, 1000).
HeteroTimes mag_times(TimeSource source, uint64_t seed) {
  const HeteroGraph& graph = small_mag();
  std::mt19937_64 rng(seed);
  auto times = [&](int64_t count) { return Array::from_vector(draw(rng, count, 1000)); };
  HeteroTimes out;
  if (source == TimeSource::kNode) {
    for (const char* type : {"paper", "author"})
      out.node_time.emplace_back(type, times(graph.num_nodes(type)));
    return out;
  }
  for (int e = 0; e < graph.num_edge_types(); e += 2)
    out.edge_time.emplace_back(graph.edge_types()[static_cast<size_t>(e)],
                               times(graph.edges(e).num_edges()));
  return out;
}

// Temporal batches over small_mag(): seed times in [0, 1000); by node time, paper seeds without
// times (their own node times).
std::vector<SeedGroups> temporal_batches(TimeSource source, uint64_t seed) {
  std::mt19937_64 rng(seed);
  auto ids = [&](const char* type, size_t count) {
    return seed_group(small_mag(), type, count, rng, /*repeat=*/true);
  };
  auto times = [&](int64_t count) { return draw(rng, count, 1000); };
  const bool by_node = source == TimeSource::kNode;
  return {SeedGroups{{ids("paper", 50)}, {by_node ? std::vector<int64_t>{} : times(50)}},
          SeedGroups{{ids("author", 20), ids("paper", 10)}, {times(20), times(10)}},
          SeedGroups{{ids("institution", 2), ids("paper", 5)}, {times(2), times(5)}}};
}

TEST(HeteroSamplerGpuHost, TemporalEqualsTheCpuSampler) {
  int64_t compared = 0;
  for (const TimeSource source : {TimeSource::kNode, TimeSource::kEdge}) {
    for (const std::vector<int64_t>& fanouts : {std::vector<int64_t>{4, 3}, {-1, 2}}) {
      HeteroSamplerOptions options;
      options.time_source = source;
      options.fanouts = fanouts;
      compared += compare_with_cpu(small_mag(), options, temporal_batches(source, 5),
                                   fmt::format("mag {}", fanouts[0]), mag_times(source, 4));
      if (HasFailure()) return;
    }
  }
  EXPECT_GT(compared, 10000);
}

// Random typed graphs: three node types of very different counts (so one tree size serves
// types far smaller than it), four edge types between random ends (one a self type), times on
// some types; disjoint, by node time and by edge time.
TEST(HeteroSamplerGpuHost, RandomTypedGraphsEqualTheCpuSampler) {
  int64_t compared = 0;
  for (uint64_t seed = 0; seed < 4; ++seed) {
    std::mt19937_64 rng(seed);
    const std::vector<NodeTypeInfo> types = {{"a", 3 + static_cast<int64_t>(rng() % 5)},
                                             {"b", 200 + static_cast<int64_t>(rng() % 400)},
                                             {"c", 40 + static_cast<int64_t>(rng() % 40)}};
    std::vector<std::pair<EdgeType, Csr>> edges;
    for (int e = 0; e < 4; ++e) {
      const size_t src = e == 0 ? 1 : rng() % 3, dst = e == 0 ? 1 : rng() % 3;
      const int64_t count = 3 * types[dst].num_nodes;
      const auto from = draw(rng, count, static_cast<uint64_t>(types[src].num_nodes));
      const auto to = draw(rng, count, static_cast<uint64_t>(types[dst].num_nodes));
      edges.emplace_back(EdgeType{types[src].name, "r" + std::to_string(e), types[dst].name},
                         build_bipartite_csr(Array::from_vector(from), Array::from_vector(to),
                                             types[src].num_nodes, types[dst].num_nodes));
    }
    const HeteroGraph graph(types, std::move(edges));
    auto values = [&](int64_t count, uint64_t bound) { return draw(rng, count, bound); };
    const std::vector<SeedGroups> batches = {
        SeedGroups{{{"c", values(6, 40)}, {"b", values(20, 200)}},
                   {values(6, 100), values(20, 100)}},
        SeedGroups{{{"a", values(3, 3)}, {"b", values(9, 200)}}, {values(3, 100), values(9, 100)}}};
    HeteroSamplerOptions options;
    options.fanouts = {3, -1};
    options.disjoint = true;
    compared += compare_with_cpu(graph, options, batches, fmt::format("random {}", seed));
    options.disjoint = seed % 2 == 0;  // temporal sampling is disjoint either way
    options.time_source = TimeSource::kNode;
    HeteroTimes node_times;
    for (const size_t t : {size_t{1}, size_t{0}})  // b and a timed, c not
      node_times.node_time.emplace_back(types[t].name,
                                        Array::from_vector(values(types[t].num_nodes, 100)));
    compared += compare_with_cpu(graph, options, batches, "node time", node_times);
    options.time_source = TimeSource::kEdge;
    HeteroTimes edge_times;
    for (int e : {0, 3})
      edge_times.edge_time.emplace_back(
          graph.edge_types()[static_cast<size_t>(e)],
          Array::from_vector(values(graph.edges(e).num_edges(), 100)));
    compared += compare_with_cpu(graph, options, batches, "edge time", edge_times);
    if (HasFailure()) return;
  }
  EXPECT_GT(compared, 1000);
}

// Bad seeds and options give the CPU sampler's errors; a temporal sampler over a graph placed
// without its times and a batch whose tree keys pass int64 are refused by name.
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
  EXPECT_THAT(message_of<ValueError>([&] { HeteroNeighborSampler(CudaHeteroGraph(), options); }),
              ::testing::HasSubstr("needs a placed graph"));
  // Temporal: the untimed placement lacks the entry times; seeds without times by edge time.
  HeteroSamplerOptions timed = options;
  timed.time_source = TimeSource::kEdge;
  const std::vector<int64_t> edge_time(static_cast<size_t>(graph.edges(0).num_edges()), 5);
  const HeteroTimes times{.edge_time = {{graph.edge_types()[0], Array::from_vector(edge_time)}}};
  EXPECT_THAT(message_of<ValueError>([&] { HeteroNeighborSampler(placed, timed, times); }),
              ::testing::HasSubstr("edge type " + graph.edge_types()[0].name() +
                                   " is sampled by time, but its placed graph has no entry"));
  HeteroNeighborSampler timed_cpu(graph, timed, times);
  HeteroNeighborSampler timed_gpu(CudaHeteroGraph::place(attach_hetero_times(graph, timed, times)),
                                  timed, times);
  const std::vector<HeteroSeeds> untimed_seeds{{"paper", good}};
  const std::string want = message_of<ValueError>([&] { timed_cpu.sample(untimed_seeds, 0); });
  EXPECT_THAT(want, ::testing::HasSubstr("need a time each"));
  EXPECT_EQ(message_of<ValueError>([&] { timed_gpu.sample(untimed_seeds, 0); }), want);
  // Disjoint keys tree * S + id, S the largest node type's count (a node type of 2^62 nodes).
  std::vector<NodeTypeInfo> node_types = graph.node_types();
  node_types.push_back({"huge", int64_t{1} << 62});
  std::vector<CudaGraph> parts;
  for (int e = 0; e < graph.num_edge_types(); ++e) parts.push_back(placed.edges(e));
  HeteroSamplerOptions disjoint = options;
  disjoint.disjoint = true;
  HeteroNeighborSampler wide(
      CudaHeteroGraph::from_parts(node_types, graph.edge_types(), parts, CudaSamplingMode::kGpu, 0),
      disjoint);
  EXPECT_EQ(wide.sample({{"paper", std::vector<int64_t>{7}}}, 0).batch.size(), node_types.size());
  EXPECT_THAT(message_of<ValueError>([&] {
                wide.sample({{"paper", good}}, 0);
              }),
              ::testing::HasSubstr("r * 4611686018427387904 + v (the largest node type's "
                                   "count): 2 trees pass the int64 range"));
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
