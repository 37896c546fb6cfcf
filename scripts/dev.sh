#!/usr/bin/env bash
# Volley's two project commands (README, first section), for a fresh Debian machine:
#
#   scripts/dev.sh main   install what is missing, build, train GraphSAGE on the bundled Cora
#   scripts/dev.sh test   install what is missing, build, run every test (C++ and Python)
#
# Also: `scripts/dev.sh setup` (install + build only). Idempotent and quiet when everything is
# present. Environment: VOLLEY_BUILD_DIR (default build/release), VOLLEY_CMAKE_ARGS (extra -D
# flags, e.g. "-DVOLLEY_CUDA=OFF"), JOBS (default: number of cores).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
build_dir="${VOLLEY_BUILD_DIR:-build/release}"
venv="$root/.venv"
python="$venv/bin/python"
jobs="${JOBS:-$(nproc)}"

log() { printf '[volley] %s\n' "$*" >&2; }

# System libraries and tools, from Debian. What each is for: README, "Dependencies".
apt_packages=(
  build-essential cmake ninja-build git pkg-config
  libfmt-dev libcli11-dev nlohmann-json3-dev zlib1g-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  libmetis-dev libgrpc++-dev libprotobuf-dev protobuf-compiler-grpc
  python3 python3-dev python3-venv python3-torch
  time
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

# One CMake build (driven by scikit-build-core through pip) gives the Python package, the volley
# CLI (installed into .venv/bin) and the C++ test binaries (left in $build_dir).
build() {
  # (Debian's pip 23.0 knows only the long --config-settings spelling.)
  local args=(--config-settings=build-dir="$build_dir"
              --config-settings=cmake.define.VOLLEY_TESTS=ON
              --config-settings=cmake.build-type=Release
              --config-settings=build.tool-args=-j"$jobs")
  for define in ${VOLLEY_CMAKE_ARGS:-}; do args+=(--config-settings=cmake.args="$define"); done
  local log_file="$root/build/pip-install.log"
  mkdir -p "$root/build"
  if ! "$python" -m pip install -v --no-build-isolation --no-deps --disable-pip-version-check \
      "${args[@]}" . >"$log_file" 2>&1; then
    tail -n 60 "$log_file" >&2
    log "build failed (full log: $log_file)"
    exit 1
  fi
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
    setup
    status=0
    log "C++ tests"
    ctest --test-dir "$build_dir" --output-on-failure -j "$jobs" || status=1
    log "a checkout under a folder named dist configures the same files"
    scripts/check_dist_folder.sh --quick || status=1
    log "Python tests"
    (cd "$root" && "$python" -m pytest python/tests -q -p no:cacheprovider) || status=1
    exit $status
    ;;
  *)
    echo "usage: scripts/dev.sh main|test|setup" >&2
    exit 2
    ;;
esac
