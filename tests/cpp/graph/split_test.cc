#include "volley/graph/split.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

namespace volley {
namespace {

using ::testing::HasSubstr;
using ::testing::ThrowsMessage;

// 3,000 nodes in 5 classes (node v has class v % 5), every 7th node unlabelled.
Array make_labels() {
  std::vector<int64_t> labels(3000);
  for (size_t v = 0; v < labels.size(); ++v)
    labels[v] = v % 7 == 3 ? -1 : static_cast<int64_t>(v % 5);
  return Array::from_vector(labels);
}

void expect_sorted_and_disjoint(const Split& split, int64_t num_nodes) {
  std::set<int64_t> seen;
  for (const Array* part : {&split.train, &split.val, &split.test}) {
    const auto ids = part->to_vector<int64_t>();
    EXPECT_TRUE(std::is_sorted(ids.begin(), ids.end()));
    for (int64_t id : ids) {
      EXPECT_GE(id, 0);
      EXPECT_LT(id, num_nodes);
      EXPECT_TRUE(seen.insert(id).second) << "node " << id << " is in two parts";
    }
  }
}

TEST(PlanetoidSplit, TakesPerClassTrainingNodesThenValAndTest) {
  const Array labels = make_labels();
  const Split split = planetoid_split(labels, 5, {.seed = 3});
  EXPECT_EQ(split.train.numel(), 100);
  EXPECT_EQ(split.val.numel(), 500);
  EXPECT_EQ(split.test.numel(), 1000);
  expect_sorted_and_disjoint(split, 3000);
  std::vector<int> per_class(5, 0);
  for (int64_t v : split.train.to_vector<int64_t>()) ++per_class[v % 5];
  EXPECT_EQ(per_class, std::vector<int>(5, 20));
  for (const Array* part : {&split.train, &split.val, &split.test}) {
    for (int64_t v : part->to_vector<int64_t>()) EXPECT_NE(v % 7, 3) << "unlabelled node chosen";
  }
}

TEST(PlanetoidSplit, IsAPureFunctionOfTheSeed) {
  const Array labels = make_labels();
  const Split a = planetoid_split(labels, 5, {.seed = 11});
  const Split b = planetoid_split(labels.cast(DType::kInt32), 5, {.seed = 11});
  const Split c = planetoid_split(labels, 5, {.seed = 12});
  EXPECT_EQ(a.train.to_vector<int64_t>(), b.train.to_vector<int64_t>());
  EXPECT_EQ(a.val.to_vector<int64_t>(), b.val.to_vector<int64_t>());
  EXPECT_EQ(a.test.to_vector<int64_t>(), b.test.to_vector<int64_t>());
  EXPECT_NE(a.train.to_vector<int64_t>(), c.train.to_vector<int64_t>());
}

TEST(PlanetoidSplit, PinnedOutputIsPortable) {
  // Philox + Fisher–Yates: these ids must come out on every platform and standard library.
  std::vector<int64_t> labels(40);
  for (size_t v = 0; v < labels.size(); ++v) labels[v] = static_cast<int64_t>(v % 2);
  const Split split = planetoid_split(Array::from_vector(labels), 2,
                                      {.per_class = 2, .num_val = 3, .num_test = 4, .seed = 0});
  EXPECT_EQ(split.train.to_vector<int64_t>(), (std::vector<int64_t>{16, 25, 32, 33}));
  EXPECT_EQ(split.val.to_vector<int64_t>(), (std::vector<int64_t>{9, 36, 37}));
  EXPECT_EQ(split.test.to_vector<int64_t>(), (std::vector<int64_t>{0, 4, 7, 15}));
}

TEST(PlanetoidSplit, RejectsImpossibleRequests) {
  const Array labels = Array::from_vector<int64_t>({0, 1, 0, 1, 2});
  EXPECT_THAT([&] { planetoid_split(labels, 2); },
              ThrowsMessage<ValueError>(
                  HasSubstr("planetoid_split: label of node 4 is 2, outside [-1, 2)")));
  EXPECT_THAT([&] { planetoid_split(labels, 3, {.per_class = 1}); },
              ThrowsMessage<ValueError>(HasSubstr(
                  "500 validation + 1000 test nodes requested, but only 2 labelled nodes remain "
                  "after the 3 training nodes")));
  EXPECT_THAT([&] { planetoid_split(Array::from_vector<float>({0.0f}), 1); },
              ThrowsMessage<ValueError>(HasSubstr("labels must be a 1-d integer array")));
}

TEST(RandomSplit, SplitsEveryNodeByFraction) {
  const Split split = random_split(1000, {.train_fraction = 0.29, .val_fraction = 0.2, .seed = 5});
  EXPECT_EQ(split.train.numel(), 290);
  EXPECT_EQ(split.val.numel(), 200);
  EXPECT_EQ(split.test.numel(), 510);
  expect_sorted_and_disjoint(split, 1000);
  const Split again = random_split(1000, {.train_fraction = 0.29, .val_fraction = 0.2, .seed = 5});
  EXPECT_EQ(split.val.to_vector<int64_t>(), again.val.to_vector<int64_t>());
  const Split other = random_split(1000, {.train_fraction = 0.29, .val_fraction = 0.2, .seed = 6});
  EXPECT_NE(split.val.to_vector<int64_t>(), other.val.to_vector<int64_t>());
  EXPECT_EQ(random_split(0).train.numel(), 0);
  EXPECT_THAT([] { random_split(10, {.train_fraction = 0.7, .val_fraction = 0.4}); },
              ThrowsMessage<ValueError>(HasSubstr("sum to at most 1, got train 0.7 and val 0.4")));
}

}  // namespace
}  // namespace volley
