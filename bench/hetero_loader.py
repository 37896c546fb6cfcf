#!/usr/bin/env python3
"""Heterogeneous loader throughput: batches per second with features.

For a heterogeneous dataset directory (``volley generate --model hetero --reverse``), prints one
JSON line per worker count: HeteroData batches per second of ``volley.loader.NeighborLoader``
(the training papers as seeds, shuffled, every node attribute gathered: paper features, labels,
masks), sampled edges per second, and the same batches' sampling alone (the C++ sampler in one
thread, no features, no HeteroData) for the loader's overhead.

    volley -q generate /tmp/mag --model hetero --reverse        # ogbn-mag-sized
    python bench/hetero_loader.py --dataset /tmp/mag --workers 1 2
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

try:
    import volley
except ImportError:
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
    import volley  # noqa: E402
from volley.loader import NeighborLoader  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dataset", required=True)
    parser.add_argument("--fanout", default="15,10")
    parser.add_argument("--batch-size", type=int, default=1024)
    parser.add_argument("--batches", type=int, default=30, help="timed batches per run")
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--pool-threads", type=int, default=0,
                        help="volley.set_num_threads (the gather pool; 0: every core)")
    args = parser.parse_args()
    fanouts = [int(f) for f in args.fanout.split(",")]
    if args.pool_threads:
        volley.set_num_threads(args.pool_threads)
    started = time.perf_counter()
    dataset = volley.load_dataset(args.dataset)
    data = dataset.to_pyg()
    print(json.dumps({"bench": "hetero_loader", "load_s": round(time.perf_counter() - started, 2),
                      "nodes": dataset.graph.num_nodes_dict,
                      "edges": sum(dataset.graph.num_edges_dict.values())}), flush=True)
    mask = data["paper"].train_mask
    for workers in args.workers:
        loader = NeighborLoader(data, fanouts, batch_size=args.batch_size,
                                input_nodes=("paper", mask), shuffle=True, num_workers=workers,
                                seed=0)
        iterator = iter(loader)
        next(iterator)  # warm-up: first pages of the features and the graph
        edges, count = 0, 0
        started = time.perf_counter()
        for batch in iterator:
            edges += sum(int(batch[t].edge_index.shape[1]) for t in batch.edge_types)
            count += 1
            if count == args.batches:
                break
        seconds = time.perf_counter() - started
        print(json.dumps({"bench": "hetero_loader", "workers": workers, "batch_size": args.batch_size,
                          "fanout": fanouts, "batches": count, "batches_per_s": round(count / seconds, 2),
                          "edges_per_s": round(edges / seconds), "load_average": os.getloadavg()[0]}),
              flush=True)
    sampler = loader.node_sampler
    seeds = loader.input_nodes[: args.batch_size * args.batches]
    started, edges = time.perf_counter(), 0
    for b in range(args.batches):
        out = sampler.sample({"paper": seeds[b * args.batch_size:(b + 1) * args.batch_size]}, b)
        edges += sum(len(v) for v in out["edge"].values())
    seconds = time.perf_counter() - started
    print(json.dumps({"bench": "hetero_sampler_alone", "batches_per_s": round(args.batches / seconds, 2),
                      "edges_per_s": round(edges / seconds)}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
