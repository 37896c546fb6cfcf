// volley/graph/generate_hetero.h — a seeded ogbn-mag-shaped heterogeneous graph
// (`volley generate --model hetero`).
//
// Node types paper, author, institution, field_of_study; edge types (in this order)
//   author__writes__paper, paper__cites__paper, author__affiliated_with__institution,
//   paper__has_topic__field_of_study,
// and with `reverse` also paper__rev_writes__author, paper__rev_cites__paper,
// institution__rev_affiliated_with__author, field_of_study__rev_has_topic__paper (each the
// forward edges turned around; a reverse edge's id is the id of the forward edge it reverses).
// Counts follow ogbn-mag's ratios to the number of papers (num_papers = 736,389 gives ogbn-mag's
// 1,134,649 authors, 8,740 institutions, 59,965 fields and about 21.1M forward edges):
//   authors 1.5408 x papers, institutions 0.011869 x, fields 0.081430 x (each at least 1);
//   mean in-degrees: writes 9.704 authors per paper, cites 7.355 per paper, affiliated_with
//   119.45 authors per institution, has_topic 125.16 papers per field.
// Each row's degree is 1 + floor(Exp(mean - 0.5)) (capped at the sources available), its sources
// distinct, sorted, drawn ∝ a power-law popularity (alias tables) and, with probability
// `homophily`, from the sources sharing the row's class: papers have labels (uniform classes),
// authors, institutions and fields a hidden "home" class. So a paper's authors, topics and
// citations carry its label, and message passing beats a features-only model.
// Node data: paper features as generate_features (class centroid + noise, so features alone are
// informative but noisy), paper labels as generate_labels, a random paper train/val/test split;
// the other types have no features (PyG users give them embeddings or aggregate paper features).
//
// Determinism: a pure function of the options (Philox streams keyed by seed, purpose and row),
// same bytes for any thread count. Memory: one edge type at a time (4 bytes per edge, plus 8 per
// edge while its reverse is built) and O(nodes) alias tables; features streamed in 16 MiB
// batches. Throws ValueError naming a bad option, IoError when the directory cannot be written.
#pragma once

#include <cstdint>
#include <string>

#include "volley/graph/generate.h"
#include "volley/graph/hetero_graph.h"

namespace volley {

struct HeteroGeneratorOptions {
  int64_t num_papers = 736'389;  // >= 1 and < 2^31
  int64_t feature_dim = 128;     // paper features; 0: none
  DType feature_dtype = DType::kFloat32;
  int64_t num_classes = 349;  // in [1, 65536]
  uint64_t seed = 0;
  bool reverse = false;
  // Fraction of each row's sources drawn from the row's own class, in [0, 1].
  double homophily = 0.5;
  // Standard deviation of the paper features' noise (> 0); centroids are about 2.8 apart.
  double feature_noise = 1.5;
  double train_fraction = 0.1;
  double val_fraction = 0.05;
  double test_fraction = 0.1;
};

// Throws ValueError naming the first bad option.
void validate_hetero_generator_options(const HeteroGeneratorOptions& options);
// "mag-736389-seed0" (with "-rev" when reverse).
std::string default_hetero_dataset_name(const HeteroGeneratorOptions& options);

// The graph alone, in memory.
HeteroGraph generate_hetero_graph(const HeteroGeneratorOptions& options);

// The homogeneous generator options that describe the papers (num_nodes = num_papers, classes,
// seed, features, split): generate_labels / generate_features / generate_split of these give
// the papers' labels, features and split.
GeneratorOptions paper_generator_options(const HeteroGeneratorOptions& options);

// Writes a heterogeneous dataset directory (hetero_dataset.h), edge type by edge type, features
// streamed. Returns the name and total node and edge counts (reverses included).
GeneratedDataset generate_hetero_dataset(const HeteroGeneratorOptions& options,
                                         const std::string& directory);

}  // namespace volley
