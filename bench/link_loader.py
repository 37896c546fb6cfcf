#!/usr/bin/env python3
"""Link-prediction loader throughput: batches per second of
``volley.loader.LinkNeighborLoader`` with features, and the share of a batch spent drawing
negatives.

    volley generate /tmp/products --model powerlaw --nodes 2400000 --edges 62000000 \\
        --feature-dim 100 --classes 47 --seed 0
    python bench/link_loader.py --dataset /tmp/products --threads 1,2

Workload: ``--batches`` × ``--batch-size`` supervision edges drawn uniformly (seeded) from the
graph's edges, binary negatives 1:1 (uniform), fanouts ``--fanouts``, features gathered as
float32. Each figure iterates one epoch after ``--warmup`` untimed batches; one JSON line per
figure. ``negatives``: ``NegativeSampler.sample_pairs(batch_size)`` (the loader's draw, one
thread, with and without ``reject_existing``) timed over the same number of batches; its share
is that time over the one-thread loader's time per batch.
"""

from __future__ import annotations

import argparse
import json
import os
import time

import numpy as np

import volley
from volley.loader import LinkNeighborLoader


def loader_rate(dataset, edges, args, threads: int) -> float:
    loader = LinkNeighborLoader(dataset, args.fanouts, edge_label_index=edges,
                                neg_sampling="binary", batch_size=args.batch_size,
                                num_workers=threads, seed=args.seed)
    iterator = iter(loader)
    for _ in range(args.warmup):
        next(iterator)
    start, count = time.perf_counter(), 0
    for batch in iterator:
        count += 1
        assert batch.x.shape[1] == dataset.num_features
    return count / (time.perf_counter() - start)


def negative_seconds(graph, args, reject: bool) -> float:
    volley.set_num_threads(1)
    sampler = volley.NegativeSampler(graph, reject_existing=reject, seed=args.seed)
    start = time.perf_counter()
    for b in range(args.batches):
        sampler.sample_pairs(args.batch_size, b)
    return (time.perf_counter() - start) / args.batches


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", required=True)
    parser.add_argument("--threads", default="1,2")
    parser.add_argument("--batches", type=int, default=40)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=1024)
    parser.add_argument("--fanouts", type=int, nargs="+", default=[15, 10, 5])
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    dataset = volley.load_dataset(args.dataset)
    graph = dataset.graph
    edge_index = graph.to_edge_index()
    rng = np.random.default_rng(args.seed)
    count = (args.batches + args.warmup) * args.batch_size
    chosen = rng.choice(edge_index.shape[1], size=count, replace=False)
    edges = np.ascontiguousarray(np.asarray(edge_index)[:, chosen], dtype=np.int64)
    del edge_index
    common = dict(nodes=graph.num_nodes, edges=graph.num_edges, batch_size=args.batch_size,
                  fanouts=args.fanouts, load_avg=round(os.getloadavg()[0], 2))
    rates = {}
    for threads in (int(t) for t in args.threads.split(",")):
        rates[threads] = loader_rate(dataset, edges, args, threads)
        print(json.dumps(dict(figure="link_loader_batches_per_s", threads=threads,
                              value=round(rates[threads], 3), **common)), flush=True)
    one_thread_batch = 1.0 / rates.get(1, next(iter(rates.values())))
    for reject in (False, True):
        seconds = negative_seconds(graph, args, reject)
        print(json.dumps(dict(figure="negatives_ms_per_batch", reject_existing=reject,
                              value=round(seconds * 1e3, 3),
                              share_of_batch=round(seconds / one_thread_batch, 4),
                              load_avg=round(os.getloadavg()[0], 2))), flush=True)


if __name__ == "__main__":
    main()
