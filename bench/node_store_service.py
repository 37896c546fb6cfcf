#!/usr/bin/env python3
"""Node tables on the partition servers against a local table: rows per second of pull, push
(add) and a SparseAdam step through volley.NodeStore(servers=...) (2 servers, in this process,
over gRPC on loopback) and through a local volley.NodeStore, on the same rows.

A seeded table of 1M rows × 128 float32 (2 optimizer slots) on a random graph partitioned in 2;
batches of 10,000 uniform ids (with repeats) and float32 values. Each figure is the best of 5
rounds of 10 batches after a warm-up round; local and servers interleaved in one process.

The service's own bound is printed last: the same rows read from a read-only feature table of
the same shape through the same servers (DistGraph's GetRows, memory-mapped, no locks), the
fastest row path the service had before node tables.

    PYTHONPATH=python .venv/bin/python bench/node_store_service.py [--threads 1]
"""
import argparse
import os
import tempfile
import time

import numpy as np

import volley
import volley.dist

parser = argparse.ArgumentParser()
parser.add_argument("--threads", type=int, default=1, help="Volley's threads (both sides)")
parser.add_argument("--rows", type=int, default=1_000_000)
parser.add_argument("--dim", type=int, default=128)
parser.add_argument("--batch", type=int, default=10_000)
parser.add_argument("--parts", type=int, default=2)
args = parser.parse_args()
volley.set_num_threads(args.threads)

rng = np.random.default_rng(0)
batches = [(rng.integers(0, args.rows, args.batch),
            rng.standard_normal((args.batch, args.dim), dtype=np.float32)) for _ in range(10)]


def best_rate(run) -> float:
    run()
    best = float("inf")
    for _ in range(5):
        started = time.perf_counter()
        run()
        best = min(best, time.perf_counter() - started)
    return len(batches) * args.batch / best


with tempfile.TemporaryDirectory() as scratch:
    edges = rng.integers(0, args.rows, (2, 2 * args.rows))
    graph = volley.Graph.from_edge_index(edges, num_nodes=args.rows)
    features = rng.standard_normal((args.rows, args.dim), dtype=np.float32)
    parts = os.path.join(scratch, "parts")
    volley.partition(volley.Dataset(graph, x=features, name="bench-state"), parts, args.parts,
                     method="random", seed=0)
    del features
    servers = [volley.dist.serve(parts, p) for p in range(args.parts)]
    stores = {"local": volley.NodeStore(),
              "servers": volley.NodeStore(servers=[s.address for s in servers])}
    for store in stores.values():
        store.init("emb", args.rows, args.dim, init="normal", scale=0.1, optimizer_slots=2)

    def operations(store):
        return {
            "pull": lambda: [store.pull("emb", ids) for ids, _ in batches],
            "push (add)": lambda: [store.push("emb", ids, v, op="add") for ids, v in batches],
            "step, Adam": lambda: [store.step("emb", ids, v, optimizer="adam", lr=0.01, eps=1e-8)
                                   for ids, v in batches],
        }

    print(f"{args.rows:,} rows × {args.dim} float32, batches of {args.batch:,} ids, "
          f"{args.parts} servers in this process, {args.threads} thread(s); rows/s")
    print(f"{'':24s} {'local':>12s} {'servers':>12s} {'servers/local':>14s}")
    for name in operations(stores["local"]):
        local = best_rate(operations(stores["local"])[name])
        served = best_rate(operations(stores["servers"])[name])
        print(f"{name:24s} {local:12,.0f} {served:12,.0f} {served / local:13.2f}x")
        if name == "pull":
            pulled = local
    dist_graph = volley.dist.connect([s.address for s in servers])
    bound = best_rate(lambda: [dist_graph.features.gather(ids) for ids, _ in batches])
    print(f"{'bound: GetRows (features)':24s} {'':12s} {bound:12,.0f} {bound / pulled:13.2f}x")
    for server in servers:
        server.shutdown()
