"""Cost of carrying an edge attribute: loader batches/s with and without ``edge_attr``.

    volley generate /work/tmp/pyg/products --nodes 2449029 --edges 61859140 \\
        --feature-dim 100 --classes 47 --seed 0
    PYTHONPATH=python .venv/bin/python bench/pyg_compat.py /work/tmp/pyg/products

Loads the dataset as a PyG ``Data`` (``edge_index``, ``x``, ``y``, split masks), then times
``volley.loader.NeighborLoader`` over the same seeds twice per round — as it is, and with an
``edge_attr`` of ``--edge-dim`` float32 per edge (seeded) — alternating the two so that
machine noise hits both alike. Prints batches/s of each (median over rounds) and their ratio.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

import numpy as np
import torch

from volley.dataset import load_dataset
from volley.loader import NeighborLoader


def batches_per_second(data, args) -> float:
    loader = NeighborLoader(data, args.fanouts, input_nodes=data.train_mask,
                            batch_size=args.batch_size, shuffle=True, seed=args.seed,
                            num_workers=args.workers)
    iterator = iter(loader)
    for _ in range(args.warmup):
        next(iterator)
    start = time.perf_counter()
    for _ in range(args.batches):
        next(iterator)
    elapsed = time.perf_counter() - start
    iterator.close()
    return args.batches / elapsed


def anon_huge_pages_mb() -> int:
    with open("/proc/self/smaps_rollup") as smaps:
        return int(smaps.read().split("AnonHugePages:")[1].split()[0]) // 1024


def wait_for_huge_pages(tables, limit_s: float = 600.0) -> None:
    """Starts the stores' collapse (volley.Feature over each table) and waits until the process's
    huge pages stop growing for 5 s."""
    import volley

    stores = [volley.Feature(t) for t in tables]  # noqa: F841 (the collapse runs while they live)
    start, last, steady = time.perf_counter(), -1, time.perf_counter()
    while time.perf_counter() - start < limit_s:
        now = anon_huge_pages_mb()
        if now != last:
            last, steady = now, time.perf_counter()
        elif time.perf_counter() - steady > 5:
            break
        time.sleep(1)
    print(f"huge pages: {last} MB after {time.perf_counter() - start:.0f} s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("dataset", help="a dataset directory (volley generate / convert)")
    parser.add_argument("--fanouts", type=int, nargs="+", default=[15, 10, 5])
    parser.add_argument("--batch-size", type=int, default=1024)
    parser.add_argument("--batches", type=int, default=20)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--edge-dim", type=int, default=16)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--numpy-attr", action="store_true",
                        help="allocate edge_attr with numpy (large numpy arrays get transparent "
                        "huge pages; torch 1.13's allocator does not)")
    parser.add_argument("--huge-pages", action="store_true",
                        help="collapse x and edge_attr into transparent huge pages (Volley's "
                        "default) and wait until that is done before timing (the steady state of a "
                        "long training); without it, both stay in 4 KiB pages (VOLLEY_HUGE_PAGES=0)")
    args = parser.parse_args()
    # Without --huge-pages the tables stay in 4 KiB pages (the collapse would run during the
    # timed rounds); with it, the collapse runs first and is waited for.
    os.environ["VOLLEY_HUGE_PAGES"] = "1" if args.huge_pages else "0"

    data = load_dataset(args.dataset).to_pyg()
    shape = (data.edge_index.size(1), args.edge_dim)
    if args.numpy_attr:
        rng = np.random.default_rng(args.seed)
        edge_attr = torch.from_numpy(rng.standard_normal(shape, dtype=np.float32))
    else:
        edge_attr = torch.randn(*shape, generator=torch.Generator().manual_seed(args.seed))
    if args.huge_pages:
        wait_for_huge_pages([data.x, edge_attr])
    plain, carried = [], []
    for _ in range(args.rounds):
        if hasattr(data, "edge_attr"):
            del data.edge_attr
        plain.append(batches_per_second(data, args))
        data.edge_attr = edge_attr
        carried.append(batches_per_second(data, args))
    p, c = statistics.median(plain), statistics.median(carried)
    print(f"nodes={data.num_nodes} edges={data.edge_index.size(1)} fanouts={args.fanouts} "
          f"batch_size={args.batch_size} workers={args.workers}")
    print(f"without edge_attr: {p:.2f} batches/s  (rounds: {', '.join(f'{v:.2f}' for v in plain)})")
    print(f"with edge_attr[{args.edge_dim}] float32: {c:.2f} batches/s  "
          f"(rounds: {', '.join(f'{v:.2f}' for v in carried)})")
    print(f"ratio: {c / p:.3f}  (edge_attr from {'numpy' if args.numpy_attr else 'torch'})")


if __name__ == "__main__":
    main()
