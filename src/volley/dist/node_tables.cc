// The node tables of a partition server (internal/node_tables.h): NodeData's operations.
#include "volley/dist/internal/node_tables.h"

#include <unistd.h>

#include <cmath>
#include <cstring>
#include <vector>

#include <fmt/format.h>

#include "volley/dist/internal/server_support.h"
#include "volley/dist/internal/wire.h"

namespace volley::dist::internal {
namespace {

using Request = rpc::NodeDataRequest;

std::string describe(const Request& request) {
  return request.node_type().empty()
             ? fmt::format("node data '{}'", quoted(request.name(), 64))
             : fmt::format("node data '{}' of '{}'", quoted(request.name(), 64),
                           quoted(request.node_type(), 64));
}

// About what a table of `rows` × `dim` takes (its rows with two state slots at most).
int64_t table_bytes(int64_t rows, int64_t dim, DType dtype) {
  return rows * (dim * static_cast<int64_t>(dtype_size(dtype) + 2 * sizeof(float)) + 16);
}

// The bytes tables may hold at once: the limit, or half the machine's memory.
int64_t node_data_budget(const ServerLimits& limits) {
  if (limits.max_node_data_bytes > 0) return limits.max_node_data_bytes;
  return static_cast<int64_t>(sysconf(_SC_PHYS_PAGES)) * sysconf(_SC_PAGESIZE) / 2;
}

Init parse_init(const std::string& name) {
  if (name.empty() || name == "zeros") return Init::kZeros;
  if (name == "normal") return Init::kNormal;
  if (name == "uniform") return Init::kUniform;
  throw ValueError(
      fmt::format("init must be 'zeros', 'normal' or 'uniform', got '{}'", quoted(name, 64)));
}

void describe_table(const NodeState& table, const OwnedRange& range, rpc::NodeDataReply& reply) {
  reply.set_exists(true);
  reply.set_dim(table.dim());
  reply.set_dtype(std::string(dtype_name(table.dtype())));
  reply.set_state_slots(table.state_slots());
  reply.set_steps(table.steps());
  reply.set_begin(range.first);
  reply.set_end(range.first + range.rows);
}

// float32 rows [ids, dim] of `bytes` (ValueError for another size).
std::span<const float> float_rows(const std::string& bytes, size_t ids, int64_t dim,
                                  const std::string& table) {
  const size_t want = ids * static_cast<size_t>(dim) * sizeof(float);
  VOLLEY_REQUIRE(bytes.size() == want, ValueError,
                 "{}: values hold {} bytes; {} ids of dim {} need {} (float32)", table,
                 bytes.size(), ids, dim, want);
  return {reinterpret_cast<const float*>(bytes.data()), ids * static_cast<size_t>(dim)};
}

// READ / WRITE's rows, [begin, end) of the owned range, as table rows.
std::pair<int64_t, int64_t> local_range(const Request& request, const OwnedRange& range) {
  const int64_t owned_end = range.first + range.rows;
  VOLLEY_REQUIRE(request.begin() >= range.first && request.begin() <= request.end() &&
                     request.end() <= owned_end,
                 IndexError, "part {}: rows [{}, {}) are not within the owned [{}, {})", range.part,
                 request.begin(), request.end(), range.first, owned_end);
  return {request.begin() - range.first, request.end() - range.first};
}

void check_reply(int64_t bytes, const ServerLimits& limits, const std::string& table) {
  VOLLEY_REQUIRE(bytes <= limits.max_reply_bytes, ValueError,
                 "{}: the reply would take {} bytes, more than max_reply_bytes {}; ask for fewer "
                 "rows a call",
                 table, bytes, limits.max_reply_bytes);
}

}  // namespace

std::shared_ptr<NodeState> NodeTables::find(const Key& key) const {
  std::lock_guard lock(mutex_);
  const auto it = tables_.find(key);
  return it == tables_.end() ? nullptr : it->second;
}

std::shared_ptr<NodeState> NodeTables::existing(const std::string& node_type,
                                                const std::string& name, int64_t part) const {
  Request request;
  request.set_node_type(node_type);
  request.set_name(name);
  std::shared_ptr<NodeState> table = find({node_type, name});
  VOLLEY_REQUIRE(table != nullptr, ValueError, "no {} on part {} (create it first)",
                 describe(request), part);
  return table;
}

void NodeTables::create(const Request& request, const OwnedRange& range,
                        const ServerLimits& limits) {
  const std::string table = describe(request);
  VOLLEY_REQUIRE(!request.name().empty(), ValueError, "a node-data name must not be empty");
  VOLLEY_REQUIRE(request.dim() >= 1 && request.dim() <= (int64_t{1} << 31), ValueError,
                 "{}: dim must be in [1, 2^31], got {}", table, request.dim());
  const DType dtype = dtype_from_name(request.dtype().empty() ? "float32" : request.dtype());
  const Init init = parse_init(request.init());
  VOLLEY_REQUIRE(std::isfinite(request.scale()) && request.scale() >= 0, ValueError,
                 "{}: the init scale must be finite and >= 0, got {}", table, request.scale());
  const NodeStateOptions options{.rows = range.rows,
                                 .dim = request.dim(),
                                 .dtype = dtype,
                                 .state_slots = request.state_slots()};
  const Key key{request.node_type(), request.name()};
  std::lock_guard lock(mutex_);
  if (const auto it = tables_.find(key); it != tables_.end()) {
    const NodeState& old = *it->second;
    VOLLEY_REQUIRE(request.exist_ok(), ValueError,
                   "{} already exists on part {} (remove it first, or open it)", table, range.part);
    VOLLEY_REQUIRE(old.dim() == options.dim && old.dtype() == dtype &&
                       old.state_slots() == options.state_slots,
                   ValueError,
                   "{} exists on part {} with dim {}, {}, {} state slot(s), not dim {}, {}, {}",
                   table, range.part, old.dim(), dtype_name(old.dtype()), old.state_slots(),
                   options.dim, dtype_name(dtype), options.state_slots);
    return;
  }
  const int64_t bytes = table_bytes(range.rows, request.dim(), dtype);
  const int64_t budget = node_data_budget(limits);
  VOLLEY_REQUIRE(bytes <= budget - bytes_, ValueError,
                 "{}: {} rows of dim {} take about {} bytes; the part's tables hold {} of the "
                 "{} allowed (max_node_data_bytes)",
                 table, range.rows, request.dim(), bytes, bytes_, budget);
  auto state = std::make_shared<NodeState>(NodeState::create(options));
  state->initialize(init, request.scale(), request.seed(), range.first);
  bytes_ += bytes;
  tables_.emplace(key, std::move(state));
}

grpc::Status NodeTables::answer(const Request& request, const OwnedRange& range,
                                const ServerLimits& limits, rpc::NodeDataReply& reply) {
  const Key key{request.node_type(), request.name()};
  if (request.op() == Request::CREATE) create(request, range, limits);
  std::shared_ptr<NodeState> table = find(key);
  if (request.op() == Request::DESCRIBE) {
    if (table) describe_table(*table, range, reply);
    return grpc::Status::OK;
  }
  const std::string what = describe(request);
  if (!table) table = existing(request.node_type(), request.name(), range.part);
  if (request.op() == Request::REMOVE) {
    std::lock_guard lock(mutex_);
    if (tables_.erase(key) > 0) {
      bytes_ -= table_bytes(range.rows, table->dim(), table->dtype());
    }
    return grpc::Status::OK;
  }
  const int64_t dim = table->dim();
  const size_t value_bytes = static_cast<size_t>(dim) * dtype_size(table->dtype());
  const size_t state_bytes = static_cast<size_t>(table->state_slots()) * dim * sizeof(float);
  switch (request.op()) {
    case Request::CREATE:
      break;
    case Request::READ: {
      const auto [begin, end] = local_range(request, range);
      const auto rows = static_cast<size_t>(end - begin);
      check_reply(static_cast<int64_t>(rows * (value_bytes + state_bytes)), limits, what);
      const NodeStateSnapshot snapshot = table->snapshot(begin, end);
      reply.set_rows(reinterpret_cast<const char*>(snapshot.values.raw_data()), rows * value_bytes);
      reply.set_state(reinterpret_cast<const char*>(snapshot.state.raw_data()), rows * state_bytes);
      break;
    }
    case Request::WRITE: {
      const auto [begin, end] = local_range(request, range);
      const auto rows = static_cast<size_t>(end - begin);
      VOLLEY_REQUIRE(request.values().size() == rows * value_bytes &&
                         request.state().size() == rows * state_bytes,
                     ValueError,
                     "{}: WRITE of {} rows needs {} value bytes and {} state bytes, got {} and {}",
                     what, rows, rows * value_bytes, rows * state_bytes, request.values().size(),
                     request.state().size());
      NodeStateSnapshot snapshot{
          Array::empty(table->dtype(), {static_cast<int64_t>(rows), dim}),
          Array::empty(DType::kFloat32, {static_cast<int64_t>(rows), table->state_slots(), dim}),
          request.steps()};
      if (!request.values().empty()) {  // empty: a WRITE of the step count alone
        std::memcpy(snapshot.values.raw_data(), request.values().data(), request.values().size());
      }
      if (!request.state().empty()) {
        std::memcpy(snapshot.state.raw_data(), request.state().data(), request.state().size());
      }
      table->restore(snapshot, begin);
      break;
    }
    default:
      return answer_rows(request, range, limits, *table, what, reply);
  }
  describe_table(*table, range, reply);
  return grpc::Status::OK;
}

grpc::Status NodeTables::answer_rows(const Request& request, const OwnedRange& range,
                                     const ServerLimits& limits, NodeState& table,
                                     const std::string& what, rpc::NodeDataReply& reply) {
  thread_local std::vector<int64_t> ids;
  if (auto status = owned_ids(range, request.ids(), ids, "ids"); !status.ok()) return status;
  for (int64_t& id : ids) id -= range.first;
  const int64_t dim = table.dim();
  switch (request.op()) {
    case Request::PULL: {
      const DType out_dtype =
          request.out_dtype().empty() ? DType::kFloat32 : dtype_from_name(request.out_dtype());
      const size_t bytes = ids.size() * static_cast<size_t>(dim) * dtype_size(out_dtype);
      check_reply(static_cast<int64_t>(bytes), limits, what);
      std::string* rows = reply.mutable_rows();
      rows->resize(bytes);
      table.pull(ids, out_dtype, reinterpret_cast<std::byte*>(rows->data()));
      break;
    }
    case Request::ASSIGN:
    case Request::ADD:
      table.push(ids, float_rows(request.values(), ids.size(), dim, what),
                 request.op() == Request::ADD ? WriteOp::kAdd : WriteOp::kAssign);
      break;
    case Request::ADAGRAD:
    case Request::ADAM:
      reply.set_step_number(table.step(
          ids, float_rows(request.values(), ids.size(), dim, what),
          {.kind = request.op() == Request::ADAM ? OptimizerKind::kAdam : OptimizerKind::kAdagrad,
           .lr = request.lr(),
           .eps = request.eps(),
           .beta1 = request.beta1(),
           .beta2 = request.beta2(),
           .step_number = request.step_number()}));
      break;
    default:
      throw ValueError(
          fmt::format("{}: unknown NodeData op {}", what, static_cast<int>(request.op())));
  }
  release_if_large(ids);
  describe_table(table, range, reply);
  return grpc::Status::OK;
}

}  // namespace volley::dist::internal
