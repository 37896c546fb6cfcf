// LinkLoader over a typed graph (link_loader.h, "Typed graphs"): supervision edges of one edge
// type, each end a seed of its own node type, negatives from the edge type's typed sampler, link
// fields as local ids into their type's nodes, positives (and reverses) excluded per edge type.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "test_graphs.h"
#include "test_util.h"
#include "volley/loader/link_loader.h"

namespace volley {
namespace {

using ::testing::HasSubstr;

const EdgeType kWrites{"author", "writes", "paper"};
const EdgeType kRevWrites{"paper", "rev_writes", "author"};

std::shared_ptr<HeteroNeighborSampler> make_link_sampler(std::vector<int64_t> fanouts = {3, 2}) {
  HeteroSamplerOptions options;
  options.fanouts = std::move(fanouts);
  return std::make_shared<HeteroNeighborSampler>(small_mag(), options);
}

// The first `count` edges of `type` as an int64 [2, count] array (sources, then destinations).
Array first_edges(const EdgeType& type, int64_t count) {
  const Csr& csr = small_mag().edges(type);
  std::vector<int64_t> src, dst;
  for (int64_t v = 0; v < csr.num_nodes() && static_cast<int64_t>(src.size()) < count; ++v) {
    for (int64_t k = csr.begin(v); k < csr.end(v) && static_cast<int64_t>(src.size()) < count;
         ++k) {
      src.push_back(csr.neighbor(k));
      dst.push_back(v);
    }
  }
  Array out = Array::empty(DType::kInt64, {2, static_cast<int64_t>(src.size())});
  std::copy(src.begin(), src.end(), out.data<int64_t>());
  std::copy(dst.begin(), dst.end(), out.data<int64_t>() + src.size());
  return out;
}

LinkLoaderOptions options(NegativeMode mode, int threads = 1) {
  LinkLoaderOptions out;
  out.loader.batch_size = 32;
  out.loader.shuffle = true;
  out.loader.seed = 3;
  out.loader.num_threads = threads;
  out.negatives.mode = mode;
  out.negatives.amount = mode == NegativeMode::kTriplet ? 2 : 1;
  return out;
}

NegativeSampler negatives(bool reject = false) {
  return edge_type_negatives(small_mag(), kWrites, {}, {},
                             {.reject_existing = reject, .max_draws = 64});
}

std::set<std::pair<int64_t, int64_t>> edge_set(const EdgeType& type) {
  const Csr& csr = small_mag().edges(type);
  std::set<std::pair<int64_t, int64_t>> out;
  for (int64_t v = 0; v < csr.num_nodes(); ++v) {
    for (int64_t k = csr.begin(v); k < csr.end(v); ++k) out.emplace(csr.neighbor(k), v);
  }
  return out;
}

TEST(TypedLinkLoader, LabelIndexMapsIntoEachEndsTypeAndNegativesAreNotEdges) {
  const Array edges = first_edges(kWrites, 200);
  const LinkLoader loader(make_link_sampler(), kWrites, edges, std::nullopt,
                          options(NegativeMode::kBinary), negatives(true));
  const auto writes = edge_set(kWrites);
  const int64_t m = edges.shape()[1];
  const int64_t* ids = edges.data<int64_t>();
  std::set<int64_t> seen;
  auto epoch = loader.start_epoch(0);
  while (auto batch = epoch->next()) {
    const Array& authors = batch->node_types[small_mag_type("author")].nodes;
    const Array& papers = batch->node_types[small_mag_type("paper")].nodes;
    const int64_t count = batch->batch_size;
    ASSERT_EQ(batch->edge_label_index.shape()[1], 2 * count);
    const int64_t* label = batch->edge_label_index.data<int64_t>();
    const int64_t width = batch->edge_label_index.shape()[1];
    for (int64_t i = 0; i < width; ++i) {
      const int64_t author = authors.data<int64_t>()[label[i]];
      const int64_t paper = papers.data<int64_t>()[label[width + i]];
      if (i < count) {  // the positives, in order: the supervision edges at input_ids
        const int64_t position = batch->input_ids.data<int64_t>()[i];
        EXPECT_EQ(author, ids[position]);
        EXPECT_EQ(paper, ids[m + position]);
        seen.insert(position);
      } else {
        EXPECT_FALSE(writes.contains({author, paper})) << "negative " << i;
      }
    }
    EXPECT_EQ(batch->edge_label.data<float>()[0], 1.0f);
    EXPECT_EQ(batch->edge_label.data<float>()[width - 1], 0.0f);
  }
  EXPECT_EQ(static_cast<int64_t>(seen.size()), m);
  // The same batches with more threads.
  const LinkLoader threaded(make_link_sampler(), kWrites, edges, std::nullopt,
                            options(NegativeMode::kBinary, 3), negatives(true));
  auto a = loader.start_epoch(1), b = threaded.start_epoch(1);
  while (auto one = a->next()) {
    auto other = b->next();
    ASSERT_TRUE(other.has_value());
    EXPECT_EQ(one->edge_label_index.span<int64_t>().size(),
              other->edge_label_index.span<int64_t>().size());
    EXPECT_TRUE(std::ranges::equal(one->edge_label_index.span<int64_t>(),
                                   other->edge_label_index.span<int64_t>()));
  }
}

TEST(TypedLinkLoader, ExcludeEdgesRemovesPositivesAndWithUndirectedTheirReverses) {
  const Array edges = first_edges(kWrites, 96);
  auto exclude = options(NegativeMode::kNone);
  exclude.exclude_edges = true;
  exclude.undirected = true;
  const LinkLoader loader(make_link_sampler({-1, -1}), kWrites, edges, std::nullopt, exclude,
                          std::nullopt);
  const int64_t m = edges.shape()[1];
  const int64_t* ids = edges.data<int64_t>();
  int64_t checked = 0;
  auto epoch = loader.start_epoch(0);
  while (auto batch = epoch->next()) {
    std::set<std::pair<int64_t, int64_t>> positives;
    for (const int64_t position : batch->input_ids.span<int64_t>()) {
      positives.emplace(ids[position], ids[m + position]);
    }
    const auto& types = small_mag().edge_types();
    for (size_t e = 0; e < types.size(); ++e) {
      const bool forward = types[e] == kWrites, reverse = types[e] == kRevWrites;
      if (!forward && !reverse) continue;
      const EdgeTypeBatch& part = batch->edge_types[e];
      const Array& from = batch->node_types[small_mag_type(types[e].src)].nodes;
      const Array& to = batch->node_types[small_mag_type(types[e].dst)].nodes;
      const int64_t count = part.edge_index.shape()[1];
      int64_t per_hop = 0;
      for (const int64_t hop : part.edges_per_hop) per_hop += hop;
      EXPECT_EQ(per_hop, count);
      EXPECT_EQ(part.edge_ids.numel(), count);
      for (int64_t k = 0; k < count; ++k) {
        const int64_t u = from.data<int64_t>()[part.edge_index.data<int64_t>()[k]];
        const int64_t v = to.data<int64_t>()[part.edge_index.data<int64_t>()[count + k]];
        const std::pair<int64_t, int64_t> pair = forward ? std::pair{u, v} : std::pair{v, u};
        EXPECT_FALSE(positives.contains(pair)) << types[e].name() << " keeps a positive";
        ++checked;
      }
    }
  }
  EXPECT_GT(checked, 0);
}

TEST(TypedLinkLoader, OneEndTypeSharesOneSeedListAndTripletsIndexIt) {
  const EdgeType cites{"paper", "cites", "paper"};
  const Array edges = first_edges(cites, 64);
  const NegativeSampler sampler = edge_type_negatives(small_mag(), cites, {}, {}, {});
  const LinkLoader loader(make_link_sampler(), cites, edges, std::nullopt,
                          options(NegativeMode::kTriplet), sampler);
  auto epoch = loader.start_epoch(0);
  auto batch = epoch->next();
  ASSERT_TRUE(batch.has_value());
  const Array& papers = batch->node_types[small_mag_type("paper")].nodes;
  const int64_t count = batch->batch_size;
  EXPECT_EQ(batch->dst_neg_index.shape(), (std::vector<int64_t>{count, 2}));
  const int64_t* ids = edges.data<int64_t>();
  for (int64_t i = 0; i < count; ++i) {
    const int64_t position = batch->input_ids.data<int64_t>()[i];
    EXPECT_EQ(papers.data<int64_t>()[batch->src_index.data<int64_t>()[i]], ids[position]);
    EXPECT_EQ(papers.data<int64_t>()[batch->dst_pos_index.data<int64_t>()[i]],
              ids[edges.shape()[1] + position]);
  }
  EXPECT_FALSE(batch->edge_label_index.defined());
}

TEST(TypedLinkLoader, RejectsBadArgumentsNamingTheType) {
  const Array edges = first_edges(kWrites, 10);
  const auto make = [&](const EdgeType& type, Array index, std::optional<NegativeSampler> neg,
                        NegativeMode mode = NegativeMode::kBinary) {
    LinkLoader(make_link_sampler(), type, std::move(index), std::nullopt, options(mode),
               std::move(neg));
  };
  EXPECT_THAT(message_of<ValueError>([&] {
                make({"author", "writes", "venue"}, edges, {});
              }),
              HasSubstr("unknown node type 'venue' (node types: paper, author"));
  Array bad = first_edges(kWrites, 10);
  bad.data<int64_t>()[10 + 3] = small_mag().num_nodes("paper");
  EXPECT_THAT(message_of<IndexError>([&] { make(kWrites, bad, negatives()); }),
              HasSubstr("edge_label_index[1, 3] = 2000 is out of range for node type 'paper' "
                        "with 2000 nodes"));
  EXPECT_THAT(message_of<ValueError>([&] { make(kWrites, edges, std::nullopt); }),
              HasSubstr("needs a negative sampler, got none"));
  const NegativeSampler cites =
      edge_type_negatives(small_mag(), {"paper", "cites", "paper"}, {}, {}, {});
  EXPECT_THAT(message_of<ValueError>([&] { make(kWrites, edges, cites); }),
              HasSubstr("edge type author__writes__paper has"));
  // Without negatives none is needed.
  EXPECT_NO_THROW(make(kWrites, edges, std::nullopt, NegativeMode::kNone));
}

}  // namespace
}  // namespace volley
