#!/usr/bin/env bash
# The figures of features larger than memory, in one process order, one run, on one
# dataset directory (made by `volley generate`), printed as one table of ratios at the end:
#   1. `volley bench disk`: the disk's 4 KiB random-read limit (io_uring, O_DIRECT, depth 64);
#   2. `volley bench sample` before any feature I/O;
#   3. `volley bench loader` with the disk tier and a row cache of CACHE, policies lookahead,
#      lookahead with read-ahead, static (degree) and dynamic (SIEVE), BATCHES batches each;
#   4. the mapped tier (page cache, MADV_RANDOM) for MAPPED_BATCHES batches;
#   5. PyG's route: a numpy memmap indexed by each batch's n_id, sampled and gathered end to end
#      (bench/disk_memmap_baseline.py --e2e), MAPPED_BATCHES batches;
#   6. `volley bench sample` again, after the feature I/O;
#   7. `volley bench cache` at 1 GB with lookahead 8 and 32 (hit rates against Belady's optimum).
#
# Usage: bench/disk_e2e.sh DATASET_DIR [CACHE=8G] [BATCHES=60]
# Environment: VOLLEY_CLI (default build/release/tools/volley/volley), PYTHON (a Python with
# volley importable; default python3), THREADS (2), MAPPED_BATCHES (3), PROBE_SECONDS (15),
# LOOKAHEAD (the loader's window; default the CLI's, 8), SAMPLE_BATCHES (3000: a few seconds; 300 takes 0.3 s, too short to time), CACHE_BENCH_BYTES (1G), POLICIES (the loader rows, default
# "lookahead lookahead+read-ahead static dynamic"), OUT (a folder for the JSON lines; default a
# fresh temporary one), SUMMARY_ONLY (1: print the table of the run in OUT again). The issue's figures: DATASET_DIR = the 32 GB dataset, CACHE=8G, BATCHES=60.
set -euo pipefail

D=${1:?usage: bench/disk_e2e.sh DATASET_DIR [CACHE] [BATCHES]}
CACHE=${2:-8G}
BATCHES=${3:-60}
HERE=$(cd "$(dirname "$0")/.." && pwd)
V=${VOLLEY_CLI:-$HERE/build/release/tools/volley/volley}
PY=${PYTHON:-python3}
THREADS=${THREADS:-2}
MAPPED_BATCHES=${MAPPED_BATCHES:-3}
PROBE_SECONDS=${PROBE_SECONDS:-15}
LA=()  # --lookahead only when asked for (the CLI's default is 8; older CLIs lack the option)
[ -n "${LOOKAHEAD:-}" ] && LA=(--lookahead "$LOOKAHEAD")
SAMPLE_BATCHES=${SAMPLE_BATCHES:-3000}
CACHE_BENCH_BYTES=${CACHE_BENCH_BYTES:-1G}
POLICIES=${POLICIES:-lookahead lookahead+read-ahead static dynamic}
OUT=${OUT:-$(mktemp -d)}
mkdir -p "$OUT"
[ -x "$V" ] || { echo "no volley CLI at $V (set VOLLEY_CLI)" >&2; exit 2; }
[ -n "${SUMMARY_ONLY:-}" ] || [ -f "$D/features.npy" ] || { echo "$D has no features.npy" >&2; exit 2; }
COMMON=(--dataset "$D" --fanout 10,5 --batch-size 512 --threads "$THREADS")
step() { echo "== $*" >&2; }

if [ -z "${SUMMARY_ONLY:-}" ]; then  # SUMMARY_ONLY=1 OUT=dir: the table of an earlier run
step "disk probe"
"$V" bench disk --file "$D/features.npy" --seconds "$PROBE_SECONDS" >"$OUT/disk.json"
step "sampling before"
"$V" bench sample "${COMMON[@]}" --batches "$SAMPLE_BATCHES" >"$OUT/sample_before.json"
for policy in $POLICIES; do
  step "loader $policy, cache $CACHE, $BATCHES batches"
  extra=()
  case $policy in
    lookahead+read-ahead) extra=(--policy lookahead "${LA[@]}" --read-ahead) ;;
    lookahead) extra=(--policy lookahead "${LA[@]}") ;;
    *) extra=(--policy "$policy") ;;
  esac
  "$V" bench loader "${COMMON[@]}" --batches "$BATCHES" --cache-bytes "$CACHE" "${extra[@]}" \
    >"$OUT/loader_$policy.json"
done
step "mapped tier, $MAPPED_BATCHES batches"
"$V" bench loader "${COMMON[@]}" --batches "$MAPPED_BATCHES" --policy mapped >"$OUT/loader_mapped.json"
step "PyG's route (numpy memmap), $MAPPED_BATCHES batches"
PYTHONPATH=${PYTHONPATH:-$HERE/python} "$PY" "$HERE/bench/disk_memmap_baseline.py" \
  "$MAPPED_BATCHES" "$D" --e2e >"$OUT/memmap.json"
step "sampling after"
"$V" bench sample "${COMMON[@]}" --batches "$SAMPLE_BATCHES" >"$OUT/sample_after.json"
for k in 8 32; do
  step "cache hit rates, $CACHE_BENCH_BYTES, lookahead $k"
  "$V" bench cache --dataset "$D" --fanout 10,5 --batch-size 512 --cache-bytes "$CACHE_BENCH_BYTES" \
    --batches "$SAMPLE_BATCHES" --lookahead "$k" >"$OUT/cache_$k.json"
done
fi

"$PY" - "$OUT" "$D" "$CACHE" "$BATCHES" "$POLICIES" <<'PYEOF'
import json, math, os, sys
out, dataset, cache, batches, policies = sys.argv[1:6]
def load(name):
    with open(os.path.join(out, name)) as f:
        return [json.loads(l) for l in f if l.startswith("{")][-1]
disk = load("disk.json")
before, after = load("sample_before.json"), load("sample_after.json")
loaders = {p: load(f"loader_{p}.json") for p in policies.split()}
mapped, memmap = load("loader_mapped.json"), load("memmap.json")
row_bytes = None
for line in loaders.values():
    if "features" in line and "[" in line["features"]:
        dims = line["features"].split("[", 1)[1].split("]", 1)[0].split(",")
        row_bytes = int(dims[1]) * 4 if len(dims) > 1 else 4
pages = 1 + (row_bytes - 1) / 4096 if row_bytes else 1
limit_rows = disk["iops"] / pages
print(f"\ndataset {dataset}, cache {cache}, {batches} batches, output in {out}")
print(f"disk probe: {disk['iops']:.0f} IOPS (4 KiB, depth 64) = {limit_rows:.0f} rows/s "
      f"at {pages:.2f} pages per {row_bytes}-byte row")
print(f"sampling: {before['seps']/1e6:.2f} M SEPS before, {after['seps']/1e6:.2f} M after: "
      f"ratio {after['seps']/before['seps']:.2f} (target >= 0.9)")
print("\n| loader | batches/s | rows served from memory at gather (read-ahead rows count) | "
      "rows from disk/s (× probe) | rows read ahead | × mapped tier | × PyG memmap |")
print("| --- | --- | --- | --- | --- | --- | --- |")
def row(name, line):
    bps = line["batches_per_second"]
    disk_rows = line.get("disk_rows_per_second")
    hit = line.get("row_hit_rate")
    print(f"| {name} | {bps:.2f} | {'' if hit is None else f'{hit:.3f}'} | "
          f"{'' if disk_rows is None else f'{disk_rows:.0f} ({disk_rows/limit_rows:.2f})'} | "
          f"{line.get('rows_read_ahead', '')} | {bps/mapped['batches_per_second']:.3g} | "
          f"{bps/memmap['batches_per_second']:.3g} |")
for p, line in loaders.items():
    row(p, line)
row("mapped tier", mapped)
print(f"| PyG numpy memmap (e2e, 1 thread) | {memmap['batches_per_second']:.2f} | | | | "
      f"{memmap['batches_per_second']/mapped['batches_per_second']:.3g} | 1 |")
if "lookahead" in loaders and "static" in loaders:
    la, st = loaders["lookahead"], loaders["static"]
    print(f"\nlookahead / static: {la['batches_per_second']/st['batches_per_second']:.2f}")
    if "lookahead+read-ahead" in loaders:
        ra = loaders["lookahead+read-ahead"]
        print(f"lookahead with read-ahead / without: "
              f"{ra['batches_per_second']/la['batches_per_second']:.2f}")
print("\n| bench cache | static | SIEVE | lookahead | Belady cold | Belady pre-filled | lookahead − cold | lookahead − pre-filled |")
print("| --- | --- | --- | --- | --- | --- | --- | --- |")
for k in (8, 32):
    c = load(f"cache_{k}.json")
    la = c["hit_rate_lookahead"]
    print(f"| {c.get('cache_bytes', '')} B ({c.get('cache_rows', '?')} rows), K={k} | {c['hit_rate_static_degree']:.3f} | "
          f"{c['hit_rate_sieve']:.3f} | {la:.3f} | {c['hit_rate_belady_offline']:.3f} | "
          f"{c['hit_rate_belady_offline_prefilled']:.3f} | "
          f"{100*(la-c['hit_rate_belady_offline']):+.1f} pts | "
          f"{100*(la-c['hit_rate_belady_offline_prefilled']):+.1f} pts |")
PYEOF
