#!/usr/bin/env bash
# Builds a copy of this checkout under a path with folders named `cuda` and `dist`
# (<tmp>/cuda/dist/volley) and runs tests there: the build must not depend on where the checkout
# lives (no source filter may match an absolute path). CPU-only, no gRPC, no Python module.
#
#   scripts/check_dist_folder.sh          build the libraries, the CLI and the tests in the copy;
#                                         run the graph, sampling, partition and CLI tests and the
#                                         layering probes there (a few minutes cold, ~1 with ccache)
#   scripts/check_dist_folder.sh --quick  configure only (seconds): the copy must compile exactly
#                                         the files a configure of this checkout compiles
#                                         (scripts/dev.sh test runs this)
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

# The files each configure compiles, relative to its checkout (or build) folder, sorted.
compiled_files() {  # <checkout> <build>
  python3 - "$1" "$2" <<'PY'
import json, os, sys
checkout, build = (os.path.realpath(p) for p in sys.argv[1:3])
names = set()
for entry in json.load(open(os.path.join(build, "compile_commands.json"))):
    path = os.path.realpath(os.path.join(entry["directory"], entry["file"]))
    for prefix, tag in ((build, "<build>"), (checkout, "")):
        if path.startswith(prefix + os.sep):
            names.add(tag + os.path.relpath(path, prefix))
            break
    else:
        names.add(path)
print("\n".join(sorted(names)))
PY
}

options=(-G Ninja -DCMAKE_BUILD_TYPE=Release -DVOLLEY_CUDA=OFF -DVOLLEY_DIST=OFF -DVOLLEY_PYTHON=OFF
         -DVOLLEY_TESTS=ON)
if [ "${1:-}" = "--quick" ]; then
  # File by file: compile_commands.json then lists the sources (a unity build lists its batches).
  options+=(-DVOLLEY_UNITY_BUILD=OFF)
  cmake -S "$copy" -B "$copy/build/check" "${options[@]}" >"$tmp/configure.log" \
    || { cat "$tmp/configure.log" >&2; exit 1; }
  cmake -S "$root" -B "$tmp/reference" "${options[@]}" >"$tmp/reference.log" \
    || { cat "$tmp/reference.log" >&2; exit 1; }
  compiled_files "$copy" "$copy/build/check" >"$tmp/copy.txt"
  compiled_files "$root" "$tmp/reference" >"$tmp/reference.txt"
  if ! diff -u "$tmp/reference.txt" "$tmp/copy.txt" >&2; then
    log "a checkout under $tmp/cuda/dist compiles other files than this one (diff above)"
    exit 1
  fi
  [ "$(grep -c '^src/volley/' "$tmp/copy.txt")" -gt 20 ] || { log "too few sources"; exit 1; }
  log "passed: a checkout under $tmp/cuda/dist configures the same $(wc -l <"$tmp/copy.txt") files"
  exit 0
fi

launcher=()
if command -v ccache >/dev/null; then
  export CCACHE_BASEDIR="$tmp"
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
fi
build="$copy/build/check"
cmake -S "$copy" -B "$build" "${options[@]}" "${launcher[@]}" >"$tmp/configure.log" \
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
ctest --test-dir "$build" --output-on-failure --no-tests=error -j "$jobs" \
  -R '^(Csr|Dataset|Generate|NeighborSampler|SampleHop|Cli|Partition|layering)' \
  | grep -E "tests passed|Failed|\*\*\*"
log "passed: a checkout under $tmp/cuda/dist builds and passes"
