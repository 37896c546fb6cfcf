// `volley serve PARTITIONED_DATASET --part I [--listen HOST:PORT] [--token-file F] [--threads N]
//  [--peers A0,A1,...] [--deadline S] [--tls-cert F --tls-key F [--tls-client-ca F]]
//  [--max-reply-bytes N] [--max-ids-per-call N] [--max-node-data-bytes N]`
// Serves one partition over gRPC (volley/dist/server.h) until SIGINT or SIGTERM, then shuts down
// gracefully. The first line on stdout is machine-readable and flushed at once:
//   volley serve: part 0 of 'cora' (1354 nodes) listening on 127.0.0.1:40123
// (launchers read the address from it; with port 0 the system picks the port). Without a token
// a warning goes to stderr: anyone who reaches the port may read the partition.
// --rendezvous is refused with a pointer to `python -m volley serve` (python/volley/_serve.py),
// which registers the same server in torch.distributed's key-value store.
// Usage mistakes (missing --part, a part out of range, an unreadable or empty token file, a
// malformed --listen) are CLI11 usage errors; an address that cannot be bound is an IoError.
// A build without gRPC keeps the command and fails with kNoDistService.
#include <csignal>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "commands.h"
#include "volley/core/error.h"
#include "volley/partition/hetero_partition.h"
#include "volley/partition/partition.h"

#ifdef VOLLEY_WITH_DIST
#include <malloc.h>
#include <pthread.h>

#include <atomic>
#include <thread>

#include "text.h"
#include "volley/dist/server.h"
#endif

namespace volley::cli {

const char* const kNoDistService =
    "this build has no distributed service; install libgrpc++-dev protobuf-compiler-grpc and "
    "rebuild";

namespace {

// What is wrong with a "HOST:PORT" listen address, or "" when it looks right (the server
// reports addresses it cannot bind).
std::string listen_problem(const std::string& address) {
  const size_t colon = address.rfind(':');
  if (colon == std::string::npos || colon == 0) {
    return "expected HOST:PORT (e.g. 127.0.0.1:5000, 0.0.0.0:0), found '" + address + "'";
  }
  const std::string host = address.substr(0, colon);
  const std::string port = address.substr(colon + 1);
  if (host.front() == '[' && host.back() != ']') {
    return "IPv6 host '" + host + "' lacks its closing ']' in '" + address + "'";
  }
  if (port.empty() || port.size() > 5 ||
      port.find_first_not_of("0123456789") != std::string::npos || std::stoi(port) > 65535) {
    return "port '" + port + "' is not a number in [0, 65535] in '" + address + "'";
  }
  return "";
}

// The first line of `path`, without surrounding white space; a usage error when the file cannot
// be read or that line is empty.
[[maybe_unused]] std::string read_token_file(const std::string& path) {
  std::ifstream stream(path);
  if (!stream) {
    throw CLI::ValidationError("--token-file",
                               "cannot read token file '" + path + "': " + std::strerror(errno));
  }
  std::string line;
  std::getline(stream, line);
  const char* const space = " \t\r\n\f\v";
  const size_t first = line.find_first_not_of(space);
  const std::string token = first == std::string::npos
                                ? ""
                                : line.substr(first, line.find_last_not_of(space) - first + 1);
  if (token.empty()) {
    throw CLI::ValidationError("--token-file",
                               "token file '" + path + "' is empty (its first line is the token)");
  }
  return token;
}

struct ServeArguments {
  std::string directory;
  int64_t part = -1;
  std::string listen = "127.0.0.1:0";
  std::string token_file;
  int threads = 0;
  int64_t max_epoch_streams = 0;  // 0: 4 × threads
  std::string peers;              // "A0,A1,..."
  double deadline = 30.0;
  double grace = 2.0;
  std::string tls_cert;
  std::string tls_key;
  std::string tls_client_ca;
  std::string peer_tls_ca;
  int64_t max_reply_bytes = 0;      // 0: ServerLimits' default
  int64_t max_ids_per_call = 0;     // 0: ServerLimits' default
  int64_t max_node_data_bytes = 0;  // 0: half the machine's memory
};

#ifdef VOLLEY_WITH_DIST

// --peers as one entry per part (its replicas separated by '|'); a usage error for the wrong
// count or a bad address.
std::vector<std::string> peer_list(const std::string& text, int64_t num_parts) {
  std::vector<std::string> peers;
  if (text.empty()) return peers;
  for (size_t start = 0;;) {
    const size_t comma = text.find(',', start);
    peers.push_back(text.substr(start, comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (static_cast<int64_t>(peers.size()) != num_parts) {
    throw CLI::ValidationError(
        "--peers", fmt::format("expected {} addresses (one per partition, in part order; this "
                               "part's may be empty), found {} in '{}'",
                               num_parts, peers.size(), text));
  }
  for (size_t part = 0; part < peers.size(); ++part) {
    if (peers[part].empty()) continue;
    for (size_t start = 0;;) {  // a part's replicas: "a|b"
      const size_t bar = peers[part].find('|', start);
      const std::string address = peers[part].substr(start, bar - start);
      std::string problem = listen_problem(address);
      if (problem.empty() && address.substr(address.rfind(':') + 1) == "0") {
        problem = "port 0 names no server in '" + address + "'";
      }
      if (!problem.empty()) {
        throw CLI::ValidationError("--peers", fmt::format("part {}'s address: {}", part, problem));
      }
      if (bar == std::string::npos) break;
      start = bar + 1;
    }
  }
  return peers;
}

// Prints the banner, then serves until SIGINT / SIGTERM (blocked in `signals`) and reports.
void serve_until_signal(dist::Server& server, const ServeArguments& arguments, sigset_t& signals,
                        const std::string& name, int64_t nodes) {
  // The warning first: whoever reads the first stdout line finds it already written.
  if (!server.authenticated()) {
    std::fprintf(stderr,
                 "volley serve: warning: no --token-file: serving unauthenticated; anyone who "
                 "can reach %s can read this partition\n",
                 server.address().c_str());
    std::fflush(stderr);
  }
  std::printf("volley serve: part %lld of '%s' (%lld nodes) listening on %s\n",
              static_cast<long long>(arguments.part), name.c_str(), static_cast<long long>(nodes),
              server.address().c_str());
  std::fflush(stdout);

  std::atomic<bool> stopped{false};
  std::thread watcher([&] {
    int signal_number = 0;
    sigwait(&signals, &signal_number);
    if (stopped.load()) return;  // woken by the main thread below
    std::fprintf(stderr, "volley serve: %s received, shutting down\n",
                 signal_number == SIGINT ? "SIGINT" : "SIGTERM");
    std::fflush(stderr);
    server.shutdown(arguments.grace);
  });
  server.wait();
  if (!stopped.exchange(true)) pthread_kill(watcher.native_handle(), SIGTERM);
  watcher.join();
  const dist::ServerStats stats = server.stats();
  std::fprintf(stderr, "volley serve: stopped after %s requests (%s refused or failed)\n",
               grouped(stats.requests).c_str(), grouped(stats.failed_requests).c_str());
}

void serve(const ServeArguments& arguments) {
  // Either kind of partitioned directory (a heterogeneous one: format version 2).
  const bool hetero = is_hetero_partitioned_directory(arguments.directory);
  std::optional<PartitionManifest> manifest;
  std::optional<HeteroPartitionManifest> hetero_manifest;
  if (hetero) {
    hetero_manifest = read_hetero_partition_manifest(arguments.directory);
  } else {
    manifest = read_partition_manifest(arguments.directory);
  }
  const int64_t num_parts = hetero ? hetero_manifest->num_parts : manifest->book.num_parts();
  if (arguments.part < 0 || arguments.part >= num_parts) {
    throw CLI::ValidationError(
        "--part",
        fmt::format("part {} out of range: '{}' has {} partition{} (0..{})", arguments.part,
                    arguments.directory, num_parts, num_parts == 1 ? "" : "s", num_parts - 1));
  }
  std::vector<std::string> peers = peer_list(arguments.peers, num_parts);
  dist::ServerOptions options;
  options.listen = arguments.listen;
  if (!arguments.token_file.empty()) options.token = read_token_file(arguments.token_file);
  options.threads = arguments.threads;
  options.max_epoch_streams = arguments.max_epoch_streams;
  options.peers = std::move(peers);
  options.peer_client.token = options.token;
  options.peer_client.deadline_seconds = arguments.deadline;
  options.tls = {arguments.tls_client_ca, arguments.tls_cert, arguments.tls_key};
  if (!arguments.peer_tls_ca.empty()) {
    options.peer_client.tls = {arguments.peer_tls_ca, arguments.tls_cert, arguments.tls_key};
  }
  if (arguments.max_reply_bytes > 0) options.limits.max_reply_bytes = arguments.max_reply_bytes;
  if (arguments.max_ids_per_call > 0) options.limits.max_ids_per_call = arguments.max_ids_per_call;
  options.limits.max_node_data_bytes = arguments.max_node_data_bytes;

  // SIGINT / SIGTERM are blocked in every thread (gRPC's threads inherit the mask of the thread
  // that creates the server) and taken by sigwait() in one watcher thread: no async handler,
  // nothing that is not signal-safe runs in signal context.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  sigset_t previous;
  pthread_sigmask(SIG_BLOCK, &signals, &previous);
  struct RestoreMask {
    sigset_t mask;
    ~RestoreMask() { pthread_sigmask(SIG_SETMASK, &mask, nullptr); }
  } restore{previous};

  // This process only serves: buffers of a megabyte and more (ids, picks, rows, replies) are
  // mapped for themselves and go back to the system when freed, whichever thread frees them;
  // without this glibc keeps a large call's peak in its arenas (1.2 GB kept after one
  // SampleHop). Not done by dist::Server itself: a trainer that hosts a server in-process keeps
  // glibc's adaptive threshold, which its own batches need (fresh mappings fault every page).
  mallopt(M_MMAP_THRESHOLD, 1 << 20);
  int64_t nodes = 0;  // owned by this part, of every type
  if (hetero) {
    for (const PartitionBook& book : hetero_manifest->books) nodes += book.size(arguments.part);
  } else {
    nodes = manifest->book.size(arguments.part);
  }
  dist::Server server(arguments.directory, arguments.part, options);
  serve_until_signal(server, arguments, signals, hetero ? hetero_manifest->name : manifest->name,
                     nodes);
}

#endif  // VOLLEY_WITH_DIST

// --rendezvous, refused with a pointer to `python -m volley serve`. Its check runs before the
// options defined after it (CLI11 runs them in order), --part's conversion included.
void add_rendezvous_refusal(CLI::App& command) {
  command
      .add_option("--rendezvous",
                  "Not here: python -m volley serve registers in "
                  "torch.distributed's store")
      ->check(CLI::Validator(
          [](std::string& endpoint) -> std::string {
            return "'" + endpoint +
                   "': this command cannot register in torch.distributed's "
                   "store (the C++ core does not speak c10d's protocol, which changes with "
                   "torch's version); run the same server from the Python package: python -m "
                   "volley serve DATASET --part N|auto --rendezvous " +
                   endpoint + " (python -m volley serve --help), or give this command --peers";
          },
          "HOST:PORT"));
}

}  // namespace

void add_serve_command(CLI::App& app, GlobalOptions& /*global*/) {
  auto arguments = std::make_shared<ServeArguments>();
  auto* command = app.add_subcommand(
      "serve",
      "Serve one partition of a partitioned dataset (homogeneous or heterogeneous) over gRPC "
      "(until SIGINT/SIGTERM)");
  command->add_option("dataset", arguments->directory, "Partitioned dataset directory")->required();
  add_rendezvous_refusal(*command);  // before --part, so that `--part auto` gets its message
  command->add_option("-p,--part", arguments->part, "The partition to serve")
      ->required()
      ->check(kNonNegative);
  command
      ->add_option("--listen", arguments->listen,
                   "HOST:PORT to listen on (port 0: any free port; 0.0.0.0 for all interfaces)")
      ->check(
          CLI::Validator([](std::string& address) { return listen_problem(address); }, "HOST:PORT"))
      ->capture_default_str();
  command->add_option("--token-file", arguments->token_file,
                      "File whose first line is the access token every call must carry "
                      "(default: none, unauthenticated)");
  command->add_option("--threads", arguments->threads, "RPC handler threads at most (0: default)")
      ->check(kNonNegative);
  command
      ->add_option("--max-epoch-streams", arguments->max_epoch_streams,
                   "Server-client epoch streams open at once; one more is refused as busy (0: "
                   "4 x threads). A paused stream holds no thread, only its prefetched batches")
      ->check(kNonNegative);
  command->add_option("--peers", arguments->peers,
                      "Every partition's server address in part order, comma separated (this "
                      "one's may be empty; a part's replicas as host:port|host:port), for "
                      "server-client mode");
  command->add_option("--deadline", arguments->deadline, "Seconds per call to peers")
      ->check(kPositiveSeconds)
      ->capture_default_str();
  command
      ->add_option("--tls-cert", arguments->tls_cert,
                   "Serve over TLS with this certificate (PEM; with --tls-key)")
      ->check(CLI::ExistingFile);
  command->add_option("--tls-key", arguments->tls_key, "The private key of --tls-cert (PEM)")
      ->check(CLI::ExistingFile);
  command
      ->add_option("--tls-client-ca", arguments->tls_client_ca,
                   "Mutual TLS: clients must present a certificate signed by this CA (PEM); "
                   "calls to --peers verify them against it and present --tls-cert")
      ->check(CLI::ExistingFile);
  command
      ->add_option("--peer-tls-ca", arguments->peer_tls_ca,
                   "Call --peers over TLS, verifying them against this CA (PEM; default: "
                   "--tls-client-ca when given, else plaintext)")
      ->check(CLI::ExistingFile);
  command
      ->add_option("--max-reply-bytes", arguments->max_reply_bytes,
                   "Largest reply message (0: 64 MiB); clients split their calls under it")
      ->check(kNonNegative);
  command
      ->add_option("--max-ids-per-call", arguments->max_ids_per_call,
                   "Most ids one request may list (0: 8,388,608)")
      ->check(kNonNegative);
  command
      ->add_option("--max-node-data-bytes", arguments->max_node_data_bytes,
                   "Bytes of node tables (volley.NodeStore(servers=...)) held at once (0: half "
                   "the machine's memory)")
      ->check(kNonNegative);
  command->add_option("--grace", arguments->grace, "Seconds calls in flight get at shutdown")
      ->check(kNonNegativeSeconds)
      ->capture_default_str();
  command->callback([arguments] {
#ifdef VOLLEY_WITH_DIST
    serve(*arguments);
#else
    throw RuntimeError(kNoDistService);
#endif
  });
}

}  // namespace volley::cli
