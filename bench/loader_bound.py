#!/usr/bin/env python3
"""``NeighborLoader`` against its bound, measured in one process, for either graph kind.

The bound of a batch is what it cannot do without: its sampling (``volley.NeighborSampler``
alone, same seeds, same fanouts, one thread) plus copying its feature rows once at this run's
single-thread ``memcpy`` rate. The loader (``num_workers=1`` unless ``--workers``, features
gathered in C++, the PyG ``Data`` built in Python) is timed over the same batches after a
warm-up (its first epoch's page faults are not the steady state); ``bound / loader`` is the
figure (1.0: the loader costs nothing beyond sampling and one sequential copy of the rows). The
rows are scattered, so the same run also gathers each batch's rows alone (``volley.Feature``,
the kernel the loader uses): ``attainable`` puts that gather in place of the memcpy, and
``ceiling`` is the ratio a loader with no other cost would reach. Rounds interleave the
measurements; each figure is the median over rounds, so the box's speed changes hit all of them
alike.

    volley -q generate /tmp/b1m --nodes 1000000 --edges 25000000 --feature-dim 100 --classes 47
    python bench/loader_bound.py --dataset /tmp/b1m
    volley -q generate /tmp/mag --model hetero --reverse        # ogbn-mag-sized
    python bench/loader_bound.py --dataset /tmp/mag --fanout 15 10 --workers 2

The graph kind is the dataset's. A heterogeneous one is loaded as a ``HeteroData`` (every node
attribute gathered: paper features, labels, masks), its seeds are the training nodes of
``--input-type``, the fanouts apply to every edge type, the sampler alone is
``volley.HeteroNeighborSampler`` and the rows are those of every node type with features.
``--workers``: the loader's threads (the sampling and the gathers alone take one);
``--pool-threads``: ``volley.set_num_threads`` (the gather pool; 0: every core).

One JSON line: per-batch milliseconds of sampling, of the rows' copy and of the loader, the
feature megabytes per batch, and the ratio.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from typing import Optional

import numpy as np

try:
    import volley
except ImportError:
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
    import volley  # noqa: E402
import volley.loader  # noqa: E402


def sampling_ms(sampler, order: np.ndarray, batch_size: int, batches: int,
                input_type: Optional[str]) -> tuple:
    """Milliseconds per batch of sampling alone, and each batch's node ids by node type (None:
    a homogeneous graph's)."""
    nodes = []
    started = time.perf_counter()
    for b in range(batches):
        seeds = order[b * batch_size:(b + 1) * batch_size]
        if input_type is None:
            nodes.append({None: sampler.sample_subgraph(seeds, b).n_id})
        else:
            nodes.append(sampler.sample({input_type: seeds}, b)["node"])
    return 1e3 * (time.perf_counter() - started) / batches, nodes


def gather_ms(features: dict, nodes: list) -> float:
    """Milliseconds per batch of gathering the batches' rows alone (one thread), ``features``
    by node type."""
    started = time.perf_counter()
    for batch in nodes:
        for node_type, feature in features.items():
            feature.gather(np.asarray(batch[node_type]), threads=1)
    return 1e3 * (time.perf_counter() - started) / len(nodes)


def copy_ms(rows_bytes: int, rounds: int = 5) -> float:
    """Milliseconds to copy `rows_bytes` once on one thread (numpy's copy is a memcpy), best of
    `rounds`, into a destination touched before (the loader's outputs reuse recycled blocks, so
    it pays no page faults in its steady state either)."""
    source = np.ones(rows_bytes, dtype=np.uint8)
    destination = np.zeros_like(source)
    best = float("inf")
    for _ in range(rounds):
        started = time.perf_counter()
        np.copyto(destination, source)
        best = min(best, time.perf_counter() - started)
    return 1e3 * best


def loader_ms(loader, warmup: int, batches: int) -> tuple:
    """Milliseconds per batch of the loader over `batches` after `warmup`, and the feature
    bytes per batch."""
    iterator = iter(loader)
    for _ in range(warmup):
        next(iterator)
    rows_bytes = 0
    started = time.perf_counter()
    for _ in range(batches):
        batch = next(iterator)
        rows_bytes += sum(s.x.numel() * s.x.element_size() for s in batch.node_stores if "x" in s)
    return 1e3 * (time.perf_counter() - started) / batches, rows_bytes // batches


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dataset", required=True)
    parser.add_argument("--fanout", type=int, nargs="+", default=[15, 10, 5])
    parser.add_argument("--batch-size", type=int, default=1024)
    parser.add_argument("--batches", type=int, default=40)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument("--workers", type=int, default=1, help="the loader's threads")
    parser.add_argument("--pool-threads", type=int, default=0,
                        help="volley.set_num_threads (the gather pool; 0: every core)")
    parser.add_argument("--input-type", default="paper", help="a heterogeneous graph's seed type")
    args = parser.parse_args()
    if args.pool_threads:
        volley.set_num_threads(args.pool_threads)

    dataset = volley.load_dataset(args.dataset)
    typed = isinstance(dataset, volley.HeteroDataset)
    input_type = args.input_type if typed else None
    if typed:  # the loader takes a HeteroData: every node attribute, the seeds by type
        data, train = dataset.to_pyg(), dataset.train_idx_dict.get(input_type)
        count = dataset.graph.num_nodes(input_type)
        sampler = volley.HeteroNeighborSampler(dataset.graph, args.fanout, seed=0)
        features = {t: volley.Feature(x) for t, x in dataset.x_dict.items()}
    else:
        data, train, count = dataset, dataset.train_idx, dataset.num_nodes
        sampler = volley.NeighborSampler(dataset.graph, args.fanout, seed=0)
        features = {None: dataset.feature}
    seeds = np.asarray(train if train is not None else np.arange(count), dtype=np.int64)
    order = np.random.default_rng(0).permutation(seeds)
    need = args.batch_size * (args.warmup + args.batches)
    if len(order) < need:
        order = np.resize(order, need)
    figures = {"sample": [], "copy": [], "gather": [], "loader": []}
    rows_bytes = 0
    timed = order[args.batch_size * args.warmup:need]
    for _ in range(args.rounds + 1):  # the first round warms up and is dropped
        sample, nodes = sampling_ms(sampler, timed, args.batch_size, args.batches, input_type)
        loader = volley.loader.NeighborLoader(
            data, args.fanout, batch_size=args.batch_size, shuffle=False,
            input_nodes=order[:need] if input_type is None else (input_type, order[:need]),
            num_workers=args.workers, seed=0)
        batch_ms, rows_bytes = loader_ms(loader, args.warmup, args.batches)
        del loader
        for name, value in (("sample", sample), ("copy", copy_ms(rows_bytes)),
                            ("gather", gather_ms(features, nodes)), ("loader", batch_ms)):
            figures[name].append(value)
    median = {name: statistics.median(values[1:]) for name, values in figures.items()}
    bound, attainable = median["sample"] + median["copy"], median["sample"] + median["gather"]
    print(json.dumps({
        "figure": "loader_vs_bound", "dataset": args.dataset, "fanout": args.fanout,
        "kind": "hetero" if typed else "homo", "workers": args.workers,
        "batch_size": args.batch_size, "batches": args.batches, "rounds": args.rounds,
        "sample_ms": round(median["sample"], 2), "copy_ms": round(median["copy"], 2),
        "gather_ms": round(median["gather"], 2), "loader_ms": round(median["loader"], 2),
        "feature_mb": round(rows_bytes / 1e6, 1),
        "bound_over_loader": round(bound / median["loader"], 3),
        "attainable_over_loader": round(attainable / median["loader"], 3),
        "ceiling": round(bound / attainable, 3),
        "rounds_loader_ms": [round(v, 1) for v in figures["loader"][1:]],
    }))
    return 0


if __name__ == "__main__":
    sys.exit(main())
