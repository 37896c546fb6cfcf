#!/usr/bin/env bash
# Temporal sampling ("uniform", "last") against untimed disjoint sampling, and the bound of the
# admissible-prefix searches, in wall-clock SEPS at 1 thread, interleaved.
#
# Generates a seeded power-law graph in a temporary folder (deleted on exit), then runs ROUNDS
# rounds of `volley bench sample --time --modes ...`: each round one process measuring
# none-disjoint, uniform, last and bound (untimed disjoint sampling plus the admissible-prefix
# searches of the rows it expanded: the least work temporal sampling adds to it), the order
# rotated from round to round. `bench sample --time` gives the graph random edge times in
# [0, 2^20), sorts every row by them, and draws a random time per seed. Prints each round's
# SEPS, then medians of SEPS and of the per-round ratios to disjoint (wall clock and per CPU
# second), the searches' share of uniform's and last's time (timed apart over their rows), and
# the bound as the bound mode's own split: disjoint time / (disjoint + search time).
#
# Usage: bench/temporal_bound.sh   (VOLLEY_CLI=path/to/volley, ROUNDS=5, NODES=1000000,
#        EDGES=20000000, BATCHES=50, FANOUT=15,10,5, BATCH_SIZE=1024)
set -euo pipefail

VOLLEY=${VOLLEY_CLI:-build/release/tools/volley/volley}
ROUNDS=${ROUNDS:-5}
NODES=${NODES:-1000000}
EDGES=${EDGES:-20000000}
BATCHES=${BATCHES:-50}
FANOUT=${FANOUT:-15,10,5}
BATCH_SIZE=${BATCH_SIZE:-1024}

work=$(mktemp -d /tmp/temporal_bound.XXXXXX)
trap 'rm -rf "$work"' EXIT

echo "load average at start: $(cat /proc/loadavg)"
"$VOLLEY" -q generate "$work/graph" --model powerlaw --nodes "$NODES" --edges "$EDGES" --seed 0

modes=(none-disjoint uniform last bound)
for ((round = 0; round < ROUNDS; ++round)); do
  order=()
  for ((i = 0; i < ${#modes[@]}; ++i)); do order+=("${modes[(i + round) % ${#modes[@]}]}"); done
  # untimed sampling first, not reported: it takes the first pass's page faults over the graph,
  # which would otherwise fall on whichever measured mode the rotation puts first
  list=$(IFS=,; echo "none,${order[*]}")
  "$VOLLEY" bench sample --dataset "$work/graph" --time --threads 1 --batch-size "$BATCH_SIZE" \
    --fanout "$FANOUT" --batches "$BATCHES" --warmup 2 --modes "$list" |
    sed "s/^/{\"round\": $round, \"line\": /; s/\$/}/" >>"$work/lines.jsonl"
  echo "round $round ($list) done; load average $(cut -d' ' -f1-3 /proc/loadavg)"
done

python3 - "$work/lines.jsonl" <<'EOF'
import json, statistics, sys
rounds = {}
for text in open(sys.argv[1]):
    record = json.loads(text)
    rounds.setdefault(record["round"], {})[record["line"]["temporal_strategy"]] = record["line"]
modes = ["none-disjoint", "uniform", "last", "bound"]
print("round  " + "  ".join(f"{m:>14}" for m in modes) + "   (SEPS, millions)")
for r, lines in sorted(rounds.items()):
    print(f"{r:5}  " + "  ".join(f"{lines[m]['seps'] / 1e6:14.2f}" for m in modes))
def median(values):
    return statistics.median(values)
print("\nmode           edges      median SEPS   ratio to disjoint (wall / per CPU s)  searches")
for m in modes:
    lines = [rounds[r][m] for r in rounds]
    seps = median([l["seps"] for l in lines])
    ratio = median([rounds[r][m]["seps"] / rounds[r]["none-disjoint"]["seps"] for r in rounds])
    cpu = median([rounds[r][m]["seps_per_cpu_second"] /
                  rounds[r]["none-disjoint"]["seps_per_cpu_second"] for r in rounds])
    share = ""
    if "search_seconds" in lines[0]:
        share = f"{median([l['search_seconds'] / l['seconds'] for l in lines]):.2f} of its time"
    print(f"{m:14} {lines[0]['sampled_edges']:10}  {seps / 1e6:8.2f}M     {ratio:.3f} / {cpu:.3f}"
          f"                  {share}")
split = median([1 - l["search_seconds"] / l["seconds"] for l in (rounds[r]["bound"] for r in rounds)])
print(f"\nbound, from its own split (disjoint time / (disjoint + search time), same batches): {split:.3f}")
EOF
echo "load average at end: $(cat /proc/loadavg)"
