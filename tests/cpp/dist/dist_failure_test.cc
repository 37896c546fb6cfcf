// Failure paths of the distributed service, on purpose: tokens, a server that dies mid-epoch,
// nothing listening, servers of the wrong part or another dataset. Each one must be an error of
// the right kind within its deadline, never a hang.
#include <arpa/inet.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "dist_fixture.h"
#include "test_util.h"
#include "volley/core/error.h"

namespace volley::dist_test {
namespace {

using ::testing::HasSubstr;
using Clock = std::chrono::steady_clock;

class DistFailureTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir("volley-dist-test");
    partition_dataset(kCoraDirectory, *dir_ / "random-2",
                      {.method = PartitionMethod::kRandom, .num_parts = 2, .seed = 3});
    partition_dataset(kCoraDirectory, *dir_ / "other-2",
                      {.method = PartitionMethod::kRandom, .num_parts = 2, .seed = 4});
  }
  static void TearDownTestSuite() { delete dir_; }
  static std::string random2() { return *dir_ / "random-2"; }
  static std::string other2() { return *dir_ / "other-2"; }
  static TempDir* dir_;
};
TempDir* DistFailureTest::dir_ = nullptr;

// A loopback port with nothing listening on it (bound, then released).
int unused_port() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = 0;
  EXPECT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0);
  socklen_t length = sizeof(address);
  getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length);
  close(fd);
  return ntohs(address.sin_port);
}

TEST_F(DistFailureTest, TokenIsRequiredAndChecked) {
  dist::Server part0(random2(), 0, {.token = "s3cret"});
  dist::Server part1(random2(), 1, {.token = "s3cret"});
  EXPECT_TRUE(part0.authenticated());
  const std::vector<std::string> addresses = {part0.address(), part1.address()};
  const dist::ClientOptions quick{.deadline_seconds = 5, .connect_seconds = 5};

  dist::ClientOptions none = quick;
  const std::string missing =
      message_of<PermissionError>([&] { dist::DistGraph::connect(addresses, none); });
  EXPECT_THAT(missing, HasSubstr("token"));
  EXPECT_THAT(missing, HasSubstr(part0.address()));

  dist::ClientOptions wrong = quick;
  wrong.token = "s3cres";
  EXPECT_THROW(dist::DistGraph::connect(addresses, wrong), PermissionError);
  wrong.token = "s3cret-and-more";
  EXPECT_THROW(dist::DistGraph::connect(addresses, wrong), PermissionError);

  // Worker mode: the local part needs no token, the remote one does.
  EXPECT_THROW(dist::DistGraph::connect(addresses, none, part0.partition(), part0.fingerprint()),
               PermissionError);

  dist::ClientOptions right = quick;
  right.token = "s3cret";
  const auto graph = dist::DistGraph::connect(addresses, right);
  const auto sample = graph->sample(std::vector<int64_t>{1, 2, 3}, {.fanouts = {5, 5}}, 0);
  EXPECT_EQ(sample.num_seeds, 3);
  EXPECT_GE(part0.stats().failed_requests, 1);
}

TEST_F(DistFailureTest, AServerShutDownMidEpochFailsTheLoaderWithinTheDeadline) {
  dist::Server part0(random2(), 0);
  auto part1 = std::make_unique<dist::Server>(random2(), 1);
  const double deadline = 2.0;
  const auto graph =
      dist::DistGraph::connect({part0.address(), part1->address()}, {.deadline_seconds = deadline});
  NeighborLoader loader(
      graph, std::nullopt,
      {.batch_size = 16, .num_threads = 2, .prefetch = 2, .sampler = {.fanouts = {10, 10}}});
  ASSERT_GT(loader.num_batches(), 100);
  auto epoch = loader.start_epoch(0);
  ASSERT_TRUE(epoch->next().has_value());
  ASSERT_TRUE(epoch->next().has_value());
  const auto start = Clock::now();
  part1->shutdown(0.0);
  ErrorKind kind = ErrorKind::kInternal;
  std::string message;
  int64_t delivered = 0;
  try {
    while (epoch->next()) ++delivered;
    FAIL() << "the epoch ended without an error after " << delivered << " batches";
  } catch (const Error& error) {
    kind = error.kind();
    message = error.what();
  }
  const double seconds = seconds_since(start);
  EXPECT_TRUE(kind == ErrorKind::kConnection || kind == ErrorKind::kTimeout) << message;
  EXPECT_THAT(message, HasSubstr("part 1"));
  EXPECT_LT(seconds, deadline + 1.5) << message;
  EXPECT_LE(delivered, 4);  // at most what was prefetched
  std::printf("[          ] shut down mid-epoch: %s after %.2f s (%lld batches delivered): %s\n",
              kind == ErrorKind::kConnection ? "ConnectionError" : "TimeoutError", seconds,
              static_cast<long long>(delivered), message.c_str());
  // Later batches keep failing: the graph does not hang either.
  const auto again = Clock::now();
  EXPECT_THROW(graph->sample(std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10},
                             {.fanouts = {10, 10}}, 0),
               Error);
  EXPECT_LT(seconds_since(again), deadline + 1.5);
}

TEST_F(DistFailureTest, NothingListeningFailsWithinConnectSeconds) {
  dist::Server part0(random2(), 0);
  const std::string nowhere = fmt::format("127.0.0.1:{}", unused_port());
  const auto start = Clock::now();
  const std::string message = message_of<ConnectionError>([&] {
    dist::DistGraph::connect({part0.address(), nowhere}, {.connect_seconds = 1.0});
  });
  const double seconds = seconds_since(start);
  EXPECT_THAT(message, HasSubstr(nowhere));
  EXPECT_THAT(message, HasSubstr("part 1"));
  EXPECT_LT(seconds, 1.0 + 1.5) << message;
  EXPECT_GE(seconds, 0.5) << "connect() should wait for servers still starting";
}

TEST_F(DistFailureTest, ServersMustBeGivenInPartOrder) {
  dist::Server part0(random2(), 0);
  dist::Server part1(random2(), 1);
  const std::string message = message_of<ValueError>([&] {
    dist::DistGraph::connect({part1.address(), part0.address()}, {.connect_seconds = 5});
  });
  EXPECT_THAT(message, HasSubstr("part order"));
  EXPECT_THAT(message, HasSubstr(part1.address()));
  // Too few or too many addresses.
  EXPECT_THROW(dist::DistGraph::connect({part0.address()}, {.connect_seconds = 5}), ValueError);
  EXPECT_THROW(dist::DistGraph::connect({part0.address(), part1.address(), part1.address()},
                                        {.connect_seconds = 5}),
               ValueError);
  EXPECT_THROW(dist::DistGraph::connect({}, {}), ValueError);
}

TEST_F(DistFailureTest, ServersOfDifferentDatasetsAreRefused) {
  dist::Server part0(random2(), 0);
  dist::Server stranger(other2(), 1);  // the same Cora, partitioned with another seed
  ASSERT_NE(part0.fingerprint(), stranger.fingerprint());
  const std::string message = message_of<ValueError>([&] {
    dist::DistGraph::connect({part0.address(), stranger.address()}, {.connect_seconds = 5});
  });
  EXPECT_THAT(message, HasSubstr("fingerprint"));
  EXPECT_THAT(message, HasSubstr(stranger.address()));
  // Worker mode with a local partition of another dataset.
  dist::Server other0(other2(), 0);
  EXPECT_THROW(
      dist::DistGraph::connect({other0.address(), stranger.address()}, {.connect_seconds = 5},
                               part0.partition(), part0.fingerprint()),
      ValueError);
}

TEST_F(DistFailureTest, ServerRefusesBadOptionsAndAddresses) {
  EXPECT_THROW(dist::Server(random2(), 2), IndexError);
  EXPECT_THROW(dist::Server(random2(), -1), IndexError);
  EXPECT_THROW(dist::Server(random2(), 0, {.listen = "not an address"}), IoError);
  dist::Server first(random2(), 0);
  // The same port twice.
  EXPECT_THROW(dist::Server(random2(), 1, {.listen = first.address()}), IoError);
  EXPECT_THROW(dist::Server(random2(), 0, {.peers = {"a:1"}}), ValueError);
  EXPECT_THROW(dist::Server(*dir_ / "missing", 0), IoError);
}

TEST_F(DistFailureTest, ShutdownIsIdempotentAndWaitReturns) {
  dist::Server server(random2(), 0);
  std::thread waiter([&] { server.wait(); });
  const auto start = Clock::now();
  server.shutdown(0.2);
  server.shutdown(0.2);
  waiter.join();
  EXPECT_LT(seconds_since(start), 2.0);
}

}  // namespace
}  // namespace volley::dist_test
