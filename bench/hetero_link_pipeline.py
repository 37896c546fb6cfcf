#!/usr/bin/env python3
"""Heterogeneous LinkNeighborLoader: the C++ typed link pipeline against the Python assembly it
replaced (the loader's fallback, forced by dropping the native pipeline; the batches are the
same, checked by the hetlink golden checksums). A seeded mag-shaped HeteroData (200k papers with
128 float features, 100k authors with 64), 40 batches of 1024 `writes` edges with 1:1 binary
negatives, fanouts [15, 10]; five interleaved rounds, the best of each. Volley's thread pool is
set to num_workers, so that both paths use as many cores.

    PYTHONPATH=python .venv/bin/python bench/hetero_link_pipeline.py [num_workers]
"""
import sys
import time

import numpy as np
import torch
from torch_geometric.data import HeteroData
import volley
from volley.loader import LinkNeighborLoader

rng = np.random.default_rng(0)
P, A = 200_000, 100_000
data = HeteroData()
data["paper"].x = torch.from_numpy(rng.standard_normal((P, 128), dtype=np.float32))
data["paper"].y = torch.from_numpy(rng.integers(0, 10, P))
data["author"].x = torch.from_numpy(rng.standard_normal((A, 64), dtype=np.float32))
writes = np.stack([rng.integers(0, A, 2 * P), np.repeat(np.arange(P), 2)])
cites = np.stack([rng.integers(0, P, 10 * P), np.repeat(np.arange(P), 10)])
data["author", "writes", "paper"].edge_index = torch.from_numpy(writes)
data["paper", "rev_writes", "author"].edge_index = torch.from_numpy(writes[::-1].copy())
data["paper", "cites", "paper"].edge_index = torch.from_numpy(cites)
index = data["author", "writes", "paper"].edge_index[:, :40 * 1024]
workers = int(sys.argv[1]) if len(sys.argv) > 1 else 1
volley.set_num_threads(workers)  # the gathers' pool too: both paths use `workers` cores

def loader():
    return LinkNeighborLoader(data, [15, 10], edge_label_index=(("author", "writes", "paper"), index),
                              neg_sampling="binary", batch_size=1024, shuffle=True, seed=1,
                              num_workers=workers)

def run(native):
    l = loader()
    if not native:
        l._native = None
    t = time.perf_counter(); n = 0
    for b in l:
        n += 1
    return (time.perf_counter() - t) / n

results = {True: [], False: []}
for r in range(5):
    for native in (True, False):
        results[native].append(run(native))
c, p = min(results[True]), min(results[False])
print(f"workers={workers} per batch: C++ pipeline {c*1e3:.1f} ms, Python assembly {p*1e3:.1f} ms, ratio {p/c:.2f}x")
