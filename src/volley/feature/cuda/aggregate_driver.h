// volley/feature/cuda/aggregate_driver.h — whole-graph aggregation (aggregate.h) written once for
// both executors (core/internal/executor.h): aggregate_kernel.cu runs it with the CUDA executor,
// aggregate_kernel_host.cc with the host executor (gpu-host tests, the emulated device).
//
// Item t of the main launch is one output element: row t / dim, column t % dim; consecutive items
// read consecutive columns of a neighbor's row (coalesced). It sums the row's neighbors in CSR
// order with the CPU's operations in the CPU's order, rounding every product and sum on its own
// (mul_rn / add_rn: no fused multiply-add), so the result equals the CPU's bit for bit. GCN's
// 1 / sqrt(d(v)) is computed first, one item a node, as the CPU computes it.
#pragma once

#include <cmath>
#include <cstdint>

#include "volley/core/host_device.h"
#include "volley/core/internal/executor.h"
#include "volley/feature/internal/cuda_aggregate_kernel.h"

namespace volley::feature_internal {

VOLLEY_HOST_DEVICE inline float mul_rn(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fmul_rn(a, b);
#else
  return a * b;
#endif
}

VOLLEY_HOST_DEVICE inline float add_rn(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fadd_rn(a, b);
#else
  return a + b;
#endif
}

// The device-side CSR and coefficients of one launch.
struct AggregateView {
  const int64_t* indptr;
  const int32_t* indices32;  // one of the two, by the graph's index width
  const int64_t* indices64;
  const float* weights;  // or null: 1
  const float* roots;    // gcn: 1 / sqrt(d(v)) per node, else null

  VOLLEY_HOST_DEVICE int64_t neighbor(int64_t k) const {
    return indices32 != nullptr ? indices32[k] : indices64[k];
  }
  VOLLEY_HOST_DEVICE float weight(int64_t k) const {
    return weights != nullptr ? weights[k] : 1.0f;
  }
};

// roots[v] = 1 / sqrt(d(v)) (0 when d(v) = 0), d(v) = [self loop] + Σ w over row v; nodes
// past the rows (sources only) get the self loop's 1 or 0.
struct RootBody {
  static constexpr const char* kName = "aggregate: gcn degrees";
  AggregateView view;
  int64_t rows;
  bool self_loops;
  float* roots;

  VOLLEY_HOST_DEVICE void operator()(int64_t v) const {
    if (v >= rows) {
      roots[v] = self_loops ? 1.0f : 0.0f;
      return;
    }
    float degree = self_loops ? 1.0f : 0.0f;
    for (int64_t k = view.indptr[v]; k < view.indptr[v + 1]; ++k) {
      degree = add_rn(degree, view.weight(k));
    }
    roots[v] = degree > 0 ? 1.0f / sqrtf(degree) : 0.0f;
  }
};

struct AggregateBody {
  static constexpr const char* kName = "aggregate";
  AggregateView view;
  const float* x;
  float* out;
  int64_t dim;
  int op;  // 0 sum, 1 mean, 2 gcn
  bool self_loops;

  VOLLEY_HOST_DEVICE void operator()(int64_t item) const {
    const int64_t v = item / dim, j = item % dim;
    const int64_t first = view.indptr[v], last = view.indptr[v + 1];
    float sum = 0.0f;
    for (int64_t k = first; k < last; ++k) {
      const int64_t u = view.neighbor(k);
      const float scale =
          op == 2 ? mul_rn(mul_rn(view.weight(k), view.roots[u]), view.roots[v]) : view.weight(k);
      sum = add_rn(sum, mul_rn(scale, x[u * dim + j]));
    }
    if (op == 1 && last > first) sum = mul_rn(sum, 1.0f / static_cast<float>(last - first));
    if (op == 2 && self_loops) {
      sum = add_rn(sum, mul_rn(mul_rn(view.roots[v], view.roots[v]), x[v * dim + j]));
    }
    out[item] = sum;
  }
};

// Uploads the plan's CSR and weights, runs the launches, waits for them.
template <class Executor>
void aggregate_with(Executor& executor, const AggregatePlan& plan) {
  using internal::Memory;
  const auto upload = [&](const void* from, size_t bytes) {
    Buffer buffer = executor.allocate(Memory::kDevice, bytes > 0 ? bytes : 1);
    if (bytes > 0) executor.upload(buffer.data(), from, bytes);
    return buffer;
  };
  const size_t index_bytes = plan.indices_32bit ? 4 : 8;
  const Buffer indptr = upload(plan.indptr, static_cast<size_t>(plan.rows + 1) * 8);
  const Buffer indices = upload(plan.indices, static_cast<size_t>(plan.edges) * index_bytes);
  Buffer weights;
  if (plan.weights != nullptr) {
    weights = upload(plan.weights, static_cast<size_t>(plan.edges) * sizeof(float));
  }
  AggregateView view{
      reinterpret_cast<const int64_t*>(indptr.data()),
      plan.indices_32bit ? reinterpret_cast<const int32_t*>(indices.data()) : nullptr,
      plan.indices_32bit ? nullptr : reinterpret_cast<const int64_t*>(indices.data()),
      plan.weights != nullptr ? reinterpret_cast<const float*>(weights.data()) : nullptr, nullptr};
  Buffer roots;
  if (plan.op == 2) {
    const int64_t nodes = plan.rows > plan.sources ? plan.rows : plan.sources;
    roots = executor.allocate(Memory::kDevice, static_cast<size_t>(nodes > 0 ? nodes : 1) * 4);
    auto* root_data = reinterpret_cast<float*>(roots.data());
    executor.for_each(nodes, RootBody{view, plan.rows, plan.self_loops, root_data});
    view.roots = root_data;
  }
  if (plan.rows > 0 && plan.dim > 0) {
    executor.for_each(plan.rows * plan.dim,
                      AggregateBody{view, plan.x, plan.out, plan.dim, plan.op, plan.self_loops});
  }
  executor.synchronize();  // the uploaded buffers are freed on return
}

}  // namespace volley::feature_internal
