#!/usr/bin/env python3
"""Layer-wise inference with the input rows on disk (the disk tier), against the disk's limit.

    volley -q generate /tmp/big --model powerlaw --nodes 3200000 --edges 12800000 \\
        --feature-dim 1024 --classes 47                # 13 GB of float32 rows: over half the RAM
    python bench/inference_disk.py --dataset /tmp/big

Every node's output of a 2-layer GraphSAGE (PyG's ``SAGEConv``, 1024 -> 64 -> classes) by
``volley.layerwise_inference`` with ``x = volley.Feature(features.npy, disk=True)``: the first
layer runs over blocks whose rows the loader's workers gather through the disk tier (io_uring,
O_DIRECT, a SIEVE row cache of ``--cache``) a few blocks ahead of the layer, the second over the
whole graph from the first layer's output in memory. Prints
one JSON line: the first layer's seconds, the rows it read from the disk (the cache's misses),
those rows per second against the disk's 4 KiB random-read limit measured just before
(``volley bench disk`` on the same file), and the second layer's seconds.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

import torch

try:
    import volley
except ImportError:
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
    import volley  # noqa: E402


def disk_limit(cli: str, path: str, seconds: float) -> dict:
    """``volley bench disk`` on `path`: its JSON line (iops, ...)."""
    result = subprocess.run([cli, "bench", "disk", "--file", path, "--seconds", str(seconds)],
                            capture_output=True, text=True, check=True)
    return json.loads(result.stdout.strip().splitlines()[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dataset", required=True)
    parser.add_argument("--cache", default="1G", help="the disk tier's row cache")
    parser.add_argument("--batch-size", type=int, default=4096)
    parser.add_argument("--hidden", type=int, default=64)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--workers", type=int, default=2, help="the loader's gathering threads")
    parser.add_argument("--cli", default=os.environ.get("VOLLEY_CLI", "volley"))
    parser.add_argument("--probe-seconds", type=float, default=10.0)
    args = parser.parse_args()
    from torch_geometric.data import Data
    from torch_geometric.nn import SAGEConv

    torch.set_num_threads(args.threads)
    volley.set_num_threads(args.threads)
    path = os.path.join(args.dataset, "features.npy")
    probe = disk_limit(args.cli, path, args.probe_seconds)
    dataset = volley.load_dataset(args.dataset)  # mapped: nothing read yet
    x = volley.Feature(path, disk=True, cache_bytes=args.cache)
    data = Data(edge_index=dataset.graph.to_edge_index(), num_nodes=dataset.num_nodes)
    torch.manual_seed(0)
    first = SAGEConv(x.shape[1], args.hidden).eval()
    second = SAGEConv(args.hidden, dataset.num_classes).eval()
    # The first layer over blocks, rows from the disk tier.
    before = x.disk_stats
    started = time.perf_counter()
    hidden = volley.layerwise_inference([first], x, data, batch_size=args.batch_size,
                                        num_workers=args.workers)
    first_seconds = time.perf_counter() - started
    hits, misses = (after - was for after, was in zip(x.disk_stats, before))
    started = time.perf_counter()
    out = volley.layerwise_inference([second], torch.relu(hidden), data)
    second_seconds = time.perf_counter() - started
    row_bytes = x.shape[1] * 4
    pages = max(1, -(-row_bytes // 4096))
    limit_rows = probe["iops"] / pages
    print(json.dumps({
        "figure": "layer-wise inference through the disk tier",
        "nodes": dataset.num_nodes, "edges": dataset.num_edges,
        "feature_bytes": dataset.num_nodes * row_bytes, "cache": args.cache,
        "disk_io": x.disk_io, "threads": args.threads,
        "first_layer_s": first_seconds, "rows_from_disk": misses, "cache_hits": hits,
        "disk_rows_per_s": misses / first_seconds, "disk_limit_rows_per_s": limit_rows,
        "of_limit": misses / first_seconds / limit_rows,
        "second_layer_s": second_seconds, "out_shape": list(out.shape)}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
