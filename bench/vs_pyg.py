#!/usr/bin/env python3
"""Volley against PyG's own loaders and inference pattern (pyg-lib), same data, one process.

PyG samples only through pyg-lib (or torch-sparse), which has no PyPI distribution: build it
first (bench/README.md, scripts/build_pyg_lib.sh). Each figure is the median of interleaved
rounds (Volley, PyG, Volley, ...), after one warm-up round each, with torch and Volley on the
same thread count.

    volley -q generate /tmp/mag --model hetero --reverse                 # ogbn-mag-sized
    python bench/vs_pyg.py hetero --dataset /tmp/mag                     # HeteroData loaders
    volley -q generate /tmp/products --model powerlaw --nodes 2400000 --edges 62000000 \\
        --feature-dim 100 --classes 47
    python bench/vs_pyg.py homo --dataset /tmp/products                  # Data loaders
    python bench/vs_pyg.py link --dataset /tmp/products                  # link loaders
    python bench/vs_pyg.py inference --dataset /tmp/products             # 2-layer SAGE, every node

``hetero`` / ``homo``: batches per second of ``volley.loader.NeighborLoader`` and
``torch_geometric.loader.NeighborLoader`` with the same arguments (training seeds shuffled,
``--fanout`` per hop and per edge type, every node attribute gathered), ``num_workers=0``.
``link``: the same for ``LinkNeighborLoader``: ``--batch-size`` supervision edges drawn from the
graph's edges (seeded), binary negatives 1:1.
``inference``: every node's output of a 2-layer GraphSAGE (PyG's ``SAGEConv``), by PyG's
documented pattern (``NeighborLoader(data, [-1], input_nodes=None, shuffle=False)`` and the
``inference(x_all, subgraph_loader)`` loop) and by ``volley.layerwise_inference``; the outputs
are compared. One JSON line per figure.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time

import torch

try:
    import volley
except ImportError:
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
    import volley  # noqa: E402
import volley.loader  # noqa: E402
from torch_geometric.loader import LinkNeighborLoader as PygLinkNeighborLoader  # noqa: E402
from torch_geometric.loader import NeighborLoader as PygNeighborLoader  # noqa: E402


def batches_per_second(loader, batches: int) -> float:
    """Batches a second over the first `batches` of a fresh pass (touching every tensor)."""
    started = time.perf_counter()
    for index, batch in enumerate(loader):
        if index + 1 >= batches:
            break
    return batches / (time.perf_counter() - started)


def interleaved(runs: dict, rounds: int, warm_up: bool = True) -> dict:
    """name -> median of `rounds` calls of runs[name](), called in turn (after one warm-up)."""
    for run in runs.values() if warm_up else ():
        run()
    seen = {name: [] for name in runs}
    for _ in range(rounds):
        for name, run in runs.items():
            seen[name].append(run())
    return {name: statistics.median(values) for name, values in seen.items()}


def loaders(args) -> None:
    dataset = volley.load_dataset(args.dataset, mmap=False)
    data = dataset.to_pyg()
    common = dict(batch_size=args.batch_size, shuffle=True, num_workers=0)
    if args.command == "link":
        picked = torch.randperm(data.edge_index.shape[1],
                                generator=torch.Generator().manual_seed(0))
        common.update(num_neighbors=args.fanout, neg_sampling="binary",
                      edge_label_index=data.edge_index[:, picked[:args.batches * args.batch_size]])
        made = {"volley": lambda: volley.loader.LinkNeighborLoader(data, seed=0, **common),
                "pyg": lambda: PygLinkNeighborLoader(data, **common)}
    else:
        if args.command == "hetero":
            fanout = {edge_type: args.fanout for edge_type in data.edge_types}
            seeds = ("paper", data["paper"].train_mask.nonzero().view(-1))
        else:
            fanout, seeds = args.fanout, data.train_mask.nonzero().view(-1)
        common.update(num_neighbors=fanout, input_nodes=seeds)
        made = {"volley": lambda: volley.loader.NeighborLoader(data, seed=0, **common),
                "pyg": lambda: PygNeighborLoader(data, **common)}
    rates = interleaved({name: (lambda make=make: batches_per_second(make(), args.batches))
                         for name, make in made.items()}, args.rounds)
    print(json.dumps({"figure": f"{args.command} loader", "batches_per_s": rates,
                      "ratio": rates["volley"] / rates["pyg"], "threads": args.threads,
                      "fanout": args.fanout, "batch_size": args.batch_size}), flush=True)


class Sage(torch.nn.Module):
    def __init__(self, sizes):
        super().__init__()
        from torch_geometric.nn import SAGEConv

        self.convs = torch.nn.ModuleList(SAGEConv(a, b) for a, b in zip(sizes[:-1], sizes[1:]))

    @torch.no_grad()
    def inference(self, x_all, subgraph_loader):
        """PyG's documented layer-wise inference (examples/reddit.py, ogbn_products_sage.py)."""
        for i, conv in enumerate(self.convs):
            xs = []
            for batch in subgraph_loader:
                x = x_all[batch.n_id]
                x = conv(x, batch.edge_index)[:batch.batch_size]
                if i < len(self.convs) - 1:
                    x = x.relu()
                xs.append(x)
            x_all = torch.cat(xs, dim=0)
        return x_all


def inference(args) -> None:
    from torch_geometric.data import Data

    dataset = volley.load_dataset(args.dataset, mmap=False)
    x = dataset.x.float()
    data = Data(edge_index=dataset.graph.to_edge_index(), num_nodes=dataset.num_nodes)
    model = Sage([x.shape[1], args.hidden, dataset.num_classes]).eval()
    outputs = {}

    def pyg() -> float:
        started = time.perf_counter()
        loader = PygNeighborLoader(data, num_neighbors=[-1], input_nodes=None,
                                   batch_size=args.batch_size, shuffle=False)
        outputs["pyg"] = model.inference(x, loader)
        return time.perf_counter() - started

    def ours() -> float:
        started = time.perf_counter()
        outputs["volley"] = volley.layerwise_inference(model.convs, x, data,
                                                       batch_size=args.batch_size,
                                                       activation=torch.relu)
        return time.perf_counter() - started

    seconds = interleaved({"volley": ours, "pyg": pyg}, args.rounds, not args.no_warm_up)
    error = float((outputs["volley"] - outputs["pyg"]).abs().max())
    print(json.dumps({"figure": "layer-wise inference, 2-layer SAGE", "seconds": seconds,
                      "ratio": seconds["pyg"] / seconds["volley"], "max_abs_difference": error,
                      "threads": args.threads, "batch_size": args.batch_size,
                      "nodes": dataset.num_nodes, "edges": dataset.num_edges}), flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("command", choices=["hetero", "homo", "link", "inference"])
    parser.add_argument("--dataset", required=True)
    parser.add_argument("--fanout", type=int, nargs="+", default=None,
                        help="default: 15 10 (hetero), 15 10 5 (homo)")
    parser.add_argument("--batch-size", type=int, default=None,
                        help="default: 1024 (loaders), 4096 (inference)")
    parser.add_argument("--batches", type=int, default=30, help="timed batches a round")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--hidden", type=int, default=256)
    parser.add_argument("--no-warm-up", action="store_true",
                        help="inference: time the first runs (a products-sized PyG run is minutes)")
    parser.add_argument("--threads", type=int, default=1, help="torch's and Volley's threads")
    args = parser.parse_args()
    if args.fanout is None:
        args.fanout = [15, 10] if args.command == "hetero" else [15, 10, 5]
    if args.batch_size is None:
        args.batch_size = 4096 if args.command == "inference" else 1024
    torch.set_num_threads(args.threads)
    volley.set_num_threads(args.threads)
    (inference if args.command == "inference" else loaders)(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
