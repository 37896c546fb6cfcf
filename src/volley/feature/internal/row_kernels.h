// volley/feature/internal/row_kernels.h — the per-row loops of NodeState's writes (internal):
// an add and the sparse optimizers' updates of one float32 row (row_kernels.cc), compiled twice
// (AVX2 and the baseline, picked at load time) so that they are 8 floats wide where the CPU
// allows. Formulas as torch.optim.Adagrad (sparse, no lr decay) and torch.optim.SparseAdam.
#pragma once

#include <cstdint>

#include "volley/feature/node_state.h"

namespace volley::internal {

// value[k] += values[k].
void add_row(int64_t dim, float* __restrict value, const float* __restrict values);
// sum[k] += grad[k]^2; value[k] -= lr * grad[k] / (sqrt(sum[k]) + eps).
void adagrad(int64_t dim, float* __restrict value, float* __restrict sum,
             const float* __restrict grad, const OptimizerStep& o);
// SparseAdam's step size at step `step`: lr × sqrt(1 - beta2^step) / (1 - beta1^step).
float adam_step_size(const OptimizerStep& o, int64_t step);
// The moments m, v updated with grad; value[k] -= step_size * m[k] / (sqrt(v[k]) + eps).
void adam(int64_t dim, float* value, float* m, float* v, const float* grad, const OptimizerStep& o,
          float step_size);

}  // namespace volley::internal
