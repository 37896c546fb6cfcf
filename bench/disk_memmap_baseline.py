"""PyG's usual route past RAM: a numpy memmap indexed by each batch's n_id (what
torch_geometric's NeighborLoader does with data.x = torch.from_numpy(np.load(mmap_mode='r'))),
against Volley's disk tier, same batches, one process.

Usage (from the checkout, after a build): PYTHONPATH=python python bench/disk_memmap_baseline.py
BATCHES DATASET_DIR. Results: bench/RESULTS.md, "features larger than memory (issue 22)".
"""
import sys
import time

import numpy as np

import volley
from volley._tensor import to_numpy

D = sys.argv[2] if len(sys.argv) > 2 else "/work/tmp/disk/out"
ds = volley.load_dataset(D)
train = to_numpy(ds.train_idx)
rng = np.random.default_rng(7)
seeds = rng.permutation(train)
sampler = volley.NeighborSampler(ds.graph, [10, 5], seed=3)
batches = int(sys.argv[1]) if len(sys.argv) > 1 else 4
n_ids = [to_numpy(sampler.sample_subgraph(seeds[b * 512:(b + 1) * 512], batch_index=b).n_id)
         for b in range(batches)]
x = np.load(D + "/features.npy", mmap_mode="r")
start = time.perf_counter(); rows = 0
for n_id in n_ids:
    batch = x[n_id]
    rows += len(n_id)
memmap = time.perf_counter() - start
print(f"numpy memmap: {batches} batches, {rows} rows in {memmap:.1f} s = {rows / memmap:.0f} rows/s")
feature = volley.Feature(D + "/features.npy", cache_bytes="8G", policy="dynamic")
print(feature.disk_io)
start = time.perf_counter(); rows = 0
for n_id in n_ids:
    batch = feature.gather(n_id.astype(np.int64), threads=1)
    rows += len(n_id)
disk = time.perf_counter() - start
print(f"volley disk tier (1 thread, cold 8 GB SIEVE): {rows} rows in {disk:.1f} s = {rows / disk:.0f} rows/s; ratio {memmap / disk:.1f}x")
