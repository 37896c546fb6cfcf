// The CUDA batch pipeline (every build; the CUDA calls are behind internal/device_memory.h and
// the CUDA sampler / gather front ends, which throw in a build without CUDA).
#include "volley/loader/cuda_loader.h"

#include <algorithm>

#include "volley/core/cuda_device.h"
#include "volley/core/error.h"
#include "volley/feature/gather.h"  // gather_supports
#include "volley/loader/internal/cuda_convert.h"
#include "volley/loader/internal/device_memory.h"

namespace volley {

using loader_internal::DeviceBlock;
using loader_internal::DeviceEvent;

namespace {

constexpr size_t kAlignment = 256;

size_t aligned(size_t bytes) { return (bytes + kAlignment - 1) / kAlignment * kAlignment; }

// Carves consecutive aligned pieces out of one block.
class Layout {
 public:
  size_t add(size_t bytes) {
    const size_t offset = size_;
    size_ += aligned(bytes);
    return offset;
  }
  size_t size() const { return size_; }

 private:
  size_t size_ = 0;
};

void check_store(const std::optional<FeatureStore>& store, const char* what,
                 const CudaGraph& graph) {
  if (!store) return;
  VOLLEY_REQUIRE(store->defined(), ValueError, "{} is an empty FeatureStore", what);
  VOLLEY_REQUIRE(store->on_cuda(), ValueError,
                 "{} must be in GPU tiers (FeatureStore::build with a cuda or pinned_host tier) "
                 "for the CUDA loader, got {}",
                 what, store->describe());
  VOLLEY_REQUIRE(store->num_rows() == graph.num_nodes(), ValueError,
                 "{} must have one row per node ({}), got {}", what, graph.num_nodes(),
                 store->describe());
  VOLLEY_REQUIRE(store->device() == graph.device(), ValueError,
                 "{} live on cuda:{}, the graph on cuda:{}; put both on one device", what,
                 store->device(), graph.device());
}

// `rows` converted to `dtype` into `destination` (device memory for exactly that), queued on
// `stream`.
Array convert_on_device(const Array& rows, DType dtype, const Buffer& destination, void* stream) {
  Array out(destination, dtype, rows.shape());
  bool queued = false;
#if defined(VOLLEY_WITH_GPU_HOST)
  if (cuda_emulated()) {  // the host-executor device: the same bodies on host threads
    queued = loader_internal::launch_host_convert(rows.raw_data(), rows.dtype(), out.raw_data(),
                                                  dtype, rows.numel());
  } else  // NOLINT(readability/braces)
#endif
  {
    queued = loader_internal::launch_convert(rows.raw_data(), rows.dtype(), out.raw_data(), dtype,
                                             rows.numel(), destination.device(), stream);
  }
  VOLLEY_ASSERT(queued);  // the loader checked gather_supports
  return out;
}

// An int64 array of `shape` at `offset` of `whole`, filled from `source` (that many int64
// values, device or host memory) in `stream` order.
Array copy_int64(const Buffer& whole, size_t offset, std::vector<int64_t> shape, const void* source,
                 void* stream) {
  int64_t count = 1;
  for (const int64_t extent : shape) count *= extent;
  const size_t bytes = static_cast<size_t>(count) * 8;
  Array out(whole.slice(offset, bytes), DType::kInt64, std::move(shape));
  if (bytes > 0) cuda_copy(out.raw_data(), source, bytes, stream);
  return out;
}

}  // namespace

Batch sample_device_batch(NeighborSampler& sampler, std::span<const int64_t> seeds,
                          uint64_t batch_index, const FeatureStore* features,
                          const FeatureStore* labels, void* stream,
                          std::span<const int64_t> input_ids, std::optional<DType> x_dtype,
                          std::optional<std::span<const int64_t>> seed_times) {
  VOLLEY_REQUIRE(sampler.on_cuda(), ValueError,
                 "sample_device_batch needs a sampler over a CudaGraph, got a CPU sampler");
  const int device = sampler.device();
  for (const FeatureStore* store : {features, labels}) {
    VOLLEY_REQUIRE(store == nullptr || store->device() == device, ValueError,
                   "a feature store on cuda:{} cannot serve a sampler on cuda:{}",
                   store ? store->device() : -1, device);
  }
  Batch batch;
  batch.batch_size = static_cast<int64_t>(seeds.size());
  {
    // The subgraph's arrays are the sampler's working memory: copied out below, then released
    // (before the next sample(), which reuses them in `stream` order).
    const SampledSubgraph sub = seed_times ? sampler.sample(seeds, *seed_times, batch_index, stream)
                                           : sampler.sample(seeds, batch_index, stream);
    const int64_t n = sub.nodes.numel();
    const int64_t e = sub.rows.numel();
    const auto count = static_cast<int64_t>(input_ids.size());
    Layout layout;
    const size_t nodes_at = layout.add(static_cast<size_t>(n) * 8);
    const size_t input_at = layout.add(static_cast<size_t>(count) * 8);
    const size_t edge_index_at = layout.add(static_cast<size_t>(2 * e) * 8);
    const size_t edge_ids_at = layout.add(static_cast<size_t>(e) * 8);
    const bool trees = sub.batch.defined();  // disjoint (and so temporal) sampling
    const size_t batch_ids_at = trees ? layout.add(static_cast<size_t>(n) * 8) : 0;
    const DType x_type = features ? x_dtype.value_or(features->dtype()) : DType::kFloat32;
    const bool convert = features && x_type != features->dtype();
    const size_t x_at =
        features ? layout.add(static_cast<size_t>(n * features->width()) * dtype_size(x_type)) : 0;
    const size_t staged_at =
        convert ? layout.add(static_cast<size_t>(n) * features->row_bytes()) : 0;
    // Labels are int64 on every device (batch.h): other integer labels are converted there.
    const bool widen_y = labels && labels->dtype() != DType::kInt64;
    const size_t y_at = labels ? layout.add(static_cast<size_t>(n) * 8) : 0;
    const size_t y_staged_at =
        widen_y ? layout.add(static_cast<size_t>(n) * labels->row_bytes()) : 0;
    batch.memory = DeviceBlock::allocate(layout.size(), device, stream);
    const Buffer whole = Buffer::borrow(batch.memory->data(), layout.size(), batch.memory,
                                        /*writable=*/true, Location::kCuda, device);
    auto slice = [&](size_t offset, size_t bytes) { return whole.slice(offset, bytes); };
    batch.nodes = copy_int64(whole, nodes_at, {n}, sub.nodes.raw_data(), stream);
    batch.edge_index = Array(slice(edge_index_at, static_cast<size_t>(2 * e) * 8), DType::kInt64,
                             {2, e});  // row 0 the neighbors (cols), row 1 the targets (rows)
    copy_int64(whole, edge_index_at, {e}, sub.cols.raw_data(), stream);
    copy_int64(whole, edge_index_at + static_cast<size_t>(e) * 8, {e}, sub.rows.raw_data(), stream);
    batch.edge_ids = copy_int64(whole, edge_ids_at, {e}, sub.edge_ids.raw_data(), stream);
    if (trees) batch.batch_ids = copy_int64(whole, batch_ids_at, {n}, sub.batch.raw_data(), stream);
    if (count > 0) batch.input_ids = copy_int64(whole, input_at, {count}, input_ids.data(), stream);
    GatherOptions unchecked;  // sampled ids are graph nodes
    unchecked.stream = stream;
    unchecked.check_ids = false;
    auto gather = [&](const FeatureStore& store, size_t offset) {
      std::vector<int64_t> shape = {n};
      if (store.ndim() == 2) shape.push_back(store.width());
      Array rows(slice(offset, static_cast<size_t>(n) * store.row_bytes()), store.dtype(), shape);
      store.gather(batch.nodes, rows, unchecked);
      return rows;
    };
    if (features) batch.x = gather(*features, convert ? staged_at : x_at);
    if (convert) {
      const size_t x_bytes = static_cast<size_t>(n * features->width()) * dtype_size(x_type);
      batch.x = convert_on_device(batch.x, x_type, slice(x_at, x_bytes), stream);
    }
    if (labels) batch.y = gather(*labels, widen_y ? y_staged_at : y_at);
    if (widen_y) {
      batch.y = convert_on_device(batch.y, DType::kInt64, slice(y_at, static_cast<size_t>(n) * 8),
                                  stream);
    }
    batch.nodes_per_hop = sub.nodes_per_hop;
    batch.edges_per_hop = sub.edges_per_hop;
  }
  batch.ready = std::make_shared<DeviceEvent>(DeviceEvent::create(device));
  batch.ready->record(stream);
  return batch;
}

Array gather_to_device(const FeatureStore& store, const Array& ids, void* stream) {
  VOLLEY_REQUIRE(store.defined() && store.on_cuda(), ValueError,
                 "gather_to_device needs a feature store in GPU tiers, got {}", store.describe());
  VOLLEY_REQUIRE(ids.defined() && ids.ndim() == 1 && ids.dtype() == DType::kInt64, ValueError,
                 "ids must be a 1-d int64 array, got {}",
                 ids.defined() ? ids.describe() : std::string("an undefined array"));
  const int64_t n = ids.numel();
  const size_t out_bytes = static_cast<size_t>(n) * store.row_bytes();
  auto block = DeviceBlock::allocate(out_bytes, store.device(), stream);
  const Buffer whole = Buffer::borrow(block->data(), std::max<size_t>(out_bytes, 1), block,
                                      /*writable=*/true, Location::kCuda, store.device());
  std::vector<int64_t> shape = {n};
  if (store.ndim() == 2) shape.push_back(store.width());
  Array out(whole.slice(0, out_bytes), store.dtype(), shape);
  GatherOptions options;  // host ids are checked on the host; device ids must be in range
  options.stream = stream;
  options.check_ids = false;
  store.gather(ids, out, options);
  return out;
}

// --- the loader -----------------------------------------------------------------------------

CudaNeighborLoader::CudaNeighborLoader(CudaGraph graph, std::optional<FeatureStore> features,
                                       std::optional<FeatureStore> labels,
                                       std::optional<Array> input_nodes, LoaderOptions options)
    : graph_(std::move(graph)),
      features_(std::move(features)),
      labels_(std::move(labels)),
      options_(std::move(options)) {
  VOLLEY_REQUIRE(graph_.defined(), ValueError,
                 "the CUDA loader needs a placed graph (CudaGraph::place), got an empty one");
  // The sampler's option checks (no CUDA), temporal ones included: the graph has the time in
  // use and its rows are sorted by it.
  NeighborSampler check(graph_, options_.sampler);
  check_store(features_, "features", graph_);
  check_store(labels_, "labels", graph_);
  if (features_) {
    VOLLEY_REQUIRE(features_->ndim() == 2, ValueError, "features must be [num_nodes, D], got {}",
                   features_->describe());
    VOLLEY_REQUIRE(gather_supports(features_->dtype(), options_.feature_dtype), ValueError,
                   "features of dtype {} cannot be delivered as {}", dtype_name(features_->dtype()),
                   dtype_name(options_.feature_dtype));
  }
  if (labels_) {
    VOLLEY_REQUIRE(labels_->ndim() == 1, ValueError, "labels must be [num_nodes], got {}",
                   labels_->describe());
    VOLLEY_REQUIRE(gather_supports(labels_->dtype(), DType::kInt64), ValueError,
                   "labels must hold integers (batches carry them as int64), got {}",
                   dtype_name(labels_->dtype()));
  }
  input_nodes_ = loader_internal::checked_input_nodes(
      input_nodes, graph_.num_nodes(),
      /*distinct=*/!loader_internal::grows_trees(options_.sampler));
  loader_internal::check_loader_options(options_, input_nodes_.numel());
  loader_internal::check_input_time(options_, input_nodes_.numel());
}

int64_t CudaNeighborLoader::num_batches() const {
  return loader_internal::num_batches(input_nodes_.numel(), options_);
}

namespace {

// What the producer of one CUDA epoch holds: its sampler, stores, order and stream. The stream
// outlives every batch not handed out (Epoch::Producers::context).
struct CudaEpochWork {
  explicit CudaEpochWork(NeighborSampler s) : sampler(std::move(s)) {}

  NeighborSampler sampler;
  std::optional<FeatureStore> features, labels;
  Array input_nodes, order;
  LoaderOptions options;
  int device = 0;
  CudaStream stream;

  Batch build(int64_t index) {
    if (options.on_batch_start) options.on_batch_start(index);
    const int64_t begin = index * options.batch_size;
    const int64_t end = std::min(order.numel(), begin + options.batch_size);
    std::vector<int64_t> seeds(static_cast<size_t>(end - begin));
    std::vector<int64_t> input_ids(seeds.size());
    const int64_t* positions = order.data<int64_t>();
    const int64_t* inputs = input_nodes.data<int64_t>();
    for (int64_t i = begin; i < end; ++i) {
      input_ids[static_cast<size_t>(i - begin)] = positions[i];
      seeds[static_cast<size_t>(i - begin)] = inputs[positions[i]];
    }
    std::optional<std::vector<int64_t>> times;  // the seeds' input_time (temporal sampling)
    if (options.input_time) times = loader_internal::seed_times_at(*options.input_time, input_ids);
    Batch batch = sample_device_batch(
        sampler, seeds, static_cast<uint64_t>(index), features ? &*features : nullptr,
        labels ? &*labels : nullptr, stream.handle(), input_ids, options.feature_dtype,
        times ? std::optional<std::span<const int64_t>>(*times) : std::nullopt);
    batch.index = index;
    return batch;
  }
};

}  // namespace

std::unique_ptr<Epoch> CudaNeighborLoader::start_epoch(int64_t epoch_index,
                                                       int64_t first_batch) const {
  NeighborSamplerOptions sampler_options = options_.sampler;
  sampler_options.seed = loader_internal::epoch_sampler_seed(options_, epoch_index);
  auto work = std::make_shared<CudaEpochWork>(NeighborSampler(graph_, sampler_options));
  work->features = features_;
  work->labels = labels_;
  work->input_nodes = input_nodes_;
  work->order = loader_internal::epoch_positions(input_nodes_.numel(), options_, epoch_index);
  work->options = options_;
  work->device = graph_.device();
  work->stream = CudaStream::create(graph_.device());
  Epoch::Producers producers;
  producers.threads = 1;  // one producer: the batches are queued on one stream, in order
  producers.prefetch = options_.prefetch == 0 ? 2 : options_.prefetch;
  producers.make_builder = [work]() -> Epoch::BuildBatch {
    loader_internal::set_current_device(work->device);
    return [work](int64_t index) { return work->build(index); };
  };
  producers.context = work;
  return std::make_unique<Epoch>(num_batches(), std::move(producers), first_batch);
}

}  // namespace volley
