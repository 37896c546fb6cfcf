// volley/graph/generate_hetero.h — a seeded ogbn-mag-shaped heterogeneous graph
// (`volley generate --model hetero`).
//
// Node types paper, author, institution, field_of_study; edge types (in this order)
//   author__writes__paper, paper__cites__paper, author__affiliated_with__institution,
//   paper__has_topic__field_of_study,
// and with `reverse` also paper__rev_writes__author, paper__rev_cites__paper,
// institution__rev_affiliated_with__author, field_of_study__rev_has_topic__paper (each the
// forward edges turned around; a reverse edge's id is the id of the forward edge it reverses).
// Counts follow ogbn-mag's ratios to the number of papers (num_nodes, the papers: 736,389 gives
// ogbn-mag's 1,134,649 authors, 8,740 institutions, 59,965 fields and about 21.1M forward edges):
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

// GeneratorOptions with model kHetero and ogbn-mag's defaults: 736,389 papers, 128 float32 paper
// features (noise 1.5), 349 classes.
GeneratorOptions mag_generator_options();

// The graph alone, in memory (`options.model` must be kHetero).
HeteroGraph generate_hetero_graph(const GeneratorOptions& options);

// Writes a heterogeneous dataset directory (hetero_dataset.h), edge type by edge type, features
// streamed. Returns the name and total node and edge counts (reverses included).
// generate_dataset calls it for kHetero. Paper labels, features and split are those that
// generate_labels / generate_features / generate_split give for the same options.
GeneratedDataset generate_hetero_dataset(const GeneratorOptions& options,
                                         const std::string& directory);

}  // namespace volley
