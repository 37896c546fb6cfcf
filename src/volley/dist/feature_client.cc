// DistGraph's feature and label rows: each id's row from its owner (one GetRows call per remote
// part, all in flight at once; the local part's rows gathered in-process), scattered back into
// the caller's order.
#include <cstring>
#include <memory>
#include <span>
#include <vector>

#include "volley/dist/client.h"
#include "volley/dist/internal/client_calls.h"
#include "volley/feature/gather.h"

namespace volley::dist {
namespace {

using RowsCall = internal::Call<rpc::RowsRequest, rpc::RowsReply>;

// What one gather asks of every part: the ids each owns and where their rows go.
struct RowRequests {
  std::vector<std::vector<int64_t>> targets;    // per part: global ids
  std::vector<std::vector<int64_t>> positions;  // per part: positions in the caller's order
};

// Splits `ids` by owner; IndexError for an id outside the graph.
RowRequests split_ids(const PartitionBook& book, std::span<const int64_t> ids) {
  const int64_t num_nodes = book.num_nodes();
  RowRequests requests;
  requests.targets.resize(static_cast<size_t>(book.num_parts()));
  requests.positions.resize(static_cast<size_t>(book.num_parts()));
  for (size_t i = 0; i < ids.size(); ++i) {
    VOLLEY_REQUIRE(ids[i] >= 0 && ids[i] < num_nodes, IndexError,
                   "id {} at position {} out of range for a graph with {} nodes", ids[i], i,
                   num_nodes);
    const auto owner = static_cast<size_t>(book.owner_of(ids[i]));
    requests.targets[owner].push_back(ids[i]);
    requests.positions[owner].push_back(static_cast<int64_t>(i));
  }
  return requests;
}

// Starts part p's asynchronous GetRows call; it counts `done` down when it ends.
void send_rows(const DistGraph::State& state, int64_t p, rpc::RowsRequest::Kind kind,
               const std::vector<int64_t>& targets, DType out_dtype,
               std::unique_ptr<RowsCall>& slot, std::latch& done) {
  slot = std::make_unique<RowsCall>();
  RowsCall& call = *slot;
  internal::prepare(call.context, state.options, state.options.deadline_seconds);
  call.request.set_protocol(kProtocolVersion);
  call.request.set_fingerprint(state.info.fingerprint);
  call.request.set_kind(kind);
  internal::pack(std::span<const int64_t>(targets), call.request.mutable_ids());
  call.request.set_out_dtype(std::string(dtype_name(out_dtype)));
  state.stubs[static_cast<size_t>(p)]->async()->GetRows(&call.context, &call.request, &call.reply,
                                                        internal::record_status(call, done));
}

// Rows of `ids` (features or labels) from their owners into `out` (row_bytes per row).
void gather_rows_from_parts(const DistGraph::State& state, rpc::RowsRequest::Kind kind,
                            std::span<const int64_t> ids, DType out_dtype, size_t row_bytes,
                            std::byte* out) {
  const RowRequests requests = split_ids(state.info.book, ids);
  const auto& targets = requests.targets;
  auto scatter = [&](size_t p, const std::byte* rows) {
    const auto& where = requests.positions[p];
    for (size_t j = 0; j < where.size(); ++j) {
      std::memcpy(out + static_cast<size_t>(where[j]) * row_bytes, rows + j * row_bytes, row_bytes);
    }
  };
  std::vector<std::unique_ptr<RowsCall>> calls(targets.size());
  internal::fan_out(
      state, targets,
      [&](int64_t p, std::latch& done) {
        const auto pi = static_cast<size_t>(p);
        send_rows(state, p, kind, targets[pi], out_dtype, calls[pi], done);
      },
      [&] {
        const auto p = static_cast<size_t>(state.local_part);
        const Partition& local = *state.local;
        const Array& table =
            kind == rpc::RowsRequest::FEATURES ? *local.data.features : *local.data.labels;
        std::vector<int64_t> rows(targets[p]);
        for (int64_t& id : rows) id -= local.first_node();
        std::vector<std::byte> buffer(rows.size() * row_bytes);
        gather_rows(table, rows, out_dtype, buffer.data());
        scatter(p, buffer.data());
      });
  const char* what = kind == rpc::RowsRequest::FEATURES ? "GetRows(features)" : "GetRows(labels)";
  for (int64_t p = 0; p < state.num_parts(); ++p) {
    const auto pi = static_cast<size_t>(p);
    if (!calls[pi]) continue;
    const RowsCall& call = *calls[pi];
    if (!call.status.ok()) state.fail_call(call.status, p, what);
    VOLLEY_REQUIRE(call.reply.rows().size() == targets[pi].size() * row_bytes, RuntimeError,
                   "part {} at {}: malformed {} reply: {} bytes for {} rows of {} bytes", p,
                   state.addresses[pi], what, call.reply.rows().size(), targets[pi].size(),
                   row_bytes);
    scatter(pi, reinterpret_cast<const std::byte*>(call.reply.rows().data()));
  }
}

}  // namespace

void DistGraph::gather_features(std::span<const int64_t> ids, DType out_dtype,
                                std::byte* out) const {
  VOLLEY_REQUIRE(state_->info.feature_dim > 0, ValueError,
                 "the served dataset '{}' has no features", state_->info.dataset_name);
  VOLLEY_REQUIRE(gather_supports(state_->info.feature_dtype, out_dtype), ValueError,
                 "features of dtype {} cannot be delivered as {}",
                 dtype_name(state_->info.feature_dtype), dtype_name(out_dtype));
  gather_rows_from_parts(*state_, rpc::RowsRequest::FEATURES, ids, out_dtype,
                         static_cast<size_t>(state_->info.feature_dim) * dtype_size(out_dtype),
                         out);
}

void DistGraph::gather_labels(std::span<const int64_t> ids, int64_t* out) const {
  VOLLEY_REQUIRE(has_labels(), ValueError, "the served dataset '{}' has no labels",
                 state_->info.dataset_name);
  gather_rows_from_parts(*state_, rpc::RowsRequest::LABELS, ids, DType::kInt64, sizeof(int64_t),
                         reinterpret_cast<std::byte*>(out));
}

Array DistGraph::gather_features(std::span<const int64_t> ids, DType out_dtype) const {
  Array out = Array::empty(out_dtype, {static_cast<int64_t>(ids.size()), feature_width()});
  gather_features(ids, out_dtype, out.raw_data());
  return out;
}

Array DistGraph::gather_labels(std::span<const int64_t> ids) const {
  Array out = Array::empty(DType::kInt64, {static_cast<int64_t>(ids.size())});
  gather_labels(ids, out.data<int64_t>());
  return out;
}

}  // namespace volley::dist
