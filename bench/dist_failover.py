#!/usr/bin/env python3
"""Failover of a part's replica: how long the trainer waits for its next batch when a replica
dies or freezes mid-epoch, against the deadline.

    volley -q generate /tmp/fo --nodes 200000 --edges 4000000 --feature-dim 64 --seed 0
    python bench/dist_failover.py --dataset /tmp/fo --work /tmp/fo-work

The dataset is partitioned (random, 2 parts) into ``--work``; part 0 is held by the trainer
(worker topology), part 1 is served twice by ``volley serve`` processes (replicas "a|b"). The
trainer iterates an epoch; after ``--after`` batches one replica gets a signal (SIGKILL: killed;
SIGSTOP: frozen). Reported: the median gap between batches before the signal, the gap from the
signal to the next batch and the longest gap after it (prefetched batches hide the first), the
batches of the epoch (all of them: none lost), and the deadline. One JSON line per signal.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import select
import signal
import subprocess
import sys
import time

import numpy as np

try:
    import volley
except ImportError:
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
    import volley  # noqa: E402
import volley.dist as vd  # noqa: E402


def serve(cli: str, directory: str, part: int) -> tuple:
    """A ``volley serve`` process of part ``part`` and its address."""
    process = subprocess.Popen([cli, "serve", directory, "--part", str(part), "--listen",
                                "127.0.0.1:0"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                               text=True, env=dict(os.environ, VOLLEY_PROGRESS="0"))
    ready, _, _ = select.select([process.stdout], [], [], 60)
    line = process.stdout.readline() if ready else ""
    match = re.search(r"listening on (\S+)", line)
    if not match:
        process.kill()
        raise RuntimeError(f"server did not start: {line!r}")
    return process, match.group(1)


def run(args: argparse.Namespace, parts: str, signal_name: str) -> dict:
    first, a = serve(args.cli, parts, 1)
    second, b = serve(args.cli, parts, 1)
    try:
        loader = vd.DistNeighborLoader(["", [a, b]], args.fanouts, batch_size=args.batch_size,
                                       shuffle=True, seed=0, num_workers=args.workers,
                                       topology="worker", local=(parts, 0),
                                       deadline=args.deadline)
        stamps, signalled = [], None
        for count, _ in enumerate(loader, start=1):
            stamps.append(time.perf_counter())
            if count == args.after:
                signalled = time.perf_counter()
                os.kill(first.pid, getattr(signal, signal_name))
        gaps = np.diff(stamps[:args.after])
        return {"signal": signal_name, "deadline_s": args.deadline,
                "median_gap_s": round(float(np.median(gaps)), 4),
                "signal_to_next_batch_s": round(stamps[args.after] - signalled, 4),
                "longest_gap_after_s": round(float(np.max(np.diff(stamps[args.after - 1:]))), 4),
                "batches": len(stamps), "expected_batches": len(loader)}
    finally:
        for process in (first, second):
            if process.poll() is None:
                os.kill(process.pid, signal.SIGCONT)
                process.kill()
            process.wait()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dataset", required=True)
    parser.add_argument("--work", default="/tmp/volley-failover-bench")
    parser.add_argument("--cli", default=os.environ.get("VOLLEY_CLI", "volley"))
    parser.add_argument("--batch-size", type=int, default=1024)
    parser.add_argument("--fanouts", type=lambda s: [int(k) for k in s.split(",")],
                        default=[15, 10])
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--deadline", type=float, default=2.0)
    parser.add_argument("--after", type=int, default=10, help="batches before the signal")
    args = parser.parse_args()
    parts = os.path.join(args.work, "parts-2")
    if not os.path.exists(os.path.join(parts, "partition.json")):
        volley.partition(args.dataset, parts, 2, method="random", seed=0)
    for signal_name in ("SIGKILL", "SIGSTOP"):
        print(json.dumps({"bench": "dist_failover", **run(args, parts, signal_name)}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
