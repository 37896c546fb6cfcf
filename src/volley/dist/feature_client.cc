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

// Starts the asynchronous GetRows call of `piece`; it counts `done` down when it ends.
void send_rows(const DistGraph::State& state, const internal::Piece& piece,
               rpc::RowsRequest::Kind kind, const std::vector<int64_t>& targets, DType out_dtype,
               std::unique_ptr<RowsCall>& slot, std::latch& done) {
  slot = std::make_unique<RowsCall>();
  RowsCall& call = *slot;
  internal::prepare(call.context, state.options, state.options.deadline_seconds);
  call.request.set_protocol(kProtocolVersion);
  call.request.set_fingerprint(state.info.fingerprint);
  call.request.set_kind(kind);
  internal::pack(std::span<const int64_t>(targets).subspan(piece.begin, piece.end - piece.begin),
                 call.request.mutable_ids());
  call.request.set_out_dtype(std::string(dtype_name(out_dtype)));
  state.stubs[static_cast<size_t>(piece.part)]->async()->GetRows(
      &call.context, &call.request, &call.reply, internal::record_status(call, done));
}

}  // namespace

namespace internal {

void gather_rows_from_parts(const DistGraph::State& state, rpc::RowsRequest::Kind kind,
                            std::span<const int64_t> ids, DType out_dtype, size_t row_bytes,
                            std::byte* out) {
  const RowRequests requests = split_ids(state.info.book, ids);
  const auto& targets = requests.targets;
  // Rows [begin, end) of part p's share, from `rows`, to their places in `out`.
  auto scatter = [&](size_t p, size_t begin, size_t end, const std::byte* rows) {
    const auto& where = requests.positions[p];
    for (size_t j = begin; j < end; ++j) {
      std::memcpy(out + static_cast<size_t>(where[j]) * row_bytes, rows + (j - begin) * row_bytes,
                  row_bytes);
    }
  };
  const char* what = kind == rpc::RowsRequest::FEATURES ? "GetRows(features)"
                     : kind == rpc::RowsRequest::LABELS ? "GetRows(labels)"
                                                        : "GetRows(degrees)";
  internal::fan_out<RowsCall>(
      state, targets,
      [&](int64_t p) {
        const internal::PartLimits& limits = state.limits[static_cast<size_t>(p)];
        VOLLEY_REQUIRE(static_cast<int64_t>(row_bytes) <= limits.max_reply_bytes, ValueError,
                       "part {} at {}: one row is {} bytes, more than the {} a reply may carry "
                       "(the server's max_reply_bytes, or this client's max_message_bytes)",
                       p, state.addresses[static_cast<size_t>(p)], row_bytes,
                       limits.max_reply_bytes);
        return internal::targets_per_call(limits, static_cast<int64_t>(row_bytes));
      },
      [&](const internal::Piece& piece, std::unique_ptr<RowsCall>& slot, std::latch& done) {
        send_rows(state, piece, kind, targets[static_cast<size_t>(piece.part)], out_dtype, slot,
                  done);
      },
      [&](const internal::Piece& piece, const RowsCall& call) {
        const auto pi = static_cast<size_t>(piece.part);
        if (!call.status.ok()) state.fail_call(call.status, piece.part, what);
        const size_t count = piece.end - piece.begin;
        VOLLEY_REQUIRE(call.reply.rows().size() == count * row_bytes, RuntimeError,
                       "part {} at {}: malformed {} reply: {} bytes for {} rows of {} bytes",
                       piece.part, state.addresses[pi], what, call.reply.rows().size(), count,
                       row_bytes);
        scatter(pi, piece.begin, piece.end,
                reinterpret_cast<const std::byte*>(call.reply.rows().data()));
      },
      [&] {
        const auto p = static_cast<size_t>(state.local_part);
        const Partition& local = *state.local;
        if (kind == rpc::RowsRequest::DEGREES) {
          std::vector<int64_t> degrees;
          for (const int64_t id : targets[p]) {
            degrees.push_back(local.data.graph.degree(id - local.first_node()));
          }
          scatter(p, 0, degrees.size(), reinterpret_cast<const std::byte*>(degrees.data()));
          return;
        }
        const Array& table =
            kind == rpc::RowsRequest::FEATURES ? *local.data.features : *local.data.labels;
        std::vector<int64_t> rows(targets[p]);
        for (int64_t& id : rows) id -= local.first_node();
        std::vector<std::byte> buffer(rows.size() * row_bytes);
        gather_rows(table, rows, out_dtype, buffer.data());
        scatter(p, 0, rows.size(), buffer.data());
      });
}

}  // namespace internal

void DistGraph::gather_features(std::span<const int64_t> ids, DType out_dtype,
                                std::byte* out) const {
  VOLLEY_REQUIRE(state_->info.feature_dim > 0, ValueError,
                 "the served dataset '{}' has no features", state_->info.dataset_name);
  VOLLEY_REQUIRE(gather_supports(state_->info.feature_dtype, out_dtype), ValueError,
                 "features of dtype {} cannot be delivered as {}",
                 dtype_name(state_->info.feature_dtype), dtype_name(out_dtype));
  internal::gather_rows_from_parts(
      *state_, rpc::RowsRequest::FEATURES, ids, out_dtype,
      static_cast<size_t>(state_->info.feature_dim) * dtype_size(out_dtype), out);
}

void DistGraph::gather_labels(std::span<const int64_t> ids, int64_t* out) const {
  VOLLEY_REQUIRE(has_labels(), ValueError, "the served dataset '{}' has no labels",
                 state_->info.dataset_name);
  internal::gather_rows_from_parts(*state_, rpc::RowsRequest::LABELS, ids, DType::kInt64,
                                   sizeof(int64_t), reinterpret_cast<std::byte*>(out));
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
