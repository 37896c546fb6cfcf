#!/usr/bin/env python3
"""Distributed loaders against the local ones, for either graph kind: batches and sampled edges
per second of ``volley.dist.DistNeighborLoader`` (``--link``: ``DistLinkNeighborLoader``) over
the dataset partitioned in 2 and served on localhost, and of the local loader over the whole
dataset with the same arguments.

    volley generate /tmp/temporal --model temporal --nodes 200000 --edges 2000000 --seed 0
    python bench/dist_loader.py --dataset /tmp/temporal --workers 2 --temporal
    volley -q generate /tmp/mag --model hetero --nodes 200000 --reverse --feature-dim 64 --seed 0
    python bench/dist_loader.py --dataset /tmp/mag --fanouts 15,10 --temporal
    python bench/dist_loader.py --dataset /tmp/mag --fanouts 15,10 --link --workers 1 2

The graph kind is the dataset's: a heterogeneous one is loaded as a ``HeteroData``, its seeds
are of ``--input-type`` and its fanouts apply to every edge type. The dataset is partitioned
(random, 2 parts) into ``--work`` first; both servers run in this process (their gRPC threads
share the machine with the trainer). Each figure: ``--batches`` timed batches after
``--warmup`` (over several epochs when the seeds give fewer), one JSON line per loader.

Node loaders: the training nodes as seeds (every node without a split), shuffled, in old ids
locally and new ids over the service, features and labels gathered; the local loader, the
distributed one in the worker topology (part 0 in-process) and in the server-client topology
(part 0's server, started with peers, samples and gathers every batch and streams it back).
Untimed; with ``--temporal`` also disjoint and by time ("uniform", "last"): by the graph's edge
times, seed times uniform over them, or for a graph without edge times (the generated
heterogeneous one) by random node times of the input type in [0, 50) written with
``volley.partition.write_times``, each seed at its own time.

``--link``: ``(--batches + --warmup) × --batch-size`` supervision edges (of ``--edge-type`` in a
heterogeneous graph) drawn uniformly (seeded), binary negatives 1:1: the local
``LinkNeighborLoader`` against ``DistLinkNeighborLoader`` (worker topology, part 0 in-process).
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
from volley.loader import LinkNeighborLoader, NeighborLoader  # noqa: E402
from volley.partition import to_new_ids, write_times  # noqa: E402


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
        edges += sum(int(store.edge_index.shape[1]) for store in batch.edge_stores)
        count += 1
    seconds = time.perf_counter() - started
    return {"batches": count, "batches_per_s": round(count / seconds, 2),
            "edges_per_s": round(edges / seconds), "load_average": round(os.getloadavg()[0], 2)}


def typed(input_type, ids):
    """The loaders' ``input_nodes`` / ``edge_label_index``: typed in a heterogeneous graph."""
    return ids if input_type is None else (input_type, ids)


def temporal_settings(args, dataset, data, parts, input_type, old) -> list:
    """The ``--temporal`` settings: (name, loader arguments), by edge times or node times."""
    settings = [("disjoint", dict(disjoint=True))]
    edge_time = getattr(dataset.graph, "edge_time", None)
    if edge_time is not None:
        end = int(np.asarray(edge_time).max()) + 1
        times = np.random.default_rng(args.seed).integers(0, end, len(old))
        by_time = dict(time_attr="edge_time", input_time=times)
    else:  # random node times of the input type (each seed at its own)
        years = np.random.default_rng(args.seed).integers(
            0, 50, dataset.graph.num_nodes(input_type))
        write_times(parts, node_time={input_type: years})
        data[input_type].node_time = years
        by_time = dict(time_attr="node_time")
    return settings + [(s, dict(temporal_strategy=s, **by_time)) for s in ("uniform", "last")]


def node_inputs(args, dataset, data, parts, input_type) -> tuple:
    """The seeds in old and new ids and the settings (name, loader arguments), times written to
    ``parts`` (before the servers start: they read them at start)."""
    train = (dataset.train_idx_dict.get(input_type) if input_type is not None
             else dataset.train_idx)
    count = dataset.graph.num_nodes(input_type) if input_type is not None else dataset.num_nodes
    old = np.random.default_rng(args.seed).permutation(
        np.arange(count) if train is None else np.asarray(train))
    new = np.asarray(to_new_ids(parts, old, node_type=input_type))
    settings = [("untimed", {})]
    if args.temporal:
        settings += temporal_settings(args, dataset, data, parts, input_type, old)
    return old, new, settings


def node_loaders(args, data, input_type, inputs, addresses, first) -> None:
    old, new, settings = inputs
    for workers in args.workers:
        for setting, extra in settings:
            options = dict(batch_size=args.batch_size, shuffle=True, seed=args.seed,
                           num_workers=workers, **extra)
            loaders = {
                "local": lambda: NeighborLoader(
                    data, args.fanouts, input_nodes=typed(input_type, old), **options),
                "dist worker": lambda: vd.DistNeighborLoader(
                    addresses, args.fanouts, input_nodes=typed(input_type, new), topology="worker",
                    local=first, **options),
                "dist server-client": lambda: vd.DistNeighborLoader(
                    addresses, args.fanouts, input_nodes=typed(input_type, new),
                    topology="server-client", server=first.address, **options),
            }
            for name, make in loaders.items():
                print(json.dumps({"loader": name, "setting": setting, "workers": workers,
                                  **rate(make(), args.warmup, args.batches)}), flush=True)


def link_loaders(args, dataset, data, parts, addresses) -> None:
    hetero = isinstance(dataset, volley.HeteroDataset)
    edge_type = tuple(args.edge_type.split(",")) if hetero else None
    edges = np.asarray(dataset.graph.to_edge_index() if edge_type is None
                       else dataset.graph.edge_index(edge_type))
    count = min(edges.shape[1], (args.batches + args.warmup) * args.batch_size)
    old = edges[:, np.random.default_rng(args.seed).choice(edges.shape[1], count, replace=False)]
    ends = (None, None) if edge_type is None else (edge_type[0], edge_type[2])
    new = np.stack([np.asarray(to_new_ids(parts, row, node_type=t)) for t, row in zip(ends, old)])
    options = dict(neg_sampling="binary", batch_size=args.batch_size, seed=args.seed)
    for workers in args.workers:
        local = LinkNeighborLoader(data, args.fanouts, edge_label_index=typed(edge_type, old),
                                   num_workers=workers, **options)
        remote = vd.DistLinkNeighborLoader(["", addresses[1]], args.fanouts,
                                           edge_label_index=typed(edge_type, new),
                                           local=(parts, 0), num_workers=workers, **options)
        for name, loader in (("local link", local), ("dist link", remote)):
            print(json.dumps({"loader": name, "workers": workers,
                              **rate(loader, args.warmup, args.batches)}), flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dataset", required=True)
    parser.add_argument("--work", default="/tmp/volley-dist-loader-bench")
    parser.add_argument("--workers", type=int, nargs="+", default=[2],
                        help="loader threads (every loader), one run each")
    parser.add_argument("--batch-size", type=int, default=1024)
    parser.add_argument("--batches", type=int, default=20)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--fanouts", type=lambda s: [int(k) for k in s.split(",")],
                        default=[15, 10, 5])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--temporal", action="store_true", help="also disjoint and by time")
    parser.add_argument("--link", action="store_true", help="the link loaders instead")
    parser.add_argument("--input-type", default="paper", help="heterogeneous: the seeds' type")
    parser.add_argument("--edge-type", default="author,writes,paper",
                        help="heterogeneous --link: the supervision edges' type")
    args = parser.parse_args()
    parts = os.path.join(args.work, "parts-2")
    if not os.path.exists(os.path.join(parts, "partition.json")):
        volley.partition(args.dataset, parts, 2, method="random", seed=args.seed)
    dataset = volley.load_dataset(args.dataset)
    hetero = isinstance(dataset, volley.HeteroDataset)
    data = dataset.to_pyg() if hetero else dataset
    input_type = args.input_type if hetero else None
    inputs = None if args.link else node_inputs(args, dataset, data, parts, input_type)
    print(json.dumps({"bench": "dist_loader", "kind": "hetero" if hetero else "homo",
                      "dataset": args.dataset, "fanouts": args.fanouts,
                      "batch_size": args.batch_size}), flush=True)
    second = vd.serve(parts, 1)
    first = vd.serve(parts, 0, peers=["", second.address])  # can stream (server-client)
    try:
        if args.link:
            link_loaders(args, dataset, data, parts, [first.address, second.address])
        else:
            node_loaders(args, data, input_type, inputs, [first.address, second.address], first)
    finally:
        first.shutdown()
        second.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
