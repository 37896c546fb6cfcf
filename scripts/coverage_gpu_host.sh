#!/usr/bin/env bash
# Line coverage of the GPU code by the gpu-host tests: a separate --coverage build (build/coverage
# by default; no CUDA compiler, gRPC or Python needed), `ctest -L gpu-host`, then
# scripts/coverage_gpu_host.py's per-file table and totals (gcov only).
#
# Environment: VOLLEY_COVERAGE_DIR (build dir), JOBS (default: number of cores).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
build_dir="${VOLLEY_COVERAGE_DIR:-build/coverage}"
jobs="${JOBS:-$(nproc)}"
launcher=()
if command -v ccache >/dev/null; then launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache); fi

cmake -S . -B "$build_dir" -G Ninja "${launcher[@]}" -DCMAKE_BUILD_TYPE=Debug \
  -DCMAKE_CXX_FLAGS="--coverage -O0" -DCMAKE_EXE_LINKER_FLAGS="--coverage" \
  -DVOLLEY_CUDA=OFF -DVOLLEY_DIST=OFF -DVOLLEY_PYTHON=OFF -DVOLLEY_GPU_HOST=ON >/dev/null
ninja -C "$build_dir" -j "$jobs" volley_gpu_host_tests
find "$build_dir" -name '*.gcda' -delete
ctest --test-dir "$build_dir" -L gpu-host -j "$jobs" --output-on-failure >/dev/null
python3 scripts/coverage_gpu_host.py "$build_dir"
