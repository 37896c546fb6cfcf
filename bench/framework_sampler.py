#!/usr/bin/env python3
"""A framework sampler's order (sampler=, as Lightning passes a DistributedSampler) against the
loader's own order: one native epoch over the reordered inputs, and the per-batch collate_fn
path it replaced. 500k nodes, 5M edges, x 128 float32, [10, 5], batch 1024, 30 batches, 1
thread; best of three interleaved rounds.

    PYTHONPATH=python .venv/bin/python bench/framework_sampler.py
"""
import time, numpy as np, torch, volley
from torch_geometric.data import Data
from volley.loader import NeighborLoader
rng = np.random.default_rng(0); N, E = 500_000, 5_000_000
data = Data(x=torch.from_numpy(rng.standard_normal((N, 128), dtype=np.float32)), y=torch.from_numpy(rng.integers(0, 10, N)),
            edge_index=torch.from_numpy(rng.integers(0, N, (2, E))), num_nodes=N)
volley.set_num_threads(1)
order = [int(i) for i in rng.permutation(N)[:30 * 1024]]
def run(loader):
    t = time.perf_counter(); n = sum(1 for _ in loader); return (time.perf_counter() - t) / n
native = NeighborLoader(data, [10, 5], batch_size=1024, shuffle=True, seed=1, num_workers=1, input_nodes=torch.tensor(order))
sampled = NeighborLoader(data, [10, 5], batch_size=1024, seed=1, num_workers=1, sampler=list(range(len(order))), input_nodes=torch.tensor(order))
run(native)
best = {"native": 9, "sampler (one native epoch)": 9, "sampler (collate_fn per batch)": 9}
for _ in range(3):
    best["native"] = min(best["native"], run(native))
    best["sampler (one native epoch)"] = min(best["sampler (one native epoch)"], run(sampled))
    saved = type(sampled)._sampler_native
    type(sampled)._sampler_native = lambda self, order: None
    best["sampler (collate_fn per batch)"] = min(best["sampler (collate_fn per batch)"], run(sampled))
    type(sampled)._sampler_native = saved
for k, v in best.items(): print(f"{k:32s} {v*1e3:6.2f} ms/batch")
