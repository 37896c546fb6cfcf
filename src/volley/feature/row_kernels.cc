// The per-row loops of NodeState's writes (internal/row_kernels.h).
#include "volley/feature/internal/row_kernels.h"

#include <cmath>

#include "volley/core/internal/cpu_clones.h"

namespace volley::internal {

VOLLEY_CPU_CLONES void add_row(int64_t dim, float* __restrict value,
                               const float* __restrict values) {
  for (int64_t k = 0; k < dim; ++k) value[k] += values[k];
}

VOLLEY_CPU_CLONES void adagrad(int64_t dim, float* __restrict value, float* __restrict sum,
                               const float* __restrict grad, const OptimizerStep& o) {
  for (int64_t k = 0; k < dim; ++k) {
    sum[k] += grad[k] * grad[k];
    value[k] -= o.lr * (grad[k] / (std::sqrt(sum[k]) + o.eps));
  }
}

float adam_step_size(const OptimizerStep& o, int64_t step) {
  const float correction1 = 1.0f - static_cast<float>(std::pow(o.beta1, step));
  const float correction2 = 1.0f - static_cast<float>(std::pow(o.beta2, step));
  return o.lr * std::sqrt(correction2) / correction1;
}

VOLLEY_CPU_CLONES void adam(int64_t dim, float* value, float* m, float* v, const float* grad,
                            const OptimizerStep& o, float step_size) {
  for (int64_t k = 0; k < dim; ++k) {
    m[k] += (grad[k] - m[k]) * (1.0f - o.beta1);
    v[k] += (grad[k] * grad[k] - v[k]) * (1.0f - o.beta2);
    value[k] -= step_size * (m[k] / (std::sqrt(v[k]) + o.eps));
  }
}

}  // namespace volley::internal
