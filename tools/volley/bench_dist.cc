// `volley bench dist (--dataset DIR | --generate powerlaw --nodes N --edges E [--seed S])
//   [--threads T] [--concurrency C] [--server-threads H] [--batches B] [--fanout 15,10,5]
//   [--batch-size 1024] [--check-batches K] [--json]`
//
// Sampled edges per second (SEPS) of the distributed sampler (volley/dist) against the local
// sampler, in one run on one machine: the dataset is partitioned (random method) into 1 and 2
// parts in a temporary directory (removed after), servers run in this process on loopback, and
// every row samples the same seeds with the same options:
//   local              sample_neighbors over the whole graph, T threads;
//   dist 1 part        worker (held in-process: the DistGraph path without RPC) and client
//                      (the one part remote);
//   dist 2 parts       worker (part 0 in-process, part 1 remote) and client (both remote).
// Dist rows run at loader concurrency T (the same thread count as local) and C (more batches in
// flight: RPC waits cost no CPU); servers have H handler threads each. Every thread, client and
// servers alike, shares this machine's cores. Each row reports wall-clock SEPS and SEPS per
// CPU-second of the whole process (servers included), which other jobs on a shared machine do
// not distort. Before timing, the first K batches of every dist mode are compared with
// sample_neighbors on the whole graph in the same numbering (nodes, edges, edge ids, per-hop
// counts): a mismatch is an error. Results of a products-sized run: bench/RESULTS.md.
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <mutex>
#include <numeric>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench_util.h"
#include "commands.h"
#include "volley/core/error.h"

#ifdef VOLLEY_WITH_DIST
#include <sys/resource.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "text.h"
#include "volley/core/parallel.h"
#include "volley/core/progress.h"
#include "volley/dist/client.h"
#include "volley/dist/server.h"
#include "volley/graph/generate.h"
#include "volley/loader/batch_source.h"
#include "volley/loader/neighbor_loader.h"
#include "volley/partition/partition.h"
#include "volley/sampling/neighbor_sampler.h"
#endif

namespace volley::cli {
namespace {

struct DistSettings {
  std::string dataset;
  std::string generate;  // graph model; "" = use --dataset
  int64_t nodes = 0;
  int64_t edges = 0;
  uint64_t seed = 0;
  std::string fanout = "15,10,5";
  int64_t batch_size = 1024;
  int threads = 0;      // local sampler threads; 0 = hardware threads
  int concurrency = 0;  // dist batches in flight, second setting; 0 = 4 × threads
  int server_threads = 0;
  int64_t batches = 40;
  int64_t check_batches = 3;
  bool json = false;
  // TLS on the loopback servers (--tls-cert/--tls-key) and the clients' CA (--tls-ca): the cost
  // of encryption in the same run.
  std::string tls_cert;
  std::string tls_key;
  std::string tls_ca;
};

#ifdef VOLLEY_WITH_DIST

namespace fs = std::filesystem;
// A temporary directory, removed with everything in it when the bench ends (also on error).
class ScratchDirectory {
 public:
  ScratchDirectory() {
    std::string pattern = (fs::temp_directory_path() / "volley-bench-dist-XXXXXX").string();
    VOLLEY_REQUIRE(mkdtemp(pattern.data()) != nullptr, IoError,
                   "cannot create a temporary directory {}: {}", pattern, std::strerror(errno));
    path_ = pattern;
  }
  ~ScratchDirectory() {
    std::error_code ignored;
    fs::remove_all(path_, ignored);
  }
  std::string operator/(const std::string& name) const { return (path_ / name).string(); }

 private:
  fs::path path_;
};

// The whole renumbered graph of a partitioned dataset: the parts' rows in part order (parts hold
// their rows in new-id order, neighbors as new global ids), edge ids and weights alongside.
Csr whole_renumbered_graph(const std::string& directory) {
  const PartitionManifest manifest = read_partition_manifest(directory);
  const int64_t num_parts = manifest.book.num_parts();
  std::vector<Partition> parts;
  bool narrow = true, weighted = false;
  for (int64_t p = 0; p < num_parts; ++p) {
    parts.push_back(load_partition(directory, p, {.validate_graph = false}));
    narrow = narrow && parts.back().data.graph.index_dtype() == DType::kInt32;
    weighted = parts.back().data.graph.has_weights();
  }
  const int64_t n = manifest.num_nodes, e = manifest.num_edges;
  Array indptr = Array::empty(DType::kInt64, {n + 1});
  Array indices = Array::empty(narrow ? DType::kInt32 : DType::kInt64, {e});
  Array edge_ids = Array::empty(DType::kInt64, {e});
  std::optional<Array> weights;
  if (weighted) weights = Array::empty(DType::kFloat32, {e});
  int64_t row = 0, edge = 0;
  indptr.data<int64_t>()[0] = 0;
  for (const Partition& part : parts) {
    const Csr& graph = part.data.graph;
    const int64_t* part_indptr = graph.indptr().data<int64_t>();
    for (int64_t r = 0; r < graph.num_nodes(); ++r) {
      indptr.data<int64_t>()[row + r + 1] = edge + part_indptr[r + 1];
    }
    for (int64_t k = 0; k < graph.num_edges(); ++k) {
      if (narrow) {
        indices.data<int32_t>()[edge + k] = static_cast<int32_t>(graph.neighbor(k));
      } else {
        indices.data<int64_t>()[edge + k] = graph.neighbor(k);
      }
      edge_ids.data<int64_t>()[edge + k] = graph.edge_id(k);
    }
    if (weighted) {
      std::memcpy(weights->data<float>() + edge, graph.weights()->raw_data(),
                  graph.weights()->nbytes());
    }
    row += graph.num_nodes();
    edge += graph.num_edges();
  }
  VOLLEY_ASSERT(row == n && edge == e);
  return Csr::from_arrays(indptr, indices, edge_ids, weights, Orientation::kIn, false);
}

std::vector<int64_t> renumbered(const std::vector<int64_t>& old_ids, const Array& node_map) {
  std::vector<int64_t> ids(old_ids.size());
  for (size_t i = 0; i < ids.size(); ++i) ids[i] = node_map.data<int64_t>()[old_ids[i]];
  return ids;
}

struct Seeds {
  std::vector<int64_t> ids;
  int64_t batch_size = 0;
  int64_t available = 0;  // whole batches in `ids`
  std::span<const int64_t> batch(int64_t b) const {
    return {ids.data() + (b % available) * batch_size, static_cast<size_t>(batch_size)};
  }
};

// Batches [first, first + count) sampled from `source` by `threads` threads, each taking whole
// batches (what the loader's workers do).
SampleFigures run_source_batches(const BatchSource& source, const Seeds& seeds,
                                 const NeighborSamplerOptions& options, int64_t first,
                                 int64_t count, int threads, ProgressBar* bar) {
  return run_batches<SampledSubgraph>(threads, count, [&](int64_t i, SampledSubgraph& subgraph) {
    const int64_t b = first + i;
    source.sample(seeds.batch(b), options, static_cast<uint64_t>(b), subgraph);
    if (bar) bar->advance();
    return std::pair{subgraph.num_edges(), subgraph.num_nodes()};
  });
}

// The first `count` batches from `dist` must equal sample_neighbors on `whole`.
void check_equal(const std::string& mode, const BatchSource& dist, const Csr& whole,
                 const Seeds& seeds, const NeighborSamplerOptions& options, int64_t count) {
  SamplerScratch scratch;
  SampledSubgraph got;
  for (int64_t b = 0; b < count; ++b) {
    const SampledSubgraph want =
        sample_neighbors(whole, seeds.batch(b), options, static_cast<uint64_t>(b), &scratch);
    dist.sample(seeds.batch(b), options, static_cast<uint64_t>(b), got);
    auto compare = [&](const char* field, const std::vector<int64_t>& a,
                       const std::vector<int64_t>& w) {
      if (a == w) return;
      size_t i = 0;
      while (i < a.size() && i < w.size() && a[i] == w[i]) ++i;
      throw RuntimeError(fmt::format(
          "{}: batch {} differs from local sampling: {} has {} entries (local {}), first "
          "difference at {}: {} (local {})",
          mode, b, field, a.size(), w.size(), i, i < a.size() ? std::to_string(a[i]) : "none",
          i < w.size() ? std::to_string(w[i]) : "none"));
    };
    compare("nodes", got.nodes.to_vector<int64_t>(), want.nodes.to_vector<int64_t>());
    compare("rows", got.rows.to_vector<int64_t>(), want.rows.to_vector<int64_t>());
    compare("cols", got.cols.to_vector<int64_t>(), want.cols.to_vector<int64_t>());
    compare("edge_ids", got.edge_ids.to_vector<int64_t>(), want.edge_ids.to_vector<int64_t>());
    compare("nodes_per_hop", got.nodes_per_hop, want.nodes_per_hop);
    compare("edges_per_hop", got.edges_per_hop, want.edges_per_hop);
  }
}

struct Row {
  std::string mode;
  int64_t parts = 0;
  int64_t remote_parts = 0;
  int loader_threads = 0;
  std::string server_threads;  // per server
  SampleFigures figures;
};

// Where the bench's dataset is: --dataset, or one generated into `scratch` (--generate).
std::string bench_source(const DistSettings& settings, const ScratchDirectory& scratch) {
  std::string source = settings.dataset;
  if (!settings.generate.empty()) {
    VOLLEY_REQUIRE(settings.dataset.empty(), ValueError, "give --dataset or --generate, not both");
    GeneratorOptions generator{.model = graph_model_from_name(settings.generate),
                               .num_nodes = settings.nodes,
                               .num_edges = settings.edges,
                               .feature_dim = 0,
                               .num_classes = 47,
                               .seed = settings.seed};
    source = scratch / "source";
    std::fprintf(stderr, "bench dist: generating %s\n", default_dataset_name(generator).c_str());
    generate_dataset(generator, source);
  }
  VOLLEY_REQUIRE(!source.empty(), ValueError, "give --dataset DIR or --generate MODEL");
  return source;
}

// What the report says besides the rows.
struct Report {
  const Dataset& dataset;
  const DistSettings& settings;
  int64_t check = 0;
  int hardware = 0;
  std::string load_before, load_after;
};

void print_json(const std::vector<Row>& rows, const Report& report) {
  const Dataset& dataset = report.dataset;
  const DistSettings& settings = report.settings;
  const int64_t check = report.check;
  const int hardware = report.hardware;
  const std::string& load_after = report.load_after;
  const SampleFigures& local_figures = rows.front().figures;
  for (const Row& row : rows) {
    std::cout << nlohmann::json{{"bench", "dist"},
                                {"dataset", dataset.name},
                                {"mode", row.mode},
                                {"parts", row.parts},
                                {"remote_parts", row.remote_parts},
                                {"loader_threads", row.loader_threads},
                                {"server_threads", row.server_threads},
                                {"batches", settings.batches},
                                {"batch_size", settings.batch_size},
                                {"fanout", settings.fanout},
                                {"sampled_edges", row.figures.edges},
                                {"seconds", row.figures.seconds},
                                {"cpu_seconds", row.figures.cpu_seconds},
                                {"seps", row.figures.seps()},
                                {"ratio_to_local", row.figures.seps() / local_figures.seps()},
                                {"seps_per_cpu_second", row.figures.seps_per_cpu()},
                                {"ratio_to_local_per_cpu_second",
                                 row.figures.seps_per_cpu() / local_figures.seps_per_cpu()},
                                {"checked_batches", check},
                                {"hardware_threads", hardware},
                                {"load_average", load_after}}
                     .dump()
              << std::endl;
  }
}

void print_table(const std::vector<Row>& rows, const Report& report) {
  const Dataset& dataset = report.dataset;
  const DistSettings& settings = report.settings;
  const SampleFigures& local_figures = rows.front().figures;
  const int hardware = report.hardware;
  std::printf(
      "bench dist: %s, %s nodes, %s edges; %lld batches of %lld seeds, fanout %s; %d hardware "
      "threads; load average %s (before) / %s (after)\n",
      dataset.name.c_str(), grouped(dataset.graph.num_nodes()).c_str(),
      grouped(dataset.graph.num_edges()).c_str(), static_cast<long long>(settings.batches),
      static_cast<long long>(settings.batch_size), settings.fanout.c_str(), hardware,
      report.load_before.c_str(), report.load_after.c_str());
  std::printf("check: the first %lld batches of every dist mode equal local sampling: ok\n",
              static_cast<long long>(report.check));
  std::printf("%-12s %5s %6s %7s %7s %10s %8s %9s %14s %8s\n", "mode", "parts", "remote", "loader",
              "server", "SEPS", "vs local", "CPU used", "SEPS per CPU", "vs local");
  std::printf("%-12s %5s %6s %7s %7s %10s %8s %9s %14s %8s\n", "", "", "", "threads", "threads", "",
              "", "(cores)", "second", "");
  for (const Row& row : rows) {
    const SampleFigures& f = row.figures;
    std::printf("%-12s %5lld %6lld %7d %7s %9.2fM %8.3f %9.2f %13.2fM %8.3f\n", row.mode.c_str(),
                static_cast<long long>(row.parts), static_cast<long long>(row.remote_parts),
                row.loader_threads, row.server_threads.c_str(), f.seps() / 1e6,
                f.seps() / local_figures.seps(), f.cpu_seconds / f.seconds, f.seps_per_cpu() / 1e6,
                f.seps_per_cpu() / local_figures.seps_per_cpu());
  }
  std::printf(
      "loader threads: batches sampled at once (local: sampler threads; dist: batches in flight, "
      "each waiting on its RPCs); server threads: RPC handler threads per server (default: the "
      "server's own cap). Servers run in this process and share its %d hardware threads. CPU "
      "used: process CPU time / wall time; SEPS per CPU second: sampled edges / process CPU "
      "time (servers included), the figure that does not depend on other jobs' load.\n",
      hardware);
}

// One way to sample the bench's batches, checked and timed.
struct Mode {
  std::string name;
  int64_t parts;
  int64_t remote_parts;
  std::shared_ptr<const BatchSource> source;
  const Csr* whole;
  const Seeds* seeds;
};

// The timed rows: local sampling, then every mode at `threads` and `concurrency` loader threads.
// Each row first samples a few untimed batches (page cache, connections, pools).
std::vector<Row> timed_rows(const DistSettings& settings, const NeighborSamplerOptions& options,
                            const BatchSource& local, const Seeds& local_seeds,
                            const std::vector<Mode>& modes, int threads, int concurrency) {
  const int64_t warm = std::min<int64_t>(4, settings.batches);
  const std::string server_threads =
      settings.server_threads > 0 ? std::to_string(settings.server_threads) : "default";
  std::vector<Row> rows;
  auto measure = [&](Row row, const BatchSource& source, const Seeds& seeds) {
    ProgressBar bar(fmt::format("{} ({}p, {} thr)", row.mode, row.parts, row.loader_threads),
                    warm + settings.batches);
    run_source_batches(source, seeds, options, settings.batches, warm, row.loader_threads, &bar);
    row.figures =
        run_source_batches(source, seeds, options, 0, settings.batches, row.loader_threads, &bar);
    bar.finish();
    rows.push_back(row);
  };
  measure({"local", 2, 0, threads, "-", {}}, local, local_seeds);
  std::vector<int> loader_threads = {threads};
  if (concurrency != threads) loader_threads.push_back(concurrency);
  for (const Mode& mode : modes) {
    for (const int t : loader_threads) {
      measure({mode.name,
               mode.parts,
               mode.remote_parts,
               t,
               mode.remote_parts == 0 ? "-" : server_threads,
               {}},
              *mode.source, *mode.seeds);
    }
  }

  return rows;
}

void bench_dist(const DistSettings& settings) {
  const int hardware = default_num_threads();
  const int threads = settings.threads > 0 ? settings.threads : hardware;
  const int concurrency = settings.concurrency > 0 ? settings.concurrency : 4 * threads;
  const std::string load_before = load_average().text();
  const ScratchDirectory scratch;

  const std::string source = bench_source(settings, scratch);
  const Dataset dataset = load_dataset(source, {.validate_graph = false});
  const std::vector<int64_t> old_seeds = bench_seed_pool(dataset, settings.seed);
  const int64_t available = static_cast<int64_t>(old_seeds.size()) / settings.batch_size;
  VOLLEY_REQUIRE(available >= 1, ValueError, "--batch-size {} exceeds the {} seeds available",
                 settings.batch_size, old_seeds.size());

  // Partitioned into 1 and 2 parts (random: balanced, the worst case for remote reads).
  const std::string one = scratch / "one-part", two = scratch / "two-parts";
  for (const auto& [directory, parts] : {std::pair{one, 1}, std::pair{two, 2}}) {
    std::fprintf(stderr, "bench dist: partitioning into %d part%s\n", parts, parts == 1 ? "" : "s");
    partition_dataset(
        dataset, directory,
        {.method = PartitionMethod::kRandom, .num_parts = parts, .seed = settings.seed});
  }
  std::fprintf(stderr, "bench dist: building the whole renumbered graphs\n");
  const Csr whole_one = whole_renumbered_graph(one);
  const Csr whole_two = whole_renumbered_graph(two);
  const Seeds seeds_one{renumbered(old_seeds, load_node_map(one)), settings.batch_size, available};
  const Seeds seeds_two{renumbered(old_seeds, load_node_map(two)), settings.batch_size, available};

  NeighborSamplerOptions options{.fanouts = parse_fanouts(settings.fanout), .seed = settings.seed};
  validate_sampler_options(whole_two, options);

  // Servers on loopback, in this process.
  dist::ServerOptions server_options{.threads = settings.server_threads};
  server_options.tls = {"", settings.tls_cert, settings.tls_key};
  dist::Server server_one(one, 0, server_options);
  dist::Server server_two_0(two, 0, server_options);
  dist::Server server_two_1(two, 1, server_options);
  const dist::ClientOptions client{
      .tls = {settings.tls_ca, "", ""}, .deadline_seconds = 60.0, .connect_seconds = 10.0};
  std::vector<Mode> modes;
  modes.push_back({"dist worker", 1, 0,
                   dist::DistGraph::connect({server_one.address()}, client, server_one.partition(),
                                            server_one.fingerprint()),
                   &whole_one, &seeds_one});
  modes.push_back({"dist client", 1, 1, dist::DistGraph::connect({server_one.address()}, client),
                   &whole_one, &seeds_one});
  modes.push_back(
      {"dist worker", 2, 1,
       dist::DistGraph::connect({server_two_0.address(), server_two_1.address()}, client,
                                server_two_0.partition(), server_two_0.fingerprint()),
       &whole_two, &seeds_two});
  modes.push_back(
      {"dist client", 2, 2,
       dist::DistGraph::connect({server_two_0.address(), server_two_1.address()}, client),
       &whole_two, &seeds_two});

  // Correctness first: dist batches equal local ones.
  const int64_t check = std::min(settings.check_batches, settings.batches);
  for (const Mode& mode : modes) {
    check_equal(fmt::format("{} ({} part{})", mode.name, mode.parts, mode.parts == 1 ? "" : "s"),
                *mode.source, *mode.whole, *mode.seeds, options, check);
  }

  // Timed rows.
  const LocalBatchSource local(whole_two, std::nullopt, std::nullopt);
  const std::vector<Row> rows =
      timed_rows(settings, options, local, seeds_two, modes, threads, concurrency);

  // Report.
  const Report report{dataset, settings, check, hardware, load_before, load_average().text()};
  if (settings.json) {
    print_json(rows, report);
  } else {
    print_table(rows, report);
  }
}

#endif  // VOLLEY_WITH_DIST

}  // namespace

void add_bench_dist(CLI::App& bench) {
  static DistSettings settings;
  auto* command = bench.add_subcommand(
      "dist",
      "SEPS of the distributed sampler (1 and 2 partitions, servers in-process on loopback) "
      "against the local sampler in the same run");
  command->add_option("--dataset", settings.dataset, "Dataset directory");
  command->add_option("--generate", settings.generate, "Generate a graph instead: powerlaw|rmat")
      ->check(CLI::IsMember({"powerlaw", "rmat"}));
  command->add_option("--nodes", settings.nodes, "Nodes of the generated graph")->check(kPositive);
  command->add_option("--edges", settings.edges, "Edges of the generated graph")
      ->check(kNonNegative);
  command->add_option("--seed", settings.seed, "Random seed (graph, partitions, seeds, sampler)")
      ->check(kSeed);
  command->add_option("--fanout", settings.fanout, "Fanouts per hop, comma separated")
      ->capture_default_str();
  command->add_option("--batch-size", settings.batch_size, "Seeds per batch")
      ->check(kPositive)
      ->capture_default_str();
  command
      ->add_option("--threads", settings.threads,
                   "Local sampler threads, and the first dist concurrency (0: hardware)")
      ->check(kNonNegative);
  command
      ->add_option("--concurrency", settings.concurrency,
                   "Second dist setting: batches in flight (0: 4 x threads)")
      ->check(kNonNegative);
  command
      ->add_option("--server-threads", settings.server_threads,
                   "RPC handler threads per server (0: the server's default)")
      ->check(kNonNegative);
  command->add_option("--batches", settings.batches, "Timed batches per row")
      ->check(kPositive)
      ->capture_default_str();
  command
      ->add_option("--check-batches", settings.check_batches,
                   "Batches compared with local sampling first")
      ->check(kNonNegative)
      ->capture_default_str();
  command->add_flag("--json", settings.json, "One JSON line per row instead of the table");
  command
      ->add_option("--tls-cert", settings.tls_cert, "Servers use TLS with this certificate (PEM)")
      ->check(CLI::ExistingFile);
  command->add_option("--tls-key", settings.tls_key, "The certificate's private key (PEM)")
      ->check(CLI::ExistingFile);
  command->add_option("--tls-ca", settings.tls_ca, "Clients verify the servers against this CA")
      ->check(CLI::ExistingFile);
  command->callback([] {
#ifdef VOLLEY_WITH_DIST
    VOLLEY_REQUIRE(settings.tls_cert.empty() == settings.tls_key.empty() &&
                       settings.tls_cert.empty() == settings.tls_ca.empty(),
                   ValueError,
                   "TLS needs --tls-cert, --tls-key and --tls-ca together, got certificate '{}', "
                   "key '{}', CA '{}'",
                   settings.tls_cert, settings.tls_key, settings.tls_ca);
    VOLLEY_REQUIRE(settings.generate.empty() || (settings.nodes > 0), ValueError,
                   "--generate needs --nodes and --edges");
    bench_dist(settings);
#else
    throw RuntimeError(kNoDistService);
#endif
  });
}

}  // namespace volley::cli
