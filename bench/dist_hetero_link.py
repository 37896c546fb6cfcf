#!/usr/bin/env python3
"""Heterogeneous link prediction over the service (issues 14 and 15): batches per second of
``volley.dist.DistLinkNeighborLoader(..., edge_label_index=(edge_type, index))`` (worker
topology, 2 parts served over loopback, part 0 in-process) against the local heterogeneous
``LinkNeighborLoader`` over the original dataset, with features.

    volley -q generate /tmp/mag --model hetero --nodes 50000 --reverse --feature-dim 64
    python bench/dist_hetero_link.py --dataset /tmp/mag --workers 1 2

Workload: ``--batches`` × ``--batch-size`` supervision edges of ``author__writes__paper``
(seeded sample of the type's edges; the distributed loader gets them mapped through the
partition book), binary negatives 1:1, fanouts ``--fanouts`` for every edge type, paper
features and labels gathered; one epoch after ``--warmup`` untimed batches. The dataset is
partitioned (random, 2 parts) into ``--work`` first. One JSON line per figure.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import time

import numpy as np

import volley
import volley.dist as vd
from volley.loader import LinkNeighborLoader
from volley.partition import load_node_map, to_new_ids

WRITES = ("author", "writes", "paper")


def rate(loader, warmup: int) -> float:
    iterator = iter(loader)
    for _ in range(warmup):
        next(iterator)
    start, count = time.perf_counter(), 0
    for _ in iterator:
        count += 1
    return count / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dataset", required=True)
    parser.add_argument("--work", default="/tmp/volley-dist-hetero-link-bench")
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--batch-size", type=int, default=1024)
    parser.add_argument("--batches", type=int, default=20)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--fanouts", type=lambda s: [int(k) for k in s.split(",")],
                        default=[15, 10])
    args = parser.parse_args()
    dataset = volley.load_dataset(args.dataset)
    parts = os.path.join(args.work, "parts")
    if not os.path.exists(os.path.join(parts, "partition.json")):
        shutil.rmtree(parts, ignore_errors=True)
        volley.partition(dataset, parts, 2, method="random")
    edges = np.asarray(dataset.graph.edge_index(WRITES))
    count = min(edges.shape[1], (args.batches + args.warmup) * args.batch_size)
    old = edges[:, np.random.default_rng(0).choice(edges.shape[1], count, replace=False)]
    new = np.stack([np.asarray(to_new_ids(load_node_map(parts, node_type=t), row))
                    for t, row in ((WRITES[0], old[0]), (WRITES[2], old[1]))])
    options = dict(neg_sampling="binary", batch_size=args.batch_size, seed=0)
    data = dataset.to_pyg()
    server = vd.serve(parts, 1)
    try:
        for workers in args.workers:
            local = LinkNeighborLoader(data, args.fanouts, edge_label_index=(WRITES, old),
                                       num_workers=workers, **options)
            remote = vd.DistLinkNeighborLoader(["", server.address], args.fanouts,
                                               edge_label_index=(WRITES, new),
                                               local=(parts, 0), num_workers=workers, **options)
            local_rate, remote_rate = rate(local, args.warmup), rate(remote, args.warmup)
            print(json.dumps({
                "bench": "dist_hetero_link", "workers": workers, "batch_size": args.batch_size,
                "fanouts": args.fanouts, "local_batches_per_s": round(local_rate, 2),
                "dist_batches_per_s": round(remote_rate, 2),
                "dist_over_local": round(remote_rate / local_rate, 2)}), flush=True)
    finally:
        server.shutdown()


if __name__ == "__main__":
    main()
