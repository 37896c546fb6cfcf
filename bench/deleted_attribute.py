#!/usr/bin/env python3
"""What ``del loader.data.x`` saves: the loader reads the attributes when an epoch starts, so an
epoch after the deletion gathers no ``x``. A seeded graph (500k nodes, 5M edges, ``x`` 128
float32 per node, ``y``), NeighborLoader ``[10, 5]``, batch 1024, 1 worker thread; 30 batches per
epoch, epochs with and without ``x`` interleaved five times in one loader (the deletion and the
restoring assignment are what a user does), the best epoch of each.

    PYTHONPATH=python .venv/bin/python bench/deleted_attribute.py
"""
import time

import numpy as np
import torch
from torch_geometric.data import Data

import volley
from volley.loader import NeighborLoader

rng = np.random.default_rng(0)
N, E = 500_000, 5_000_000
x = torch.from_numpy(rng.standard_normal((N, 128), dtype=np.float32))
data = Data(x=x, y=torch.from_numpy(rng.integers(0, 10, N)),
            edge_index=torch.from_numpy(rng.integers(0, N, (2, E))), num_nodes=N)
volley.set_num_threads(1)
loader = NeighborLoader(data, [10, 5], batch_size=1024, shuffle=True, seed=1, num_workers=1,
                        input_nodes=torch.arange(30 * 1024))


def epoch() -> float:
    start = time.perf_counter()
    for batch in loader:
        pass
    return (time.perf_counter() - start) / len(loader)


epoch()  # warm-up: page faults of the graph and of x
best = {"with x": float("inf"), "without x": float("inf")}
for _ in range(5):
    loader.data.x = x
    best["with x"] = min(best["with x"], epoch())
    assert "x" in next(iter(loader))
    del loader.data.x
    best["without x"] = min(best["without x"], epoch())
    assert "x" not in next(iter(loader))
for name, seconds in best.items():
    print(f"{name:10s} {seconds * 1e3:7.2f} ms/batch")
print(f"without / with: {best['without x'] / best['with x']:.2f}")
