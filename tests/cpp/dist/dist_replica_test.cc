// Replicas of a part ("host:port|host:port"): the calls are spread over them, and a replica that
// goes away mid-epoch is failed over, so that the epoch completes with the batches of the
// single-machine loader, none lost or repeated. When every replica of a part is gone, the loader
// fails within the deadline, naming the part.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "dist_fixture.h"
#include "volley/core/error.h"
#include "volley/graph/dataset.h"

namespace volley::dist_test {
namespace {

using ::testing::HasSubstr;
using Clock = std::chrono::steady_clock;

class DistReplicaTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir("volley-replica-test");
    partition_dataset(kCoraDirectory, *dir_ / "random-2",
                      {.method = PartitionMethod::kRandom, .num_parts = 2, .seed = 3});
    data_ = new ServedDataset(*dir_ / "random-2");
    const Dataset source = load_dataset(kCoraDirectory);
    features_ = new Array(rows_in_new_order(*source.features, data_->node_map));
    labels_ = new Array(rows_in_new_order(*source.labels, data_->node_map));
  }
  static void TearDownTestSuite() {
    delete features_;
    delete labels_;
    delete data_;
    delete dir_;
  }
  static inline TempDir* dir_ = nullptr;
  static inline ServedDataset* data_ = nullptr;
  static inline Array* features_ = nullptr;
  static inline Array* labels_ = nullptr;
};

const LoaderOptions kOptions{.batch_size = 64,
                             .shuffle = true,
                             .num_threads = 2,
                             .prefetch = 2,
                             .seed = 8,
                             .sampler = {.fanouts = {10, 5}}};

TEST_F(DistReplicaTest, ALostReplicaIsFailedOverWithTheSameBatches) {
  // Part 1 twice: the fixture's server and a second one, listed as one part's replicas.
  auto first = std::make_unique<dist::Server>(data_->directory, 1);
  auto second = std::make_unique<dist::Server>(data_->directory, 1);
  const auto graph = dist::DistGraph::connect(
      {data_->servers[0]->address(), first->address() + "|" + second->address()},
      {.deadline_seconds = 2});
  NeighborLoader oracle(data_->whole, *features_, *labels_, std::nullopt, kOptions);
  NeighborLoader loader(graph, std::nullopt, kOptions);
  ASSERT_EQ(loader.num_batches(), oracle.num_batches());
  // A whole epoch with both replicas up: every call of part 1 goes to one of them, in turn.
  const int64_t before_first = first->stats().requests, before_second = second->stats().requests;
  auto want = oracle.start_epoch(0);
  auto got = loader.start_epoch(0);
  int64_t count = 0;
  while (auto expected = want->next()) {
    auto batch = got->next();
    ASSERT_TRUE(batch.has_value());
    expect_same_batch(*batch, *expected, fmt::format("epoch 0, batch {}", count++));
  }
  EXPECT_FALSE(got->next().has_value());
  EXPECT_GT(first->stats().requests - before_first, count / 2) << "calls spread over replicas";
  EXPECT_GT(second->stats().requests - before_second, count / 2) << "calls spread over replicas";
  // One replica shut down mid-epoch: the epoch completes, bit for bit.
  want = oracle.start_epoch(1);
  got = loader.start_epoch(1);
  count = 0;
  while (auto expected = want->next()) {
    if (count == 3) first->shutdown(0.0);
    auto batch = got->next();
    ASSERT_TRUE(batch.has_value()) << "batch " << count;
    expect_same_batch(*batch, *expected, fmt::format("epoch 1, batch {}", count++));
  }
  EXPECT_FALSE(got->next().has_value());
  EXPECT_EQ(count, oracle.num_batches());
  // Rows too (GetRows), and the graph keeps answering on the replica left.
  const Array rows = graph->gather_features(std::vector<int64_t>{0, 2707, 1500}, DType::kFloat32);
  EXPECT_EQ(rows.dim(0), 3);
}

TEST_F(DistReplicaTest, EveryReplicaGoneFailsWithinTheDeadlineNamingThePart) {
  auto first = std::make_unique<dist::Server>(data_->directory, 1);
  auto second = std::make_unique<dist::Server>(data_->directory, 1);
  const double deadline = 2.0;
  const auto graph = dist::DistGraph::connect(
      {data_->servers[0]->address(), first->address() + "|" + second->address()},
      {.deadline_seconds = deadline});
  NeighborLoader loader(graph, std::nullopt, kOptions);
  auto epoch = loader.start_epoch(0);
  ASSERT_TRUE(epoch->next().has_value());
  first->shutdown(0.0);
  second->shutdown(0.0);
  const auto start = Clock::now();
  const std::string message = [&] {
    try {
      while (epoch->next()) {
      }
    } catch (const Error& error) {
      EXPECT_TRUE(error.kind() == ErrorKind::kConnection || error.kind() == ErrorKind::kTimeout)
          << error.what();
      return std::string(error.what());
    }
    return std::string("no error");
  }();
  EXPECT_THAT(message, HasSubstr("part 1"));
  EXPECT_LT(seconds_since(start), deadline + 1) << message;
}

TEST_F(DistReplicaTest, AStreamIsOpenedAgainOnAnotherServerFromTheBatchItLost) {
  // Two streaming servers (part 0, each with the peers); the trainer lists both.
  const std::vector<std::string> peers = {"", data_->servers[1]->address()};
  auto first =
      std::make_unique<dist::Server>(data_->directory, 0, dist::ServerOptions{.peers = peers});
  auto second =
      std::make_unique<dist::Server>(data_->directory, 0, dist::ServerOptions{.peers = peers});
  NeighborLoader oracle(data_->whole, *features_, *labels_, std::nullopt, kOptions);
  dist::ServerClientLoader loader(first->address() + "|" + second->address(),
                                  {.deadline_seconds = 2}, std::nullopt, kOptions);
  // A resumed epoch starts at its batch on the server (no batch before it is made).
  auto want = oracle.start_epoch(2, 5);
  auto got = loader.start_epoch(2, 5);
  for (int64_t b = 5; auto expected = want->next(); ++b) {
    auto batch = got->next();
    ASSERT_TRUE(batch.has_value()) << "batch " << b;
    expect_same_batch(*batch, *expected, fmt::format("resumed epoch, batch {}", b));
  }
  EXPECT_FALSE(got->next().has_value());
  // The streaming server shut down mid-epoch: the other one streams the rest, bit for bit. (A
  // new loader's first stream goes to the first server listed.)
  dist::ServerClientLoader fresh(first->address() + "|" + second->address(),
                                 {.deadline_seconds = 2}, std::nullopt, kOptions);
  want = oracle.start_epoch(3);
  got = fresh.start_epoch(3);
  const int64_t streamed_before = second->stats().requests;
  int64_t count = 0;
  while (auto expected = want->next()) {
    if (count == 4) first->shutdown(0.0);
    auto batch = got->next();
    ASSERT_TRUE(batch.has_value()) << "batch " << count;
    expect_same_batch(*batch, *expected, fmt::format("epoch 3, batch {}", count++));
  }
  EXPECT_FALSE(got->next().has_value());
  EXPECT_EQ(count, oracle.num_batches());
  EXPECT_EQ(second->stats().requests, streamed_before + 1) << "the stream opened again there";
}

TEST_F(DistReplicaTest, ReplicasMustServeTheirPart) {
  // A server of part 0 listed among part 1's replicas is refused by name, as a part out of order.
  auto replica = std::make_unique<dist::Server>(data_->directory, 1);
  EXPECT_THAT(
      [&] {
        dist::DistGraph::connect(
            {data_->servers[0]->address(), replica->address() + "|" + data_->servers[0]->address()},
            {.deadline_seconds = 2, .connect_seconds = 2});
      },
      ::testing::ThrowsMessage<ValueError>(HasSubstr(
          data_->servers[0]->address() + " serves part 0 of 2, but it was given as the address "
                                         "of part 1")));
  EXPECT_THAT(
      [&] {
        dist::DistGraph::connect({data_->servers[0]->address(), replica->address() + "|"});
      },
      ::testing::ThrowsMessage<ValueError>(HasSubstr("an empty address among the replicas")));
}

}  // namespace
}  // namespace volley::dist_test
