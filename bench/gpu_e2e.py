#!/usr/bin/env python3
"""End-to-end GraphSAGE training on Volley's GPU data path.

For one epoch (or ``--max-batches``) of GraphSAGE (3 layers, hidden 256, fanouts 15,10,5, batch
1024) on a dataset directory (e.g. a products-sized power-law graph from ``volley generate``),
prints one JSON line per figure, all measured in this run on the same device:

  * ``epoch_s``: training with ``volley.loader.NeighborLoader(device=..., mode=GPU|UVA)``:
    sampling and gathering of the next batches overlap the training step;
  * ``compute_s``: the model's own time on the same batches preloaded on the device (no data
    path at all), scaled to the epoch's batch count — the limit of a fully hidden data path;
    ``epoch_over_compute`` = epoch_s / compute_s (the target is <= 1.3);
  * ``loader_alone``: the loader iterated with no model (batches and sampled edges per second as
    users receive them: sampling, gathering, the Python batch);
  * ``cpu_loader_epoch_s``: the same training fed by Volley's CPU loader (``mode="CPU"``,
    worker threads, each batch copied to the device); ``speedup_over_cpu_loader``.

    volley generate /tmp/products --model powerlaw --nodes 2400000 --edges 62000000 \\
        --feature-dim 100 --classes 47 --seed 0
    python bench/gpu_e2e.py --dataset /tmp/products --mode GPU
    python bench/gpu_e2e.py --smoke          # a tiny random graph on the CPU: checks the script

Absolute times are for the named device only (see bench/RESULTS.md for how figures are kept).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F

try:  # the installed package (pip install . / scripts/dev.sh), else the checkout's python/
    import volley
except ImportError:
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
    import volley  # noqa: E402
from volley.loader import NeighborLoader  # noqa: E402


class Sage(torch.nn.Module):
    """GraphSAGE with mean aggregation (PyG's SAGEConv when PyG is importable)."""

    def __init__(self, in_dim: int, hidden: int, out_dim: int, layers: int):
        super().__init__()
        dims = [in_dim] + [hidden] * (layers - 1) + [out_dim]
        try:
            from torch_geometric.nn import SAGEConv

            self.convs = torch.nn.ModuleList(SAGEConv(a, b) for a, b in zip(dims[:-1], dims[1:]))
            self.pyg = True
        except Exception:
            self.lins_self = torch.nn.ModuleList(torch.nn.Linear(a, b) for a, b in zip(dims[:-1], dims[1:]))
            self.lins_neigh = torch.nn.ModuleList(
                torch.nn.Linear(a, b, bias=False) for a, b in zip(dims[:-1], dims[1:])
            )
            self.pyg = False
        self.layers = layers

    def _mean_conv(self, i: int, x: torch.Tensor, edge_index: torch.Tensor) -> torch.Tensor:
        src, dst = edge_index[0], edge_index[1]
        summed = torch.zeros_like(x).index_add_(0, dst, x[src])
        count = torch.zeros(x.shape[0], device=x.device, dtype=x.dtype).index_add_(
            0, dst, torch.ones_like(dst, dtype=x.dtype)
        )
        mean = summed / count.clamp(min=1).unsqueeze(1)
        return self.lins_self[i](x) + self.lins_neigh[i](mean)

    def forward(self, x: torch.Tensor, edge_index: torch.Tensor) -> torch.Tensor:
        for i in range(self.layers):
            x = self.convs[i](x, edge_index) if self.pyg else self._mean_conv(i, x, edge_index)
            if i < self.layers - 1:
                x = F.relu(x)
        return x


def synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def train_step(model, optimizer, batch) -> None:
    optimizer.zero_grad(set_to_none=True)
    out = model(batch.x, batch.edge_index)[: batch.batch_size]
    loss = F.cross_entropy(out, batch.y[: batch.batch_size])
    loss.backward()
    optimizer.step()


def run_epoch(model, optimizer, loader, device, max_batches: int) -> tuple:
    synchronize(device)
    start = time.perf_counter()
    count = 0
    for batch in loader:
        train_step(model, optimizer, batch)
        count += 1
        if count == max_batches:
            break
    synchronize(device)
    return time.perf_counter() - start, count


def smoke_data(seed: int = 0):
    """A tiny random graph with features and labels (PyG-Data-like)."""
    rng = np.random.default_rng(seed)
    n, m = 2000, 20000

    class Data:
        pass

    data = Data()
    data.edge_index = torch.from_numpy(rng.integers(0, n, (2, m)).astype(np.int64))
    data.x = torch.from_numpy(rng.standard_normal((n, 32)).astype(np.float32))
    data.y = torch.from_numpy(rng.integers(0, 7, n).astype(np.int64))
    data.num_nodes = n
    return data, torch.arange(0, n, 2), 7


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dataset", help="dataset directory (volley generate / volley convert)")
    parser.add_argument("--smoke", action="store_true", help="tiny random graph on the CPU")
    parser.add_argument("--device", default=None, help="cuda, cuda:N or cpu (default: cuda when available)")
    parser.add_argument("--mode", default="GPU", help="GPU or UVA (the Volley GPU loader's mode)")
    parser.add_argument("--fanout", default="15,10,5")
    parser.add_argument("--batch-size", type=int, default=1024)
    parser.add_argument("--hidden", type=int, default=256)
    parser.add_argument("--layers", type=int, default=3)
    parser.add_argument("--max-batches", type=int, default=0, help="0: a whole epoch")
    parser.add_argument("--preload", type=int, default=40, help="batches preloaded for compute_s")
    parser.add_argument("--cpu-workers", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--skip-cpu-loader", action="store_true")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", help="also append the JSON lines to this file")
    args = parser.parse_args(argv)

    torch.manual_seed(args.seed)
    fanouts = [int(k) for k in args.fanout.split(",")]
    if args.smoke:
        data, train_idx, classes = smoke_data(args.seed)
        device = torch.device(args.device or "cpu")
        fanouts, args.batch_size, args.hidden = [5, 3, 2][: args.layers], 64, 32
        args.preload = min(args.preload, 5)
    else:
        if not args.dataset:
            parser.error("--dataset DIR is required (or --smoke)")
        data = volley.load_dataset(args.dataset)
        train_idx = data.train_idx if data.train_idx is not None else torch.arange(data.num_nodes)
        classes = int(data.num_classes)
        device = torch.device(args.device or ("cuda" if torch.cuda.is_available() else "cpu"))
    on_gpu = device.type == "cuda"
    max_batches = args.max_batches if args.max_batches > 0 else -1
    lines = []

    def emit(**fields):
        line = dict(bench="gpu_e2e", device=str(device), **fields)
        if on_gpu:
            line["device_name"] = torch.cuda.get_device_name(device)
        print(json.dumps(line), flush=True)
        lines.append(line)

    in_dim = int(data.x.shape[1])
    model = Sage(in_dim, args.hidden, classes, args.layers).to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    common = dict(batch_size=args.batch_size, input_nodes=train_idx, shuffle=True, seed=args.seed)

    # 1. Volley's GPU loader (or, on the CPU, the CPU loader: the smoke run checks the script).
    if on_gpu:
        loader = NeighborLoader(data, fanouts, device=device, mode=args.mode, **common)
    else:
        loader = NeighborLoader(data, fanouts, num_workers=args.cpu_workers, **common)
    run_epoch(model, optimizer, loader, device, min(3, len(loader)))  # warm-up (kernels, pools)
    epoch_s, batches = run_epoch(model, optimizer, loader, device, max_batches)

    # 1b. The loader alone, as users get its batches (sampling, gathering, the Python batch), no
    # model: the data path's own throughput.
    synchronize(device)
    start = time.perf_counter()
    alone, edges = 0, 0
    for batch in loader:
        edges += int(batch.edge_index.shape[1])
        alone += 1
        if alone == batches:
            break
    synchronize(device)
    alone_s = time.perf_counter() - start
    emit(
        figure="loader_alone", mode=args.mode if on_gpu else "CPU", batches=alone,
        batch_size=args.batch_size, fanout=fanouts, seconds=round(alone_s, 4),
        batches_per_s=round(alone / alone_s, 1), edges_per_s=round(edges / alone_s),
    )

    # 2. The model alone on preloaded batches.
    preloaded = []
    for batch in loader:
        preloaded.append(type(batch)(**{k: (v.clone() if torch.is_tensor(v) else v) for k, v in _fields(batch).items()}))
        if len(preloaded) == args.preload:
            break
    synchronize(device)
    start = time.perf_counter()
    for batch in preloaded:
        train_step(model, optimizer, batch)
    synchronize(device)
    compute_per_batch = (time.perf_counter() - start) / len(preloaded)
    compute_s = compute_per_batch * batches
    del preloaded
    emit(
        figure="epoch_vs_compute", mode=args.mode if on_gpu else "CPU", batches=batches,
        batch_size=args.batch_size, fanout=fanouts, hidden=args.hidden, layers=args.layers,
        epoch_s=round(epoch_s, 4), compute_s=round(compute_s, 4),
        epoch_over_compute=round(epoch_s / compute_s, 3), target=1.3,
    )

    # 3. Volley's CPU loader feeding the same device.
    if on_gpu and not args.skip_cpu_loader:
        cpu_loader = NeighborLoader(
            data, fanouts, num_workers=args.cpu_workers, device=device, mode="CPU", **common
        )
        run_epoch(model, optimizer, cpu_loader, device, min(3, len(cpu_loader)))
        cpu_s, cpu_batches = run_epoch(model, optimizer, cpu_loader, device, max_batches)
        cpu_s *= batches / max(cpu_batches, 1)
        emit(
            figure="speedup_over_cpu_loader", mode=args.mode, batches=batches,
            cpu_workers=args.cpu_workers, gpu_loader_epoch_s=round(epoch_s, 4),
            cpu_loader_epoch_s=round(cpu_s, 4), speedup_over_cpu_loader=round(cpu_s / epoch_s, 3),
        )
    if args.json:
        with open(args.json, "a") as out:
            for line in lines:
                out.write(json.dumps(line) + "\n")
    return 0


def _fields(batch) -> dict:
    """The fields of a batch (PyG Data or volley.loader.Batch) as a dict."""
    if hasattr(batch, "to_dict"):
        return batch.to_dict()
    return dict(batch.__dict__)


if __name__ == "__main__":
    sys.exit(main())
