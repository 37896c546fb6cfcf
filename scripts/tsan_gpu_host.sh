#!/usr/bin/env bash
# The gpu-host tests (GPU kernel bodies on the host executor, against the CPU oracle) under
# ThreadSanitizer: a separate build (build/tsan by default) of only what they need — no CUDA
# compiler, gRPC or Python — then `ctest -L gpu-host`. Any race report fails the run.
#
#   scripts/tsan_gpu_host.sh            # configure, build volley_gpu_host_tests, run them
#
# Environment: VOLLEY_TSAN_DIR (build dir), JOBS (default: number of cores), CMAKE_ARGS,
# VOLLEY_TSAN_BUILD_ONLY=1 (configure and build, run nothing: `scripts/dev.sh test` builds in the
# background while other tests run).
# The host executor runs items on Volley's own std::threads (ThreadSanitizer does not see
# inside libgomp), so every access of a kernel body is visible to it.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
build_dir="${VOLLEY_TSAN_DIR:-build/tsan}"
jobs="${JOBS:-$(nproc)}"
launcher=()
if command -v ccache >/dev/null; then launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache); fi

# -O1 -g1 (line tables): what ThreadSanitizer's reports need, and half the compile time of
# RelWithDebInfo (CI builds this tree beside the ASan one on two cores). The graph and partition
# concepts (CSR building, generators, readers, partitioners) are compiled without
# instrumentation: the tests only build their inputs with them, before any kernel runs (every
# thread they start is joined through core's instrumented primitives), and their instrumented
# build was most of this tree's compile time.
cmake -S . -B "$build_dir" -G Ninja "${launcher[@]}" -DCMAKE_BUILD_TYPE=None \
  -DCMAKE_CXX_FLAGS="-O1 -g1 -fsanitize=thread -fno-omit-frame-pointer" \
  -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=thread" \
  -DVOLLEY_CUDA=OFF -DVOLLEY_DIST=OFF -DVOLLEY_PYTHON=OFF -DVOLLEY_GPU_HOST=ON \
  -DVOLLEY_UNSANITIZED_CONCEPTS="graph;partition" \
  ${CMAKE_ARGS:-} >/dev/null
ninja -C "$build_dir" -j "$jobs" volley_gpu_host_tests
[ "${VOLLEY_TSAN_BUILD_ONLY:-0}" = 1 ] && exit 0
export TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1 ${TSAN_OPTIONS:-}"
ctest --test-dir "$build_dir" -L gpu-host -j "$jobs" --output-on-failure
