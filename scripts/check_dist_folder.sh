#!/usr/bin/env bash
# Builds a copy of this checkout under a path with folders named `cuda` and `dist`
# (<tmp>/cuda/dist/volley) and runs tests there: the build must not depend on where the checkout
# lives (no source filter may match an absolute path). CPU-only, no gRPC, no Python module.
#
#   scripts/check_dist_folder.sh            build the libraries, the CLI and the tests; run the
#                                           graph, sampling and CLI tests and the layering probes
#
# Copies the working tree (tracked and untracked-not-ignored files). Uses ccache when present
# (CCACHE_BASEDIR is set to the copy's parent, so successive runs hit the cache wherever the
# copy lands). Environment: JOBS (default: number of cores), KEEP=1 keeps the copy.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
jobs="${JOBS:-$(nproc)}"
tmp="$(mktemp -d /tmp/volley-dist-folder.XXXXXX)"
copy="$tmp/cuda/dist/volley"
[ "${KEEP:-0}" = 1 ] || trap 'rm -rf "$tmp"' EXIT

log() { printf '[check_dist_folder] %s\n' "$*" >&2; }

mkdir -p "$copy"
(cd "$root" && git ls-files -z --cached --others --exclude-standard \
   | xargs -0 -I{} sh -c 'test -e "{}" && printf "%s\0" "{}"' \
   | tar --null -T - -cf -) | tar -xf - -C "$copy"
log "copy of the checkout in $copy"

launcher=()
if command -v ccache >/dev/null; then
  export CCACHE_BASEDIR="$tmp"
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
fi
build="$copy/build/check"
cmake -S "$copy" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release "${launcher[@]}" \
  -DVOLLEY_CUDA=OFF -DVOLLEY_DIST=OFF -DVOLLEY_PYTHON=OFF -DVOLLEY_TESTS=ON >"$tmp/configure.log" \
  || { cat "$tmp/configure.log" >&2; exit 1; }
log "configured; building with $jobs jobs"
if ! ninja -C "$build" -j "$jobs" >"$tmp/build.log" 2>&1; then
  tail -n 40 "$tmp/build.log" >&2
  log "build failed under $copy"
  exit 1
fi
# Every concept library was built with objects in it (an empty source list would link nothing).
for concept in core graph sampling feature partition loader; do
  library="$build/src/volley/$concept/libvolley_$concept.a"
  if [ ! -s "$library" ] || [ -z "$(ar t "$library")" ]; then
    log "volley_$concept built no objects under $copy"
    exit 1
  fi
done
log "built; running tests"
ctest --test-dir "$build" --output-on-failure -j "$jobs" \
  -R '^(Csr|Dataset|Generate|NeighborSampler|SampleHop|Cli|Partition|layering)' \
  | tail -n 5
log "passed: a checkout under $tmp/cuda/dist builds and passes"
