"""PyG's usual route past RAM: a numpy memmap indexed by each batch's n_id (what
torch_geometric's NeighborLoader does with data.x = torch.from_numpy(np.load(mmap_mode='r'))),
against Volley's disk tier, same batches, one process.

Usage (from the checkout, after a build): PYTHONPATH=python python bench/disk_memmap_baseline.py
BATCHES DATASET_DIR [--e2e]. Without --e2e the batches are sampled first and only the gathers
are timed, memmap then Volley's disk tier (cold 8 GB SIEVE cache), as in bench/RESULTS.md
("features larger than memory"). With --e2e it times PyG's route end to end, one
thread, batch by batch: sample (Volley's sampler, 512 seeds, fanout [10, 5]), index the memmap
by n_id, torch.from_numpy; and prints one JSON line (bench/disk_e2e.sh reads it).
"""
import json
import sys
import time

import numpy as np

import volley
from volley._tensor import to_numpy

args = [a for a in sys.argv[1:] if not a.startswith("--")]
E2E = "--e2e" in sys.argv
D = args[1] if len(args) > 1 else "/work/tmp/disk/out"
batches = int(args[0]) if args else 4
ds = volley.load_dataset(D)
train = to_numpy(ds.train_idx)
rng = np.random.default_rng(7)
seeds = rng.permutation(train)
sampler = volley.NeighborSampler(ds.graph, [10, 5], seed=3)
x = np.load(D + "/features.npy", mmap_mode="r")

if E2E:
    import torch

    start = time.perf_counter()
    rows = 0
    for b in range(batches):
        n_id = to_numpy(sampler.sample_subgraph(seeds[b * 512:(b + 1) * 512], batch_index=b).n_id)
        batch = torch.from_numpy(x[n_id])
        rows += len(n_id)
    seconds = time.perf_counter() - start
    print(json.dumps({"bench": "memmap_e2e", "batches": batches, "rows": rows,
                      "seconds": seconds, "batches_per_second": batches / seconds,
                      "rows_per_second": rows / seconds}))
    sys.exit(0)

n_ids = [to_numpy(sampler.sample_subgraph(seeds[b * 512:(b + 1) * 512], batch_index=b).n_id)
         for b in range(batches)]
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
