#!/usr/bin/env python3
"""GPU and UVA sampling against the CPU sampler (the oracle) on a large dataset directory.

The GPU tests (volley_cuda_tests, python/tests/test_cuda.py) compare the CUDA sampler with the CPU
sampler on small graphs; this script does the same on a products-sized generated graph, where the
hash table is large, hubs have tens of thousands of neighbors and batches have millions of edges:

  * fanouts 15,10,5 without replacement (the benchmark's setting), ordinary batches;
  * a batch of the highest in-degree nodes with fanout -1 (every neighbor of every hub);
  * weighted sampling (seeded random weights in [0, 1), a tenth of them 0), with and without
    replacement, ordinary batches and the hub batch;
  * temporal sampling (seeded random edge times in [0, 2^20), rows sorted by them; seeds repeating
    at random times), "uniform" and "last", and the hub batch by time with fanout -1.

Every batch's n_id, row, col, e_id (and batch, when temporal) must be equal, element for element, in every mode. Prints
one JSON line per case and exits 1 on the first mismatch (naming the field and the position).

    python bench/gpu_oracle.py --dataset /tmp/volley-products
    python bench/gpu_oracle.py --smoke      # a small random graph (checks the script, any device)
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

import numpy as np
import torch

try:
    import volley
except ImportError:
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
    import volley  # noqa: E402


def compare(want, got, case: str, batch: int) -> None:
    for field in ("n_id", "row", "col", "e_id", "batch"):
        a, b = getattr(want, field), getattr(got, field)
        if a is None and b is None:
            continue
        if a is None or b is None:
            raise SystemExit(f"{case} batch {batch}: {field} is {'missing' if b is None else 'extra'} on the GPU")
        b = b.cpu()
        if a.shape != b.shape:
            raise SystemExit(f"{case} batch {batch}: {field} shape {tuple(b.shape)} != CPU's {tuple(a.shape)}")
        diff = (a != b).nonzero()
        if diff.numel():
            i = int(diff[0, 0])
            raise SystemExit(f"{case} batch {batch}: {field}[{i}] = {int(b[i])}, CPU says {int(a[i])}")


def run_case(graph, case, sizes, seed_batches, modes, seed_times=None, **options) -> dict:
    cpu = volley.NeighborSampler(graph, sizes, seed=7, **options)
    samplers = {mode: volley.NeighborSampler(graph, sizes, device="cuda", mode=mode, seed=7, **options) for mode in modes}
    edges = 0
    start = time.perf_counter()
    for b, seeds in enumerate(seed_batches):
        times = None if seed_times is None else seed_times[b]
        want = cpu.sample_subgraph(seeds, b, seed_time=times)
        edges += want.row.numel()
        for mode, sampler in samplers.items():
            on_device = seeds.cuda() if torch.cuda.is_available() else seeds
            compare(want, sampler.sample_subgraph(on_device, b, seed_time=times), f"{case}/{mode}", b)
    line = {"check": "gpu_oracle", "case": case, "modes": modes, "batches": len(seed_batches), "edges": edges,
            "equal": True, "seconds": round(time.perf_counter() - start, 2)}
    print(json.dumps(line), flush=True)
    return line


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dataset", help="dataset directory (volley generate)")
    parser.add_argument("--batches", type=int, default=4)
    parser.add_argument("--batch-size", type=int, default=1024)
    parser.add_argument("--smoke", action="store_true", help="small random graph")
    args = parser.parse_args()
    if args.smoke:
        n = 5000
        g = torch.Generator().manual_seed(0)
        edge_index = torch.stack([torch.randint(0, n, (80000,), generator=g), (torch.rand(80000, generator=g) ** 3 * n).long()])
        graph = volley.Graph.from_edge_index(edge_index, num_nodes=n)
        args.batch_size = min(args.batch_size, 256)
    else:
        graph = volley.load_dataset(args.dataset).graph
    n = graph.num_nodes
    rng = np.random.default_rng(0)
    ordinary = [torch.from_numpy(rng.choice(n, args.batch_size, replace=False)) for _ in range(args.batches)]
    degree = torch.as_tensor(np.asarray(graph.degree()))
    hubs = torch.sort(torch.argsort(degree, descending=True, stable=True)[: args.batch_size]).values
    print(json.dumps({"check": "gpu_oracle", "nodes": n, "edges": graph.num_edges, "max_in_degree": int(degree.max())}), flush=True)
    emulated = bool(volley._volley.cuda_emulated())  # VOLLEY_HOST_EXECUTOR=1: kernels on host threads
    modes = ["GPU", "UVA"] if torch.cuda.is_available() or emulated else []
    if not modes:
        print(json.dumps({"check": "gpu_oracle", "skipped": "no CUDA device"}))
        return 0
    run_case(graph, "15,10,5", [15, 10, 5], ordinary, modes)
    run_case(graph, "15,10,5 replace", [15, 10, 5], ordinary[:2], modes, replace=True)
    run_case(graph, "hubs -1", [-1], [hubs], modes)
    weights = rng.random(graph.num_edges, dtype=np.float32)
    weights[rng.random(graph.num_edges) < 0.1] = 0.0
    weighted = volley.Graph.from_csr(graph.indptr, graph.indices, graph.edge_ids, torch.from_numpy(weights))
    for replace in (False, True):
        suffix = " replace" if replace else ""
        run_case(weighted, "weighted 15,10,5" + suffix, [15, 10, 5], ordinary[:2], modes, weighted=True, replace=replace)
        run_case(weighted, "weighted hubs 25" + suffix, [25], [hubs], modes, weighted=True, replace=replace)
    run_temporal_cases(graph, rng, ordinary, hubs, modes)
    return 0


def run_temporal_cases(graph, rng, ordinary, hubs, modes) -> None:
    """Edge time: random in [0, 2^20), rows sorted by it; each batch's seeds repeat (a quarter of
    them twice) at random times, so disjoint trees share nodes."""
    edge_time = torch.from_numpy(rng.integers(0, 1 << 20, graph.num_edges, dtype=np.int64))
    timed = graph.with_times(edge_time=edge_time).sort_by_time("edge")
    repeated = [torch.cat([s, s[: len(s) // 4]]) for s in ordinary[:2]]
    times = [torch.from_numpy(rng.integers(0, 1 << 20, len(s), dtype=np.int64)) for s in repeated]
    hub_times = [torch.from_numpy(rng.integers(0, 1 << 20, len(hubs), dtype=np.int64))]
    for strategy in ("uniform", "last"):
        common = dict(time_attr="edge_time", temporal_strategy=strategy)
        run_case(timed, f"temporal {strategy} 15,10,5", [15, 10, 5], repeated, modes, seed_times=times, **common)
        run_case(timed, f"temporal {strategy} hubs -1", [-1], [hubs], modes, seed_times=hub_times, **common)
    run_case(timed, "temporal uniform 15,10,5 replace", [15, 10, 5], repeated[:1], modes, seed_times=times,
             time_attr="edge_time", temporal_strategy="uniform", replace=True)


if __name__ == "__main__":
    sys.exit(main())
