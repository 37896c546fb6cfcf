#!/usr/bin/env bash
# Volley's two project commands (README, first section), for a fresh Debian machine:
#
#   scripts/dev.sh main   install what is missing, build, train GraphSAGE on the bundled Cora
#   scripts/dev.sh test   install what is missing, build, run every test (C++ and Python)
#
# `test` also runs the fuzz targets of the file readers for 6 s each (`fuzz` below; VOLLEY_FUZZ=0
# skips them, and the ThreadSanitizer run of the gpu-host tests), and checks formatting and the
# size rules (`lint`: clang-format --dry-run, scripts/check_sizes.py).
# `test` runs the Python tests and the main job twice, with the same build (one wheel installed
# into both): in .venv (Debian's torch 1.13, PyG 2.5.3, numpy 1.x: the oldest Volley supports)
# and in ~/.cache/volley/venv-latest (the newest torch, PyG and numpy from PyPI, requirements-latest.txt), so a
# change that breaks either end fails CI.
#
# Also: `scripts/dev.sh setup` (install + build only), `scripts/dev.sh latest` (the second leg
# alone), `scripts/dev.sh wheel` (the self-contained wheel in build/dist, checked in a fresh
# venv), `scripts/dev.sh docs` (the API reference in build/docs, warnings as errors),
# `scripts/dev.sh fuzz` (libFuzzer targets of the file readers under ASan/UBSan, clang-14,
# VOLLEY_FUZZ_SECONDS each, default 30; build in build/fuzz), `scripts/dev.sh sanitize` (the C++
# test suite and CLI built with ASan + UBSan in the same build/fuzz tree, then ctest). Idempotent and quiet when everything is present. Environment: VOLLEY_BUILD_DIR (default
# build/release), VOLLEY_CMAKE_ARGS (extra -D flags, e.g. "-DVOLLEY_CUDA=OFF"), JOBS (default:
# number of cores), VOLLEY_LATEST=0 (skip the second leg), VOLLEY_LATEST_REFRESH=1 (upgrade
# the second venv to what is newest today; a fresh machine always gets the newest), VOLLEY_WHEEL=0
# (skip the wheel check that `test` ends with).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
build_dir="${VOLLEY_BUILD_DIR:-build/release}"
venv="$root/.venv"
python="$venv/bin/python"
# Outside the checkout, so a fresh clone on a machine that already has it (CI after a session)
# does not download torch's ~4 GB again; VOLLEY_LATEST_VENV moves it.
latest_venv="${VOLLEY_LATEST_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/volley/venv-latest}"
latest_python="$latest_venv/bin/python"
wheelhouse="$root/build/wheelhouse"
jobs="${JOBS:-$(nproc)}"

# Each line says the seconds since the script started (CI's per-stage times read off the log).
log() { printf '[volley %4ds] %s\n' "$SECONDS" "$*" >&2; }

# System libraries and tools, from Debian. What each is for: README, "Dependencies".
apt_packages=(
  build-essential cmake ninja-build git pkg-config
  libfmt-dev libcli11-dev nlohmann-json3-dev zlib1g-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  libmetis-dev libgrpc++-dev libprotobuf-dev protobuf-compiler-grpc
  liburing-dev
  python3 python3-dev python3-venv python3-torch
  time openssl iproute2
  clang-14 libclang-rt-14-dev clang-format
)

install_system() {
  local missing=()
  for package in "${apt_packages[@]}"; do
    if ! dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed"; then
      missing+=("$package")
    fi
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  log "installing Debian packages: ${missing[*]}"
  local sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

install_python() {
  if [ ! -x "$python" ]; then
    log "creating $venv (sees Debian's torch through --system-site-packages)"
    /usr/bin/python3 -m venv --system-site-packages "$venv"
  fi
  local stamp="$venv/.volley-requirements"
  if [ ! -f "$stamp" ] || ! cmp -s requirements.txt "$stamp" || ! cmp -s constraints.txt "$stamp.constraints"; then
    log "installing Python tools from PyPI into $venv"
    "$python" -m pip install -q --disable-pip-version-check -r requirements.txt -c constraints.txt
    cp requirements.txt "$stamp"
    cp constraints.txt "$stamp.constraints"
  fi
}

# The second leg's venv: no system site packages, the newest torch / PyG / numpy from PyPI.
install_latest() {
  if [ ! -x "$latest_python" ]; then
    log "creating $latest_venv (newest torch, PyG and numpy from PyPI)"
    /usr/bin/python3 -m venv "$latest_venv"
  fi
  local stamp="$latest_venv/.volley-requirements"
  local upgrade=()
  [ "${VOLLEY_LATEST_REFRESH:-0}" = 1 ] && upgrade=(--upgrade --upgrade-strategy eager)
  if [ ${#upgrade[@]} -gt 0 ] || [ ! -f "$stamp" ] || ! cmp -s requirements-latest.txt "$stamp"; then
    log "installing the newest torch, PyG and numpy from PyPI into $latest_venv"
    "$latest_python" -m pip install -q --disable-pip-version-check "${upgrade[@]}" \
      -r requirements-latest.txt
    cp requirements-latest.txt "$stamp"
  fi
}

# One CMake build (driven by scikit-build-core through `pip wheel`) gives one wheel in
# build/wheelhouse — the Python package and the volley CLI — and the C++ test binaries (left in
# $build_dir). The wheel is installed into .venv (and by the second leg into the second leg's venv): both
# legs test the very same binaries.
build() {
  # (Debian's pip 23.0 knows only the long --config-settings spelling.)
  local args=(--config-settings=build-dir="$build_dir"
              --config-settings=cmake.define.VOLLEY_TESTS=ON
              --config-settings=cmake.define.VOLLEY_TESTS_IN_ALL="${VOLLEY_TESTS_IN_ALL:-ON}"
              --config-settings=cmake.define.VOLLEY_TEST_COMPILE_OPTIONS=-O1
              --config-settings=cmake.build-type=Release
              --config-settings=build.tool-args=-j"$jobs")
  for define in ${VOLLEY_CMAKE_ARGS:-}; do args+=(--config-settings=cmake.args="$define"); done
  local log_file="$root/build/pip-install.log"
  log "building the library, CLI, tests and module (pip wheel, $build_dir)"
  mkdir -p "$wheelhouse"
  rm -f "$wheelhouse"/volley-*.whl
  if ! "$python" -m pip wheel -v --no-build-isolation --no-deps --disable-pip-version-check \
      -w "$wheelhouse" "${args[@]}" . >"$log_file" 2>&1; then
    tail -n 60 "$log_file" >&2
    log "build failed (full log: $log_file)"
    exit 1
  fi
  install_wheel "$python"
}

# Installs the wheel `build` made into the venv of python $1 (its dependencies are there).
install_wheel() {
  local wheel
  wheel="$(ls "$wheelhouse"/volley-*.whl)"
  "$1" -m pip install -q --no-deps --force-reinstall --disable-pip-version-check "$wheel" \
    >>"$root/build/pip-install.log" 2>&1 || { log "cannot install $wheel with $1"; exit 1; }
}

# The Python tests and the main job with interpreter $1 (the installed wheel, not the sources:
# pytest runs from the repository root, where no `volley` package lies).
python_leg() {
  local interpreter="$1" status=0
  "$interpreter" - <<'PYTHON' >&2
import numpy, sys
try:
    import torch
    torch_version = torch.__version__
except ImportError:
    torch_version = "absent"
try:
    import torch_geometric
    pyg_version = torch_geometric.__version__
except ImportError:
    pyg_version = "absent"
print(f"[volley] python {sys.version.split()[0]}, torch {torch_version}, "
      f"PyG {pyg_version}, numpy {numpy.__version__}")
PYTHON
  (cd "$root" && "$interpreter" -m pytest python/tests -q -p no:cacheprovider) || status=1
  log "main job"
  (cd "$root" && "$interpreter" examples/train_sage.py) || status=1
  return $status
}

latest_leg() {
  if [ "${VOLLEY_LATEST:-1}" = 0 ]; then
    log "second leg skipped (VOLLEY_LATEST=0)"
    return 0
  fi
  install_latest
  install_wheel "$latest_python"
  log "Python tests and main job, newest torch / PyG / numpy ($latest_venv)"
  # Tests marked same_in_every_torch (python/tests/conftest.py) run in the first leg only.
  VOLLEY_TEST_LEG=latest python_leg "$latest_python"
}

# `scripts/dev.sh wheel`: the wheel a user installs with `pip install volley-*.whl` — the build's
# wheel with its shared libraries (gRPC, protobuf, abseil, fmt, METIS, zlib, ...) copied in and
# its platform tag set by auditwheel — then checked in a fresh venv (scripts/wheel_check.py).
wheel_venv="$root/.venv-wheel-test"
dist_dir="$root/build/dist"
make_wheel() {
  local built
  built="$(ls "$wheelhouse"/volley-*.whl)"
  rm -rf "$dist_dir" && mkdir -p "$dist_dir"
  log "auditwheel repair $(basename "$built")"
  # auditwheel finds patchelf on PATH. It moves the CLI (an ELF file among the wheel's scripts) to
  # <site-packages>/volley.scripts/volley, next to volley.libs/, and installs a small launcher
  # script `volley` that execs it.
  PATH="$venv/bin:$PATH" "$venv/bin/auditwheel" repair --wheel-dir "$dist_dir" "$built" \
    >"$root/build/auditwheel.log" 2>&1 \
    || { tail -n 30 "$root/build/auditwheel.log" >&2; log "auditwheel failed"; exit 1; }
  # zlib is on auditwheel's list of libraries every manylinux system has; bundle it anyway.
  PATH="$venv/bin:$PATH" "$python" "$root/scripts/wheel_bundle.py" "$(ls "$dist_dir"/volley-*.whl)" \
    libz.so.1 >>"$root/build/auditwheel.log"
  log "wheel: $(ls "$dist_dir"/volley-*.whl)"
}

check_wheel() {
  local wheel
  wheel="$(ls "$dist_dir"/volley-*.whl)"
  rm -rf "$wheel_venv"
  /usr/bin/python3 -m venv "$wheel_venv"
  log "installing $(basename "$wheel") into a fresh venv ($wheel_venv), no Volley sources on its path"
  "$wheel_venv/bin/python" -m pip install -q --disable-pip-version-check "$wheel" \
    -r "$root/requirements-wheel-test.txt"
  # From /tmp, so that neither the checkout nor its python/ can be imported by accident.
  (cd /tmp && "$wheel_venv/bin/python" "$root/scripts/wheel_check.py" --source "$root")
}

# The API reference (docs/): Sphinx with autodoc and napoleon over the installed package, and the
# CLI's --help texts; warnings are errors, so a public name without docs fails CI.
docs() {
  log "API reference (Sphinx, warnings as errors) -> build/docs/index.html"
  rm -rf "$root/build/docs"
  VOLLEY_CLI="$venv/bin/volley" "$python" -m sphinx -E -W --keep-going -q -b html \
    -d "$root/build/docs-doctrees" "$root/docs" "$root/build/docs" || return 1
  log "the user guide's Python code blocks (scripts/run_doc_blocks.py)"
  "$python" "$root/scripts/run_doc_blocks.py"
}

# `scripts/dev.sh fuzz`: builds tests/fuzz's libFuzzer targets with clang-14 (ASan + UBSan over
# the libraries they link: the file readers, and the service with its partition of Cora) and runs each for VOLLEY_FUZZ_SECONDS over its corpus
# (tests/fuzz/corpus/<target>, read-only; new inputs go to build/fuzz/corpus/<target>). A crash,
# a sanitizer report, a leak or an input slower than 10 s fails; the reproducer is left in
# build/fuzz/ (crash-*, timeout-*, leak-*), to be added to the corpus with the fix.
fuzz_targets=(edge_list_fuzz manifest_fuzz npy_fuzz npz_fuzz service_fuzz)

# The clang-14 tree both `fuzz` and `sanitize` build in (build/fuzz): everything instrumented
# with ASan + UBSan (and libFuzzer's coverage), the C++ tests, the CLI, the fuzz targets and the
# Python module (into build/fuzz/python/volley, beside a copy of the package's sources); no CUDA
# (the GPU kernels' logic runs on the host executor, gpu-host tests).
asan_tree() {
  # -O1 and line tables only (ASan's advice; file:line in reports): much quicker to compile and
  # link than RelWithDebInfo's -O2 -g, which CI's time budget feels most in this tree; the tests
  # and the CLI at -O0 (about half the compile time; the library they call stays at -O1).
  cmake -S "$root" -B "$root/build/fuzz" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -gline-tables-only -DNDEBUG" \
    -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -gline-tables-only -DNDEBUG" \
    -DCMAKE_C_COMPILER=clang-14 -DCMAKE_CXX_COMPILER=clang++-14 -DVOLLEY_FUZZ=ON \
    -DVOLLEY_TESTS=ON -DVOLLEY_TOOLS=ON -DVOLLEY_PYTHON=ON -DPython_EXECUTABLE="$python" \
    -DVOLLEY_PYTHON_MODULE_DIR="$root/build/fuzz/python/volley" -DVOLLEY_DIST=ON \
    -DVOLLEY_CUDA=OFF -DVOLLEY_GPU_HOST=ON -DVOLLEY_TEST_COMPILE_OPTIONS=-O0 \
    -DVOLLEY_CLI_COMPILE_OPTIONS=-O0 >"$root/build/fuzz-configure.log" 2>&1 \
    || { tail -n 30 "$root/build/fuzz-configure.log" >&2; log "ASan tree: configure failed"; return 1; }
}

# One fuzz target over its corpus for $3 seconds; its log in build/fuzz/<target>.log.
fuzz_one() {
  local fuzz_dir="$1" target="$2" seconds="$3" status=0
  local corpus="$fuzz_dir/corpus/$target"
  mkdir -p "$corpus"
  (cd "$fuzz_dir" && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
    "$fuzz_dir/tests/fuzz/$target" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
    -max_len=65536 -print_final_stats=1 "$corpus" "$root/tests/fuzz/corpus/${target%_fuzz}" \
    >"$fuzz_dir/$target.log" 2>&1) \
    || { tail -n 40 "$fuzz_dir/$target.log" >&2; log "fuzz: $target FAILED (log: $fuzz_dir/$target.log)"; status=1; }
  grep -E "^stat::number_of_executed_units|^stat::peak_rss_mb" "$fuzz_dir/$target.log" \
    | sed "s/^/[volley]   $target /" >&2 || true
  return $status
}

fuzz() {
  local fuzz_dir="$root/build/fuzz" seconds="${VOLLEY_FUZZ_SECONDS:-30}" status=0
  log "fuzz: building ${fuzz_targets[*]} with clang-14 (ASan + UBSan) in $fuzz_dir"
  asan_tree || return 1
  ninja -C "$fuzz_dir" -j "$jobs" "${fuzz_targets[@]}" >"$root/build/fuzz-build.log" 2>&1 \
    || { tail -n 40 "$root/build/fuzz-build.log" >&2; log "fuzz: build failed"; return 1; }
  # One target per core at a time (each is single-threaded).
  local running=0
  for target in "${fuzz_targets[@]}"; do
    if [ "$running" -ge "$jobs" ]; then wait -n || status=1; running=$((running - 1)); fi
    log "fuzz: $target for ${seconds} s"
    fuzz_one "$fuzz_dir" "$target" "$seconds" &
    running=$((running + 1))
  done
  while [ "$running" -gt 0 ]; do wait -n || status=1; running=$((running - 1)); done
  return $status
}

# `scripts/dev.sh sanitize`: the whole C++ test suite (and the CLI, which the CLI tests run) in
# the ASan + UBSan tree of `fuzz` (clang-14, build/fuzz), then ctest with leak detection; a
# sanitizer report fails the test that made it. Then the whole Python suite over the sanitized
# module: Debian's python3 with clang's ASan runtime preloaded (python itself is not
# instrumented; leak detection off, since CPython keeps its arenas to the end). The suite's CLI
# and servers are the release build's (an ASan executable cannot start under a preloaded ASan
# runtime; the sanitized CLI is what ctest ran). `scripts/dev.sh test` runs it.
sanitize() {
  local status=0
  log "sanitize: the C++ tests, the CLI and the Python module with ASan + UBSan (clang-14) in $root/build/fuzz"
  asan_build \
    || { tail -n 40 "$root/build/sanitize-build.log" >&2; log "sanitize: build failed"; return 1; }
  sanitize_ctest || status=1
  sanitize_python || status=1
  return $status
}

# The C++ tests of the ASan + UBSan tree (built), leak detection on. Two tests a core: many wait
# on servers, deadlines and child processes (at one a core, half the cores sat idle: 211 s
# against 102 s on the 2-core box).
sanitize_ctest() {
  log "sanitize: the C++ tests under ASan + UBSan"
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    ctest --test-dir "$root/build/fuzz" --output-on-failure -j "$((2 * jobs))" -LE '^cuda$'
}

# The Python suite over the ASan + UBSan module (built: the `_volley` target is enough).
sanitize_python() {
  log "sanitize: the Python tests over the ASan + UBSan module"
  (cd "$root" && VOLLEY_LOAD_TEST_SECONDS="${VOLLEY_LOAD_TEST_SECONDS:-5}" \
    VOLLEY_TEST_SANITIZED=1 LD_PRELOAD="$(clang-14 -print-file-name=libclang_rt.asan-x86_64.so)" \
    ASAN_OPTIONS=detect_leaks=0:allocator_may_return_null=1 \
    UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 PYTHONPATH="$root/build/fuzz/python" \
    VOLLEY_DATA_DIR="$root/data" VOLLEY_CLI="$build_dir/tools/volley/volley" \
    "$python" -m pytest python/tests -q -p no:cacheprovider)
}

# `test` starts `asan_build 19` in the background while the Python legs run: those use about one
# of the two cores, and the build at nice 19 takes what they leave. It builds the Python module
# first and then says so (build/fuzz/module.ready), so that the sanitized Python suite runs
# beside the rest of the tree's build rather than after it.
# `asan_build [nice level]`: the tree of `sanitize` (configured, the package's sources beside the
# module, everything built); its log build/sanitize-build.log.
asan_build() {
  rm -f "$root/build/fuzz/module.ready" "$root/build/fuzz/tree.ready"
  asan_tree || return 1
  mkdir -p "$root/build/fuzz/python/volley"
  rm -f "$root"/build/fuzz/python/volley/*.py && cp "$root"/python/volley/*.py "$root/build/fuzz/python/volley/"
  nice -n "${1:-0}" ninja -C "$root/build/fuzz" -j "$jobs" _volley >"$root/build/sanitize-build.log" 2>&1 \
    && touch "$root/build/fuzz/module.ready" \
    && nice -n "${1:-0}" ninja -C "$root/build/fuzz" -j "$jobs" >>"$root/build/sanitize-build.log" 2>&1 \
    && touch "$root/build/fuzz/tree.ready"
}

# Waits until `file` exists or background job `pid` has ended.
wait_for_file() {
  while [ ! -e "$1" ] && kill -0 "$2" 2>/dev/null; do sleep 2; done
}

# Formatting (.clang-format) and the size rules (scripts/check_sizes.py) over the tracked files.
lint() {
  local status=0
  log "lint: clang-format --dry-run over the C++ sources, scripts/check_sizes.py"
  git ls-files '*.h' '*.cc' '*.cu' '*.cuh' | xargs clang-format --dry-run -Werror || status=1
  python3 scripts/check_sizes.py || status=1
  return $status
}

setup() {
  install_system
  install_python
  build
}

case "${1:-}" in
  setup)
    setup
    ;;
  main)
    setup
    shift
    exec "$python" examples/train_sage.py "$@"
    ;;
  test)
    # With the ASan + UBSan tree (VOLLEY_FUZZ=1, the default) the C++ tests are built and run
    # there: the release tree (the wheel) builds only the CUDA tests, to check they compile.
    [ "${VOLLEY_FUZZ:-1}" = 1 ] && export VOLLEY_TESTS_IN_ALL=OFF
    install_system
    install_python
    # The second leg's venv (mostly a download) fills while the library builds.
    latest_prefetch=""
    if [ "${VOLLEY_LATEST:-1}" != 0 ]; then
      mkdir -p "$root/build"
      log "filling the second leg's venv in the background (log: build/latest-install.log)"
      (install_latest >"$root/build/latest-install.log" 2>&1) &
      latest_prefetch=$!
    fi
    build
    status=0
    if [ "${VOLLEY_FUZZ:-1}" = 1 ]; then
      log "C++ tests: in the ASan + UBSan tree, below"
    else
      log "C++ tests"
      ctest --test-dir "$build_dir" --output-on-failure -j "$jobs" || status=1
    fi
    log "a checkout under a folder named dist configures the same files"
    scripts/check_dist_folder.sh --quick || status=1
    lint || status=1
    # The wheel (auditwheel) and its check in a fresh venv need only the release build: they
    # run in the background, mostly downloads, and are reported at the end.
    wheel_job=""
    if [ "${VOLLEY_WHEEL:-1}" = 1 ]; then
      log "the wheel and its check in a fresh venv, in the background (log: build/wheel.log)"
      ( (make_wheel && check_wheel) >"$root/build/wheel.log" 2>&1) &
      wheel_job=$!
    fi
    prebuild=""
    if [ "${VOLLEY_FUZZ:-1}" = 1 ]; then
      log "building the ASan + UBSan tree, then the ThreadSanitizer gpu-host tests, in the" \
        "background (nice 19) while the Python legs run"
      (asan_build 19; VOLLEY_TSAN_BUILD_ONLY=1 nice -n 19 scripts/tsan_gpu_host.sh \
        >"$root/build/tsan-build.log" 2>&1) &
      prebuild=$!
    fi
    log "Python tests and main job, Debian's torch / PyG / numpy ($venv)"
    # The load test of eight clients runs 10 s here (30 s by hand), 5 s under ASan.
    VOLLEY_LOAD_TEST_SECONDS="${VOLLEY_LOAD_TEST_SECONDS:-10}" python_leg "$python" || status=1
    if [ -n "$latest_prefetch" ]; then
      wait "$latest_prefetch" || tail -n 20 "$root/build/latest-install.log" >&2  # retried below
    fi
    latest_leg || status=1
    docs || status=1
    # The C++ suite under ASan + UBSan, then the fuzz targets (readers and service handlers) for
    # 6 s each, in one clang tree; VOLLEY_FUZZ=0 skips both.
    if [ "${VOLLEY_FUZZ:-1}" = 1 ]; then
      log "waiting for the ASan + UBSan module; the sanitized Python suite runs beside the rest" \
        "of that tree's build"
      wait_for_file "$root/build/fuzz/module.ready" "$prebuild"
      python_sanitized=""
      if [ -e "$root/build/fuzz/module.ready" ]; then
        sanitize_python || status=1
        python_sanitized=1
      fi
      # The C++ suite and the fuzz targets run while the ThreadSanitizer tree builds (nice 19).
      log "waiting for the ASan + UBSan tree's build"
      wait_for_file "$root/build/fuzz/tree.ready" "$prebuild"
      if [ -e "$root/build/fuzz/tree.ready" ] || asan_build; then
        sanitize_ctest || status=1
        [ -n "$python_sanitized" ] || sanitize_python || status=1
      else
        tail -n 40 "$root/build/sanitize-build.log" >&2; log "sanitize: build failed"; status=1
      fi
      VOLLEY_FUZZ_SECONDS="${VOLLEY_FUZZ_SECONDS:-6}" fuzz || status=1
      wait "$prebuild" || true  # the TSan build: scripts/tsan_gpu_host.sh reports its errors
      # The GPU kernels' bodies on the host executor under ThreadSanitizer: a dropped atomic in
      # the sampler's table fails here every time (the plain gpu-host tests catch it by chance).
      log "the gpu-host tests under ThreadSanitizer (scripts/tsan_gpu_host.sh)"
      scripts/tsan_gpu_host.sh >"$root/build/tsan.log" 2>&1 \
        || { tail -n 60 "$root/build/tsan.log" >&2; status=1; }
      grep -E "tests passed|tests failed" "$root/build/tsan.log" >&2 || true
    fi
    if [ -n "$wheel_job" ]; then
      if wait "$wheel_job"; then
        grep "^\[volley" "$root/build/wheel.log" >&2 || true
      else
        tail -n 40 "$root/build/wheel.log" >&2; log "wheel: FAILED (log: build/wheel.log)"; status=1
      fi
    fi
    exit $status
    ;;
  latest)
    setup
    latest_leg
    ;;
  docs)
    setup
    docs
    ;;
  wheel)
    setup
    make_wheel
    check_wheel
    ;;
  fuzz)
    install_system
    install_python
    fuzz
    exit $?
    ;;
  sanitize)
    setup
    sanitize
    ;;
  *)
    echo "usage: scripts/dev.sh main|test|setup|latest|wheel|docs|fuzz|sanitize" >&2
    exit 2
    ;;
esac
