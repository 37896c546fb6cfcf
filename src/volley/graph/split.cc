#include "volley/graph/split.h"

#include <algorithm>
#include <vector>

#include "volley/core/philox.h"

namespace volley {
namespace {

// Streams of one split: the counter's word 3 tells what is shuffled, word 1 which class.
constexpr uint32_t kStreamClass = 1;
constexpr uint32_t kStreamRest = 2;
constexpr uint32_t kStreamAll = 3;

// Fisher–Yates with Philox: the same permutation for a seed on every platform.
void shuffle(std::vector<int64_t>& values, PhiloxStream& rng) {
  for (size_t i = values.size(); i > 1; --i) {
    const auto j = static_cast<size_t>(rng.bounded64(i));
    std::swap(values[i - 1], values[j]);
  }
}

Array sorted_ids(std::vector<int64_t> ids) {
  std::sort(ids.begin(), ids.end());
  return Array::from_vector(ids);
}

}  // namespace

Split planetoid_split(const Array& labels, int64_t num_classes,
                      const PlanetoidSplitOptions& options) {
  VOLLEY_REQUIRE(labels.defined() && labels.ndim() == 1 && is_integer(labels.dtype()), ValueError,
                 "planetoid_split: labels must be a 1-d integer array, got {}", labels.describe());
  VOLLEY_REQUIRE(num_classes >= 1, ValueError, "planetoid_split: num_classes must be >= 1, got {}",
                 num_classes);
  VOLLEY_REQUIRE(options.per_class >= 0 && options.num_val >= 0 && options.num_test >= 0,
                 ValueError,
                 "planetoid_split: per_class, num_val and num_test must be >= 0, got {}, {}, {}",
                 options.per_class, options.num_val, options.num_test);
  const Array wide = labels.dtype() == DType::kInt64 ? labels : labels.cast(DType::kInt64);
  const int64_t* label = wide.data<int64_t>();
  const int64_t n = wide.numel();

  std::vector<std::vector<int64_t>> by_class(static_cast<size_t>(num_classes));
  for (int64_t node = 0; node < n; ++node) {
    VOLLEY_REQUIRE(label[node] >= -1 && label[node] < num_classes, ValueError,
                   "planetoid_split: label of node {} is {}, outside [-1, {})", node, label[node],
                   num_classes);
    if (label[node] >= 0) by_class[static_cast<size_t>(label[node])].push_back(node);
  }

  std::vector<int64_t> train, rest;
  for (int64_t c = 0; c < num_classes; ++c) {
    auto& members = by_class[static_cast<size_t>(c)];
    PhiloxStream rng(options.seed,
                     {{0, static_cast<uint32_t>(c),
                       static_cast<uint32_t>(static_cast<uint64_t>(c) >> 32), kStreamClass}});
    shuffle(members, rng);
    const auto take = static_cast<size_t>(
        std::min<int64_t>(options.per_class, static_cast<int64_t>(members.size())));
    train.insert(train.end(), members.begin(), members.begin() + static_cast<ptrdiff_t>(take));
    rest.insert(rest.end(), members.begin() + static_cast<ptrdiff_t>(take), members.end());
  }
  // Shuffle the rest from a canonical order, so the result does not depend on class order.
  std::sort(rest.begin(), rest.end());
  const int64_t needed = options.num_val + options.num_test;
  VOLLEY_REQUIRE(static_cast<int64_t>(rest.size()) >= needed, ValueError,
                 "planetoid_split: {} validation + {} test nodes requested, but only {} labelled "
                 "nodes remain after the {} training nodes",
                 options.num_val, options.num_test, rest.size(), train.size());
  PhiloxStream rng(options.seed, {{0, 0, 0, kStreamRest}});
  shuffle(rest, rng);
  const auto val_end = rest.begin() + static_cast<ptrdiff_t>(options.num_val);
  const auto test_end = val_end + static_cast<ptrdiff_t>(options.num_test);
  return {sorted_ids(std::move(train)), sorted_ids({rest.begin(), val_end}),
          sorted_ids({val_end, test_end})};
}

Split random_split(int64_t num_nodes, const RandomSplitOptions& options) {
  VOLLEY_REQUIRE(num_nodes >= 0, ValueError, "random_split: num_nodes must be >= 0, got {}",
                 num_nodes);
  VOLLEY_REQUIRE(options.train_fraction >= 0.0 && options.train_fraction <= 1.0 &&
                     options.val_fraction >= 0.0 && options.val_fraction <= 1.0 &&
                     options.train_fraction + options.val_fraction <= 1.0,
                 ValueError,
                 "random_split: fractions must lie in [0, 1] and sum to at most 1, got train {} "
                 "and val {}",
                 options.train_fraction, options.val_fraction);
  std::vector<int64_t> nodes(static_cast<size_t>(num_nodes));
  for (int64_t i = 0; i < num_nodes; ++i) nodes[static_cast<size_t>(i)] = i;
  PhiloxStream rng(options.seed, {{0, 0, 0, kStreamAll}});
  shuffle(nodes, rng);
  // floor(fraction * N), forgiving rounding error (0.29 * 100 is 28.999999999999996).
  auto count_of = [&](double fraction) {
    return static_cast<ptrdiff_t>(fraction * static_cast<double>(num_nodes) + 1e-9);
  };
  const ptrdiff_t num_train = count_of(options.train_fraction);
  const ptrdiff_t num_val =
      std::min(count_of(options.val_fraction), static_cast<ptrdiff_t>(num_nodes) - num_train);
  const auto train_end = nodes.begin() + num_train;
  const auto val_end = train_end + num_val;
  return {sorted_ids({nodes.begin(), train_end}), sorted_ids({train_end, val_end}),
          sorted_ids({val_end, nodes.end()})};
}

}  // namespace volley
