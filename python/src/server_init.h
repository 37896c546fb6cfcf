// python/src/server_init.h — the options of the dist bindings from keyword arguments: the
// Server binding's `__init__` (ServerOptions, so `volley.dist.serve` passes every option to either
// kind of partition), the clients' ClientOptions, their connect calls, and what both clients'
// bindings give back: a node type's rows in the info dicts, gathered rows as arrays.
#pragma once

#include <nanobind/nanobind.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "bindings.h"
#include "volley/dist/server.h"

namespace volley::python {

// Adds `__init__(directory, part, *, listen, token, threads, peers, peer_token,
// peer_deadline_seconds, max_request_bytes, max_reply_bytes, max_ids_per_call,
// memory_limit_bytes, default_concurrency, tls_cert, tls_key, tls_client_ca, peer_tls_ca,
// max_epoch_streams, max_node_data_bytes)` to the binding of `ServerType` (constructed from
// (directory, part, ServerOptions), the GIL released meanwhile).
template <typename ServerType>
void def_server_init(nanobind::class_<ServerType>& cls, const char* doc) {
  namespace nb = nanobind;
  cls.def(
      "__init__",
      [](ServerType* self, const std::string& directory, int64_t part, const std::string& listen,
         const std::string& token, int threads, std::vector<std::string> peers,
         const std::string& peer_token, double peer_deadline_seconds, int64_t max_request_bytes,
         int64_t max_reply_bytes, int64_t max_ids_per_call, int64_t memory_limit_bytes,
         int default_concurrency, const std::string& tls_cert, const std::string& tls_key,
         const std::string& tls_client_ca, const std::string& peer_tls_ca,
         int64_t max_epoch_streams, int64_t max_node_data_bytes) {
        dist::ServerOptions options;
        options.tls = {tls_client_ca, tls_cert, tls_key};
        options.listen = listen;
        options.token = token;
        options.threads = threads;
        options.limits.max_request_bytes = max_request_bytes;
        options.limits.max_reply_bytes = max_reply_bytes;
        options.limits.max_ids_per_call = max_ids_per_call;
        options.limits.max_node_data_bytes = max_node_data_bytes;
        options.memory_limit_bytes = memory_limit_bytes;
        options.peers = std::move(peers);
        options.peer_client.token = peer_token;
        options.peer_client.deadline_seconds = peer_deadline_seconds;
        options.default_concurrency = default_concurrency;
        options.max_epoch_streams = max_epoch_streams;
        if (!peer_tls_ca.empty()) options.peer_client.tls = {peer_tls_ca, tls_cert, tls_key};
        nb::gil_scoped_release release;
        new (self) ServerType(directory, part, std::move(options));
      },
      nb::arg("directory"), nb::arg("part"), nb::kw_only(), nb::arg("listen") = "127.0.0.1:0",
      nb::arg("token") = "", nb::arg("threads") = 0, nb::arg("peers") = std::vector<std::string>{},
      nb::arg("peer_token") = "", nb::arg("peer_deadline_seconds") = 30.0,
      nb::arg("max_request_bytes") = dist::ServerLimits{}.max_request_bytes,
      nb::arg("max_reply_bytes") = dist::ServerLimits{}.max_reply_bytes,
      nb::arg("max_ids_per_call") = dist::ServerLimits{}.max_ids_per_call,
      nb::arg("memory_limit_bytes") = int64_t{4} << 30, nb::arg("default_concurrency") = 0,
      nb::arg("tls_cert") = "", nb::arg("tls_key") = "", nb::arg("tls_client_ca") = "",
      nb::arg("peer_tls_ca") = "", nb::arg("max_epoch_streams") = 0,
      nb::arg("max_node_data_bytes") = 0, doc);
}

// ClientOptions of a client binding's keyword arguments (DistGraph, DistHeteroGraph).
inline dist::ClientOptions client_options(std::string token, double deadline_seconds,
                                          double connect_seconds, int64_t max_message_bytes,
                                          const std::string& tls_ca, const std::string& tls_cert,
                                          const std::string& tls_key) {
  dist::ClientOptions options;
  options.tls = {tls_ca, tls_cert, tls_key};
  options.token = std::move(token);
  options.deadline_seconds = deadline_seconds;
  options.connect_seconds = connect_seconds;
  options.max_message_bytes = max_message_bytes;
  return options;
}

// Adds a client binding's connect calls, for either graph kind (`ClientType`: DistGraph,
// DistHeteroGraph): `connect(addresses, *, token, deadline_seconds, connect_seconds,
// max_message_bytes, local_directory, local_part, tls_ca, tls_cert, tls_key)`, worker mode when
// local_directory and local_part name the part held in this process, and
// `connect_to_server_partition(addresses, server, *, ...)`, worker mode sharing the partition
// an in-process Server already holds (`partition_of(server)`). The GIL is released meanwhile.
template <typename ClientType, typename... Bases, typename PartitionOf>
void def_client_connect(nanobind::class_<ClientType, Bases...>& cls, PartitionOf partition_of) {
  namespace nb = nanobind;
  cls.def_static(
         "connect",
         [](std::vector<std::string> addresses, const std::string& token, double deadline_seconds,
            double connect_seconds, int64_t max_message_bytes,
            const std::optional<std::string>& local_directory, std::optional<int64_t> local_part,
            const std::string& tls_ca, const std::string& tls_cert, const std::string& tls_key) {
           dist::ClientOptions options =
               client_options(token, deadline_seconds, connect_seconds, max_message_bytes, tls_ca,
                              tls_cert, tls_key);
           nb::gil_scoped_release release;
           return ClientType::connect(std::move(addresses), std::move(options),
                                      local_directory.value_or(""), local_part);
         },
         nb::arg("addresses"), nb::kw_only(), nb::arg("token") = "",
         nb::arg("deadline_seconds") = 30.0, nb::arg("connect_seconds") = 30.0,
         nb::arg("max_message_bytes") = int64_t{512} << 20,
         nb::arg("local_directory").none() = nb::none(), nb::arg("local_part").none() = nb::none(),
         nb::arg("tls_ca") = "", nb::arg("tls_cert") = "", nb::arg("tls_key") = "",
         "Connects to the servers (addresses[p] serves part p). Worker mode: local_directory "
         "and local_part name the partition held in this process.")
      .def_static(
          "connect_to_server_partition",
          [partition_of](std::vector<std::string> addresses, const dist::Server& server,
                         const std::string& token, double deadline_seconds, double connect_seconds,
                         int64_t max_message_bytes, const std::string& tls_ca,
                         const std::string& tls_cert, const std::string& tls_key) {
            dist::ClientOptions options =
                client_options(token, deadline_seconds, connect_seconds, max_message_bytes, tls_ca,
                               tls_cert, tls_key);
            nb::gil_scoped_release release;
            return ClientType::connect(std::move(addresses), std::move(options),
                                       partition_of(server), server.fingerprint());
          },
          nb::arg("addresses"), nb::arg("server"), nb::kw_only(), nb::arg("token") = "",
          nb::arg("deadline_seconds") = 30.0, nb::arg("connect_seconds") = 30.0,
          nb::arg("max_message_bytes") = int64_t{512} << 20, nb::arg("tls_ca") = "",
          nb::arg("tls_cert") = "", nb::arg("tls_key") = "",
          "Worker mode sharing the partition an in-process Server already holds.");
}

// A node type's rows (`rows`: a homogeneous service's ServiceInfo, a typed one's
// NodeTypeService) into an info dict: feature_dim, feature_dtype, label_dtype, num_classes.
template <typename Rows>
void rows_to_python(nanobind::dict& d, const Rows& rows) {
  namespace nb = nanobind;
  d["feature_dim"] = rows.feature_dim;
  d["feature_dtype"] = std::string(dtype_name(rows.feature_dtype));
  d["label_dtype"] =
      rows.label_dtype ? nb::cast(std::string(dtype_name(*rows.label_dtype))) : nb::none();
  d["num_classes"] = rows.num_classes;
}

// The rows a client gathers for `ids` (`what` names them in errors) as an array: `gather(ids)`
// with the GIL released.
template <typename Gather>
nanobind::object gathered_rows(const InputArray& ids, std::string_view what, Gather&& gather) {
  const Array id_array = host_ids_array(ids, what);
  Array rows;
  {
    nanobind::gil_scoped_release release;
    rows = gather(id_array.span<int64_t>());
  }
  return array_to_python(rows);
}

}  // namespace volley::python
