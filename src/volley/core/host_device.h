// volley/core/host_device.h — marks functions usable from host and CUDA device code.
#pragma once

#if defined(__CUDACC__)
#define VOLLEY_HOST_DEVICE __host__ __device__
#else
#define VOLLEY_HOST_DEVICE
#endif
