// The GPU row-gather kernel of DeviceFeatureStore (CUDA builds only).
//
// A group of `lanes` threads (a power of two <= 32, about one vector per lane) copies one row:
// lane l moves vectors l, l + lanes, ... of the row, so each row is read and written in
// consecutive 16-byte (or narrower) pieces — coalesced from device memory, and full PCIe
// transactions from pinned host memory. The id → (tier, slot) lookup happens in the kernel.
// Groups stride over the rows (grid-stride loop), so any batch size runs on a bounded grid.
#include <algorithm>
#include <type_traits>

#include "volley/core/buffer.h"
#include "volley/core/cuda/cuda_check.h"
#include "volley/feature/internal/cuda_gather_kernel.h"

namespace volley::feature_internal {
namespace {

constexpr int kBlock = 256;

struct KernelArgs {
  DeviceGatherPlan plan;
  const int64_t* ids;
  int64_t count;
  std::byte* out;
  int64_t vectors_per_row;
  int lanes;
  unsigned long long* first_bad;  // device word: min position of an out-of-range id, or null
};

// Entry type of the lookup: int32_t, int64_t, or void (no lookup).
template <typename Vector, typename Entry>
__global__ void gather_kernel(KernelArgs args) {
  const int64_t thread = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const int lane = static_cast<int>(thread % args.lanes);
  const int64_t groups = static_cast<int64_t>(gridDim.x) * blockDim.x / args.lanes;
  const DeviceGatherPlan& plan = args.plan;
  for (int64_t row = thread / args.lanes; row < args.count; row += groups) {
    const int64_t id = args.ids[row];
    auto* destination = reinterpret_cast<Vector*>(args.out + row * plan.row_bytes);
    if (id < 0 || id >= plan.num_rows) {
      if (lane == 0 && args.first_bad != nullptr) {
        atomicMin(args.first_bad, static_cast<unsigned long long>(row));
      }
      for (int64_t v = lane; v < args.vectors_per_row; v += args.lanes) destination[v] = Vector{};
      continue;
    }
    const std::byte* source;
    if constexpr (std::is_void_v<Entry>) {
      source = id < plan.hot_rows ? plan.device_rows + id * plan.row_bytes
                                  : plan.pinned_rows + (id - plan.hot_rows) * plan.row_bytes;
    } else {
      const int64_t entry = static_cast<int64_t>(static_cast<const Entry*>(plan.lookup)[id]);
      source = entry >= 0 ? plan.device_rows + entry * plan.row_bytes
                          : plan.pinned_rows + (~entry) * plan.row_bytes;
    }
    const auto* from = reinterpret_cast<const Vector*>(source);
    for (int64_t v = lane; v < args.vectors_per_row; v += args.lanes) destination[v] = from[v];
  }
}

template <typename Vector>
void launch_with_vector(KernelArgs args, cudaStream_t stream, int sm_count) {
  args.vectors_per_row = static_cast<int64_t>(args.plan.row_bytes / sizeof(Vector));
  int lanes = 1;
  while (lanes < 32 && lanes < args.vectors_per_row) lanes <<= 1;
  args.lanes = lanes;
  const int64_t threads = args.count * lanes;
  const int64_t wanted = (threads + kBlock - 1) / kBlock;
  const unsigned grid = static_cast<unsigned>(
      std::max<int64_t>(1, std::min<int64_t>(wanted, static_cast<int64_t>(sm_count) * 32)));
  if (args.plan.lookup == nullptr) {
    gather_kernel<Vector, void><<<grid, kBlock, 0, stream>>>(args);
  } else if (args.plan.lookup_is_32bit) {
    gather_kernel<Vector, int32_t><<<grid, kBlock, 0, stream>>>(args);
  } else {
    gather_kernel<Vector, int64_t><<<grid, kBlock, 0, stream>>>(args);
  }
  VOLLEY_CUDA_CHECK_LAUNCH("gather_kernel");
}

// The widest access (16, 8, 4, 2 or 1 bytes) that the row size and every base pointer allow.
size_t vector_bytes(const DeviceGatherPlan& plan, const void* out) {
  uintptr_t bits = plan.row_bytes | reinterpret_cast<uintptr_t>(out) |
                   reinterpret_cast<uintptr_t>(plan.device_rows) |
                   reinterpret_cast<uintptr_t>(plan.pinned_rows);
  for (size_t width : {16, 8, 4, 2}) {
    if ((bits & (width - 1)) == 0) return width;
  }
  return 1;
}

// Per thread and device: the word the kernel reports a bad id in, and its pinned read-back.
struct CheckWords {
  int device = -1;
  Buffer device_word;
  Buffer host_word;
};

}  // namespace

int64_t launch_device_gather(const DeviceGatherPlan& plan, const int64_t* ids, int64_t count,
                             void* out, void* stream_handle, bool check) {
  if (count == 0) return -1;
  cuda::DeviceGuard guard(plan.device);
  auto* stream = static_cast<cudaStream_t>(stream_handle);
  int sm_count = 0;
  VOLLEY_CUDA_CHECK(cudaDeviceGetAttribute(&sm_count, cudaDevAttrMultiProcessorCount, plan.device));
  KernelArgs args{plan, ids, count, static_cast<std::byte*>(out), 0, 1, nullptr};
  thread_local CheckWords words;
  if (check) {
    if (words.device != plan.device) {
      words.device_word = Buffer::allocate_device(sizeof(unsigned long long), plan.device);
      words.host_word = Buffer::allocate_pinned(sizeof(unsigned long long));
      words.device = plan.device;
    }
    args.first_bad = reinterpret_cast<unsigned long long*>(words.device_word.data());
    VOLLEY_CUDA_CHECK(cudaMemsetAsync(args.first_bad, 0xff, sizeof(unsigned long long), stream));
  }
  switch (vector_bytes(plan, out)) {
    case 16:
      launch_with_vector<uint4>(args, stream, sm_count);
      break;
    case 8:
      launch_with_vector<uint2>(args, stream, sm_count);
      break;
    case 4:
      launch_with_vector<unsigned>(args, stream, sm_count);
      break;
    case 2:
      launch_with_vector<unsigned short>(args, stream, sm_count);
      break;
    default:
      launch_with_vector<unsigned char>(args, stream, sm_count);
  }
  if (!check) return -1;
  VOLLEY_CUDA_CHECK(cudaMemcpyAsync(words.host_word.data(), args.first_bad,
                                    sizeof(unsigned long long), cudaMemcpyDeviceToHost, stream));
  VOLLEY_CUDA_CHECK(cudaStreamSynchronize(stream));
  const auto first = *reinterpret_cast<const unsigned long long*>(words.host_word.data());
  return first == ~0ull ? -1 : static_cast<int64_t>(first);
}

}  // namespace volley::feature_internal
