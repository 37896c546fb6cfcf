// DistHeteroGraph's row gathers (hetero_client.h): features and labels of one node type from
// their owners in calls under each server's limits, the local part's (worker mode) from memory.
#include <algorithm>
#include <cstring>
#include <latch>

#include "volley/dist/internal/hetero_client_state.h"
#include "volley/dist/internal/wire.h"
#include "volley/feature/gather.h"

namespace volley::dist {

using internal::pack;
using RowsCall = internal::Call<rpc::RowsRequest, rpc::RowsReply>;

namespace internal {

void gather_typed_rows(const DistHeteroGraph::State& state, int type, rpc::RowsRequest::Kind kind,
                       std::span<const int64_t> ids, DType out_dtype, size_t row_bytes,
                       std::byte* out) {
  const HeteroNodeTypeService& node_type = state.info.node_types[static_cast<size_t>(type)];
  const int64_t n = node_type.book.num_nodes();
  const auto parts = static_cast<size_t>(state.num_parts());
  std::vector<std::vector<int64_t>> asked(parts), positions(parts);
  for (size_t i = 0; i < ids.size(); ++i) {
    VOLLEY_REQUIRE(ids[i] >= 0 && ids[i] < n, IndexError,
                   "id {} at position {} out of range for node type '{}' ({} nodes)", ids[i], i,
                   node_type.name, n);
    const auto p = static_cast<size_t>(node_type.book.owner_of(ids[i]));
    asked[p].push_back(ids[i]);
    positions[p].push_back(static_cast<int64_t>(i));
  }
  struct Piece {
    size_t part, begin, end;
  };
  std::vector<Piece> pieces;
  if (state.local_part >= 0) {  // worker mode: the local part's rows from memory
    const auto lp = static_cast<size_t>(state.local_part);
    const NodeTypeData& data = state.local->data.node_data[static_cast<size_t>(type)];
    const Array& table = *(kind == rpc::RowsRequest::FEATURES ? data.features : data.labels);
    const int64_t first = node_type.book.begin(state.local_part);
    std::vector<int64_t> rows(asked[lp]);
    for (int64_t& row : rows) row -= first;
    std::vector<std::byte> gathered(rows.size() * row_bytes);
    gather_rows(table, rows, out_dtype, gathered.data());
    for (size_t j = 0; j < rows.size(); ++j) {
      std::memcpy(out + static_cast<size_t>(positions[lp][j]) * row_bytes,
                  gathered.data() + j * row_bytes, row_bytes);
    }
    asked[lp].clear();
  }
  for (size_t p = 0; p < parts; ++p) {
    const int64_t step =
        internal::targets_per_call(state.limits[p], static_cast<int64_t>(row_bytes));
    for (size_t begin = 0; begin < asked[p].size(); begin += static_cast<size_t>(step)) {
      pieces.push_back({p, begin, std::min(asked[p].size(), begin + static_cast<size_t>(step))});
    }
  }
  std::vector<std::unique_ptr<RowsCall>> calls(pieces.size());
  std::latch done(static_cast<std::ptrdiff_t>(pieces.size()));
  for (size_t c = 0; c < pieces.size(); ++c) {
    const Piece& piece = pieces[c];
    calls[c] = std::make_unique<RowsCall>();
    RowsCall& call = *calls[c];
    internal::prepare(call.context, state.options, state.options.deadline_seconds);
    call.request.set_protocol(kProtocolVersion);
    call.request.set_fingerprint(state.info.fingerprint);
    call.request.set_kind(kind);
    call.request.set_node_type(node_type.name);
    call.request.set_out_dtype(std::string(dtype_name(out_dtype)));
    pack(std::span<const int64_t>(asked[piece.part]).subspan(piece.begin, piece.end - piece.begin),
         call.request.mutable_ids());
    state.stubs[piece.part]->async()->GetRows(&call.context, &call.request, &call.reply,
                                              internal::record_status(call, done));
  }
  done.wait();
  for (size_t c = 0; c < pieces.size(); ++c) {
    const Piece& piece = pieces[c];
    const RowsCall& call = *calls[c];
    if (!call.status.ok())
      state.fail_call(call.status, static_cast<int64_t>(piece.part), "GetRows");
    const std::string& rows = call.reply.rows();
    VOLLEY_REQUIRE(rows.size() == (piece.end - piece.begin) * row_bytes, RuntimeError,
                   "part {} at {}: malformed GetRows reply ({} bytes for {} rows of {} bytes)",
                   piece.part, state.addresses[piece.part], rows.size(), piece.end - piece.begin,
                   row_bytes);
    for (size_t j = piece.begin; j < piece.end; ++j) {
      std::memcpy(out + static_cast<size_t>(positions[piece.part][j]) * row_bytes,
                  rows.data() + (j - piece.begin) * row_bytes, row_bytes);
    }
  }
}

}  // namespace internal

using internal::gather_typed_rows;

Array DistHeteroGraph::gather_features(std::string_view node_type, std::span<const int64_t> ids,
                                       DType out_dtype) const {
  const int type = state_->info.node_type_index(node_type);
  const HeteroNodeTypeService& info = state_->info.node_types[static_cast<size_t>(type)];
  VOLLEY_REQUIRE(info.feature_dim > 0, ValueError, "node type '{}' has no features", info.name);
  Array out = Array::empty(out_dtype, {static_cast<int64_t>(ids.size()), info.feature_dim});
  gather_typed_rows(*state_, type, rpc::RowsRequest::FEATURES, ids, out_dtype,
                    static_cast<size_t>(info.feature_dim) * dtype_size(out_dtype), out.raw_data());
  return out;
}

Array DistHeteroGraph::gather_labels(std::string_view node_type,
                                     std::span<const int64_t> ids) const {
  const int type = state_->info.node_type_index(node_type);
  const HeteroNodeTypeService& info = state_->info.node_types[static_cast<size_t>(type)];
  VOLLEY_REQUIRE(info.label_dtype.has_value(), ValueError, "node type '{}' has no labels",
                 info.name);
  Array out = Array::empty(DType::kInt64, {static_cast<int64_t>(ids.size())});
  gather_typed_rows(*state_, type, rpc::RowsRequest::LABELS, ids, DType::kInt64, sizeof(int64_t),
                    out.raw_data());
  return out;
}

DistHeteroSource::DistHeteroSource(std::shared_ptr<const DistHeteroGraph> graph,
                                   HeteroSamplerOptions options, std::optional<DType> feature_dtype,
                                   bool features, bool labels)
    : graph_(std::move(graph)),
      options_(std::move(options)),
      feature_dtype_(feature_dtype),
      features_(features),
      labels_(labels) {
  VOLLEY_REQUIRE(graph_ != nullptr, ValueError, "the typed loader needs a source, got none");
  const HeteroServiceInfo& info = graph_->info();
  resolve_hetero_fanouts(info.edge_types, options_);  // ValueError for fanouts it cannot serve
  VOLLEY_REQUIRE(options_.time_source == TimeSource::kNone || !options_.weighted, ValueError,
                 "temporal sampling does not support weighted sampling yet");
  for (const HeteroNodeTypeService& type : info.node_types) {
    node_types_.push_back({type.name, type.book.num_nodes()});
  }
}

const std::vector<EdgeType>& DistHeteroSource::edge_types() const {
  return graph_->info().edge_types;
}

int64_t DistHeteroSource::num_edges(int edge_type) const {
  return graph_->info().num_edges.at(static_cast<size_t>(edge_type));
}

void DistHeteroSource::sample(const std::vector<HeteroSeeds>& groups, uint64_t seed,
                              uint64_t batch_index, HeteroSampledSubgraph& out,
                              HeteroSamplerScratch& /*scratch*/) const {
  HeteroSamplerOptions options = options_;
  options.seed = seed;
  out = graph_->sample(groups, options, batch_index);
}

void DistHeteroSource::gather_fields(int type, std::span<const int64_t> ids,
                                     std::vector<std::pair<std::string, Array>>& out) const {
  const HeteroNodeTypeService& info = graph_->info().node_types.at(static_cast<size_t>(type));
  if (features_ && info.feature_dim > 0) {
    out.emplace_back(
        "x", graph_->gather_features(info.name, ids, feature_dtype_.value_or(info.feature_dtype)));
  }
  if (labels_ && info.label_dtype) out.emplace_back("y", graph_->gather_labels(info.name, ids));
}

}  // namespace volley::dist
