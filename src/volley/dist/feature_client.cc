// The row gather of both clients (internal/service_view.h: each id's row from its owner, GetRows
// calls to every remote part in flight at once, the local part's rows gathered in-process,
// scattered back into the caller's order), the view of either client's service, and DistGraph's
// feature and label rows over it.
#include <cstring>
#include <memory>
#include <span>
#include <vector>

#include "volley/dist/client.h"
#include "volley/dist/internal/client_calls.h"
#include "volley/dist/internal/service_view.h"
#include "volley/feature/gather.h"

namespace volley::dist {
namespace internal {
namespace {

using RowsCall = Call<rpc::RowsRequest, rpc::RowsReply>;

// What one gather asks of every part: the ids each owns and where their rows go.
struct RowRequests {
  std::vector<std::vector<int64_t>> targets;    // per part: ids of the type
  std::vector<std::vector<int64_t>> positions;  // per part: positions in the caller's order
};

// Splits `ids` (of node type `type`) by owner; IndexError for an id outside the type's range.
RowRequests split_ids(const ServiceView& service, int type, std::span<const int64_t> ids) {
  const PartitionBook& book = *service.books[static_cast<size_t>(type)];
  const std::string& name = service.type_names[static_cast<size_t>(type)];
  const int64_t num_nodes = book.num_nodes();
  RowRequests requests;
  requests.targets.resize(static_cast<size_t>(book.num_parts()));
  requests.positions.resize(static_cast<size_t>(book.num_parts()));
  for (size_t i = 0; i < ids.size(); ++i) {
    if (ids[i] < 0 || ids[i] >= num_nodes) {
      if (name.empty()) {
        throw IndexError(fmt::format("id {} at position {} out of range for a graph with {} nodes",
                                     ids[i], i, num_nodes));
      }
      throw IndexError(
          fmt::format("id {} at position {} out of range for node type '{}' ({} nodes)", ids[i], i,
                      name, num_nodes));
    }
    const auto owner = static_cast<size_t>(book.owner_of(ids[i]));
    requests.targets[owner].push_back(ids[i]);
    requests.positions[owner].push_back(static_cast<int64_t>(i));
  }
  return requests;
}

const char* call_name(rpc::RowsRequest::Kind kind) {
  switch (kind) {
    case rpc::RowsRequest::FEATURES:
      return "GetRows(features)";
    case rpc::RowsRequest::LABELS:
      return "GetRows(labels)";
    case rpc::RowsRequest::DEGREES:
      return "GetRows(degrees)";
    default:
      return "GetRows(node times)";
  }
}

}  // namespace

void gather_across(const ServiceView& service, int type, rpc::RowsRequest::Kind kind,
                   std::span<const int64_t> ids, DType out_dtype, size_t row_bytes,
                   std::byte* out) {
  const RowRequests requests = split_ids(service, type, ids);
  const auto& targets = requests.targets;
  // Rows [begin, end) of part p's share, from `rows`, to their places in `out`.
  auto scatter = [&](size_t p, size_t begin, size_t end, const std::byte* rows) {
    const auto& where = requests.positions[p];
    for (size_t j = begin; j < end; ++j) {
      std::memcpy(out + static_cast<size_t>(where[j]) * row_bytes, rows + (j - begin) * row_bytes,
                  row_bytes);
    }
  };
  const char* what = call_name(kind);
  fan_out<RowsCall>(
      service, targets,
      [&](int64_t p) {
        const PartLimits& limits = service.limits[static_cast<size_t>(p)];
        VOLLEY_REQUIRE(static_cast<int64_t>(row_bytes) <= limits.max_reply_bytes, ValueError,
                       "part {} at {}: one row is {} bytes, more than the {} a reply may carry "
                       "(the server's max_reply_bytes, or this client's max_message_bytes)",
                       p, service.addresses[static_cast<size_t>(p)], row_bytes,
                       limits.max_reply_bytes);
        return targets_per_call(limits, static_cast<int64_t>(row_bytes));
      },
      [&](const Piece& piece, std::unique_ptr<RowsCall>& slot, std::latch& done) {
        slot = std::make_unique<RowsCall>();
        RowsCall& call = *slot;
        prepare(call.context, service.options, service.options.deadline_seconds);
        call.request.set_protocol(kProtocolVersion);
        call.request.set_fingerprint(service.fingerprint);
        call.request.set_kind(kind);
        call.request.set_node_type(service.type_names[static_cast<size_t>(type)]);
        const auto& mine = targets[static_cast<size_t>(piece.part)];
        pack(std::span<const int64_t>(mine).subspan(piece.begin, piece.end - piece.begin),
             call.request.mutable_ids());
        call.request.set_out_dtype(std::string(dtype_name(out_dtype)));
        stub_for(service.servers, piece.part, call)
            ->async()
            ->GetRows(&call.context, &call.request, &call.reply, record_status(call, done));
      },
      [&](const Piece& piece, const RowsCall& call) {
        const auto pi = static_cast<size_t>(piece.part);
        if (!call.status.ok()) service.fail_call(call.status, piece.part, what);
        const size_t count = piece.end - piece.begin;
        VOLLEY_REQUIRE(call.reply.rows().size() == count * row_bytes, RuntimeError,
                       "part {} at {}: malformed {} reply: {} bytes for {} rows of {} bytes",
                       piece.part, service.addresses[pi], what, call.reply.rows().size(), count,
                       row_bytes);
        scatter(pi, piece.begin, piece.end,
                reinterpret_cast<const std::byte*>(call.reply.rows().data()));
      },
      [&] {
        const auto p = static_cast<size_t>(service.local_part);
        std::vector<std::byte> rows(targets[p].size() * row_bytes);
        service.local_rows(type, kind, targets[p], out_dtype, rows.data());
        scatter(p, 0, targets[p].size(), rows.data());
      });
}

ServiceView view_of(const ServiceClient& state) {
  const TypedServiceInfo& info = state.service;
  ServiceView service{state.options, state.addresses, state.servers, state.limits,
                      info.fingerprint};
  service.local_part = state.local_part;
  for (const NodeTypeService& type : info.node_types) {
    service.books.push_back(&type.book);
    service.type_names.push_back(type.name);
  }
  for (const EdgeType& type : info.edge_types) {  // the one-type case's is named ""
    service.edges.push_back({info.node_type_index(type.src), info.node_type_index(type.dst),
                             type.src.empty() ? "" : type.name()});
  }
  service.max_degree = [&state](size_t part, size_t e) {
    const auto& longest = state.max_degree[part];
    return e < longest.size() ? longest[e] : int64_t{-1};
  };
  service.local_rows = state.local_rows;
  return service;
}

void gather_service_rows(const ServiceClient& state, int type, rpc::RowsRequest::Kind kind,
                         std::span<const int64_t> ids, DType out_dtype, size_t row_bytes,
                         std::byte* out) {
  gather_across(view_of(state), type, kind, ids, out_dtype, row_bytes, out);
}

}  // namespace internal

void DistGraph::gather_features(std::span<const int64_t> ids, DType out_dtype,
                                std::byte* out) const {
  VOLLEY_REQUIRE(state_->info.feature_dim > 0, ValueError,
                 "the served dataset '{}' has no features", state_->info.dataset_name);
  VOLLEY_REQUIRE(gather_supports(state_->info.feature_dtype, out_dtype), ValueError,
                 "features of dtype {} cannot be delivered as {}",
                 dtype_name(state_->info.feature_dtype), dtype_name(out_dtype));
  internal::gather_service_rows(
      *state_, 0, rpc::RowsRequest::FEATURES, ids, out_dtype,
      static_cast<size_t>(state_->info.feature_dim) * dtype_size(out_dtype), out);
}

void DistGraph::gather_labels(std::span<const int64_t> ids, int64_t* out) const {
  VOLLEY_REQUIRE(has_labels(), ValueError, "the served dataset '{}' has no labels",
                 state_->info.dataset_name);
  internal::gather_service_rows(*state_, 0, rpc::RowsRequest::LABELS, ids, DType::kInt64,
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
