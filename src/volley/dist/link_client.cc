// DistGraph's link-prediction side (client.h): edge existence asked of each pair's row owner
// (HasEdges, one call per remote part and limit-sized piece, all in flight at once; the local
// part answered in-process) and the degrees, fetched once.
#include <cstring>
#include <memory>
#include <span>
#include <vector>

#include "volley/dist/client.h"
#include "volley/dist/internal/client_calls.h"
#include "volley/dist/internal/server_requests.h"
#include "volley/sampling/negative_sampler.h"

namespace volley::dist {
namespace {

using EdgesCall = internal::Call<rpc::EdgesRequest, rpc::EdgesReply>;

// The pairs of one has_edges call split by the owner of their row.
struct EdgeRequests {
  std::vector<std::vector<int64_t>> rows;       // per part: global row ids (owned there)
  std::vector<std::vector<int64_t>> others;     // per part: the ids looked for in those rows
  std::vector<std::vector<int64_t>> positions;  // per part: pair positions in the caller's order
};

EdgeRequests split_pairs(const DistGraph::State& state, Orientation orientation,
                         std::span<const int64_t> src, std::span<const int64_t> dst) {
  const PartitionBook& book = state.info.book;
  const int64_t n = book.num_nodes();
  EdgeRequests requests;
  const auto parts = static_cast<size_t>(book.num_parts());
  requests.rows.resize(parts);
  requests.others.resize(parts);
  requests.positions.resize(parts);
  for (size_t i = 0; i < src.size(); ++i) {
    VOLLEY_REQUIRE(src[i] >= 0 && src[i] < n && dst[i] >= 0 && dst[i] < n, IndexError,
                   "has_edges: pair {} ({}, {}) has a node out of range for a graph with {} nodes",
                   i, src[i], dst[i], n);
    const int64_t row = orientation == Orientation::kIn ? dst[i] : src[i];
    const int64_t other = orientation == Orientation::kIn ? src[i] : dst[i];
    const auto owner = static_cast<size_t>(book.owner_of(row));
    requests.rows[owner].push_back(row);
    requests.others[owner].push_back(other);
    requests.positions[owner].push_back(static_cast<int64_t>(i));
  }
  return requests;
}

void send_edges(const DistGraph::State& state, const internal::Piece& piece,
                const EdgeRequests& requests, std::unique_ptr<EdgesCall>& slot, std::latch& done) {
  const auto pi = static_cast<size_t>(piece.part);
  slot = std::make_unique<EdgesCall>();
  EdgesCall& call = *slot;
  internal::prepare(call.context, state.options, state.options.deadline_seconds);
  call.request.set_protocol(kProtocolVersion);
  call.request.set_fingerprint(state.info.fingerprint);
  const size_t count = piece.end - piece.begin;
  internal::pack(std::span<const int64_t>(requests.rows[pi]).subspan(piece.begin, count),
                 call.request.mutable_rows());
  internal::pack(std::span<const int64_t>(requests.others[pi]).subspan(piece.begin, count),
                 call.request.mutable_others());
  internal::stub_for(state.servers, piece.part, call)
      ->async()
      ->HasEdges(&call.context, &call.request, &call.reply, internal::record_status(call, done));
}

}  // namespace

void DistGraph::has_edges(std::span<const int64_t> src, std::span<const int64_t> dst,
                          uint8_t* out) const {
  VOLLEY_REQUIRE(src.size() == dst.size(), ValueError,
                 "has_edges: {} sources but {} destinations (one each per pair)", src.size(),
                 dst.size());
  const State& state = *state_;
  const Orientation orientation =
      state.local ? state.local->data.graph.orientation() : state.info.orientation;
  const EdgeRequests requests = split_pairs(state, orientation, src, dst);
  auto scatter = [&](size_t p, size_t begin, size_t end, const char* found) {
    const auto& where = requests.positions[p];
    for (size_t j = begin; j < end; ++j) {
      out[where[j]] = static_cast<uint8_t>(found[j - begin] != 0);
    }
  };
  internal::fan_out<EdgesCall>(
      state, requests.rows,
      [&](int64_t p) {  // two ids a pair in the request, a byte a pair in the reply
        return std::max<int64_t>(
            1, internal::targets_per_call(state.limits[static_cast<size_t>(p)], 1) / 2);
      },
      [&](const internal::Piece& piece, std::unique_ptr<EdgesCall>& slot, std::latch& done) {
        send_edges(state, piece, requests, slot, done);
      },
      [&](const internal::Piece& piece, const EdgesCall& call) {
        const auto pi = static_cast<size_t>(piece.part);
        if (!call.status.ok()) state.fail_call(call.status, piece.part, "HasEdges");
        VOLLEY_REQUIRE(call.reply.found().size() == piece.end - piece.begin, RuntimeError,
                       "part {} at {}: malformed HasEdges reply: {} answers for {} pairs",
                       piece.part, state.addresses[pi], call.reply.found().size(),
                       piece.end - piece.begin);
        scatter(pi, piece.begin, piece.end, call.reply.found().data());
      },
      [&] {
        const auto p = static_cast<size_t>(state.local_part);
        const Partition& local = *state.local;
        std::call_once(state.local_sorted_once,
                       [&] { state.local_sorted = csr_rows_sorted(local.data.graph); });
        std::string others;
        internal::pack(std::span<const int64_t>(requests.others[p]), &others);
        rpc::EdgesReply reply;
        const internal::OwnedRange range{local.part, local.first_node(),
                                         local.data.graph.num_nodes(), INT64_MAX};
        const grpc::Status status =
            internal::answer_has_edges(local.data.graph, range, state.local_sorted,
                                       requests.rows[p], others, INT64_MAX, reply);
        VOLLEY_REQUIRE(status.ok(), InternalError, "has_edges on the local part: {}",
                       status.error_message());
        scatter(p, 0, requests.rows[p].size(), reply.found().data());
      });
}

std::vector<int64_t> DistGraph::degrees() const {
  const State& state = *state_;
  std::lock_guard lock(state.link_mutex);
  if (!state.degrees) {
    const int64_t n = num_nodes();
    std::vector<int64_t> ids(static_cast<size_t>(n));
    for (int64_t v = 0; v < n; ++v) ids[static_cast<size_t>(v)] = v;
    std::vector<int64_t> degrees(static_cast<size_t>(n));
    internal::gather_service_rows(state, 0, rpc::RowsRequest::DEGREES, ids, DType::kInt64,
                                  sizeof(int64_t), reinterpret_cast<std::byte*>(degrees.data()));
    state.degrees = std::move(degrees);
  }
  return *state.degrees;
}

}  // namespace volley::dist
