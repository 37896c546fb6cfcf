#!/usr/bin/env python3
"""Heterogeneous sampling over the service: batches per second of the local
heterogeneous loader against ``volley.dist.DistNeighborLoader`` on the same dataset partitioned
in 2 and served on localhost, worker topology (part 0 in-process) and server-client (part 0's
server, started with peers, samples and gathers every batch and streams it back).

    volley -q generate /tmp/mag --model hetero --nodes 200000 --reverse --feature-dim 64 --seed 0
    python bench/dist_hetero.py --dataset /tmp/mag --work /tmp/mag-work

Workload: the training papers as seeds (the same papers in old ids locally, new ids over the
service), shuffled, batch ``--batch-size``, fanouts ``--fanouts`` for every edge type, paper
features and labels gathered; ``--warmup`` batches, then ``--batches`` timed ones (over
several epochs when the training papers give fewer batches). The dataset is
partitioned (random, 2 parts) into ``--work`` first. Both servers run in this process (their
gRPC threads share the machine with the trainer). ``--temporal``: the three loaders again by node
time (random paper years in [0, 50), written with ``volley.hetero_partition.write_times``;
``time_attr="node_time"``, the seeds' own times). One JSON line per loader.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

import numpy as np

try:
    import volley
except ImportError:
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
    import volley  # noqa: E402
import volley.dist as vd  # noqa: E402
from volley.hetero_partition import load_hetero_node_map, write_times  # noqa: E402
from volley.loader import NeighborLoader  # noqa: E402


def epochs(loader, batches: int):
    """``batches`` batches of ``loader``, over as many epochs as that takes."""
    count = 0
    while True:
        for batch in loader:
            yield batch
            count += 1
            if count == batches:
                return


def rate(loader, warmup: int, batches: int) -> dict:
    """Batches and sampled edges per second over ``batches`` batches after ``warmup``."""
    iterator = epochs(loader, warmup + batches)
    for _ in range(warmup):
        next(iterator)
    count, edges = 0, 0
    started = time.perf_counter()
    for batch in iterator:
        edges += sum(int(batch[t].edge_index.shape[1]) for t in batch.edge_types)
        count += 1
    seconds = time.perf_counter() - started
    return {"batches": count, "batches_per_s": round(count / seconds, 2),
            "edges_per_s": round(edges / seconds), "load_average": round(os.getloadavg()[0], 2)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dataset", required=True)
    parser.add_argument("--work", default="/tmp/volley-dist-hetero-bench")
    parser.add_argument("--batch-size", type=int, default=1024)
    parser.add_argument("--fanouts", type=lambda s: [int(k) for k in s.split(",")],
                        default=[15, 10])
    parser.add_argument("--batches", type=int, default=20)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--workers", type=int, default=2, help="loader threads (every loader)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--temporal", action="store_true", help="also sample by node time")
    args = parser.parse_args()
    parts = os.path.join(args.work, "parts-2")
    if not os.path.exists(os.path.join(parts, "partition.json")):
        volley.partition(args.dataset, parts, 2, method="random", seed=args.seed)
    dataset = volley.load_dataset(args.dataset)
    data = dataset.to_pyg()
    train = np.flatnonzero(data["paper"].train_mask.numpy())
    new_train = np.asarray(load_hetero_node_map(parts, "paper"))[train]
    print(json.dumps({"bench": "dist_hetero", "nodes": dataset.graph.num_nodes_dict,
                      "edges": sum(dataset.graph.num_edges_dict.values()),
                      "seeds": len(train)}), flush=True)
    runs = [{}]
    if args.temporal:
        years = np.random.default_rng(args.seed).integers(0, 50, data["paper"].num_nodes)
        write_times(parts, node_time={"paper": years})
        data["paper"].node_time = years
        runs.append(dict(time_attr="node_time"))
    second = vd.serve(parts, 1)
    first = vd.serve(parts, 0, peers=["", second.address])  # can stream (server-client)
    addresses = [first.address, second.address]
    try:
        for extra in runs:
            options = dict(batch_size=args.batch_size, shuffle=True, seed=args.seed,
                           num_workers=args.workers, **extra)
            loaders = {
                "local": NeighborLoader(data, args.fanouts, input_nodes=("paper", train),
                                        **options),
                "dist worker (part 0 in-process)": vd.DistNeighborLoader(
                    addresses, args.fanouts, input_nodes=("paper", new_train), topology="worker",
                    local=first, **options),
                "dist server-client": vd.DistNeighborLoader(
                    addresses, args.fanouts, input_nodes=("paper", new_train),
                    topology="server-client", server=first.address, **options),
            }
            for name, loader in loaders.items():
                print(json.dumps({"loader": name, **extra,
                                  **rate(loader, args.warmup, args.batches)}), flush=True)
    finally:
        first.shutdown()
        second.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
