// RemoteNodeState (dist/node_state_client.h): a table on two servers holds, bit for bit, what one
// NodeState of the whole node type holds after the same calls — with server limits small enough
// that every call is split, repeated ids across the pieces of one part included — and its errors
// name the table and the value. Servers that are each other's peers aggregate their rows into
// what one aggregation of the whole renumbered graph gives, bit for bit.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <random>

#include "dist_fixture.h"
#include "test_util.h"
#include "volley/dist/node_state_client.h"

namespace volley::dist_test {
namespace {

using ::testing::HasSubstr;

class NodeStateClientTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir("volley-node-state-client");
    partition_dataset(kCoraDirectory, *dir_ / "random-2",
                      {.method = PartitionMethod::kRandom, .num_parts = 2, .seed = 3});
  }
  static void TearDownTestSuite() { delete dir_; }
  static TempDir* dir_;
};
TempDir* NodeStateClientTest::dir_ = nullptr;

dist::ServerOptions small_limits() {
  dist::ServerOptions options;
  options.limits.max_reply_bytes = int64_t{64} << 10;
  options.limits.max_request_bytes = int64_t{1} << 20;
  return options;
}

void expect_same_tables(const NodeTable& a, const NodeTable& b) {
  const NodeStateSnapshot x = a.snapshot(), y = b.snapshot();
  ASSERT_EQ(x.values.nbytes(), y.values.nbytes());
  EXPECT_EQ(std::memcmp(x.values.raw_data(), y.values.raw_data(), x.values.nbytes()), 0);
  ASSERT_EQ(x.state.nbytes(), y.state.nbytes());
  EXPECT_EQ(std::memcmp(x.state.raw_data(), y.state.raw_data(), x.state.nbytes()), 0);
  EXPECT_EQ(x.steps, y.steps);
}

TEST_F(NodeStateClientTest, SplitCallsMatchOneLocalTable) {
  const std::string directory = *dir_ / "random-2";
  dist::Server part0(directory, 0, small_limits());
  dist::Server part1(directory, 1, small_limits());
  auto service = dist::NodeDataService::connect({part0.address(), part1.address()},
                                                {.deadline_seconds = 10, .connect_seconds = 10});
  const int64_t n = service->num_nodes("");
  const NodeStateOptions options{.rows = n, .dim = 64, .state_slots = 2};
  dist::RemoteNodeState remote = dist::RemoteNodeState::create(
      service, "emb", "", options, Init::kNormal, 0.1, 7, /*exist_ok=*/false);
  NodeState local = NodeState::create(options);
  local.initialize(Init::kNormal, 0.1, 7);
  expect_same_tables(remote, local);

  // 6,000 ids over 1 MiB a part: several calls a part, ids 0-19 in more than one of them.
  std::mt19937_64 rng(1);
  std::vector<int64_t> ids;
  for (int i = 0; i < 6000; ++i)
    ids.push_back(i % 3 == 0 ? static_cast<int64_t>(rng() % n) : i % 20);
  std::vector<float> values(ids.size() * 64);
  std::normal_distribution<float> normal;
  for (float& value : values) value = normal(rng);
  for (NodeTable* table : {static_cast<NodeTable*>(&remote), static_cast<NodeTable*>(&local)}) {
    table->push(ids, values, WriteOp::kAdd);
    table->push(std::span(ids).first(100), std::span(values).first(6400), WriteOp::kAssign);
    EXPECT_EQ(table->step(ids, values, {.kind = OptimizerKind::kAdam, .lr = 0.01f, .eps = 1e-8f}),
              1);
    const std::vector<int64_t> last{n - 1};  // part 1 only: part 0 still numbers the step
    EXPECT_EQ(table->step(last, std::span(values).first(64), {.kind = OptimizerKind::kAdam}), 2);
  }
  expect_same_tables(remote, local);
  std::vector<float> pulled_remote(ids.size() * 64), pulled_local(ids.size() * 64);
  remote.pull(ids, DType::kFloat32, reinterpret_cast<std::byte*>(pulled_remote.data()));
  local.pull(ids, DType::kFloat32, reinterpret_cast<std::byte*>(pulled_local.data()));
  EXPECT_EQ(pulled_remote, pulled_local);

  // A checkpoint back: rows and steps restored on every part.
  const NodeStateSnapshot saved = local.snapshot();
  remote.push(ids, values, WriteOp::kAdd);
  remote.restore(saved);
  expect_same_tables(remote, local);
  remote.remove();
}

TEST_F(NodeStateClientTest, ErrorsNameTheTableAndValue) {
  const std::string directory = *dir_ / "random-2";
  dist::Server part0(directory, 0), part1(directory, 1);
  auto service = dist::NodeDataService::connect({part0.address(), part1.address()});
  EXPECT_THAT(message_of<ValueError>([&] { dist::RemoteNodeState::open(service, "h", ""); }),
              HasSubstr("no node data 'h' on part 0"));
  EXPECT_THAT(message_of<ValueError>([&] {
                dist::RemoteNodeState::create(service, "h", "paper", {.dim = 4}, Init::kZeros, 0, 0,
                                              false);
              }),
              HasSubstr("node type 'paper' named, but the served dataset is homogeneous"));
  dist::RemoteNodeState table =
      dist::RemoteNodeState::create(service, "h", "", {.dim = 4}, Init::kZeros, 0, 0, false);
  EXPECT_THAT(message_of<ValueError>([&] {
                dist::RemoteNodeState::create(service, "h", "", {.dim = 4}, Init::kZeros, 0, 0,
                                              false);
              }),
              HasSubstr("'h' already exists on part 0"));
  const std::vector<int64_t> bad{0, service->num_nodes("")};
  const std::vector<float> values(8, 1.0f);
  EXPECT_THAT(message_of<IndexError>([&] { table.push(bad, values, WriteOp::kAssign); }),
              HasSubstr("id 2708 at position 1 out of range for 2708 nodes"));
  EXPECT_THAT(message_of<ValueError>([&] {
                table.step(std::span(bad).first(1), std::span(values).first(4),
                           {.kind = OptimizerKind::kAdagrad});
              }),
              HasSubstr("needs 1 optimizer-state slot"));
  EXPECT_THAT(message_of<ValueError>(
                  [&] { table.push(std::span(bad).first(1), values, WriteOp::kAssign); }),
              HasSubstr("holds 8 values, 1 ids × dim 4 need 4"));
}

// A loopback port free a moment ago (servers that name each other as peers need their
// addresses before either starts).
std::string free_address() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t size = sizeof(address);
  EXPECT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&address), size), 0);
  EXPECT_EQ(getsockname(fd, reinterpret_cast<sockaddr*>(&address), &size), 0);
  close(fd);
  return "127.0.0.1:" + std::to_string(ntohs(address.sin_port));
}

// Two servers of random-2, each the other's peer, with limits that split every fetch.
struct PeeredParts {
  std::vector<std::string> addresses{free_address(), free_address()};
  std::vector<std::unique_ptr<dist::Server>> servers;
  explicit PeeredParts(const std::string& directory) {
    for (int64_t p = 0; p < 2; ++p) {
      dist::ServerOptions options = small_limits();
      options.listen = addresses[static_cast<size_t>(p)];
      options.peers = addresses;
      servers.push_back(std::make_unique<dist::Server>(directory, p, options));
    }
  }
};

TEST_F(NodeStateClientTest, ServersAggregateTheirRowsAsOneWholeGraph) {
  const std::string directory = *dir_ / "random-2";
  PeeredParts parts(directory);
  auto service = dist::NodeDataService::connect(parts.addresses, {.deadline_seconds = 20});
  const int64_t n = service->num_nodes("");
  auto x =
      dist::RemoteNodeState::create(service, "x", "", {.dim = 24}, Init::kNormal, 1.0, 5, false);
  auto out =
      dist::RemoteNodeState::create(service, "out", "", {.dim = 24}, Init::kZeros, 0, 0, false);
  const Csr whole = whole_renumbered_graph(directory);
  const Array rows = x.snapshot().values;
  ASSERT_EQ(rows.dim(0), n);
  for (const AggregateOptions& options :
       {AggregateOptions{.op = Aggregation::kSum}, AggregateOptions{.op = Aggregation::kMean},
        AggregateOptions{.op = Aggregation::kGcn},
        AggregateOptions{.op = Aggregation::kGcn, .self_loops = false}}) {
    out.aggregate_from(x, options);
    const Array want = aggregate(whole, rows, options);
    const Array got = out.snapshot().values;
    ASSERT_EQ(got.nbytes(), want.nbytes());
    EXPECT_EQ(std::memcmp(got.raw_data(), want.raw_data(), got.nbytes()), 0)
        << aggregation_name(options.op) << " self loops " << options.self_loops;
  }
}

TEST_F(NodeStateClientTest, ServerAggregationErrorsNameTheCause) {
  const std::string directory = *dir_ / "random-2";
  PeeredParts parts(directory);
  auto service = dist::NodeDataService::connect(parts.addresses);
  auto x = dist::RemoteNodeState::create(service, "x", "", {.dim = 4}, Init::kNormal, 1, 0, false);
  auto wide =
      dist::RemoteNodeState::create(service, "wide", "", {.dim = 5}, Init::kZeros, 0, 0, false);
  EXPECT_THAT(message_of<ValueError>([&] { x.aggregate_from(x, {}); }),
              HasSubstr("'x' cannot be aggregated into itself"));
  EXPECT_THAT(message_of<ValueError>([&] { wide.aggregate_from(x, {}); }),
              HasSubstr("node data 'wide' is float32 of dim 5; the aggregation of 'x' needs "
                        "float32 of dim 4"));
  EXPECT_THAT(message_of<ValueError>(
                  [&] { wide.aggregate_from(x, {.op = Aggregation::kGcn, .weighted = true}); }),
              HasSubstr("weighted 'gcn' on the servers"));
  auto out =
      dist::RemoteNodeState::create(service, "out", "", {.dim = 4}, Init::kZeros, 0, 0, false);
  EXPECT_THAT(message_of<ValueError>(
                  [&] { out.aggregate_from(x, {.op = Aggregation::kSum, .weighted = true}); }),
              HasSubstr("the graph has no edge weights"));
  // Servers without peers cannot read the other part's rows.
  dist::Server alone0(directory, 0), alone1(directory, 1);
  auto lonely = dist::NodeDataService::connect({alone0.address(), alone1.address()});
  auto y = dist::RemoteNodeState::create(lonely, "y", "", {.dim = 4}, Init::kZeros, 0, 0, false);
  auto z = dist::RemoteNodeState::create(lonely, "z", "", {.dim = 4}, Init::kZeros, 0, 0, false);
  EXPECT_THAT(message_of<ValueError>([&] { z.aggregate_from(y, {}); }),
              HasSubstr("part 0 was started without peers"));
}

}  // namespace
}  // namespace volley::dist_test
