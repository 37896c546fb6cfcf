// Layering probe (must not compile): a source outside a cuda/ folder reaches core's CUDA plumbing.
#include "volley/core/cuda/cuda_check.h"
