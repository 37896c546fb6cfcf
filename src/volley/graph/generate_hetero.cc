// The ogbn-mag-shaped heterogeneous generator (contract in generate_hetero.h).
#include "volley/graph/generate_hetero.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <numeric>
#include <span>
#include <vector>

#include "volley/core/parallel.h"
#include "volley/core/progress.h"
#include "volley/graph/hetero_dataset.h"
#include "volley/graph/internal/generator.h"

namespace volley {
namespace {

using namespace generator_internal;

// ogbn-mag's counts: the ratios everything is scaled by.
constexpr double kMagPapers = 736'389;
constexpr double kMagAuthors = 1'134'649, kMagInstitutions = 8'740, kMagFields = 59'965;
constexpr double kWritesPerPaper = 7'145'660 / kMagPapers;
constexpr double kCitesPerPaper = 5'416'271 / kMagPapers;
constexpr double kAuthorsPerInstitution = 1'043'998 / kMagInstitutions;
constexpr double kPapersPerField = 7'505'078 / kMagFields;
constexpr double kPopularityAlpha = 1.0 / 1.5;  // power-law popularity, degree exponent 2.5
constexpr double kPopularityOffset = 10.0;

enum NodeKind : int { kPaper = 0, kAuthor, kInstitution, kField, kNumKinds };
constexpr const char* kNodeNames[] = {"paper", "author", "institution", "field_of_study"};

// Purposes of this generator's streams (past the homogeneous generator's, internal/generator.h).
enum class HeteroPurpose : uint32_t { kHomeClass = 64, kPopularity = 68, kDegree = 72, kRow = 76 };

Purpose purpose(HeteroPurpose base, int offset) {
  return static_cast<Purpose>(static_cast<uint32_t>(base) + static_cast<uint32_t>(offset));
}

struct Plan {
  int64_t counts[kNumKinds];
};

Plan plan_of(const GeneratorOptions& options) {
  const double papers = static_cast<double>(options.num_nodes);
  auto scaled = [&](double mag_count) {
    return std::max<int64_t>(1, std::llround(papers * mag_count / kMagPapers));
  };
  return {{options.num_nodes, scaled(kMagAuthors), scaled(kMagInstitutions), scaled(kMagFields)}};
}

struct Relation {
  NodeKind src, dst;
  const char* name;
  double mean_degree;
};
constexpr Relation kRelations[] = {
    {kAuthor, kPaper, "writes", kWritesPerPaper},
    {kPaper, kPaper, "cites", kCitesPerPaper},
    {kAuthor, kInstitution, "affiliated_with", kAuthorsPerInstitution},
    {kPaper, kField, "has_topic", kPapersPerField}};

// The class of every node of a kind: paper labels, a uniform home class for the others.
std::vector<int32_t> classes_of(const GeneratorOptions& options, NodeKind kind, int64_t n) {
  std::vector<int32_t> classes(static_cast<size_t>(n));
  if (kind == kPaper) {
    const Array labels = generate_labels(options);
    std::copy_n(labels.data<int64_t>(), n, classes.begin());
    return classes;
  }
  parallel_for(0, n, 1 << 16, [&](int64_t begin, int64_t end) {
    for (int64_t v = begin; v < end; ++v) {
      classes[static_cast<size_t>(v)] =
          static_cast<int32_t>(stream_for(options.seed, purpose(HeteroPurpose::kHomeClass, kind),
                                          static_cast<uint64_t>(v))
                                   .bounded(static_cast<uint32_t>(options.num_classes)));
    }
  });
  return classes;
}

SourcePool pool_of(const GeneratorOptions& options, NodeKind kind,
                   const std::vector<int32_t>& classes) {
  const int64_t n = static_cast<int64_t>(classes.size());
  const size_t count = classes.size();
  const std::vector<int32_t> node_of_rank =
      seeded_permutation(n, options.seed, purpose(HeteroPurpose::kPopularity, kind));
  std::vector<double> weights(count);
  for (size_t rank = 0; rank < count; ++rank) {
    weights[static_cast<size_t>(node_of_rank[rank])] =
        std::pow(static_cast<double>(rank) + kPopularityOffset, -kPopularityAlpha);
  }
  return build_source_pool(weights, classes, options.num_classes);
}

// One forward edge type: rows of kind `relation.dst`, sources from `pool`.
Csr generate_relation(const GeneratorOptions& options, int index, const Relation& relation,
                      const SourcePool& pool, const std::vector<int32_t>& row_classes) {
  const int64_t rows = static_cast<int64_t>(row_classes.size());
  const bool self_type = relation.src == relation.dst;
  const int64_t max_degree = pool.size - (self_type ? 1 : 0);
  std::vector<int64_t> degree(static_cast<size_t>(rows));
  const double mean = relation.mean_degree - 0.5;
  parallel_for(0, rows, 1 << 14, [&](int64_t begin, int64_t end) {
    for (int64_t v = begin; v < end; ++v) {
      PhiloxStream rng = stream_for(options.seed, purpose(HeteroPurpose::kDegree, index),
                                    static_cast<uint64_t>(v));
      const double u = 1.0 - rng.uniform_double();  // (0, 1]
      const double drawn = std::floor(-std::log(u) * mean);
      degree[static_cast<size_t>(v)] =
          std::min<int64_t>(max_degree, 1 + static_cast<int64_t>(std::min(drawn, 1e12)));
    }
  });
  Array indptr = Array::empty(DType::kInt64, {rows + 1});
  int64_t* row_start = indptr.data<int64_t>();
  row_start[0] = 0;
  std::partial_sum(degree.begin(), degree.end(), row_start + 1);
  const int64_t edges = row_start[rows];
  Array indices = Array::empty(DType::kInt32, {edges});
  int32_t* sources = indices.data<int32_t>();
  const uint64_t threshold = homophily_threshold(options.homophily);
  ProgressBar progress(relation.name, edges);
  parallel_for(0, rows, 1024, [&](int64_t begin, int64_t end) {
    for (int64_t v = begin; v < end; ++v) {
      PhiloxStream rng =
          stream_for(options.seed, purpose(HeteroPurpose::kRow, index), static_cast<uint64_t>(v));
      pool.fill_row(rng, row_classes[static_cast<size_t>(v)], threshold, self_type ? v : -1,
                    degree[static_cast<size_t>(v)], sources + row_start[v]);
    }
    progress.advance(row_start[end] - row_start[begin]);
  });
  progress.finish();
  return Csr::from_arrays(std::move(indptr), std::move(indices), std::nullopt, std::nullopt,
                          Orientation::kIn, /*validate=*/false);
}

// The reverse of a forward edge type: row = old source; edge ids = the forward edge's id.
Csr reverse_of(const Csr& forward, int64_t num_src) {
  const int64_t edges = forward.num_edges();
  Array src = Array::empty(DType::kInt32, {edges});
  int32_t* old_row = src.data<int32_t>();
  parallel_for(0, forward.num_nodes(), 4096, [&](int64_t begin, int64_t end) {
    for (int64_t v = begin; v < end; ++v) {
      for (int64_t k = forward.begin(v); k < forward.end(v); ++k)
        old_row[k] = static_cast<int32_t>(v);
    }
  });
  // New edge k' goes old row -> old source; build_bipartite_csr's ids are COO positions, which
  // are the forward CSR positions, i.e. the forward edge ids (forward stores none).
  return build_bipartite_csr(src, forward.indices(), forward.num_nodes(), num_src);
}

// Generates every edge type in order, handing each to `sink` (forward, then its reverse).
void for_each_edge_type(const GeneratorOptions& options, const Plan& plan,
                        const std::function<void(const EdgeType&, const Csr&)>& sink) {
  std::vector<int32_t> classes[kNumKinds];
  for (int kind = 0; kind < kNumKinds; ++kind) {
    classes[kind] = classes_of(options, static_cast<NodeKind>(kind), plan.counts[kind]);
  }
  SourcePool pools[kNumKinds];
  for (int index = 0; index < static_cast<int>(std::size(kRelations)); ++index) {
    const Relation& relation = kRelations[index];
    SourcePool& pool = pools[relation.src];
    if (pool.size == 0) {
      for (auto& other : pools) other = SourcePool();  // one pool at a time
      pool = pool_of(options, relation.src, classes[relation.src]);
    }
    const EdgeType type{kNodeNames[relation.src], relation.name, kNodeNames[relation.dst]};
    const Csr forward = generate_relation(options, index, relation, pool, classes[relation.dst]);
    sink(type, forward);
    if (options.reverse) {
      sink({type.dst, std::string("rev_") + relation.name, type.src},
           reverse_of(forward, plan.counts[relation.src]));
    }
  }
}

std::vector<NodeTypeInfo> node_types_of(const Plan& plan) {
  std::vector<NodeTypeInfo> types;
  for (int kind = 0; kind < kNumKinds; ++kind)
    types.push_back({kNodeNames[kind], plan.counts[kind]});
  return types;
}

std::vector<EdgeType> edge_types_of(const GeneratorOptions& options) {
  std::vector<EdgeType> types;
  for (const Relation& relation : kRelations) {
    types.push_back({kNodeNames[relation.src], relation.name, kNodeNames[relation.dst]});
    if (options.reverse) {
      types.push_back({kNodeNames[relation.dst], std::string("rev_") + relation.name,
                       kNodeNames[relation.src]});
    }
  }
  return types;
}

void validate_hetero(const GeneratorOptions& options) {
  validate_generator_options(options);
  VOLLEY_REQUIRE(options.model == GraphModel::kHetero, ValueError,
                 "a typed graph needs the hetero model, got {}", graph_model_name(options.model));
}

}  // namespace

GeneratorOptions mag_generator_options() {
  return {.model = GraphModel::kHetero,
          .num_nodes = static_cast<int64_t>(kMagPapers),
          .feature_dim = 128,
          .num_classes = 349,
          .feature_noise = 1.5};
}

HeteroGraph generate_hetero_graph(const GeneratorOptions& options) {
  validate_hetero(options);
  const Plan plan = plan_of(options);
  std::vector<std::pair<EdgeType, Csr>> edges;
  for_each_edge_type(options, plan,
                     [&](const EdgeType& type, const Csr& csr) { edges.emplace_back(type, csr); });
  return HeteroGraph(node_types_of(plan), std::move(edges), /*validate=*/false);
}

GeneratedDataset generate_hetero_dataset(const GeneratorOptions& options,
                                         const std::string& directory) {
  validate_hetero(options);
  const Plan plan = plan_of(options);
  GeneratedDataset result{.name = default_dataset_name(options)};
  for (int64_t count : plan.counts) result.num_nodes += count;
  HeteroDatasetWriter writer(directory, result.name, node_types_of(plan), edge_types_of(options));
  for_each_edge_type(options, plan, [&](const EdgeType& type, const Csr& csr) {
    writer.add_edge_array(type, "indptr", csr.indptr());
    writer.add_edge_array(type, "indices", csr.indices());
    if (csr.has_edge_ids()) writer.add_edge_array(type, "edge_ids", *csr.edge_ids());
    result.num_edges += csr.num_edges();
  });
  writer.add_node_array("paper", "labels", generate_labels(options));
  {
    const GeneratedSplit split = generate_split(options);
    writer.add_node_array("paper", "train_idx", split.train_idx);
    writer.add_node_array("paper", "val_idx", split.val_idx);
    writer.add_node_array("paper", "test_idx", split.test_idx);
  }
  if (options.feature_dim > 0) {
    writer.add_node_written("paper", "features", options.feature_dtype,
                            {options.num_nodes, options.feature_dim},
                            stream_features(options, writer.node_path("paper", "features")));
  }
  writer.finish({{"paper", options.num_classes}});
  return result;
}

}  // namespace volley
