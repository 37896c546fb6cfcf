// python/src/bind_feature.cc — FeatureStore and hotness orders (python/volley/feature.py wraps
// them as volley.Feature).
//
// Inputs are borrowed zero-copy (the store keeps the Python object alive); gathered rows come
// back as new arrays, or are written into a caller's writable C-contiguous CPU array (`out=`).
// A store in GPU tiers gathers on its device into a new device array, ready in the order of
// the caller's stream and freed in that order (see bind_cuda.cc). Every gather and build runs
// without the GIL.
#include <string>
#include <utility>
#include <vector>

#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "bindings.h"
#include "volley/feature/feature_store.h"
#include "volley/feature/hotness.h"
#include "volley/graph/dataset.h"
#include "volley/graph/hetero_dataset.h"
#include "volley/loader/cuda_loader.h"  // gather_to_device

namespace volley::python {
namespace {

using OutputArray = nb::ndarray<nb::c_contig>;

Array ids_array(const InputArray& ids) {
  Array array = array_from_python(ids, "ids");
  VOLLEY_REQUIRE(array.ndim() == 1 && array.dtype() == DType::kInt64, ValueError,
                 "ids must be a 1-d int64 array, got {}", array.describe());
  VOLLEY_REQUIRE(array.buffer().host_accessible(), ValueError,
                 "ids must be in host memory for the CPU gather, got {} memory",
                 location_name(array.buffer().location()));
  return array;
}

// Whether a DLPack dtype is `dtype`.
bool same_dtype(nb::dlpack::dtype given, DType dtype) {
  using Code = nb::dlpack::dtype_code;
  const auto code = static_cast<Code>(given.code);
  if (given.lanes != 1 || given.bits != dtype_size(dtype) * 8) return false;
  switch (dtype) {
    case DType::kBool:
      return code == Code::Bool;
    case DType::kUInt8:
      return code == Code::UInt;
    case DType::kInt8:
    case DType::kInt16:
    case DType::kInt32:
    case DType::kInt64:
      return code == Code::Int;
    case DType::kFloat16:
    case DType::kFloat32:
    case DType::kFloat64:
      return code == Code::Float;
    case DType::kBFloat16:
      return code == Code::Bfloat;
  }
  return false;
}

Location parse_location(const std::string& name) {
  if (name == "host") return Location::kHost;
  if (name == "shared" || name == "shared_memory") return Location::kSharedMemory;
  if (name == "cuda") return Location::kCuda;
  if (name == "pinned" || name == "pinned_host") return Location::kPinnedHost;
  throw ValueError(fmt::format(
      "a cache tier lives in \"host\", \"shared\", \"cuda\" or \"pinned_host\" memory, got "
      "\"{}\"",
      name));
}

FeatureStoreOptions store_options(const std::vector<std::pair<std::string, int64_t>>& tiers,
                                  const std::optional<InputArray>& hot_order, int device = 0,
                                  const std::vector<int>& devices = {}) {
  FeatureStoreOptions options;
  for (const auto& [location, budget] : tiers) {
    const Location where = parse_location(location);
    options.tiers.push_back({.location = where,
                             .byte_budget = budget < 0 ? Buffer::npos : static_cast<size_t>(budget),
                             .device = device,
                             .devices = where == Location::kCuda ? devices : std::vector<int>()});
  }
  options.hot_order = array_from_python(hot_order, "hot_order");
  return options;
}

CachePolicy parse_policy(const std::string& name) {
  if (name == "static") return CachePolicy::kStatic;
  if (name == "dynamic" || name == "sieve") return CachePolicy::kDynamic;
  if (name == "lookahead") return CachePolicy::kLookahead;
  throw ValueError(fmt::format(
      "a row-cache policy is \"static\" (hottest rows), \"dynamic\" (SIEVE) or \"lookahead\", "
      "got \"{}\"",
      name));
}

// from_npy's disk-tier options: cache_bytes < 0 = the default; disk None = automatic.
void disk_options(FeatureStoreOptions& options, int64_t cache_bytes, const std::string& policy,
                  std::optional<bool> disk, bool io_uring, bool read_ahead = false) {
  options.read_ahead = read_ahead;
  options.cache_bytes = cache_bytes < 0 ? Buffer::npos : static_cast<size_t>(cache_bytes);
  options.cache_policy = parse_policy(policy);
  options.source_reads = !disk   ? SourceReads::kAuto
                         : *disk ? SourceReads::kDisk
                                 : SourceReads::kMapped;
  options.allow_io_uring = io_uring;
}

// FeatureStore.gather: see its docstring below.
nb::object gather_rows(const FeatureStore& store, const InputArray& ids,
                       const std::optional<std::string>& dtype, std::optional<OutputArray> out,
                       int threads, uintptr_t stream) {
  if (store.on_cuda()) {
    VOLLEY_REQUIRE(!out && !dtype, ValueError,
                   "a feature store in GPU tiers gathers its stored dtype into a new "
                   "device array: pass neither dtype nor out");
    const Array id_array = array_from_python(ids, "ids");
    Array rows;
    {
      nb::gil_scoped_release release;
      rows = gather_to_device(store, id_array, reinterpret_cast<void*>(stream));
    }
    return array_to_python(rows);
  }
  const Array id_array = ids_array(ids);
  GatherOptions options;
  if (dtype) options.out_dtype = dtype_from_name(*dtype);
  options.threads = threads;
  const DType out_dtype = options.out_dtype.value_or(store.dtype());
  if (!out) {
    Array result;
    {
      nb::gil_scoped_release release;
      result = store.gather(id_array.span<int64_t>(), options);
    }
    return array_to_python(result);
  }
  const size_t expected =
      static_cast<size_t>(id_array.numel()) * static_cast<size_t>(store.width());
  VOLLEY_REQUIRE(out->device_type() == nb::device::cpu::value, ValueError,
                 "out must be a CPU array");
  VOLLEY_REQUIRE(same_dtype(out->dtype(), out_dtype) && out->size() == expected, ValueError,
                 "out must be a contiguous {} array of {} elements ({} ids × {} "
                 "columns), got {} elements of another shape or dtype",
                 dtype_name(out_dtype), expected, id_array.numel(), store.width(), out->size());
  auto* destination = static_cast<std::byte*>(out->data());
  {
    nb::gil_scoped_release release;
    store.gather(id_array.span<int64_t>(), destination, options);
  }
  return nb::none();
}

using Tiers = std::vector<std::pair<std::string, int64_t>>;
using StoreClass = nb::class_<FeatureStore>;

void bind_store_construction(StoreClass& store) {
  store
      .def(
          "__init__",
          [](FeatureStore* self, const InputArray& matrix) {
            Array array = array_from_python(matrix, "features");
            new (self) FeatureStore(std::move(array));
          },
          nb::arg("matrix"), "One tier over the array as it is (zero-copy).")
      .def_static(
          "build",
          [](const InputArray& matrix, const Tiers& tiers,
             const std::optional<InputArray>& hot_order, int device,
             const std::vector<int>& devices) {
            Array array = array_from_python(matrix, "features");
            FeatureStoreOptions options = store_options(tiers, hot_order, device, devices);
            nb::gil_scoped_release release;
            return FeatureStore::build(array, options);
          },
          nb::arg("matrix"), nb::arg("tiers"), nb::arg("hot_order").none() = nb::none(),
          nb::arg("device") = 0, nb::arg("devices") = std::vector<int>(),
          "Hottest rows into cache tiers [(location, byte_budget or -1), ...]; the rest stay in "
          "`matrix`. GPU tiers: [(\"cuda\", bytes)] on CUDA device `device`, the rest pinned; "
          "with `devices`, a cache of `bytes` per device sharded over their peer-access cliques "
          "(the first device gathers).")
      .def_static(
          "from_npy",
          [](const std::string& path, const Tiers& tiers,
             const std::optional<InputArray>& hot_order, int64_t cache_bytes,
             const std::string& policy, std::optional<bool> disk, bool io_uring, bool read_ahead,
             int device, const std::vector<int>& devices) {
            FeatureStoreOptions options = store_options(tiers, hot_order, device, devices);
            disk_options(options, cache_bytes, policy, disk, io_uring, read_ahead);
            nb::gil_scoped_release release;
            return FeatureStore::from_npy(path, options);
          },
          nb::arg("path"), nb::arg("tiers") = Tiers(), nb::arg("hot_order").none() = nb::none(),
          nb::arg("cache_bytes") = -1, nb::arg("policy") = "dynamic",
          nb::arg("disk").none() = nb::none(), nb::arg("io_uring") = true,
          nb::arg("read_ahead") = false, nb::arg("device") = 0,
          nb::arg("devices") = std::vector<int>(),
          "Maps an .npy file read-only (nothing read up front), optionally with cache tiers. "
          "disk: None picks the disk tier for a file larger than half the RAM, True / False "
          "force it; cache_bytes (-1: a quarter of the RAM) and policy (\"static\", "
          "\"dynamic\" or \"lookahead\") size the row cache; io_uring=False reads with pread; "
          "read_ahead (policy \"lookahead\") reads announced batches' rows ahead. GPU tiers "
          "([(\"cuda\", bytes)], `device`, `devices` as for build): the rows no device caches "
          "stay in the file, read through the disk tier, when `disk` picks it; else pinned.")
      .def_static(
          "create_shared",
          [](const InputArray& matrix, const std::string& name) {
            Array array = array_from_python(matrix, "features");
            nb::gil_scoped_release release;
            return FeatureStore::create_shared(array, name);
          },
          nb::arg("matrix"), nb::arg("name") = "",
          "Copies the matrix into a new shared-memory segment other processes can attach to.")
      .def_static("attach_shared", &FeatureStore::attach_shared, nb::arg("name"),
                  nb::call_guard<nb::gil_scoped_release>(),
                  "Attaches to a segment made by create_shared (any process).");
}

void bind_store_properties(StoreClass& store) {
  store.def_prop_ro("num_rows", &FeatureStore::num_rows)
      .def_prop_ro("width", &FeatureStore::width)
      .def_prop_ro("ndim", &FeatureStore::ndim)
      .def_prop_ro("dtype",
                   [](const FeatureStore& self) { return std::string(dtype_name(self.dtype())); })
      .def_prop_ro("has_lookup", &FeatureStore::has_lookup)
      .def_prop_ro("on_cuda", &FeatureStore::on_cuda)
      .def_prop_ro("device", &FeatureStore::device)
      .def_prop_ro("devices", &FeatureStore::devices,
                   "Every CUDA device that holds a shard of the device cache (first: gathers).")
      .def("describe", &FeatureStore::describe)
      .def_prop_ro("disk_io", &FeatureStore::disk_io,
                   "How the disk tier reads (\"io_uring, O_DIRECT, ...\"); \"\" without one.")
      .def_prop_ro(
          "disk_stats",
          [](const FeatureStore& self) {
            const FeatureStore::DiskStats stats = self.disk_stats();
            return std::make_pair(stats.hits, stats.misses);
          },
          "(rows served from memory, rows a gather read from the disk) by the disk tier so far.")
      .def_prop_ro(
          "rows_read_ahead", [](const FeatureStore& self) { return self.disk_stats().read_ahead; },
          "Rows read into the lookahead cache ahead of their batch (read_ahead=True) so far.")
      .def_prop_ro("shared_name", &FeatureStore::shared_name)
      .def_prop_ro("shareable", &FeatureStore::shareable,
                   "A GPU store whose arrays other processes open by handle.")
      .def("to_shareable", &FeatureStore::to_shareable, nb::call_guard<nb::gil_scoped_release>(),
           "This GPU store with every array in shareable memory (copied once if not).")
      .def_prop_ro(
          "tiers",
          [](const FeatureStore& self) {
            nb::list tiers;
            for (const Tier& tier : self.tiers()) {
              nb::dict entry;
              entry["location"] = std::string(location_name(tier.location()));
              entry["rows"] = tier.num_slots();
              entry["nbytes"] = tier.nbytes();
              entry["shared_name"] = tier.rows().buffer().shared_name();
              entry["device"] = tier.rows().buffer().device();
              tiers.append(entry);
            }
            return tiers;
          },
          "One dict per tier, fastest first: location, rows, nbytes, shared_name, device (the "
          "CUDA ordinal of a cuda tier, else -1).")
      .def(
          "locate",
          [](const FeatureStore& self, int64_t id, int device) {
            const RowLocation where = self.locate(id, device);
            return std::make_pair(where.tier, where.slot);
          },
          nb::arg("id"), nb::arg("device") = -1,
          "(tier, slot) of row `id`; GPU stores: as a gather on `device` reads it (-1: the first "
          "device).");
}

void bind_hotness(nb::module_& m) {
  m.def(
      "hotness_by_degree",
      [](const Csr& graph) {
        Array order;
        {
          nb::gil_scoped_release release;
          order = hotness_by_degree(graph);
        }
        return array_to_python(order);
      },
      nb::arg("graph"), "Rows by in-degree, highest first (int64 [N]).");
  m.def(
      "hotness_by_sampling",
      [](const Csr& graph, const InputArray& seeds, std::vector<int64_t> fanouts,
         int64_t batch_size, int64_t max_batches, bool replace, bool weighted, uint64_t seed) {
        const Array seed_array = ids_array(seeds);
        Array order;
        {
          nb::gil_scoped_release release;
          order = hotness_by_sampling(graph, seed_array.span<int64_t>(),
                                      {std::move(fanouts), replace, weighted, seed}, batch_size,
                                      max_batches);
        }
        return array_to_python(order);
      },
      nb::arg("graph"), nb::arg("seeds"), nb::arg("fanouts"), nb::arg("batch_size"),
      nb::arg("max_batches") = 0, nb::arg("replace") = false, nb::arg("weighted") = false,
      nb::arg("seed") = 0,
      "Rows by how many batches of a simulated epoch sample them, most first (int64 [N]).");
}

void check_dataset_field(const std::string& field) {
  VOLLEY_REQUIRE(field == "features" || field == "labels", ValueError,
                 "dataset_store field must be \"features\" or \"labels\", got \"{}\"", field);
}

// A store over a dataset's array as it is, or with the disk tier and row cache asked for.
std::optional<FeatureStore> dataset_store(const std::optional<Array>& array, int64_t cache_bytes,
                                          const std::string& policy, std::optional<bool> disk) {
  if (!array) return std::nullopt;
  if (cache_bytes < 0 && policy == "dynamic" && !disk) return FeatureStore(*array);
  FeatureStoreOptions options;
  disk_options(options, cache_bytes, policy, disk, /*io_uring=*/true);
  nb::gil_scoped_release release;
  return FeatureStore::build(*array, options);
}

}  // namespace

void bind_feature(nb::module_& m) {
  StoreClass store(m, "FeatureStore",
                   "Rows of a matrix (or vector) in tiers, gathered by id (see "
                   "src/volley/feature/feature_store.h).");
  bind_store_construction(store);
  bind_store_properties(store);
  store
      .def("gather", &gather_rows, nb::arg("ids"), nb::arg("dtype").none() = nb::none(),
           nb::arg("out").none() = nb::none(), nb::arg("threads") = 0, nb::arg("stream") = 0,
           "Rows `ids` (int64) as a new array [n, D] (or [n]), or written into `out` (returns "
           "None). `dtype` converts on the way; threads=1 gathers on the calling thread. GPU "
           "stores: ids on the host or the device, rows as a new device array ready in `stream` "
           "order (an integer cudaStream_t).")
      .def("__repr__", [](const FeatureStore& self) {
        return "<volley FeatureStore " + self.describe() + ">";
      });
  m.def(
      "dataset_store",
      [](const Dataset& dataset, const std::string& field, int64_t cache_bytes,
         const std::string& policy, std::optional<bool> disk) -> std::optional<FeatureStore> {
        check_dataset_field(field);
        return dataset_store(field == "features" ? dataset.features : dataset.labels, cache_bytes,
                             policy, disk);
      },
      nb::arg("dataset"), nb::arg("field"), nb::arg("cache_bytes") = -1,
      nb::arg("policy") = "dynamic", nb::arg("disk").none() = nb::none(),
      "A store over a dataset's features or labels as they are (a mapped dataset stays mapped; "
      "one larger than half the RAM gets the disk tier), with the row cache of from_npy.");
  m.def(
      "dataset_store",
      [](const HeteroDataset& dataset, const std::string& field, const std::string& node_type,
         int64_t cache_bytes, const std::string& policy,
         std::optional<bool> disk) -> std::optional<FeatureStore> {
        check_dataset_field(field);
        const NodeTypeData& node = dataset.node(node_type);
        return dataset_store(field == "features" ? node.features : node.labels, cache_bytes, policy,
                             disk);
      },
      nb::arg("dataset"), nb::arg("field"), nb::arg("node_type"), nb::arg("cache_bytes") = -1,
      nb::arg("policy") = "dynamic", nb::arg("disk").none() = nb::none(),
      "The same for node type `node_type` of a typed dataset (ValueError naming an unknown type).");
  m.def("disk_io_support", &disk_io_support,
        "How this process reads a disk tier: \"io_uring\" or \"pread (io_uring refused: ...)\".");
  bind_hotness(m);
}

}  // namespace volley::python
