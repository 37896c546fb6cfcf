#!/usr/bin/env bash
# scripts/gpu_check.sh — everything the GPU data path needs checked on a machine with a GPU.
#
#   scripts/gpu_check.sh            # all steps
#   scripts/gpu_check.sh build test # some steps: build test multi_gpu ipc sanitize pytest bench e2e
#
# Steps (run in the repository root; each writes a log under $OUT, default build/gpu-check):
#   build     configure + build: Release, CUDA on, Python on ($PYTHON, default python3), no gRPC
#   test      volley_cuda_tests (GoogleTest; GPU tests compare with the CPU implementation)
#   multi_gpu (two or more GPUs; skipped with fewer) the feature cache sharded over every GPU:
#             the driver's peer-access matrix and cliques (nvidia-smi topo -m), the sharded
#             gather on each GPU against the CPU (CudaGatherMultiGpu*), and volley.Feature(x,
#             devices=[...]) on each GPU against x[ids] — what CI checks only on emulated devices
#   ipc       bench/gpu_ipc.py: two processes on one GPU share one placed graph by CUDA IPC
#             (GPU and UVA modes): the receiver's batches equal the sender's and the CPU
#             sampler's, the device's free memory does not drop by the graph's size when the
#             receiver opens it, and a handle of an exited sender fails by name — what CI checks
#             only on emulated devices (ctest -L gpu-host Ipc.*, python/tests/test_cuda_ipc.py)
#   sanitize  compute-sanitizer memcheck over volley_cuda_tests (skipped when absent)
#   pytest    python/tests/test_cuda.py, then the other Python tests (not test_dist.py)
#   bench     volley bench sample --device cuda --mode GPU / UVA and bench gather --device cuda
#             on a generated products-sized graph ($VOLLEY_GPU_DATA, generated once, seeded)
#   e2e       bench/gpu_e2e.py (GraphSAGE epoch vs compute; speed-up over the CPU loader)
#   oracle    bench/gpu_oracle.py: GPU and UVA batches equal the CPU sampler's on that graph
#             (hubs with fanout -1, weighted with and without replacement, temporal)
#   fetch-deps  (on a machine WITH apt, before the GPU session) download the Debian packages a
#             bare GPU machine lacks (fmt, CLI11, nlohmann-json, GoogleTest, zlib headers) into
#             .deps/; carry .deps to the GPU machine, where every step unpacks and uses them
#   pack      (HERE, with nvcc, after `cmake ... -DVOLLEY_CUDA=ON -DPython_EXECUTABLE=<python of
#             the GPU machine's version>` and a build in $BUILD) copy the CLI, the CUDA test binary
#             and the shared libraries they need that a bare GPU machine lacks into .gpu/ (carry
#             .gpu and python/volley/_volley*.so): no build on the GPU machine, whose time is short
#   session   (THERE, after pack) the whole check in one timed run of at most $VOLLEY_GPU_SECONDS
#             (default 470): the dataset is generated while the tests, pytest and the sanitizers
#             run; then the benchmarks, the oracle and the end-to-end runs, one at a time. With a
#             second CLI at $VOLLEY_GPU_BASELINE (default .gpu/base/volley: an older build packed
#             beside this one), the sampling and gather figures are measured with both,
#             interleaved, in the same run (bench_*_base logs)
# A failing step is reported and the others still run; the exit status is 1 if any failed.
# Each step fits in a few minutes; run them in separate calls when a call has a time limit.
set -euo pipefail

cd "$(dirname "$0")/.."
OUT=${OUT:-build/gpu-check}
PYTHON=${PYTHON:-python3}
BUILD=${VOLLEY_GPU_BUILD:-build/gpu}
DATA=${VOLLEY_GPU_DATA:-/tmp/volley-products}
RMAT=${VOLLEY_GPU_RMAT:-/tmp/volley-rmat}  # R-MAT, same size: hubs of ~90,000 in-neighbors
JOBS=${JOBS:-$(nproc)}
mkdir -p "$OUT"
SUMMARY="$OUT/summary.txt"
FAILED=()

log() { echo "[gpu_check] $*" | tee -a "$SUMMARY"; }

# step NAME COMMAND...: runs COMMAND with output to $OUT/NAME.log (and the terminal's tail).
step() {
  local name=$1
  shift
  local started=$SECONDS
  log "== $name: $*"
  if "$@" >"$OUT/$name.log" 2>&1; then
    log "   $name passed ($((SECONDS - started)) s)"
  else
    local status=$?
    log "   $name FAILED (exit $status, $((SECONDS - started)) s); last lines of $OUT/$name.log:"
    tail -n 25 "$OUT/$name.log" | sed 's/^/   | /' | tee -a "$SUMMARY"
    FAILED+=("$name")
  fi
}

need_build() {
  if [[ ! -x "$BUILD/volley" ]]; then
    log "no build in $BUILD: run 'scripts/gpu_check.sh build' first"
    exit 1
  fi
}

# Debian packages the build needs that a bare GPU machine (no apt, no network) lacks: fetched
# HERE with `scripts/gpu_check.sh fetch-deps` into .deps/ (git-ignored; name it in the device
# tool's `carry`), unpacked THERE into .deps/root (never into /) by the build step.
DEPS_PACKAGES=(libfmt-dev libfmt9 libcli11-dev nlohmann-json3-dev libgtest-dev libgmock-dev
               zlib1g-dev)

# The shared libraries of the packed binaries that are not part of glibc / libstdc++ / CUDA's
# driver: a bare GPU machine has no fmt, METIS or liburing, and its CUDA runtime may not be on
# the loader's path.
do_pack() {
  rm -rf .gpu && mkdir -p .gpu/tests/cpp .gpu/lib
  cp "$BUILD/tools/volley/volley" .gpu/volley
  cp "$BUILD/tests/cpp/volley_cuda_tests" .gpu/tests/cpp/
  local modules=()  # the module(s) built into python/volley (one per Python version built)
  mapfile -t modules < <(ls python/volley/_volley*.so)
  ldd .gpu/volley .gpu/tests/cpp/volley_cuda_tests "${modules[@]}" |
    awk '/=> \// {print $3}' | grep -E 'libfmt|libmetis|liburing|libGKlib|libz\.|libcudart' | sort -u |
    while read -r lib; do cp -L "$lib" .gpu/lib/; done
  grep -qx '/.gpu/' .git/info/exclude 2>/dev/null || echo '/.gpu/' >>.git/info/exclude
  log "packed: $(cd .gpu && find . -type f | tr '\n' ' ')($(du -sh .gpu | cut -f1)); carry .gpu and ${modules[*]}"
}

# Runs "$@" with at most $1 seconds, never past the session's deadline.
bounded() {
  local limit=$1
  shift
  local left=$((DEADLINE - SECONDS - 5))
  ((left < limit)) && limit=$left
  if ((limit <= 0)); then
    echo "no time left" >&2
    return 124
  fi
  timeout -k 5 "$limit" "$@"
}

do_session() {
  DEADLINE=$((SECONDS + ${VOLLEY_GPU_SECONDS:-470}))
  export LD_LIBRARY_PATH="$PWD/.gpu/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  export PYTHONUNBUFFERED=1 VOLLEY_CLI="$BUILD/volley" VOLLEY_DATA_DIR="$PWD/data"
  need_build
  nvcc --version | tail -1 | sed 's/^/[gpu_check] /' | tee -a "$SUMMARY" || true
  local sanitizer=/usr/local/cuda/bin/compute-sanitizer
  command -v compute-sanitizer >/dev/null && sanitizer=$(command -v compute-sanitizer)
  # Correctness first, the slow parts side by side: racecheck (slow: two small sampler tests)
  # and the whole Python suite run while the CUDA tests, memcheck and the oracles do.
  # (A step in a background subshell records its failure there: the subshell's status carries
  # it back. test_cuda.py runs alone below: its memory checks read the whole device's free
  # memory, which the concurrent steps change.)
  (step racecheck bounded 150 "$sanitizer" --tool racecheck --error-exitcode 1 \
     "$BUILD/tests/cpp/volley_cuda_tests" \
     --gtest_filter='CudaSampler.HeldResultsSurviveLaterBatches:CudaSampler.DefaultStream*'
   ((${#FAILED[@]} == 0))) &
  local racecheck=$!
  (step pytest_all bounded 240 env PYTHONPATH=python "$PYTHON" -m pytest python/tests -q -rs \
     -p no:cacheprovider -n 6 --dist loadfile --ignore=python/tests/test_cuda.py
   ((${#FAILED[@]} == 0))) &
  local pytest_all=$!
  ensure_data
  [[ -f "$RMAT/volley.json" ]] || step generate_rmat "$BUILD/volley" --quiet generate "$RMAT" \
    --model rmat --nodes 2400000 --edges 62000000 --feature-dim 0 --seed 0
  step cuda_tests bounded 120 "$BUILD/tests/cpp/volley_cuda_tests"
  do_multi_gpu
  step pytest_cuda bounded 60 env PYTHONPATH=python "$PYTHON" -m pytest python/tests/test_cuda.py -q -rs
  step memcheck bounded 120 "$sanitizer" --tool memcheck --error-exitcode 1 --leak-check full \
    "$BUILD/tests/cpp/volley_cuda_tests" --gtest_filter='CudaSampler*:CudaGather*:CudaLoader*:-*Thousand*'
  step oracle bounded 100 env PYTHONPATH=python "$PYTHON" bench/gpu_oracle.py --dataset "$DATA"
  step oracle_rmat bounded 100 env PYTHONPATH=python "$PYTHON" bench/gpu_oracle.py --dataset "$RMAT"
  wait "$racecheck" || FAILED+=(racecheck)
  wait "$pytest_all" || FAILED+=(pytest_all)
  # Then the figures, one at a time.
  local volley=(bounded 60 "$BUILD/volley" --quiet)
  local sample=(bench sample --batch-size 1024)
  local gpu=(--device cuda --mode GPU)
  step bench_sample_gpu "${volley[@]}" "${sample[@]}" --dataset "$DATA" --fanout 15,10,5 --batches 200 "${gpu[@]}"
  step bench_sample_uva "${volley[@]}" "${sample[@]}" --dataset "$DATA" --fanout 15,10,5 --batches 100 --device cuda --mode UVA
  step bench_sample_cpu "${volley[@]}" "${sample[@]}" --dataset "$DATA" --fanout 15,10,5 --batches 40 --threads "$JOBS"
  step bench_sample_hubs "${volley[@]}" "${sample[@]}" --dataset "$DATA" --fanout -1 --batches 20 "${gpu[@]}"
  step bench_sample_weighted "${volley[@]}" "${sample[@]}" --dataset "$DATA" --fanout 15,10,5 \
    --batches 100 --weighted "${gpu[@]}"
  step bench_rmat_gpu "${volley[@]}" "${sample[@]}" --dataset "$RMAT" --fanout 15,10,5 --batches 200 "${gpu[@]}"
  step bench_rmat_hubs "${volley[@]}" "${sample[@]}" --dataset "$RMAT" --fanout -1 --batches 20 "${gpu[@]}"
  # Temporal sampling (random edge times, rows sorted by them): untimed, disjoint, uniform, last.
  step bench_temporal_gpu "${volley[@]}" "${sample[@]}" --dataset "$DATA" --fanout 15,10,5 --time \
    --batches 100 "${gpu[@]}"
  step bench_temporal_cpu "${volley[@]}" "${sample[@]}" --dataset "$DATA" --fanout 15,10,5 --time \
    --batches 30 --threads "1,2,$JOBS"
  for fraction in 1 0 0.2; do
    step "bench_gather_$fraction" "${volley[@]}" bench gather --rows 2400000 --dim 100 \
      --dtype float32 --batch 150000 --device cuda --cache-fraction "$fraction"
  done
  measure_bounds
  compare_with_baseline
  cat "$OUT"/bench_*.log | grep '^{' >"$OUT/bench.jsonl" || true
  step e2e_gpu bounded 90 env PYTHONPATH=python "$PYTHON" bench/gpu_e2e.py --dataset "$DATA" \
    --mode GPU --layers 2 --fanout 15,10 --max-batches 150 --json "$OUT/gpu_e2e.jsonl"
  step e2e_uva bounded 60 env PYTHONPATH=python "$PYTHON" bench/gpu_e2e.py --dataset "$DATA" \
    --mode UVA --layers 2 --fanout 15,10 --max-batches 100 --skip-cpu-loader --json "$OUT/gpu_e2e.jsonl"
  # Where the sampler's time goes: Nsight Compute's speed-of-light section over a window of
  # kernel launches in the middle of the timed batches.
  local ncu=/usr/local/cuda/bin/ncu
  command -v ncu >/dev/null && ncu=$(command -v ncu)
  step ncu_sample bounded 60 "$ncu" --section SpeedOfLight --launch-skip 300 --launch-count 60 \
    "$BUILD/volley" --quiet "${sample[@]}" --dataset "$DATA" --fanout 15,10,5 --batches 10 "${gpu[@]}"
}

# What bounds the figures above: the gather kernel against the device copy by row size (random
# rows of 400 B, 1 KiB and 4 KiB; how much of the gap to the copy is the rows' size), and the
# rate of random reads of 4- and 8-byte words from pinned host memory (a gather of such rows
# with nothing cached), which bounds UVA sampling: each sampled edge reads its neighbor (and its
# edge id, when the graph stores them) there. Weighted sampling with replacement as well.
measure_bounds() {
  local volley=(bounded 60 "$BUILD/volley" --quiet)
  local gather=(bench gather --dtype float32 --device cuda)
  step bench_bound_rows_1k "${volley[@]}" "${gather[@]}" --rows 2400000 --dim 256 --batch 150000 \
    --cache-fraction 1
  step bench_bound_rows_4k "${volley[@]}" "${gather[@]}" --rows 1000000 --dim 1024 --batch 40000 \
    --cache-fraction 1
  step bench_bound_pinned_4 "${volley[@]}" "${gather[@]}" --rows 62000000 --dim 1 --batch 1000000 \
    --cache-fraction 0
  step bench_bound_pinned_8 "${volley[@]}" "${gather[@]}" --rows 62000000 --dim 2 --batch 1000000 \
    --cache-fraction 0
  step bench_sample_weighted_replace "${volley[@]}" bench sample --batch-size 1024 --dataset "$DATA" \
    --fanout 15,10,5 --batches 50 --weighted --replace --device cuda --mode GPU
}

# The same figures with an older CLI ($VOLLEY_GPU_BASELINE), new and old interleaved twice, so
# a change is measured against what it replaced on the same machine in the same run.
compare_with_baseline() {
  local base=${VOLLEY_GPU_BASELINE:-.gpu/base/volley}
  [[ -x "$base" ]] || return 0
  local sample=(bench sample --batch-size 1024 --dataset "$DATA" --fanout 15,10,5)
  local gather=(bench gather --rows 2400000 --dim 100 --dtype float32 --batch 150000 --device cuda
                --cache-fraction 1)
  local round cli tag
  for round in 1 2; do
    for cli in "$BUILD/volley" "$base"; do
      tag=new
      [[ "$cli" == "$base" ]] && tag=base
      step "bench_cmp_gpu_${tag}_$round" bounded 60 "$cli" --quiet "${sample[@]}" --batches 200 \
        --device cuda --mode GPU
      step "bench_cmp_uva_${tag}_$round" bounded 60 "$cli" --quiet "${sample[@]}" --batches 100 \
        --device cuda --mode UVA
      step "bench_cmp_gather_${tag}_$round" bounded 60 "$cli" --quiet "${gather[@]}"
    done
  done
}

do_fetch_deps() {
  mkdir -p .deps
  (cd .deps && apt-get download "${DEPS_PACKAGES[@]}")
  log "fetched into .deps: $(cd .deps && ls *.deb | tr '\n' ' ')"
}

use_deps() {
  compgen -G ".deps/*.deb" >/dev/null || return 0
  local root="$PWD/.deps/root"
  mkdir -p "$root"
  for deb in .deps/*.deb; do dpkg-deb -x "$deb" "$root"; done
  export CMAKE_PREFIX_PATH="$root/usr${CMAKE_PREFIX_PATH:+:$CMAKE_PREFIX_PATH}"
  export CPATH="$root/usr/include${CPATH:+:$CPATH}"
  export LIBRARY_PATH="$root/usr/lib/x86_64-linux-gnu${LIBRARY_PATH:+:$LIBRARY_PATH}"
  export LD_LIBRARY_PATH="$root/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  log "using the Debian packages unpacked in $root"
}

do_build() {
  command -v "$PYTHON" >/dev/null || { log "python '$PYTHON' not found (set PYTHON=)"; exit 1; }
  command -v nvcc >/dev/null || [[ -x /usr/local/cuda/bin/nvcc ]] ||
    log "warning: nvcc not on PATH; CMake will look for it (set CUDACXX= if it fails)"
  step configure cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DVOLLEY_CUDA=ON \
    -DVOLLEY_DIST=OFF -DVOLLEY_PYTHON=ON -DPython_EXECUTABLE="$(command -v "$PYTHON")"
  step build ninja -C "$BUILD" -j "$JOBS"
}

do_test() {
  need_build
  step cuda_tests "$BUILD/tests/cpp/volley_cuda_tests" --gtest_output="xml:$OUT/cuda_tests.xml"
}

# The sharded device cache on real peers: only the routing ran in CI (emulated devices).
do_multi_gpu() {
  need_build
  local gpus
  gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)
  if ((gpus < 2)); then
    log "== multi_gpu: $gpus GPU(s) visible, skipped (needs two or more)"
    return
  fi
  nvidia-smi topo -m 2>&1 | sed 's/^/[gpu_check] topo: /' | tee -a "$SUMMARY" || true
  step multi_gpu_tests "$BUILD/tests/cpp/volley_cuda_tests" --gtest_filter='CudaGatherMultiGpu*'
  step multi_gpu_python env PYTHONPATH=python "$PYTHON" -c '
import torch, volley
from volley import _volley
count = min(_volley.cuda_device_count(), 8)
x = torch.randn(300000, 32)
ids = torch.randint(0, 300000, (100000,))
for device in range(count):
    feature = volley.Feature(x, devices=list(range(count)), device=device, device_cache_size="4M")
    rows = feature[ids.cuda(device)]
    assert rows.device == torch.device("cuda", device), rows.device
    assert torch.equal(rows.cpu(), x[ids]), device
    print("cuda:%d ok, tiers:" % device, feature.tiers)
'
}

# CUDA IPC between two processes on one GPU: only the emulated hand-off ran in CI.
do_ipc() {
  need_build
  step ipc env PYTHONPATH=python "$PYTHON" bench/gpu_ipc.py
}

do_sanitize() {
  need_build
  local sanitizer
  sanitizer=$(command -v compute-sanitizer || true)
  [[ -z "$sanitizer" && -x /usr/local/cuda/bin/compute-sanitizer ]] &&
    sanitizer=/usr/local/cuda/bin/compute-sanitizer
  if [[ -z "$sanitizer" ]]; then
    log "== sanitize: compute-sanitizer not found, skipped"
    return
  fi
  # The thousand-batch memory tests are slow under memcheck and check nothing memcheck does.
  step memcheck "$sanitizer" --tool memcheck --error-exitcode 1 --leak-check full \
    "$BUILD/tests/cpp/volley_cuda_tests" --gtest_filter='-*Thousand*'
}

do_pytest() {
  need_build
  step pytest_cuda env PYTHONPATH=python "$PYTHON" -m pytest python/tests/test_cuda.py -v -rs
  step pytest_all env PYTHONPATH=python "$PYTHON" -m pytest python/tests -q -rs \
    --ignore=python/tests/test_dist.py
}

ensure_data() {
  if [[ -f "$DATA/volley.json" ]]; then
    log "   dataset $DATA exists (delete it to regenerate)"
  else
    step generate "$BUILD/volley" --quiet generate "$DATA" --model powerlaw --nodes 2400000 \
      --edges 62000000 --feature-dim 100 --classes 47 --seed 0
  fi
}

do_bench() {
  need_build
  ensure_data
  local common=(--dataset "$DATA" --fanout 15,10,5 --batch-size 1024 --batches 200)
  local volley=("$BUILD/volley" --quiet)
  step bench_sample_cpu "${volley[@]}" bench sample "${common[@]}" --threads "$JOBS"
  step bench_sample_gpu "${volley[@]}" bench sample "${common[@]}" --device cuda --mode GPU
  step bench_sample_uva "${volley[@]}" bench sample "${common[@]}" --device cuda --mode UVA
  step bench_gather_gpu "${volley[@]}" bench gather --rows 2400000 --dim 100 --dtype float32 \
    --batch 150000 --device cuda
  cat "$OUT"/bench_*.log | grep '^{' >"$OUT/bench.jsonl" || true
}

do_e2e() {
  need_build
  ensure_data
  step e2e_gpu env PYTHONPATH=python "$PYTHON" bench/gpu_e2e.py --dataset "$DATA" --mode GPU \
    --json "$OUT/gpu_e2e.jsonl"
  step e2e_uva env PYTHONPATH=python "$PYTHON" bench/gpu_e2e.py --dataset "$DATA" --mode UVA \
    --skip-cpu-loader --json "$OUT/gpu_e2e.jsonl"
}

steps=("$@")
[[ ${#steps[@]} -eq 0 ]] && steps=(build test multi_gpu ipc sanitize pytest bench e2e)
use_deps
log "volley gpu_check $(date -u +%FT%TZ) on $(hostname): steps ${steps[*]}; logs in $OUT"
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,memory.total,driver_version \
  --format=csv,noheader | sed 's/^/[gpu_check] gpu: /' | tee -a "$SUMMARY" || true
for s in "${steps[@]}"; do
  case "$s" in
    build | test | multi_gpu | ipc | sanitize | pytest | bench | e2e | pack | session) "do_$s" ;;
    oracle) step oracle env PYTHONPATH=python "$PYTHON" bench/gpu_oracle.py --dataset "$DATA" ;;
    fetch-deps) do_fetch_deps ;;
    *)
      log "unknown step '$s' (build test multi_gpu ipc sanitize pytest bench e2e oracle pack session)"
      exit 2
      ;;
  esac
done
if [[ ${#FAILED[@]} -gt 0 ]]; then
  log "FAILED: ${FAILED[*]}"
  exit 1
fi
log "all steps passed"
