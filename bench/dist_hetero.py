#!/usr/bin/env python3
"""Heterogeneous sampling over the service (issue 14): batches per second of the local
heterogeneous loader against ``volley.dist.DistNeighborLoader`` on the same dataset partitioned
in 2 and served on localhost, worker topology (part 0 in-process) and server-client (part 0's
server, started with peers, samples and gathers every batch and streams it back).

    volley -q generate /tmp/mag --model hetero --nodes 60000 --reverse --feature-dim 64 --seed 0
    python bench/dist_hetero.py --dataset /tmp/mag --work /tmp/mag-work

Workload: the training papers as seeds (the same papers in old ids locally, new ids over the
service), shuffled, batch ``--batch-size``, fanouts ``--fanouts`` for every edge type, paper
features and labels gathered; ``--warmup`` batches, then ``--batches`` timed ones. The dataset is
partitioned (random, 2 parts) into ``--work`` first. Both servers run in this process (their
gRPC threads share the machine with the trainer). One JSON line per loader.
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
from volley.hetero_partition import load_hetero_node_map  # noqa: E402
from volley.loader import NeighborLoader  # noqa: E402


def rate(loader, warmup: int, batches: int) -> dict:
    """Batches and sampled edges per second over ``batches`` batches after ``warmup``."""
    iterator = iter(loader)
    for _ in range(warmup):
        next(iterator)
    count, edges = 0, 0
    started = time.perf_counter()
    for batch in iterator:
        edges += sum(int(batch[t].edge_index.shape[1]) for t in batch.edge_types)
        count += 1
        if count == batches:
            break
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
    options = dict(batch_size=args.batch_size, shuffle=True, seed=args.seed,
                   num_workers=args.workers)
    local = NeighborLoader(data, args.fanouts, input_nodes=("paper", train), **options)
    print(json.dumps({"loader": "local", **rate(local, args.warmup, args.batches)}), flush=True)
    second = vd.serve(parts, 1)
    first = vd.serve(parts, 0, peers=["", second.address])  # can stream (server-client)
    try:
        addresses = [first.address, second.address]
        worker = vd.DistNeighborLoader(addresses, args.fanouts, input_nodes=("paper", new_train),
                                       topology="worker", local=first, **options)
        print(json.dumps({"loader": "dist worker (part 0 in-process)",
                          **rate(worker, args.warmup, args.batches)}), flush=True)
        streamed = vd.DistNeighborLoader(addresses, args.fanouts,
                                         input_nodes=("paper", new_train),
                                         topology="server-client", server=first.address, **options)
        print(json.dumps({"loader": "dist server-client",
                          **rate(streamed, args.warmup, args.batches)}), flush=True)
    finally:
        first.shutdown()
        second.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
