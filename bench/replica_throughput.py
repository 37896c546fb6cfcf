#!/usr/bin/env python3
"""Read load spread over replicas: a trainer's batches per second when each part is served by 1
server and by 2, with the servers the bottleneck (each held to a share of a core).

    volley -q generate /tmp/rep --nodes 200000 --edges 4000000 --feature-dim 64 --seed 0
    sudo python bench/replica_throughput.py --dataset /tmp/rep     # needs the cgroup v1 cpu tree

The dataset is partitioned (random, 2 parts). Every ``volley serve`` process is put in a cgroup
of its own whose CPU quota is ``--server-cpu`` of one core (cgroup v1 ``cpu.cfs_quota_us``), so
that on a small machine the servers, not the trainer, bound the rate, as they do when many
trainers share them. The trainer (no local part: every hop and gather is a call) iterates
``--batches`` batches of ``volley.dist.DistNeighborLoader`` with ``--workers`` threads, against
``["p0", "p1"]`` and against ``["p0a|p0b", "p1a|p1b"]`` (calls spread over a part's replicas in
turn), interleaved ``--rounds`` times. One JSON line: the median batches per second of each and
their ratio.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time

try:
    import volley
except ImportError:
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
    import volley  # noqa: E402
import volley.dist as vd  # noqa: E402
from dist_failover import serve  # noqa: E402  (bench/ is the script's folder)

CGROUP = "/sys/fs/cgroup/cpu"


def limited_server(cli: str, directory: str, part: int, share: float, name: str) -> tuple:
    """A ``volley serve`` of ``part`` (dist_failover.py's), moved into cgroup ``name`` with
    ``share`` of a core; (process, address)."""
    group = os.path.join(CGROUP, name)
    os.makedirs(group, exist_ok=True)
    with open(os.path.join(group, "cpu.cfs_period_us"), "w") as f:
        f.write("100000")
    with open(os.path.join(group, "cpu.cfs_quota_us"), "w") as f:
        f.write(str(int(share * 100000)))
    process, address = serve(cli, directory, part)
    with open(os.path.join(group, "cgroup.procs"), "w") as f:
        f.write(str(process.pid))  # its threads follow it into the group
    return process, address


def rate(addresses: list, args: argparse.Namespace) -> float:
    loader = vd.DistNeighborLoader(vd.connect(addresses, deadline=30), args.fanouts,
                                   batch_size=args.batch_size, shuffle=True, seed=0,
                                   num_workers=args.workers)
    iterator = iter(loader)
    next(iterator)  # connections and the first batch's prefetch
    started = time.perf_counter()
    for _ in range(args.batches):
        next(iterator)
    return args.batches / (time.perf_counter() - started)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dataset", required=True)
    parser.add_argument("--work", default="/tmp/volley-replica-bench")
    parser.add_argument("--cli", default=os.environ.get("VOLLEY_CLI", "volley"))
    parser.add_argument("--server-cpu", type=float, default=0.1, help="each server's core share")
    parser.add_argument("--batch-size", type=int, default=1024)
    parser.add_argument("--fanouts", type=lambda s: [int(k) for k in s.split(",")],
                        default=[15, 10])
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--batches", type=int, default=60)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    parts = os.path.join(args.work, "parts-2")
    if not os.path.exists(os.path.join(parts, "partition.json")):
        volley.partition(args.dataset, parts, 2, method="random", seed=0)
    servers = {}
    try:
        for part in (0, 1):
            for replica in "ab":
                servers[f"{part}{replica}"] = limited_server(
                    args.cli, parts, part, args.server_cpu, f"volley-replica-{part}{replica}")
        one = [servers["0a"][1], servers["1a"][1]]
        two = [f"{servers['0a'][1]}|{servers['0b'][1]}", f"{servers['1a'][1]}|{servers['1b'][1]}"]
        seen = {"1 replica": [], "2 replicas": []}
        for _ in range(args.rounds):
            seen["1 replica"].append(rate(one, args))
            seen["2 replicas"].append(rate(two, args))
        medians = {name: statistics.median(values) for name, values in seen.items()}
        print(json.dumps({"bench": "replica_throughput", "batches_per_s": medians,
                          "ratio": medians["2 replicas"] / medians["1 replica"],
                          "rounds": seen, "server_cpu": args.server_cpu,
                          "workers": args.workers, "batch_size": args.batch_size,
                          "fanouts": args.fanouts}), flush=True)
    finally:
        for process, _ in servers.values():
            process.kill()
            process.wait()
        for name in servers:
            try:
                os.rmdir(os.path.join(CGROUP, f"volley-replica-{name}"))
            except OSError:
                pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
