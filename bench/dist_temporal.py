#!/usr/bin/env python3
"""Distributed temporal sampling: sampled edges per second of
``volley.dist.DistNeighborLoader`` (worker topology, 2 parts served in-process over loopback)
by edge time ("uniform", "last") against the same loader untimed and disjoint, and against the
local temporal loader over the whole graph.

    volley generate /tmp/temporal --model temporal --nodes 200000 --edges 2000000 --seed 0
    python bench/dist_temporal.py --dataset /tmp/temporal --threads 2

Workload: ``--batches`` × ``--batch-size`` distinct seeds drawn uniformly (seeded) with uniform seed
times over the event range, fanouts ``--fanouts``, no features; one epoch after ``--warmup``
untimed batches. The dataset is partitioned (random, 2 parts) into ``--work`` first. One JSON
line per figure.
"""

from __future__ import annotations

import argparse
import json
import os
import time

import numpy as np

import volley
import volley.dist as vd
from volley.loader import NeighborLoader
from volley.partition import to_new_ids


def rate(loader, warmup: int) -> float:
    iterator = iter(loader)
    for _ in range(warmup):
        next(iterator)
    start, edges = time.perf_counter(), 0
    for batch in iterator:
        edges += int(batch.edge_index.shape[1])
    return edges / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dataset", required=True)
    parser.add_argument("--work", default="/tmp/volley-dist-temporal-bench")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=1024)
    parser.add_argument("--batches", type=int, default=20)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--fanouts", type=lambda s: [int(k) for k in s.split(",")],
                        default=[15, 10, 5])
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    parts = os.path.join(args.work, "parts-2")
    volley.partition(args.dataset, parts, 2, method="random", seed=args.seed)
    whole = volley.load_dataset(args.dataset)
    num_edges = int(np.asarray(whole.graph.edge_time).max()) + 1
    rng = np.random.default_rng(args.seed)
    count = (args.batches + args.warmup) * args.batch_size
    # New ids for the distributed loader, the same seeds in old ids for the local one.
    old = rng.permutation(whole.num_nodes)[:count]  # distinct: the untimed loaders need it
    new = np.asarray(to_new_ids(parts, old))
    times = rng.integers(0, num_edges, count)
    s1 = vd.serve(parts, 1)
    s0 = vd.serve(parts, 0)
    common = dict(batch_size=args.batch_size, num_workers=args.threads, seed=args.seed)
    rows = [("dist untimed", {}), ("dist disjoint", dict(disjoint=True))]
    rows += [(f"dist {s}", dict(time_attr="edge_time", input_time=times, temporal_strategy=s))
             for s in ("uniform", "last")]
    for name, extra in rows:
        loader = vd.DistNeighborLoader([s0.address, s1.address], args.fanouts, input_nodes=new,
                                       topology="worker", local=s0, **common, **extra)
        print(json.dumps({"loader": name, "threads": args.threads,
                          "edges_per_second": round(rate(loader, args.warmup))}), flush=True)
    for s in ("uniform", "last"):
        loader = NeighborLoader(whole, args.fanouts, input_nodes=old, input_time=times,
                                time_attr="edge_time", temporal_strategy=s, **common)
        print(json.dumps({"loader": f"local {s}", "threads": args.threads,
                          "edges_per_second": round(rate(loader, args.warmup))}), flush=True)
    s0.shutdown()
    s1.shutdown()


if __name__ == "__main__":
    main()
