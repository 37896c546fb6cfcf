// NodeState: pull / push / optimizer steps against a scalar reference, repeated ids, shared
// attachment, snapshots, a writer killed mid-row (a forked child), and the errors.
#include "volley/feature/node_state.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <vector>

#include "volley/core/buffer.h"
#include "volley/core/error.h"

namespace volley {
namespace {

std::vector<float> pull_all(const NodeState& state) {
  std::vector<int64_t> ids(state.rows());
  for (int64_t i = 0; i < state.rows(); ++i) ids[i] = i;
  std::vector<float> out(ids.size() * state.dim());
  state.pull(ids, DType::kFloat32, reinterpret_cast<std::byte*>(out.data()));
  return out;
}

TEST(NodeState, StartsZeroAndAssignsAddsWithRepeatedIds) {
  NodeState state = NodeState::create({.rows = 5, .dim = 3});
  EXPECT_EQ(pull_all(state), std::vector<float>(15, 0.0f));
  const std::vector<int64_t> ids = {4, 1, 4};
  const std::vector<float> values = {1, 1, 1, 2, 2, 2, 3, 3, 3};
  state.push(ids, values, WriteOp::kAssign);  // id 4: the last position's value
  std::vector<float> rows = pull_all(state);
  EXPECT_EQ(rows[4 * 3], 3.0f);
  EXPECT_EQ(rows[1 * 3 + 2], 2.0f);
  state.push(ids, values, WriteOp::kAdd);  // id 4: 3 + (1 + 3)
  rows = pull_all(state);
  EXPECT_EQ(rows[4 * 3 + 1], 7.0f);
  EXPECT_EQ(rows[1 * 3], 4.0f);
  EXPECT_EQ(rows[0], 0.0f);
}

TEST(NodeState, HalfRowsRoundAndPullInEitherDtype) {
  NodeState state = NodeState::create({.rows = 2, .dim = 2, .dtype = DType::kBFloat16});
  const std::vector<int64_t> ids = {1};
  state.push(ids, std::vector<float>{1.0f, 1.0f / 3.0f}, WriteOp::kAssign);
  std::vector<uint16_t> raw(2);
  state.pull(ids, DType::kBFloat16, reinterpret_cast<std::byte*>(raw.data()));
  EXPECT_EQ(raw[0], 0x3f80);
  EXPECT_NEAR(pull_all(state)[3], 1.0f / 3.0f, 2e-3);
  EXPECT_THROW(state.pull(ids, DType::kFloat16, nullptr), ValueError);
}

TEST(NodeState, AdagradAndAdamMatchTheScalarFormulas) {
  for (OptimizerKind kind : {OptimizerKind::kAdagrad, OptimizerKind::kAdam}) {
    NodeState state = NodeState::create({.rows = 3, .dim = 1, .state_slots = 2});
    state.push(std::vector<int64_t>{0, 1, 2}, std::vector<float>{1, 2, 3}, WriteOp::kAssign);
    const OptimizerStep options{.kind = kind, .lr = 0.1f, .eps = 1e-8f};
    float value = 2.0f, sum = 0, m = 0, v = 0;
    for (int t = 1; t <= 3; ++t) {
      // Row 1 twice (gradients 0.5 and 0.25, summed), row 2 not at all.
      state.step(std::vector<int64_t>{1, 0, 1}, std::vector<float>{0.5f, 1.0f, 0.25f}, options);
      const float g = 0.75f;
      if (kind == OptimizerKind::kAdagrad) {
        sum += g * g;
        value -= 0.1f * (g / (std::sqrt(sum) + 1e-8f));
      } else {
        m += (g - m) * 0.1f;
        v += (g * g - v) * (1 - 0.999f);
        const float c1 = 1 - std::pow(0.9f, t), c2 = 1 - std::pow(0.999f, t);
        value -= 0.1f * std::sqrt(c2) / c1 * (m / (std::sqrt(v) + 1e-8f));
      }
    }
    const std::vector<float> rows = pull_all(state);
    EXPECT_FLOAT_EQ(rows[1], value);
    EXPECT_EQ(rows[2], 3.0f);
    EXPECT_EQ(state.steps(), 3);
  }
}

TEST(NodeState, InitializeIsSeededAndSnapshotsRestoreBitForBit) {
  NodeState a = NodeState::create({.rows = 100, .dim = 8, .state_slots = 1});
  NodeState b = NodeState::create({.rows = 100, .dim = 8, .state_slots = 1});
  a.initialize(Init::kNormal, 0.5, 42);
  b.initialize(Init::kNormal, 0.5, 42);
  EXPECT_EQ(pull_all(a), pull_all(b));
  double mean = 0;
  for (float x : pull_all(a)) mean += x / 800.0;
  EXPECT_LT(std::abs(mean), 0.1);
  a.step(std::vector<int64_t>{3, 7}, std::vector<float>(16, 0.5f), {});
  NodeStateSnapshot saved = a.snapshot();
  EXPECT_EQ(saved.steps, 1);
  b.restore(saved);
  EXPECT_EQ(pull_all(a), pull_all(b));
  EXPECT_EQ(b.snapshot().state.to_vector<float>(), saved.state.to_vector<float>());
  NodeState other = NodeState::create({.rows = 100, .dim = 4});
  EXPECT_THROW(other.restore(saved), ValueError);
}

TEST(NodeState, SharedTableIsSeenThroughAnAttachment) {
  NodeState state = NodeState::create({.rows = 10, .dim = 2, .shared = true});
  NodeState attached = NodeState::attach(Buffer::attach_shared(state.buffer().shared_name()));
  attached.push(std::vector<int64_t>{9}, std::vector<float>{5, 6}, WriteOp::kAssign);
  EXPECT_EQ(pull_all(state)[19], 6.0f);
  EXPECT_THROW(NodeState::attach(Buffer::zeros(4096)), ValueError);
}

TEST(NodeState, AWriterKilledMidRowLeavesTheOldRow) {
  NodeState state = NodeState::create({.rows = 4, .dim = 256, .shared = true});
  state.push(std::vector<int64_t>{2}, std::vector<float>(256, 1.0f), WriteOp::kAssign);
  const pid_t child = fork();
  if (child == 0) {  // half the row written, the stripe locked, then gone
    internal::node_state_write_partially(state, 2, std::vector<float>(256, 9.0f), 512);
    _exit(0);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  std::vector<float> rows = pull_all(state);  // repairs the stripe, does not hang
  for (int k = 0; k < 256; ++k) ASSERT_EQ(rows[2 * 256 + k], 1.0f) << k;
  state.push(std::vector<int64_t>{2}, std::vector<float>(256, 4.0f), WriteOp::kAdd);
  EXPECT_EQ(pull_all(state)[2 * 256 + 255], 5.0f);
}

TEST(NodeState, ErrorsNameTheValue) {
  EXPECT_THROW(NodeState::create({.rows = -1}), ValueError);
  EXPECT_THROW(NodeState::create({.rows = 1, .dim = 0}), ValueError);
  EXPECT_THROW(NodeState::create({.rows = 1, .dtype = DType::kInt64}), ValueError);
  EXPECT_THROW(NodeState::create({.rows = 1, .state_slots = 3}), ValueError);
  NodeState state = NodeState::create({.rows = 4, .dim = 2, .state_slots = 1});
  try {
    state.push(std::vector<int64_t>{0, 4}, std::vector<float>(4), WriteOp::kAdd);
    FAIL() << "no IndexError";
  } catch (const IndexError& error) {
    EXPECT_NE(std::string(error.what()).find("id 4 at position 1"), std::string::npos);
  }
  EXPECT_EQ(pull_all(state), std::vector<float>(8, 0.0f));  // nothing written
  EXPECT_THROW(state.push(std::vector<int64_t>{0}, std::vector<float>(3), WriteOp::kAdd),
               ValueError);
  EXPECT_THROW(
      state.step(std::vector<int64_t>{0}, std::vector<float>(2), {.kind = OptimizerKind::kAdam}),
      ValueError);  // one slot: Adagrad only
  EXPECT_THROW(state.step(std::vector<int64_t>{0}, std::vector<float>(2), {.lr = -1}), ValueError);
}

}  // namespace
}  // namespace volley
