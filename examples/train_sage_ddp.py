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

Restarts: with ``--checkpoint DIR`` every rank saves the model, the optimizer, torch's random state
and its loader's ``state_dict()`` every ``--checkpoint-every`` batches, and a rank that starts
(again) with checkpoints there resumes from the newest step every rank saved: the loader continues
with exactly the batches not yet taken. Under ``torchrun --max-restarts N`` a killed rank (and the
group restarted with it) thus ends with the model an uninterrupted run ends with, bit for bit:

    torchrun --nproc_per_node 2 --max_restarts 1 examples/train_sage_ddp.py --dataset cora \
        --checkpoint /tmp/ckpt --die-at-batch 5      # rank 1 kills itself once, at batch 5

Memory tip (CPU): glibc keeps freed large blocks (a batch's activations) in its heap once its
dynamic mmap threshold has grown, which adds a few hundred MiB of private memory per rank. The
script fixes the threshold at 1 MiB (as ``MALLOC_MMAP_THRESHOLD_=1048576`` would), so large blocks
go back to the system when torch frees them; ``--malloc-defaults`` keeps glibc's behaviour.
"""

from __future__ import annotations

import ctypes
import glob
import hashlib
import json
import os
import signal
import sys
import time
import traceback

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


class Checkpoints:
    """Each rank's training state in DIR/step<S>-rank<R>.pt (written whole, then renamed), the
    two newest steps kept; the resume point is the newest step every rank saved."""

    def __init__(self, directory: str, rank: int, world_size: int):
        self.directory, self.rank, self.world_size = directory, rank, world_size
        os.makedirs(directory, exist_ok=True)

    def _path(self, step: int, rank: int) -> str:
        return os.path.join(self.directory, f"step{step:09d}-rank{rank}.pt")

    def save(self, step: int, state: dict) -> None:
        temporary = self._path(step, self.rank) + ".partial"
        torch.save(state, temporary)
        os.replace(temporary, self._path(step, self.rank))
        dist.barrier()  # every rank has this step before any drops an older one
        for path in sorted(glob.glob(os.path.join(self.directory, f"step*-rank{self.rank}.pt")))[:-2]:
            os.remove(path)

    def latest(self):
        """The newest step saved by every rank (agreed over the group), and this rank's state
        at it; (0, None) when there is none."""
        mine = [int(os.path.basename(p)[4:13]) for p in
                glob.glob(os.path.join(self.directory, f"step*-rank{self.rank}.pt"))]
        steps = [None] * self.world_size
        dist.all_gather_object(steps, sorted(mine))
        common = set(steps[0]).intersection(*map(set, steps[1:]))
        if not common:
            return 0, None
        step = max(common)
        return step, torch.load(self._path(step, self.rank), weights_only=False)


def resume(checkpoints, model, optimizer, loader, rank: int):
    """(batches done, first epoch to run): from the newest checkpoint, else (0, 1)."""
    if checkpoints is None:
        return 0, 1
    step, state = checkpoints.latest()
    if state is None:
        return 0, 1
    model.load_state_dict(state["model"])
    optimizer.load_state_dict(state["optimizer"])
    torch.set_rng_state(state["rng"])
    position, epoch = dict(state["loader"]), state["epoch"]
    if position["batches_taken"] == position["num_batches"]:  # saved at an epoch's last batch
        position.update(epoch=position["epoch"] + 1, batches_taken=0)
        epoch += 1
    loader.load_state_dict(position)
    if rank == 0:
        print(f"resumed from batch {step} (epoch {epoch}, batch {position['batches_taken']})",
              flush=True)
    return step, epoch


def checksum(model: torch.nn.Module) -> str:
    """A digest of every parameter's bytes (equal models, equal digests)."""
    digest = hashlib.sha256()
    for parameter in model.parameters():
        digest.update(parameter.detach().cpu().numpy().tobytes())
    return digest.hexdigest()[:16]


def main() -> int:
    parser = training_parser(__doc__.splitlines()[0], epochs=3, batch_size=1024, fanouts=[10, 5],
                             hidden=128, lr=0.003, workers=0,
                             workers_help="C++ sampling threads per rank (default: cores / ranks)")
    parser.add_argument("--dataset", help="a dataset directory, or cora (default: generate a graph)")
    parser.add_argument("--nodes", type=int, default=50_000, help="nodes of the generated graph")
    parser.add_argument("--train-nodes", type=int, default=0,
                        help="train on the first N training nodes only (0: all); an epoch is one "
                             "pass over them")
    parser.add_argument("--max-batches", type=int, default=0, help="cap per epoch (0: none)")
    parser.add_argument("--json", action="store_true", help="rank 0 prints a JSON summary")
    parser.add_argument("--malloc-defaults", action="store_true",
                        help="keep glibc's dynamic mmap threshold (see the memory tip above)")
    parser.add_argument("--checkpoint", help="a directory to save to and resume from")
    parser.add_argument("--checkpoint-every", type=int, default=3, help="batches between saves")
    parser.add_argument("--die-at-batch", type=int, default=0,
                        help="the last rank kills itself (SIGKILL) after this many batches, in "
                             "torchrun's first attempt only: a fault to resume from")
    args = parser.parse_args()
    if args.checkpoint and args.max_batches:
        parser.error("--checkpoint resumes whole epochs: leave --max-batches out")
    if not args.malloc_defaults:
        limit_heap_retention()

    backend = "nccl" if torch.cuda.is_available() else "gloo"
    volley.dist.init_process_group(backend)  # restart-safe under torchrun
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
        if args.dataset == "cora":
            dataset = volley.datasets.cora()
        elif args.dataset:
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
                           seed=args.seed,  # rank and world size come from torch.distributed
                           feature_dtype="float32")
    model = GraphSAGE(dataset.num_features, args.hidden, dataset.num_classes,
                      len(args.fanouts), input_dropout=False).to(device)
    model = DistributedDataParallel(model, device_ids=[device] if device.type == "cuda" else None)
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)

    checkpoints = Checkpoints(args.checkpoint, rank, world_size) if args.checkpoint else None
    step, first_epoch = resume(checkpoints, model, optimizer, train, rank)
    epoch = first_epoch

    def after_step(index: int) -> None:
        nonlocal step
        step += 1
        if (args.die_at_batch == step and rank == world_size - 1
                and os.environ.get("TORCHELASTIC_RESTART_COUNT", "0") == "0"):
            os.kill(os.getpid(), signal.SIGKILL)  # the fault: torchrun restarts the group
        if checkpoints is not None and step % args.checkpoint_every == 0:
            checkpoints.save(step, {"model": model.state_dict(), "rng": torch.get_rng_state(),
                                    "optimizer": optimizer.state_dict(), "epoch": epoch,
                                    "loader": train.state_dict()})

    epoch_seconds = []
    for epoch in range(first_epoch, args.epochs + 1):
        dist.barrier()
        start = time.perf_counter()
        totals = train_epoch(model, optimizer, train, device=device, max_batches=args.max_batches,
                             after_step=after_step)
        dist.barrier()
        seconds = time.perf_counter() - start
        epoch_seconds.append(seconds)
        dist.all_reduce(totals)
        if rank == 0:
            print(f"{epoch_line(epoch, totals)}  {int(totals[2]):,} seeds over {world_size} "
                  f"rank(s)  {seconds:.2f}s", flush=True)
    if rank == 0:
        print(f"model checksum {checksum(model)} after {step} batches", flush=True)

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
    return 0  # the process group is not destroyed: see the end of this file


if __name__ == "__main__":
    # The process leaves with os._exit, without destroying the gloo group: torch 1.13's can
    # deadlock in its destructor (its thread waits for the GIL the main thread holds), at a
    # normal end and after a failed collective alike (a peer died: torchrun restarts us). So
    # main() leaves the group to torch.distributed (no destroy_process_group), and dropping the
    # DDP model's reference as main returns destroys nothing.
    try:
        code = main()
    except Exception:
        traceback.print_exc()
        code = 1
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
