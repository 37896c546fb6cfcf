// volley/dist/internal/node_tables.h — the node tables a partition server holds (internal): the
// NodeData call (volley.proto) of both servers, answered over the rows the server owns of the
// table's node type (node_tables.cc).
//
// A table `name` of node type T on part p is a NodeState (node_state.h) of the ids p owns of T,
// [range.first, range.first + range.rows), in host memory; requests name global ids and the
// table translates them. CREATE initialises rows keyed by their global ids, so a table split
// over the parts holds, row for row, what one NodeState of the whole type initialised with the
// same seed holds. Steps follow NodeDataRequest.step_number (0: the table's next step).
//
// Errors are thrown as Volley errors naming the table and the value (the server's serve()
// turns them into statuses): ValueError for an unknown op, name, dtype, init, shape, a table
// that exists (CREATE without exist_ok, or with exist_ok and another dim / dtype / slots) or
// does not (any other op), values / state of the wrong size, a reply over max_reply_bytes, or
// tables over max_node_data_bytes; IndexError for a READ / WRITE range outside the owned one.
// Owned-id checks answer as the server's other calls (internal/server_requests.h).
//
// Thread safety: answer() may be called from any handler thread; a table's rows follow
// NodeState's contracts, and a table removed while a call uses it lives until that call ends.
#pragma once

#include <grpcpp/support/status.h>

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>

#include "volley/dist/internal/server_requests.h"
#include "volley/dist/server.h"
#include "volley/dist/volley.pb.h"
#include "volley/feature/node_state.h"

namespace volley::dist::internal {

class NodeTables {
 public:
  // The NodeData answer for `request` over `range` (the rows of request.node_type() this part
  // owns), under `limits`.
  grpc::Status answer(const rpc::NodeDataRequest& request, const OwnedRange& range,
                      const ServerLimits& limits, rpc::NodeDataReply& reply);
  // Table `name` of `node_type`; ValueError naming it and `part` when there is none.
  std::shared_ptr<NodeState> existing(const std::string& node_type, const std::string& name,
                                      int64_t part) const;

 private:
  using Key = std::pair<std::string, std::string>;  // (node type, name)

  std::shared_ptr<NodeState> find(const Key& key) const;
  void create(const rpc::NodeDataRequest& request, const OwnedRange& range,
              const ServerLimits& limits);
  // PULL, ASSIGN, ADD and the steps: the calls that list ids.
  grpc::Status answer_rows(const rpc::NodeDataRequest& request, const OwnedRange& range,
                           const ServerLimits& limits, NodeState& table, const std::string& what,
                           rpc::NodeDataReply& reply);

  mutable std::mutex mutex_;
  std::map<Key, std::shared_ptr<NodeState>> tables_;
  int64_t bytes_ = 0;  // held by all tables
};

}  // namespace volley::dist::internal
