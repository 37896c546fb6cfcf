// The `volley info` figures of a heterogeneous partitioned directory and of its part-P directories
// (format: volley/partition/hetero_partition.h); `volley partition` prints them too
// (partition_command.cc).
#include <cstdio>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "commands.h"
#include "text.h"
#include "volley/core/error.h"
#include "volley/partition/hetero_partition.h"

namespace volley::cli {
namespace {

using Json = nlohmann::ordered_json;

// Edge cut (total and per edge type), per-type node balance, edge balance.
void print_quality(const HeteroPartitionQuality& quality, const std::vector<NodeTypeInfo>& types,
                   const std::vector<EdgeType>& edge_types, const std::vector<int64_t>& num_edges) {
  int64_t total = 0;
  for (int64_t e : num_edges) total += e;
  std::printf("edge cut: %s (%lld of %lld edges, all edge types)\n",
              percent(quality.edge_cut_fraction).c_str(), static_cast<long long>(quality.cut_edges),
              static_cast<long long>(total));
  for (size_t r = 0; r < edge_types.size() && r < quality.cut_edges_per_type.size(); ++r) {
    const int64_t cut = quality.cut_edges_per_type[r];
    std::printf(
        "  %-40s %s (%lld of %lld)\n", edge_types[r].name().c_str(),
        percent(num_edges[r] ? static_cast<double>(cut) / static_cast<double>(num_edges[r]) : 0.0)
            .c_str(),
        static_cast<long long>(cut), static_cast<long long>(num_edges[r]));
  }
  std::string balance;
  for (size_t t = 0; t < types.size() && t < quality.node_balance.size(); ++t) {
    balance += fmt::format("{}{} {:.3f}", t ? ", " : "", types[t].name, quality.node_balance[t]);
  }
  std::printf("node balance per type (largest / mean part): %s; in-edges %.3f\n", balance.c_str(),
              quality.edge_balance);
}

// One line per part: nodes owned of each type.
void print_parts(const std::vector<NodeTypeInfo>& types, const std::vector<PartitionBook>& books) {
  const int64_t parts = books.empty() ? 0 : books.front().num_parts();
  for (int64_t p = 0; p < parts; ++p) {
    std::string line;
    for (size_t t = 0; t < types.size(); ++t) {
      line += fmt::format("{}{} [{}, {})", t ? ", " : "", types[t].name, books[t].begin(p),
                          books[t].end(p));
    }
    std::printf("part %lld: %s\n", static_cast<long long>(p), line.c_str());
  }
}

// The types with times for temporal sampling over the service (the directory's time files; a
// bad one is named, `--verify` fails on it).
void print_times(const HeteroPartitionManifest& manifest) {
  HeteroPartitionTimes times;
  try {
    times = load_hetero_partition_times(manifest);
  } catch (const Error& error) {
    std::printf("times: unusable: %s\n", error.what());
    return;
  }
  std::string timed;
  for (size_t t = 0; t < times.node_time.size(); ++t) {
    if (times.node_time[t]) timed += " " + manifest.node_types[t].name + " (node time)";
  }
  for (size_t e = 0; e < times.edge_time.size(); ++e) {
    if (times.edge_time[e]) timed += " " + manifest.edge_types[e].name() + " (edge time)";
  }
  if (!timed.empty()) std::printf("times:%s\n", timed.c_str());
}

}  // namespace

// One part-P directory of a heterogeneous partitioned dataset (`parent`): owned id ranges and
// counts per type.
void describe_hetero_part(const std::string& path, const std::string& parent, int64_t part,
                          bool as_json, bool verify) {
  const HeteroPartition partition = load_hetero_partition(
      parent, part, {.memory_map = true, .verify_checksums = verify, .validate_graph = true});
  const HeteroGraph& graph = partition.data.graph;
  Json nodes = Json::object(), edges = Json::object();
  for (const NodeTypeInfo& type : graph.node_types()) {
    nodes[type.name] = {{"first_node", partition.first_node(type.name)},
                        {"num_nodes", type.num_nodes}};
  }
  for (int r = 0; r < graph.num_edge_types(); ++r) {
    edges[graph.edge_types()[static_cast<size_t>(r)].name()] = graph.edges(r).num_edges();
  }
  if (as_json) {
    std::printf("%s\n", Json({{"path", path},
                              {"kind", "partition"},
                              {"heterogeneous", true},
                              {"part", part},
                              {"num_parts", partition.manifest.num_parts},
                              {"node_types", nodes},
                              {"edge_types", edges},
                              {"verified", verify}})
                            .dump()
                            .c_str());
    return;
  }
  std::printf("heterogeneous partition %lld of %lld (%s)\n", static_cast<long long>(part),
              static_cast<long long>(partition.manifest.num_parts), path.c_str());
  for (const NodeTypeInfo& type : graph.node_types()) {
    const NodeTypeData& data = partition.data.node(type.name);
    std::printf("  %-20s new ids [%lld, %lld), features %s\n", type.name.c_str(),
                static_cast<long long>(partition.first_node(type.name)),
                static_cast<long long>(partition.first_node(type.name) + type.num_nodes),
                data.features ? data.features->describe().c_str() : "none");
  }
  for (int r = 0; r < graph.num_edge_types(); ++r) {
    std::printf("  %-40s %lld in-edges\n",
                graph.edge_types()[static_cast<size_t>(r)].name().c_str(),
                static_cast<long long>(graph.edges(r).num_edges()));
  }
  if (verify) std::printf("verify: ok (checksums and graph ids)\n");
}

void print_hetero_partitioned(const std::string& path, bool header) {
  const HeteroPartitionManifest manifest = read_hetero_partition_manifest(path);
  if (header) {
    std::printf("heterogeneous partitioned dataset: %s (%s)\n", manifest.name.c_str(),
                path.c_str());
    std::printf("method: %s, %lld partitions, %zu node types, %zu edge types\n",
                std::string(partition_method_name(manifest.method)).c_str(),
                static_cast<long long>(manifest.num_parts), manifest.node_types.size(),
                manifest.edge_types.size());
  }
  print_quality(manifest.quality, manifest.node_types, manifest.edge_types, manifest.num_edges);
  print_parts(manifest.node_types, manifest.books);
  if (header) print_times(manifest);
}

}  // namespace volley::cli
