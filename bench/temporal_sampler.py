#!/usr/bin/env python3
"""Temporal sampling through the Python API, each strategy in a fresh process.

``volley bench sample --time`` measures the C++ sampler; users call ``volley.NeighborSampler``
from Python. This script gives the graph random edge times (seeded, uniform in [0, 2^20), as the
C++ bench does), sorts its rows by them, and times ``sample_subgraph`` over ``--batches`` batches
of ``--batch-size`` random seeds with random seed times, after ``--warmup`` untimed batches, for
untimed sampling ("none") and each ``temporal_strategy``. Every measurement runs in a new process;
rounds interleave the strategies. One JSON line per measurement, then the median ratio of each
strategy's sampled edges per second to untimed sampling's.

    volley generate /tmp/products --model powerlaw --nodes 2400000 --edges 62000000 --seed 0
    python bench/temporal_sampler.py --dataset /tmp/products --rounds 2
"""

import argparse
import json
import statistics
import subprocess
import sys
import time


def measure(dataset: str, strategy: str, batches: int, warmup: int, batch_size: int) -> dict:
    import numpy as np
    import torch

    import volley

    graph = volley.load_dataset(dataset).graph
    rng = np.random.default_rng(0)
    times = torch.from_numpy(rng.integers(0, 1 << 20, graph.num_edges, dtype=np.int64))
    graph = graph.with_times(edge_time=times).sort_by_time("edge")
    timed = strategy != "none"
    extra = {"time_attr": "edge_time", "temporal_strategy": strategy} if timed else {}
    sampler = volley.NeighborSampler(graph, [15, 10, 5], seed=1, **extra)
    total = warmup + batches
    seeds = [torch.from_numpy(rng.choice(graph.num_nodes, batch_size, replace=False))
             for _ in range(total)]
    seed_times = [torch.from_numpy(rng.integers(0, 1 << 20, batch_size, dtype=np.int64))
                  for _ in range(total)]

    def run(b: int):
        return sampler.sample_subgraph(seeds[b], b, seed_time=seed_times[b] if timed else None)

    for b in range(warmup):
        run(b)
    edges = 0
    start = time.perf_counter()
    for b in range(warmup, total):
        edges += run(b).row.numel()
    seconds = time.perf_counter() - start
    return {"strategy": strategy, "sampled_edges": edges, "seconds": seconds,
            "seps": edges / seconds}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dataset", required=True, help="a dataset directory (volley generate)")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--batches", type=int, default=40)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=1024)
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(measure(args.dataset, args.child, args.batches, args.warmup,
                                 args.batch_size)))
        return
    seps = {}
    for _ in range(args.rounds):
        for strategy in ("none", "uniform", "last"):
            command = [sys.executable, __file__, "--dataset", args.dataset, "--child", strategy,
                       "--batches", str(args.batches), "--warmup", str(args.warmup),
                       "--batch-size", str(args.batch_size)]
            line = subprocess.run(command, check=True, capture_output=True, text=True).stdout
            print(line.strip(), flush=True)
            seps.setdefault(strategy, []).append(json.loads(line)["seps"])
    untimed = statistics.median(seps["none"])
    for strategy in ("uniform", "last"):
        print(f"{strategy}: median {statistics.median(seps[strategy]) / 1e6:.2f}M edges/s, "
              f"{statistics.median(seps[strategy]) / untimed:.2f} of untimed "
              f"({untimed / 1e6:.2f}M)")


if __name__ == "__main__":
    main()
