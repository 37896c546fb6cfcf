// Node tables on the partition servers (node_state_client.h): every call split by owner into
// NodeData RPCs under each server's limits, sent in waves, answers put back in the caller's order.
#include "volley/dist/node_state_client.h"

#include <algorithm>
#include <cstring>
#include <functional>
#include <latch>

#include "volley/dist/internal/client_calls.h"
#include "volley/dist/internal/wire.h"

namespace volley::dist {

using Op = rpc::NodeDataRequest;
using DataCall = internal::Call<rpc::NodeDataRequest, rpc::NodeDataReply>;

// `servers`: per part its first replica (it holds the part's node tables).
struct NodeDataService::State : internal::PartClients {
  std::string fingerprint;
  std::vector<std::string> type_names;  // "" alone: homogeneous
  std::vector<PartitionBook> books;     // per node type

  const PartitionBook& book(const std::string& node_type) const {
    for (size_t t = 0; t < type_names.size(); ++t) {
      if (type_names[t] == node_type) return books[t];
    }
    std::string known;
    for (const auto& name : type_names) known += (known.empty() ? "" : ", ") + name;
    if (type_names.size() == 1 && type_names[0].empty()) {
      throw ValueError(
          fmt::format("node type '{}' named, but the served dataset is homogeneous "
                      "(name none)",
                      internal::quoted(node_type, 64)));
    }
    throw ValueError(fmt::format("unknown node type '{}' (node types: {})",
                                 internal::quoted(node_type, 64), known));
  }

  // One call of `request` to part `p` (started; `done` counted down when it ends).
  void send(int64_t p, DataCall& call, std::latch& done) const {
    internal::prepare(call.context, options, options.deadline_seconds);
    servers[static_cast<size_t>(p)]->stub(0)->async()->NodeData(
        &call.context, &call.request, &call.reply, internal::record_status(call, done));
  }
};

std::shared_ptr<const NodeDataService> NodeDataService::connect(std::vector<std::string> addresses,
                                                                ClientOptions options) {
  internal::check_client_options(addresses, options);
  auto state = std::make_unique<State>();
  state->options = std::move(options);
  state->addresses = std::move(addresses);
  const auto parts = static_cast<size_t>(state->num_parts());
  state->limits.resize(parts);
  for (std::string& address : state->addresses) {
    VOLLEY_REQUIRE(!address.empty(), ValueError, "an empty server address among {} addresses",
                   parts);
    address = address.substr(0, address.find('|'));  // node tables live on the first replica
  }
  state->servers = internal::connect_parts(state->addresses, state->options, -1);
  const auto calls = internal::info_from_all(state->servers, state->options);
  internal::check_parts(
      calls, state->servers, state->options, "", "", [&](int64_t p, const rpc::InfoReply& reply) {
        state->limits[static_cast<size_t>(p)] = internal::part_limits(reply, state->options);
        if (!state->fingerprint.empty()) return;
        state->fingerprint = reply.fingerprint();
        if (!reply.heterogeneous()) {
          state->type_names = {""};
          state->books.emplace_back(
              std::vector<int64_t>(reply.offsets().begin(), reply.offsets().end()));
        }
        for (const rpc::NodeTypeInfo& type : reply.node_types()) {
          state->type_names.push_back(type.name());
          state->books.emplace_back(
              std::vector<int64_t>(type.offsets().begin(), type.offsets().end()));
        }
      });
  for (const PartitionBook& book : state->books) {
    VOLLEY_REQUIRE(book.num_parts() == state->num_parts(), ValueError,
                   "the servers describe {} parts, but {} addresses were given", book.num_parts(),
                   parts);
  }
  return std::shared_ptr<const NodeDataService>(new NodeDataService(std::move(state)));
}

NodeDataService::NodeDataService(std::unique_ptr<State> state) : state_(std::move(state)) {}
NodeDataService::~NodeDataService() = default;
const std::vector<std::string>& NodeDataService::addresses() const { return state_->addresses; }
std::vector<std::string> NodeDataService::node_types() const { return state_->type_names; }
int64_t NodeDataService::num_nodes(const std::string& node_type) const {
  return state_->book(node_type).num_nodes();
}

struct RemoteNodeState::State {
  std::shared_ptr<const NodeDataService> service;
  const NodeDataService::State* servers = nullptr;
  std::string name;
  std::string node_type;
  PartitionBook book;
  int64_t dim = 0;
  DType dtype = DType::kFloat32;
  int slots = 0;

  int64_t num_parts() const { return servers->num_parts(); }
  size_t value_bytes() const { return static_cast<size_t>(dim) * dtype_size(dtype); }
  size_t state_bytes() const { return static_cast<size_t>(slots * dim) * sizeof(float); }

  // A request of `op` on this table, with the protocol and fingerprint.
  rpc::NodeDataRequest request(Op::Op op) const {
    rpc::NodeDataRequest out;
    out.set_protocol(kProtocolVersion);
    out.set_fingerprint(servers->fingerprint);
    out.set_op(op);
    out.set_name(name);
    out.set_node_type(node_type);
    return out;
  }

  // Runs `calls` (part, request) in waves of at most one call a part, so that one part's calls
  // are applied in their order (a push split in pieces keeps position order); receive(i, reply)
  // once each wave has ended. A failed call throws the error naming its part.
  void run(std::vector<std::pair<int64_t, rpc::NodeDataRequest>>& calls, const char* what,
           const std::function<void(size_t, const rpc::NodeDataReply&)>& receive) const {
    std::vector<std::vector<size_t>> waves;
    std::vector<size_t> seen(static_cast<size_t>(num_parts()), 0);  // calls per part so far
    for (size_t i = 0; i < calls.size(); ++i) {
      const size_t wave = seen[static_cast<size_t>(calls[i].first)]++;
      if (wave == waves.size()) waves.emplace_back();
      waves[wave].push_back(i);
    }
    for (const std::vector<size_t>& wave : waves) {
      std::vector<std::unique_ptr<DataCall>> flying(wave.size());
      std::latch done(static_cast<std::ptrdiff_t>(wave.size()));
      for (size_t k = 0; k < wave.size(); ++k) {
        flying[k] = std::make_unique<DataCall>();
        flying[k]->request = std::move(calls[wave[k]].second);
        servers->send(calls[wave[k]].first, *flying[k], done);
      }
      done.wait();
      for (size_t k = 0; k < wave.size(); ++k) {
        const int64_t part = calls[wave[k]].first;
        if (!flying[k]->status.ok()) {
          servers->fail_call(flying[k]->status, part, what);
        }
        receive(wave[k], flying[k]->reply);
      }
    }
  }
};

namespace {

// The ids of one call split by owner: per part, the ids and their positions in the call.
struct ByOwner {
  std::vector<std::vector<int64_t>> ids;
  std::vector<std::vector<int64_t>> positions;
};

ByOwner split_by_owner(const RemoteNodeState::State& table, std::span<const int64_t> ids) {
  const int64_t n = table.book.num_nodes();
  ByOwner out;
  out.ids.resize(static_cast<size_t>(table.num_parts()));
  out.positions.resize(out.ids.size());
  for (size_t i = 0; i < ids.size(); ++i) {
    VOLLEY_REQUIRE(ids[i] >= 0 && ids[i] < n, IndexError,
                   "node data '{}': id {} at position {} out of range for {} nodes{}", table.name,
                   ids[i], i, n,
                   table.node_type.empty() ? "" : fmt::format(" of '{}'", table.node_type));
    const auto owner = static_cast<size_t>(table.book.owner_of(ids[i]));
    out.ids[owner].push_back(ids[i]);
    out.positions[owner].push_back(static_cast<int64_t>(i));
  }
  return out;
}

// A call's pieces: (part, first, end) of each part's share, under its limits for `reply_bytes`
// and `request_bytes` a row. A part without ids gets an empty piece when `every_part`.
std::vector<internal::Piece> pieces_of(const RemoteNodeState::State& table, const ByOwner& split,
                                       int64_t reply_bytes, int64_t request_bytes,
                                       bool every_part) {
  std::vector<internal::Piece> pieces;
  for (int64_t p = 0; p < table.num_parts(); ++p) {
    const size_t count = split.ids[static_cast<size_t>(p)].size();
    if (count == 0 && every_part) pieces.push_back({p, 0, 0});
    const auto step = static_cast<size_t>(internal::targets_per_call(
        table.servers->limits[static_cast<size_t>(p)], reply_bytes, request_bytes));
    for (size_t begin = 0; begin < count; begin += step) {
      pieces.push_back({p, begin, std::min(count, begin + step)});
    }
  }
  return pieces;
}

// The request of `piece` (its ids; its rows of `values`, `row_floats` floats a position).
rpc::NodeDataRequest piece_request(const RemoteNodeState::State& table, Op::Op op,
                                   const ByOwner& split, const internal::Piece& piece,
                                   std::span<const float> values, size_t row_floats) {
  rpc::NodeDataRequest request = table.request(op);
  const auto& ids = split.ids[static_cast<size_t>(piece.part)];
  internal::pack(std::span<const int64_t>(ids).subspan(piece.begin, piece.end - piece.begin),
                 request.mutable_ids());
  if (!values.empty()) {
    const auto& where = split.positions[static_cast<size_t>(piece.part)];
    std::string* out = request.mutable_values();
    out->resize((piece.end - piece.begin) * row_floats * sizeof(float));
    for (size_t j = piece.begin; j < piece.end; ++j) {
      std::memcpy(out->data() + (j - piece.begin) * row_floats * sizeof(float),
                  values.data() + static_cast<size_t>(where[j]) * row_floats,
                  row_floats * sizeof(float));
    }
  }
  return request;
}

// Whether some part takes more than one call.
bool split_further(const std::vector<internal::Piece>& pieces) {
  for (size_t i = 1; i < pieces.size(); ++i) {
    if (pieces[i].part == pieces[i - 1].part) return true;
  }
  return false;
}

// Each id once (ascending) with the sum of its rows of `grads`, summed in position order from
// zero as NodeState::step sums them: a step split over several calls then steps each row once.
void coalesce(std::span<const int64_t> ids, std::span<const float> grads, int64_t dim,
              std::vector<int64_t>& unique_ids, std::vector<float>& sums) {
  std::vector<std::pair<int64_t, int64_t>> keyed(ids.size());
  for (size_t i = 0; i < ids.size(); ++i) keyed[i] = {ids[i], static_cast<int64_t>(i)};
  std::sort(keyed.begin(), keyed.end());
  const auto width = static_cast<size_t>(dim);
  for (size_t i = 0; i < keyed.size(); ++i) {
    if (i == 0 || keyed[i].first != keyed[i - 1].first) {
      unique_ids.push_back(keyed[i].first);
      sums.resize(sums.size() + width, 0.0f);
    }
    float* sum = sums.data() + sums.size() - width;
    const float* row = grads.data() + static_cast<size_t>(keyed[i].second) * width;
    for (size_t k = 0; k < width; ++k) sum[k] += row[k];
  }
}

void check_values(const RemoteNodeState::State& table, size_t ids, size_t values,
                  const char* what) {
  VOLLEY_REQUIRE(values == ids * static_cast<size_t>(table.dim), ValueError,
                 "node data '{}': {} holds {} values, {} ids × dim {} need {}", table.name, what,
                 values, ids, table.dim, ids * static_cast<size_t>(table.dim));
}

}  // namespace

namespace {

// A table's shape from a DESCRIBE / CREATE answer (the first server's); the others must agree.
void take_shape(RemoteNodeState::State& table, const rpc::NodeDataReply& reply, int64_t part) {
  VOLLEY_REQUIRE(reply.exists(), ValueError,
                 "no node data '{}'{} on part {} at {} (create it first)", table.name,
                 table.node_type.empty() ? "" : fmt::format(" of '{}'", table.node_type), part,
                 table.servers->addresses[static_cast<size_t>(part)]);
  const DType dtype = internal::parse_dtype(reply.dtype(), "part " + std::to_string(part));
  if (table.dim == 0) {
    table.dim = reply.dim();
    table.dtype = dtype;
    table.slots = reply.state_slots();
  }
  VOLLEY_REQUIRE(
      reply.dim() == table.dim && dtype == table.dtype && reply.state_slots() == table.slots,
      ValueError,
      "node data '{}': part {} holds dim {}, {}, {} slot(s), part 0 dim {}, {}, {}: "
      "the servers disagree (remove it and create it again)",
      table.name, part, reply.dim(), reply.dtype(), reply.state_slots(), table.dim,
      dtype_name(table.dtype), table.slots);
}

std::shared_ptr<RemoteNodeState::State> new_table(std::shared_ptr<const NodeDataService> service,
                                                  const NodeDataService::State& servers,
                                                  const std::string& name,
                                                  const std::string& node_type) {
  VOLLEY_REQUIRE(!name.empty(), ValueError, "a node-data name must not be empty");
  auto table = std::make_shared<RemoteNodeState::State>();
  table->book = servers.book(node_type);
  table->servers = &servers;
  table->service = std::move(service);
  table->name = name;
  table->node_type = node_type;
  return table;
}

// `request` sent to every part; the shape taken from the answers.
void ask_every_part(RemoteNodeState::State& table, const rpc::NodeDataRequest& request,
                    const char* what) {
  std::vector<std::pair<int64_t, rpc::NodeDataRequest>> calls;
  for (int64_t p = 0; p < table.num_parts(); ++p) calls.emplace_back(p, request);
  table.run(calls, what, [&](size_t i, const rpc::NodeDataReply& reply) {
    take_shape(table, reply, static_cast<int64_t>(i));
  });
}

}  // namespace

RemoteNodeState RemoteNodeState::create(std::shared_ptr<const NodeDataService> service,
                                        const std::string& name, const std::string& node_type,
                                        const NodeStateOptions& options, Init init, double scale,
                                        uint64_t seed, bool exist_ok) {
  VOLLEY_REQUIRE(service != nullptr, ValueError, "RemoteNodeState::create: no service");
  auto table = new_table(service, service->state(), name, node_type);
  rpc::NodeDataRequest request = table->request(Op::CREATE);
  request.set_dim(options.dim);
  request.set_dtype(std::string(dtype_name(options.dtype)));
  request.set_state_slots(options.state_slots);
  request.set_init(init == Init::kNormal ? "normal" : init == Init::kUniform ? "uniform" : "zeros");
  request.set_scale(scale);
  request.set_seed(seed);
  request.set_exist_ok(exist_ok);
  ask_every_part(*table, request, "NodeData(create)");
  return RemoteNodeState(std::move(table));
}

RemoteNodeState RemoteNodeState::open(std::shared_ptr<const NodeDataService> service,
                                      const std::string& name, const std::string& node_type) {
  VOLLEY_REQUIRE(service != nullptr, ValueError, "RemoteNodeState::open: no service");
  auto table = new_table(service, service->state(), name, node_type);
  ask_every_part(*table, table->request(Op::DESCRIBE), "NodeData(describe)");
  return RemoteNodeState(std::move(table));
}

void RemoteNodeState::remove() {
  std::vector<std::pair<int64_t, rpc::NodeDataRequest>> calls;
  for (int64_t p = 0; p < state_->num_parts(); ++p)
    calls.emplace_back(p, state_->request(Op::REMOVE));
  state_->run(calls, "NodeData(remove)", [](size_t, const rpc::NodeDataReply&) {});
}

void RemoteNodeState::aggregate_from(const RemoteNodeState& source,
                                     const AggregateOptions& options) {
  for (int64_t p = 0; p < state_->num_parts(); ++p) {
    rpc::NodeDataRequest request = source.state_->request(Op::AGGREGATE);
    request.set_target(state_->name);
    request.set_aggregation(std::string(aggregation_name(options.op)));
    request.set_weighted(options.weighted);
    request.set_self_loops(options.self_loops);
    std::vector<std::pair<int64_t, rpc::NodeDataRequest>> calls;
    calls.emplace_back(p, std::move(request));
    state_->run(calls, "NodeData(aggregate)", [](size_t, const rpc::NodeDataReply&) {});
  }
}

RemoteNodeState::RemoteNodeState(std::shared_ptr<const State> state) : state_(std::move(state)) {}
const std::string& RemoteNodeState::name() const { return state_->name; }
const std::string& RemoteNodeState::node_type() const { return state_->node_type; }
int64_t RemoteNodeState::rows() const { return state_->book.num_nodes(); }
int64_t RemoteNodeState::dim() const { return state_->dim; }
DType RemoteNodeState::dtype() const { return state_->dtype; }
int RemoteNodeState::state_slots() const { return state_->slots; }

int64_t RemoteNodeState::steps() const {
  std::vector<std::pair<int64_t, rpc::NodeDataRequest>> calls;
  calls.emplace_back(0, state_->request(Op::DESCRIBE));
  int64_t steps = 0;
  state_->run(calls, "NodeData(describe)",
              [&](size_t, const rpc::NodeDataReply& reply) { steps = reply.steps(); });
  return steps;
}

void RemoteNodeState::pull(std::span<const int64_t> ids, DType out_dtype, std::byte* out) const {
  const State& table = *state_;
  VOLLEY_REQUIRE(out_dtype == table.dtype || out_dtype == DType::kFloat32, ValueError,
                 "node data '{}': pull gives the row dtype ({}) or float32, not {}", table.name,
                 dtype_name(table.dtype), dtype_name(out_dtype));
  const ByOwner split = split_by_owner(table, ids);
  const size_t row_bytes = static_cast<size_t>(table.dim) * dtype_size(out_dtype);
  const auto pieces = pieces_of(table, split, static_cast<int64_t>(row_bytes), 8, false);
  std::vector<std::pair<int64_t, rpc::NodeDataRequest>> calls;
  for (const auto& piece : pieces) {
    calls.emplace_back(piece.part, piece_request(table, Op::PULL, split, piece, {}, 0));
    calls.back().second.set_out_dtype(std::string(dtype_name(out_dtype)));
  }
  table.run(calls, "NodeData(pull)", [&](size_t i, const rpc::NodeDataReply& reply) {
    const internal::Piece& piece = pieces[i];
    const auto& where = split.positions[static_cast<size_t>(piece.part)];
    VOLLEY_REQUIRE(reply.rows().size() == (piece.end - piece.begin) * row_bytes, RuntimeError,
                   "part {}: malformed NodeData(pull) reply: {} bytes for {} rows of {}",
                   piece.part, reply.rows().size(), piece.end - piece.begin, row_bytes);
    for (size_t j = piece.begin; j < piece.end; ++j) {
      std::memcpy(out + static_cast<size_t>(where[j]) * row_bytes,
                  reply.rows().data() + (j - piece.begin) * row_bytes, row_bytes);
    }
  });
}

void RemoteNodeState::push(std::span<const int64_t> ids, std::span<const float> values,
                           WriteOp op) {
  const State& table = *state_;
  check_values(table, ids.size(), values.size(), "push values");
  const ByOwner split = split_by_owner(table, ids);
  const auto pieces = pieces_of(table, split, 0, 8 + 4 * table.dim, false);
  std::vector<std::pair<int64_t, rpc::NodeDataRequest>> calls;
  for (const auto& piece : pieces) {
    calls.emplace_back(
        piece.part, piece_request(table, op == WriteOp::kAdd ? Op::ADD : Op::ASSIGN, split, piece,
                                  values, static_cast<size_t>(table.dim)));
  }
  table.run(calls, "NodeData(push)", [](size_t, const rpc::NodeDataReply&) {});
}

int64_t RemoteNodeState::step(std::span<const int64_t> ids, std::span<const float> grads,
                              const OptimizerStep& step) {
  const State& table = *state_;
  check_values(table, ids.size(), grads.size(), "step gradients");
  ByOwner split = split_by_owner(table, ids);
  std::vector<internal::Piece> pieces = pieces_of(table, split, 0, 8 + 4 * table.dim, false);
  std::vector<int64_t> unique_ids;
  std::vector<float> sums;
  if (split_further(pieces)) {
    coalesce(ids, grads, table.dim, unique_ids, sums);
    grads = sums;
    split = split_by_owner(table, unique_ids);
    pieces = pieces_of(table, split, 0, 8 + 4 * table.dim, false);
  }
  // Part 0's first piece (empty when it has no rows in this step) numbers the step; the rest
  // follow with that number.
  if (pieces.empty() || pieces.front().part != 0) pieces.insert(pieces.begin(), {0, 0, 0});
  const Op::Op op = step.kind == OptimizerKind::kAdam ? Op::ADAM : Op::ADAGRAD;
  int64_t number = step.step_number;
  auto send = [&](size_t first, size_t last) {
    std::vector<std::pair<int64_t, rpc::NodeDataRequest>> calls;
    for (size_t i = first; i < last; ++i) {
      rpc::NodeDataRequest request =
          piece_request(table, op, split, pieces[i], grads, static_cast<size_t>(table.dim));
      request.set_lr(step.lr);
      request.set_eps(step.eps);
      request.set_beta1(step.beta1);
      request.set_beta2(step.beta2);
      request.set_step_number(number);
      calls.emplace_back(pieces[i].part, std::move(request));
    }
    table.run(calls, "NodeData(step)",
              [&](size_t, const rpc::NodeDataReply& reply) { number = reply.step_number(); });
  };
  send(0, 1);
  send(1, pieces.size());
  return number;
}

namespace {

// Rows [begin, end) of the type cut into READ / WRITE ranges: per part its share, in pieces
// of at most `per_call(part)` rows.
template <typename PerCall>
std::vector<internal::Piece> range_pieces(const RemoteNodeState::State& table, int64_t begin,
                                          int64_t end, PerCall&& per_call) {
  std::vector<internal::Piece> pieces;
  for (int64_t p = 0; p < table.num_parts(); ++p) {
    const int64_t first = std::max(begin, table.book.begin(p));
    const int64_t last = std::min(end, table.book.end(p));
    const int64_t step = std::max<int64_t>(1, per_call(p));
    for (int64_t at = first; at < last; at += step) {
      pieces.push_back(
          {p, static_cast<size_t>(at), static_cast<size_t>(std::min(last, at + step))});
    }
  }
  return pieces;
}

}  // namespace

NodeStateSnapshot RemoteNodeState::snapshot(int64_t begin, int64_t end) const {
  const State& table = *state_;
  if (end < 0) end = rows();
  VOLLEY_REQUIRE(begin >= 0 && begin <= end && end <= rows(), IndexError,
                 "node data '{}': rows [{}, {}) are not within its {} rows", table.name, begin, end,
                 rows());
  const size_t row_bytes = table.value_bytes() + table.state_bytes();
  NodeStateSnapshot out{Array::empty(table.dtype, {end - begin, table.dim}),
                        Array::empty(DType::kFloat32, {end - begin, table.slots, table.dim}),
                        steps()};
  const auto pieces = range_pieces(table, begin, end, [&](int64_t p) {
    return table.servers->limits[static_cast<size_t>(p)].max_reply_bytes /
           static_cast<int64_t>(std::max<size_t>(1, row_bytes));
  });
  std::vector<std::pair<int64_t, rpc::NodeDataRequest>> calls;
  for (const auto& piece : pieces) {
    rpc::NodeDataRequest request = table.request(Op::READ);
    request.set_begin(static_cast<int64_t>(piece.begin));
    request.set_end(static_cast<int64_t>(piece.end));
    calls.emplace_back(piece.part, std::move(request));
  }
  table.run(calls, "NodeData(read)", [&](size_t i, const rpc::NodeDataReply& reply) {
    const internal::Piece& piece = pieces[i];
    const size_t rows = piece.end - piece.begin, at = piece.begin - static_cast<size_t>(begin);
    VOLLEY_REQUIRE(reply.rows().size() == rows * table.value_bytes() &&
                       reply.state().size() == rows * table.state_bytes(),
                   RuntimeError, "part {}: malformed NodeData(read) reply for {} rows", piece.part,
                   rows);
    std::memcpy(out.values.raw_data() + at * table.value_bytes(), reply.rows().data(),
                reply.rows().size());
    if (!reply.state().empty()) {  // a table without optimizer state has none
      std::memcpy(out.state.raw_data() + at * table.state_bytes(), reply.state().data(),
                  reply.state().size());
    }
  });
  return out;
}

void RemoteNodeState::restore(const NodeStateSnapshot& snapshot, int64_t first_row) {
  const State& table = *state_;
  const int64_t rows = snapshot.values.ndim() == 2 ? snapshot.values.shape()[0] : -1;
  const bool fits = rows >= 0 && snapshot.values.dtype() == table.dtype &&
                    snapshot.values.shape() == std::vector<int64_t>{rows, table.dim} &&
                    snapshot.state.dtype() == DType::kFloat32 &&
                    snapshot.state.shape() == std::vector<int64_t>{rows, table.slots, table.dim};
  VOLLEY_REQUIRE(fits, ValueError,
                 "node data '{}': a snapshot of values {} and state {} does not fit a table of "
                 "dim {}, {}, {} state slot(s)",
                 table.name, snapshot.values.describe(), snapshot.state.describe(), table.dim,
                 dtype_name(table.dtype), table.slots);
  VOLLEY_REQUIRE(first_row >= 0 && first_row <= this->rows() - rows, IndexError,
                 "node data '{}': {} snapshot rows from row {} do not fit its {} rows", table.name,
                 rows, first_row, this->rows());
  const size_t row_bytes = table.value_bytes() + table.state_bytes();
  const auto pieces = range_pieces(table, first_row, first_row + rows, [&](int64_t p) {
    return table.servers->limits[static_cast<size_t>(p)].max_request_bytes /
           static_cast<int64_t>(std::max<size_t>(1, row_bytes));
  });
  std::vector<std::pair<int64_t, rpc::NodeDataRequest>> calls;
  for (const auto& piece : pieces) {
    rpc::NodeDataRequest request = table.request(Op::WRITE);
    const size_t count = piece.end - piece.begin;
    const size_t at = piece.begin - static_cast<size_t>(first_row);
    request.set_begin(static_cast<int64_t>(piece.begin));
    request.set_end(static_cast<int64_t>(piece.end));
    request.set_values(
        reinterpret_cast<const char*>(snapshot.values.raw_data()) + at * table.value_bytes(),
        count * table.value_bytes());
    request.set_state(
        reinterpret_cast<const char*>(snapshot.state.raw_data()) + at * table.state_bytes(),
        count * table.state_bytes());
    request.set_steps(snapshot.steps);
    calls.emplace_back(piece.part, std::move(request));
  }
  table.run(calls, "NodeData(write)", [](size_t, const rpc::NodeDataReply&) {});
  if (snapshot.steps >= 0) {  // parts without rows in the range take the step count too
    std::vector<std::pair<int64_t, rpc::NodeDataRequest>> counts;
    for (int64_t p = 0; p < table.num_parts(); ++p) {
      rpc::NodeDataRequest request = table.request(Op::WRITE);
      request.set_begin(table.book.begin(p));
      request.set_end(table.book.begin(p));
      request.set_steps(snapshot.steps);
      counts.emplace_back(p, std::move(request));
    }
    table.run(counts, "NodeData(write)", [](size_t, const rpc::NodeDataReply&) {});
  }
}

}  // namespace volley::dist
