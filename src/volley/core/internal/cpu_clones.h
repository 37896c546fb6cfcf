// volley/core/internal/cpu_clones.h — VOLLEY_CPU_CLONES: a function compiled twice, for AVX2 and
// for the baseline x86-64, the one the CPU runs picked when the library loads (GCC's
// target_clones, an ifunc). Row loops (node state's optimizer steps, whole-graph aggregation) are
// 8 floats wide where the CPU allows. AVX2 without FMA: products and sums stay rounded one by one,
// as the GPU kernels round them (results equal across CPUs and devices).
//
// Empty under ThreadSanitizer: ifunc resolvers run while the program is loaded, before the
// sanitizer's runtime is up, and crash it; the baseline loop is correct, only narrower.
#pragma once

#if defined(__SANITIZE_THREAD__)
#define VOLLEY_CPU_CLONES
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define VOLLEY_CPU_CLONES
#endif
#endif

#if !defined(VOLLEY_CPU_CLONES)
#define VOLLEY_CPU_CLONES __attribute__((target_clones("avx2", "default")))
#endif
