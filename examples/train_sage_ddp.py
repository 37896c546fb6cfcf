"""Train GraphSAGE with DistributedDataParallel on one machine, all ranks sharing one dataset.

    torchrun --nproc_per_node 2 examples/train_sage_ddp.py                 # a generated graph
    volley generate /tmp/pl --model powerlaw --nodes 2400000 --edges 62000000 \\
        --feature-dim 100 --classes 47 --seed 0
    torchrun --nproc_per_node 2 examples/train_sage_ddp.py --dataset /tmp/pl --epochs 1

(``torchrun`` is ``python -m torch.distributed.run`` where the script is not on PATH.)

Rank 0 loads (or generates) the dataset and moves it into shared memory once
(``Dataset.share_memory_()``); ``torch.distributed.broadcast_object_list`` pickles it *by handle*,
and every other rank attaches to the same memory instead of loading a copy, so N ranks cost about
one dataset of RAM (the script prints each rank's proportional set size). The memory is freed when
the last rank exits, even if ranks are killed: nothing is left in /dev/shm.

Each rank's ``volley.loader.NeighborLoader`` reads its rank and world size from
``torch.distributed`` and takes a disjoint, equally sized share of the shuffled training nodes
every epoch (like ``DistributedSampler``), with its own sampling seed. Backend: NCCL when GPUs are
present, gloo on CPU. On CPU, give each rank ``cores / ranks`` sampling threads (``--workers``).

Memory tip (CPU): glibc keeps freed large blocks (a batch's activations) in its heap once its
dynamic mmap threshold has grown, which adds a few hundred MiB of private memory per rank. The
script fixes the threshold at 1 MiB (as ``MALLOC_MMAP_THRESHOLD_=1048576`` would), so large blocks
go back to the system when torch frees them; ``--malloc-defaults`` keeps glibc's behaviour.
"""

from __future__ import annotations

import ctypes
import json
import os
import sys
import time

import numpy as np
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

import volley
from volley._share import proportional_set_size
from volley.loader import NeighborLoader

# The model and training loop the examples share (examples/ is on sys.path).
from _common import GraphSAGE, epoch_line, train_epoch, training_parser  # noqa: E402


def limit_heap_retention(threshold: int = 1 << 20) -> None:
    """Fixes glibc's mmap threshold: blocks >= `threshold` are mapped and unmapped on free."""
    try:
        ctypes.CDLL("libc.so.6").mallopt(-3, threshold)  # -3: M_MMAP_THRESHOLD
    except (OSError, AttributeError):  # not glibc
        pass


def generate(num_nodes: int, degree: int, dim: int, classes: int, seed: int) -> volley.Dataset:
    """A homophilous random graph: features are a class centroid plus noise, and most edges join
    nodes of the same class, so GraphSAGE has something to learn."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, classes, size=num_nodes)
    x = (rng.standard_normal((classes, dim)) [y] + 2.0 * rng.standard_normal((num_nodes, dim)))
    by_class = np.argsort(y, kind="stable")
    start = np.searchsorted(y[by_class], np.arange(classes))
    count = np.bincount(y, minlength=classes)
    num_edges = num_nodes * degree // 2
    src = rng.integers(0, num_nodes, size=num_edges)
    same = rng.random(num_edges) < 0.8
    pick = (rng.random(num_edges) * count[y[src]]).astype(np.int64)
    dst = np.where(same, by_class[start[y[src]] + pick], rng.integers(0, num_nodes, num_edges))
    graph = volley.Graph.from_edge_index(
        np.stack([src, dst]), num_nodes=num_nodes, undirected=True, drop_self_loops=True
    )
    split = volley.random_split(num_nodes, train_fraction=0.6, val_fraction=0.2, seed=seed)
    return volley.Dataset(graph, x.astype(np.float32), y, train_idx=split.train,
                          val_idx=split.val, test_idx=split.test, name="generated")


def main() -> int:
    parser = training_parser(__doc__.splitlines()[0], epochs=3, batch_size=1024, fanouts=[10, 5],
                             hidden=128, lr=0.003, workers=0,
                             workers_help="C++ sampling threads per rank (default: cores / ranks)")
    parser.add_argument("--dataset", help="a dataset directory (default: generate a graph)")
    parser.add_argument("--nodes", type=int, default=50_000, help="nodes of the generated graph")
    parser.add_argument("--train-nodes", type=int, default=0,
                        help="train on the first N training nodes only (0: all); an epoch is one "
                             "pass over them")
    parser.add_argument("--max-batches", type=int, default=0, help="cap per epoch (0: none)")
    parser.add_argument("--json", action="store_true", help="rank 0 prints a JSON summary")
    parser.add_argument("--malloc-defaults", action="store_true",
                        help="keep glibc's dynamic mmap threshold (see the memory tip above)")
    args = parser.parse_args()
    if not args.malloc_defaults:
        limit_heap_retention()

    backend = "nccl" if torch.cuda.is_available() else "gloo"
    dist.init_process_group(backend)
    rank, world_size = dist.get_rank(), dist.get_world_size()
    device = torch.device(f"cuda:{int(os.environ.get('LOCAL_RANK', 0))}"
                          if backend == "nccl" else "cpu")
    if device.type == "cuda":
        torch.cuda.set_device(device)
    torch.manual_seed(args.seed)

    # Rank 0 builds the dataset in shared memory once; the others attach by handle.
    start = time.perf_counter()
    holder = [None]
    if rank == 0:
        if args.dataset:
            dataset = volley.load_dataset(args.dataset)
        else:
            dataset = generate(args.nodes, 10, 64, 8, args.seed)
        holder[0] = dataset.share_memory_()
    dist.broadcast_object_list(holder, src=0)  # pickles handles, not arrays
    dataset = holder[0]
    dist.barrier()
    if rank == 0:
        print(f"{dataset!r} shared with {world_size} rank(s) in "
              f"{time.perf_counter() - start:.1f}s; backend {backend}", flush=True)

    workers = args.workers or max(1, (os.cpu_count() or 1) // world_size)
    train_idx = dataset.train_idx
    if args.train_nodes:
        train_idx = train_idx[: args.train_nodes]
    train = NeighborLoader(dataset, num_neighbors=args.fanouts, batch_size=args.batch_size,
                           input_nodes=train_idx, shuffle=True, num_workers=workers,
                           seed=args.seed)  # rank and world size come from torch.distributed
    model = GraphSAGE(dataset.num_features, args.hidden, dataset.num_classes,
                      len(args.fanouts), input_dropout=False).to(device)
    model = DistributedDataParallel(model, device_ids=[device] if device.type == "cuda" else None)
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)

    epoch_seconds = []
    for epoch in range(1, args.epochs + 1):
        dist.barrier()
        start = time.perf_counter()
        totals = train_epoch(model, optimizer, train, device=device, max_batches=args.max_batches)
        dist.barrier()
        seconds = time.perf_counter() - start
        epoch_seconds.append(seconds)
        dist.all_reduce(totals)
        if rank == 0:
            print(f"{epoch_line(epoch, totals)}  {int(totals[2]):,} seeds over {world_size} "
                  f"rank(s)  {seconds:.2f}s", flush=True)

    # Memory: each rank's proportional set size (shared pages split between the ranks).
    pss = [None] * world_size
    dist.all_gather_object(pss, proportional_set_size())
    if rank == 0:
        print("PSS per rank (MiB): " + ", ".join(f"{p / 2**20:.0f}" for p in pss)
              + f"; sum {sum(pss) / 2**20:.0f} MiB", flush=True)
        if args.json:
            print(json.dumps({"world_size": world_size, "pss_bytes": pss,
                              "epoch_seconds": epoch_seconds}), flush=True)
    dist.barrier()
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
