#!/usr/bin/env python3
"""The Python API against the C++ bench, side by side, each measurement in a fresh process.

Users call ``NeighborSampler.sample_subgraph`` and ``Feature.gather`` in a fresh Python process
with the C library's default allocator settings; ``volley bench`` measures the C++ kernels. This
script runs both on the same workload, alternately (Python, CLI, Python, CLI, ...), every
measurement in a new process, and prints one JSON line per measurement and then a table of
medians with the ratio Python / CLI:

  * ``sample``: ``NeighborSampler.sample_subgraph`` over ``--batches`` batches of
    ``--batch-size`` seeds (a seeded shuffle of the training nodes), timed from the first batch
    (no warm-up batch), on T Python threads taking whole batches (the sampler releases the GIL),
    against ``volley bench sample`` with the same dataset, fanouts, batch size, batches, threads.
    ``first_seps`` is the Python figure over the first 5 batches alone.
  * ``first``: the first 5 batches of a fresh process on both sides: the Python child with
    ``--batches 5`` against ``volley bench sample --batches 5 --warmup 0`` (the CLI otherwise
    warms up with 2 untimed batches), graph pages in on both sides.
  * ``gather``: ``Feature.gather(ids)`` (a new output per batch) and ``Feature.gather(ids,
    out=...)`` on a ``--rows`` x ``--dim`` float32 table in heap memory, uniform random batches of
    ``--gather-batch`` ids, ``volley.set_num_threads(T)``, timed from the first batch, against
    ``volley bench gather`` (host tier, same sizes and threads).
  * ``loader`` (CLI only): ``volley bench loader``, to compare builds.

Builds are compared with ``--variant NAME=PYTHONPATH:CLI`` (repeatable; runs interleave):

    volley generate /tmp/products --model powerlaw --nodes 2400000 --edges 62000000 \\
        --feature-dim 100 --classes 47 --seed 0
    python bench/python_vs_cli.py --dataset /tmp/products --threads 1,2 --rounds 3
    python bench/python_vs_cli.py --dataset /tmp/products --what sample \\
        --variant before=/tmp/before/python:/tmp/before/volley --variant after=python:build/dev/volley
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import threading
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def import_torch() -> None:
    """Imports torch when installed, as a training script has: Volley then returns tensors, and
    the first timed batch does not pay for the import (about 1.5 s)."""
    try:
        import torch  # noqa: F401
    except ImportError:
        pass


def usage_since(usage: resource.struct_rusage, batches: int) -> dict:
    """Where the time went since `usage` (robust to a busy machine): CPU seconds, faults."""
    now = resource.getrusage(resource.RUSAGE_SELF)
    return {
        "cpu_seconds": now.ru_utime + now.ru_stime - usage.ru_utime - usage.ru_stime,
        "system_seconds": now.ru_stime - usage.ru_stime,
        "faults_per_batch": (now.ru_minflt - usage.ru_minflt) / batches,
    }


def child_sample(args: argparse.Namespace) -> dict:
    """One Python sampling measurement (runs in its own process)."""
    import numpy as np

    import volley

    import_torch()

    dataset = volley.load_dataset(args.dataset)
    graph = dataset.graph
    # Page in the graph, as `volley bench sample` does, so both time the sampler, not the disk.
    for array in (graph.indptr, graph.indices):
        np.asarray(array)[:: 4096 // np.asarray(array).itemsize].sum()
    pool = dataset.train_idx if dataset.train_idx is not None else np.arange(graph.num_nodes)
    pool = np.asarray(pool)[np.random.default_rng(args.seed).permutation(len(pool))]
    available = len(pool) // args.batch_size
    batches = [
        np.ascontiguousarray(pool[(b % available) * args.batch_size :][: args.batch_size])
        for b in range(args.batches)
    ]
    fanouts = [int(f) for f in args.fanout.split(",")]
    sampler = volley.NeighborSampler(graph, fanouts, seed=args.seed)
    lock = threading.Lock()
    state = {"next": 0, "edges": 0, "first_edges": 0, "first_done": None}
    first = min(5, args.batches)

    def work() -> None:
        edges = 0
        while True:
            with lock:
                b = state["next"]
                state["next"] += 1
            if b >= args.batches:
                break
            sub = sampler.sample_subgraph(batches[b], batch_index=b)
            count = len(sub.row)
            edges += count
            with lock:
                if b < first:
                    state["first_edges"] += count
                    if b == first - 1:
                        state["first_done"] = time.perf_counter()
        with lock:
            state["edges"] += edges

    usage = resource.getrusage(resource.RUSAGE_SELF)
    start = time.perf_counter()
    workers = [threading.Thread(target=work) for _ in range(args.threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    seconds = time.perf_counter() - start
    first_seconds = (state["first_done"] or time.perf_counter()) - start
    return {
        "seps": state["edges"] / seconds,
        "sampled_edges": state["edges"],
        "seconds": seconds,
        "first_seps": state["first_edges"] / first_seconds,
        **usage_since(usage, args.batches),
    }


def child_gather(args: argparse.Namespace, with_out: bool) -> dict:
    """One Python gather measurement (runs in its own process)."""
    import numpy as np

    import volley

    import_torch()

    volley.set_num_threads(args.threads)
    table = np.empty((args.rows, args.dim), dtype=np.float32)  # numpy advises huge pages
    table[:] = np.linspace(-1.0, 1.0, args.dim, dtype=np.float32)
    feature = volley.Feature(table)
    rng = np.random.default_rng(args.seed)
    ids = [rng.integers(0, args.rows, args.gather_batch) for _ in range(args.gather_batches)]
    out = np.zeros((args.gather_batch, args.dim), dtype=np.float32) if with_out else None
    usage = resource.getrusage(resource.RUSAGE_SELF)
    start = time.perf_counter()
    first_done = start
    for index, batch in enumerate(ids):
        if with_out:
            feature.gather(batch, out=out, threads=args.threads)
        else:
            rows = feature.gather(batch, threads=args.threads)
            del rows  # a training loop lets go of a batch's rows before gathering the next
        if index == 0:
            first_done = time.perf_counter()
    seconds = time.perf_counter() - start
    total = args.gather_batch * args.dim * 4 * args.gather_batches
    return {
        "gather_gbps": total / seconds / 1e9,
        # Without the first batch (its output's pages are new in either mode).
        "after_first_gbps": total * (len(ids) - 1) / len(ids) / (seconds - (first_done - start))
        / 1e9,
        "seconds": seconds,
        **usage_since(usage, args.gather_batches),
    }


def run(command: list, env: dict) -> dict:
    """Runs `command` and returns its last stdout line parsed as JSON."""
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} failed:\n{done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def measurements(args: argparse.Namespace, name: str, pythonpath: str, cli: str, threads: int):
    """(label, command, env, key) of every measurement of one variant at one thread count."""
    env = dict(os.environ, PYTHONPATH=os.path.abspath(pythonpath))
    me = [sys.executable, os.path.abspath(__file__), "--dataset", args.dataset]
    common = ["--threads", str(threads), "--seed", str(args.seed)]
    sample = ["--fanout", args.fanout, "--batch-size", str(args.batch_size)]
    sample += ["--batches", str(args.batches)]
    gather = ["--rows", str(args.rows), "--dim", str(args.dim)]
    shown = ["--gather-batch", str(args.gather_batch), "--gather-batches", str(args.gather_batches)]
    cli_gather = ["--batch", str(args.gather_batch), "--batches", str(args.gather_batches)]
    found = []
    if "sample" in args.what:
        found.append(("python sample", me + ["--child", "sample"] + common + sample, env, "seps"))
        found.append(
            ("cli sample", [cli, "-q", "bench", "sample", "--dataset", args.dataset] + common
             + sample, env, "seps"))
    if "first" in args.what:  # a fresh process's first 5 batches on both sides, no warm-up
        first = ["--fanout", args.fanout, "--batch-size", str(args.batch_size), "--batches", "5"]
        found.append(("python first", me + ["--child", "sample"] + common + first, env, "seps"))
        found.append(
            ("cli first", [cli, "-q", "bench", "sample", "--dataset", args.dataset, "--warmup",
                           "0"] + common + first, env, "seps"))
    if "gather" in args.what:
        found.append(("python gather", me + ["--child", "gather"] + common + gather + shown, env,
                      "gather_gbps"))
        found.append(("python gather out=", me + ["--child", "gather_out"] + common + gather
                      + shown, env, "gather_gbps"))
        found.append(("cli gather", [cli, "-q", "bench", "gather", "--threads", str(threads),
                                     "--seed", str(args.seed)] + gather + cli_gather, env,
                      "gather_gbps"))
    if "loader" in args.what:
        found.append(("cli loader", [cli, "-q", "bench", "loader", "--dataset", args.dataset,
                                     "--batches", str(args.batches)] + common, env,
                      "batches_per_second"))
    return [(name, label, command, env, key, threads) for label, command, env, key in found]


def parent(args: argparse.Namespace) -> None:
    variants = args.variant or [f"current={os.path.join(REPO, 'python')}:"
                                f"{os.path.join(REPO, 'build', 'dev', 'volley')}"]
    plan = []  # threads outer, variants inner: each build's Python and CLI runs stay adjacent
    for threads in (int(t) for t in args.threads.split(",")):
        for variant in variants:
            name, _, paths = variant.partition("=")
            pythonpath, _, cli = paths.rpartition(":")
            plan += measurements(args, name, pythonpath, cli, threads)
    results: dict = {}
    for round_index in range(args.rounds):
        for name, label, command, env, key, threads in plan:
            load = os.getloadavg()[0]
            line = run(command, env)
            line.update(variant=name, measurement=label, threads=threads, load_average=load,
                        round=round_index)
            print(json.dumps(line), flush=True)
            results.setdefault((name, label, threads, key), []).append(line[key])
    print("\n| variant | measurement | threads | median | runs | Python / CLI (medians) |")
    print("| --- | --- | --- | --- | --- | --- |")
    for (name, label, threads, key), values in results.items():
        median = statistics.median(values)
        kind = label.split()[1]
        cli = results.get((name, f"cli {kind}", threads, key))
        ratio = f"{median / statistics.median(cli):.3f}" if cli and label.startswith("python") else ""
        runs = " / ".join(f"{v / 1e6:.2f}M" if key == "seps" else f"{v:.2f}" for v in values)
        shown = f"{median / 1e6:.2f}M" if key == "seps" else f"{median:.2f}"
        print(f"| {name} | {label} ({key}) | {threads} | {shown} | {runs} | {ratio} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dataset", required=True, help="dataset directory (volley generate)")
    parser.add_argument("--what", default="sample,gather", help="sample, first, gather, loader")
    parser.add_argument("--threads", default="1,2")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--fanout", default="15,10,5")
    parser.add_argument("--batch-size", type=int, default=1024)
    parser.add_argument("--batches", type=int, default=40)
    parser.add_argument("--rows", type=int, default=2_400_000)
    parser.add_argument("--dim", type=int, default=100)
    parser.add_argument("--gather-batch", type=int, default=150_000)
    parser.add_argument("--gather-batches", type=int, default=20)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--variant", action="append",
                        help="NAME=PYTHONPATH:CLI (repeatable); default: this checkout's build")
    parser.add_argument("--child", choices=["sample", "gather", "gather_out"], help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child is not None:
        args.threads = int(args.threads)
    if args.child == "sample":
        print(json.dumps(child_sample(args)))
    elif args.child in ("gather", "gather_out"):
        print(json.dumps(child_gather(args, args.child == "gather_out")))
    else:
        parent(args)


if __name__ == "__main__":
    main()
