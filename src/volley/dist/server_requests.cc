// The server's request checks and link-prediction answers (internal/server_requests.h).
#include "volley/dist/internal/server_requests.h"

#include <algorithm>

#include <fmt/format.h>

#include "volley/dist/internal/wire.h"

namespace volley::dist::internal {

grpc::Status owned_ids(const OwnedRange& range, const std::string& bytes, std::vector<int64_t>& ids,
                       const char* field) {
  if (bytes.size() % sizeof(int64_t) != 0) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                        fmt::format("part {}: {} has {} bytes, not a multiple of 8 (packed int64)",
                                    range.part, field, bytes.size()));
  }
  const auto count = static_cast<int64_t>(bytes.size() / sizeof(int64_t));
  if (count > range.max_ids) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                        fmt::format("part {}: {} lists {} ids, more than the {} one call may "
                                    "(max_ids_per_call); split the call",
                                    range.part, field, count, range.max_ids));
  }
  unpack(bytes, ids);
  const int64_t begin = range.first, end = range.first + range.rows;
  for (size_t i = 0; i < ids.size(); ++i) {
    if (ids[i] < begin || ids[i] >= end) {
      return grpc::Status(grpc::StatusCode::OUT_OF_RANGE,
                          fmt::format("part {}: {}[{}] = {} is not owned here (this part owns "
                                      "[{}, {}))",
                                      range.part, field, i, ids[i], begin, end));
    }
  }
  return grpc::Status::OK;
}

int64_t hop_reply_bound(const Csr& graph, int64_t first, std::span<const int64_t> targets,
                        int64_t fanout, bool replace, int64_t saturated) {
  int64_t bytes = 4 * static_cast<int64_t>(targets.size());
  for (const int64_t target : targets) {
    const int64_t degree = graph.degree(target - first);
    int64_t picks = degree;
    if (fanout != -1 && (replace || fanout < degree)) picks = degree == 0 ? 0 : fanout;
    bytes += 16 * std::min(picks, saturated / 16);
    if (bytes >= saturated) return saturated;
  }
  return bytes;
}

namespace {

// Whether `other` is a neighbor in CSR positions [begin, end).
bool row_contains(const Csr& graph, int64_t begin, int64_t end, int64_t other, bool sorted) {
  if (!sorted) {
    for (int64_t k = begin; k < end; ++k) {
      if (graph.neighbor(k) == other) return true;
    }
    return false;
  }
  const int64_t row_end = end;
  while (begin < end) {  // lower bound
    const int64_t mid = begin + (end - begin) / 2;
    if (graph.neighbor(mid) < other) {
      begin = mid + 1;
    } else {
      end = mid;
    }
  }
  return begin < row_end && graph.neighbor(begin) == other;
}

}  // namespace

grpc::Status answer_has_edges(const Csr& graph, const OwnedRange& range, bool rows_sorted,
                              std::span<const int64_t> rows, const std::string& others,
                              int64_t max_reply_bytes, rpc::EdgesReply& reply) {
  thread_local std::vector<int64_t> other_ids;
  if (others.size() != rows.size() * sizeof(int64_t)) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                        fmt::format("part {}: others has {} bytes for {} rows (one int64 each)",
                                    range.part, others.size(), rows.size()));
  }
  if (static_cast<int64_t>(rows.size()) > max_reply_bytes) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                        fmt::format("part {}: the HasEdges reply would be {} bytes, more than the "
                                    "{} one reply may (max_reply_bytes); split the call",
                                    range.part, rows.size(), max_reply_bytes));
  }
  unpack(others, other_ids);
  std::string* found = reply.mutable_found();
  found->resize(rows.size());
  for (size_t i = 0; i < rows.size(); ++i) {
    const int64_t row = rows[i] - range.first;
    (*found)[i] =
        row_contains(graph, graph.begin(row), graph.end(row), other_ids[i], rows_sorted) ? 1 : 0;
  }
  if (other_ids.capacity() > (size_t{2} << 20)) std::vector<int64_t>().swap(other_ids);
  return grpc::Status::OK;
}

void answer_degrees(const Csr& graph, int64_t first, std::span<const int64_t> ids,
                    rpc::RowsReply& reply) {
  std::vector<int64_t> degrees(ids.size());
  for (size_t i = 0; i < ids.size(); ++i) degrees[i] = graph.degree(ids[i] - first);
  pack(std::span<const int64_t>(degrees), reply.mutable_rows());
  reply.set_dtype("int64");
  reply.set_width(1);
}

grpc::Status untyped_hop(const std::string& edge_type, int64_t part) {
  if (edge_type.empty()) return grpc::Status::OK;
  return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                      fmt::format("part {}: edge type {} asked, but this server serves a "
                                  "homogeneous partition (no edge types)",
                                  part, quoted(edge_type)));
}

grpc::Status parse_hop_times(const rpc::HopRequest& request, int64_t part, size_t num_targets,
                             NeighborSamplerOptions& sampler, std::vector<int64_t>& target_times) {
  const auto invalid = [&](std::string message) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                        fmt::format("part {}: {}", part, message));
  };
  if (sampler.time_source == TimeSource::kNone) {
    return invalid("time_source must be \"edge\" or \"node\" with target_times, got none");
  }
  if (!unpack(request.target_times(), target_times) || target_times.size() != num_targets) {
    return invalid(
        fmt::format("target_times holds {} bytes, but there are {} targets (8 bytes "
                    "each)",
                    request.target_times().size(), num_targets));
  }
  if (sampler.weighted) return invalid("temporal sampling is not weighted");
  return grpc::Status::OK;
}

grpc::Status temporal_hop(const Partition& partition, const rpc::HopRequest& request,
                          size_t num_targets, NeighborSamplerOptions& sampler,
                          std::vector<int64_t>& target_times, HopTimes& times) {
  if (auto status = parse_hop_times(request, partition.part, num_targets, sampler, target_times);
      !status.ok())
    return status;
  const bool by_edge = sampler.time_source == TimeSource::kEdge;
  const char* source = by_edge ? "edge" : "node";
  const Csr& graph = partition.data.graph;
  if (by_edge ? !graph.has_edge_time() : !partition.node_time.has_value()) {
    return grpc::Status(
        grpc::StatusCode::FAILED_PRECONDITION,
        fmt::format("part {}: sampling by {} time asked, but this partition has no {} "
                    "times (partition a dataset with {}_time.npy)",
                    partition.part, source, source, source));
  }
  times.target_times = target_times;
  if (by_edge) {
    times.edge_time = graph.edge_time()->span<int64_t>();
    times.rows_sorted = graph.first_row_unsorted_by_edge_time() < 0;
  } else {
    times.node_time = partition.node_time->span<int64_t>();
    times.rows_sorted = partition.node_time_rows_sorted;
  }
  if (sampler.temporal_strategy == TemporalStrategy::kLast && !times.rows_sorted) {
    return grpc::Status(
        grpc::StatusCode::FAILED_PRECONDITION,
        fmt::format("part {}: temporal_strategy 'last' needs rows sorted by {} time, "
                    "and this partition's are not (sort the dataset by time before "
                    "partitioning: volley convert --sort-by-time)",
                    partition.part, source));
  }
  return grpc::Status::OK;
}

}  // namespace volley::dist::internal
