#!/usr/bin/env python3
"""Replicas across hosts: 3 partitions × 2 replicas, each server in a network namespace of its
own, a trainer in another; one replica cut off or killed mid-epoch, or every replica of a part.

    sudo PYTHONPATH=python .venv/bin/python bench/netns_replicas.py --trials 5 [--deadline 2]

Namespaces (Linux, root; iproute2): the trainer ``volley-rt`` and a server namespace
``volley-r<p><k>`` for replica k of part p, each joined to the trainer by a veth link
(10.78.<3p+k>.0/24). The trainer samples every part over RPC (``DistNeighborLoader`` over
``DistGraph(["a|b", "c|d", "e|f"])``: Cora in 3 random parts, fanouts [10, 10], batch 64,
shuffled, 2 batches in flight) and prints a digest of every batch of one epoch.

Cases, each against a run without faults (the reference digests):

* ``link-down`` / ``kill`` of replica 0 of part 1 after the first batches: the epoch must finish
  with the reference batches (none lost or repeated); reported: the longest wait for a batch
  after the fault (a partition costs the deadline once; a killed server, a failed connection).
* ``all-down``: both replicas of part 1 cut off: the trainer must raise VolleyTimeoutError /
  VolleyConnectionError within the deadline + 1 s of the fault (the second replica is tried
  only after the first one's deadline, so the bound is 2 × deadline + 1 s; reported as such).

Exits 1 when a trial breaks its promise. The quick test (python/tests/test_dist_netns.py) runs
one trial of the replica cases.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from typing import List, Optional, Tuple

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "bench"))
from netns_fault import netns_permitted, sh  # noqa: E402

PARTS, REPLICAS, PORT = 3, 2, 5000
NS_T = "volley-rt"


def ns_of(part: int, replica: int) -> str:
    return f"volley-r{part}{replica}"


def link_of(part: int, replica: int) -> Tuple[str, str, str]:
    """(trainer's interface, trainer's address, server's address) of a server's link."""
    subnet = REPLICAS * part + replica
    return f"rt{subnet}", f"10.78.{subnet}.1", f"10.78.{subnet}.2"


# The trainer: one epoch; "ready" after 3 batches, then a line per batch "<monotonic time>
# <digest>", "done" at the end, or "error <monotonic time> <class name>" on the first error.
TRAINER = r"""
import hashlib, sys, time
import numpy as np
import volley, volley.dist as vd
directory, deadline, addresses = sys.argv[1], float(sys.argv[2]), sys.argv[3].split(",")
try:
    graph = vd.DistGraph(addresses, deadline=deadline, connect_timeout=20)
    loader = vd.DistNeighborLoader(graph, [10, 10], batch_size=64, shuffle=True, seed=1,
                                   num_workers=2)
    for i, batch in enumerate(loader):
        digest = hashlib.sha1(np.asarray(batch.n_id).tobytes()  # (torch or numpy batches)
                              + np.asarray(batch.edge_index).tobytes())
        print(time.monotonic(), digest.hexdigest()[:16], flush=True)
        if i == 2:
            print("ready", flush=True)
    print("done", flush=True)
except (volley.VolleyTimeoutError, volley.VolleyConnectionError) as error:
    print("error", time.monotonic(), type(error).__name__, flush=True)
    print(str(error)[:300], file=sys.stderr, flush=True)
except Exception as error:
    print("error", time.monotonic(), "UNEXPECTED:" + type(error).__name__, flush=True)
    print(str(error)[:300], file=sys.stderr, flush=True)
"""


def teardown() -> None:
    for ns in [NS_T] + [ns_of(p, k) for p in range(PARTS) for k in range(REPLICAS)]:
        sh("ip", "netns", "del", ns, check=False)


def setup() -> None:
    teardown()
    sh("ip", "netns", "add", NS_T)
    sh("ip", "-n", NS_T, "link", "set", "lo", "up")
    for p in range(PARTS):
        for k in range(REPLICAS):
            ns, (mine, my_ip, their_ip) = ns_of(p, k), link_of(p, k)
            sh("ip", "netns", "add", ns)
            sh("ip", "-n", ns, "link", "set", "lo", "up")
            sh("ip", "link", "add", mine, "netns", NS_T, "type", "veth", "peer", "name", "rs",
               "netns", ns)
            sh("ip", "-n", NS_T, "addr", "add", f"{my_ip}/24", "dev", mine)
            sh("ip", "-n", ns, "addr", "add", f"{their_ip}/24", "dev", "rs")
            sh("ip", "-n", NS_T, "link", "set", mine, "up")
            sh("ip", "-n", ns, "link", "set", "rs", "up")


def start_servers(cli: str, directory: str) -> List[subprocess.Popen]:
    servers = []
    for p in range(PARTS):
        for k in range(REPLICAS):
            process = subprocess.Popen(
                ["ip", "netns", "exec", ns_of(p, k), cli, "serve", directory, "--part", str(p),
                 "--listen", f"0.0.0.0:{PORT}"],
                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                env=dict(os.environ, VOLLEY_PROGRESS="0"))
            if "listening on" not in process.stdout.readline():
                raise RuntimeError(f"server of part {p}, replica {k} did not start")
            servers.append(process)
    return servers


def run(cli: str, directory: str, fault: Optional[str], deadline: float) -> dict:
    """One epoch with `fault` (None, "link-down", "kill", "all-down") after 3 batches."""
    setup()
    servers = start_servers(cli, directory)
    addresses = ",".join("|".join(f"{link_of(p, k)[2]}:{PORT}" for k in range(REPLICAS))
                         for p in range(PARTS))
    trainer = subprocess.Popen(
        ["ip", "netns", "exec", NS_T, sys.executable, "-c", TRAINER, directory, str(deadline),
         addresses], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env=dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python")))
    stamps, digests, fault_time, outcome = [], [], None, "hung"
    try:
        for line in trainer.stdout:
            words = line.split()
            if words == ["ready"] and fault:
                fault_time = time.monotonic()
                victims = [(1, 0)] if fault != "all-down" else [(1, 0), (1, 1)]
                for p, k in victims:
                    if fault == "kill":
                        servers[REPLICAS * p + k].kill()
                    else:
                        sh("ip", "-n", NS_T, "link", "set", link_of(p, k)[0], "down")
            elif words == ["done"]:
                outcome = "done"
                break
            elif words and words[0] == "error":
                outcome = words[2]
                stamps.append(float(words[1]))
                break
            elif len(words) == 2:
                stamps.append(float(words[0]))
                digests.append(words[1])
    finally:
        for process in [trainer, *servers]:
            process.kill()
            process.wait()
        teardown()
    after = [t for t in stamps if fault_time is not None and t >= fault_time]
    gaps = [b - a for a, b in zip([fault_time] + after, after)] if after else [float("inf")]
    return dict(outcome=outcome, digests=digests, longest_wait=max(gaps))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--trials", type=int, default=5)
    parser.add_argument("--deadline", type=float, default=2.0)
    parser.add_argument("--cli", default=os.environ.get(
        "VOLLEY_CLI", os.path.join(ROOT, "build/dev/tools/volley/volley")))
    parser.add_argument("--faults", default="link-down,kill,all-down")
    arguments = parser.parse_args()
    why_not = netns_permitted()
    if why_not:
        print(f"netns_replicas: cannot run here: {why_not}")
        return 2
    with tempfile.TemporaryDirectory(prefix="volley-netns-") as tmp:
        directory = os.path.join(tmp, "cora-3")
        sh(arguments.cli, "partition", os.path.join(ROOT, "data/cora"), directory, "--parts",
           str(PARTS), "--method", "random")
        reference = run(arguments.cli, directory, None, arguments.deadline)
        assert reference["outcome"] == "done", reference["outcome"]
        print(f"reference epoch: {len(reference['digests'])} batches", flush=True)
        broken = 0
        for fault in arguments.faults.split(","):
            waits = []
            for trial in range(arguments.trials):
                result = run(arguments.cli, directory, fault, arguments.deadline)
                if fault == "all-down":
                    bound = 2 * arguments.deadline + 1
                    ok = result["outcome"] in ("VolleyTimeoutError", "VolleyConnectionError")
                else:
                    bound = arguments.deadline + 1
                    ok = result["outcome"] == "done" and result["digests"] == reference["digests"]
                ok = ok and result["longest_wait"] <= bound
                broken += not ok
                waits.append(result["longest_wait"])
                print(f"{fault} trial {trial}: {result['outcome']}, "
                      f"{len(result['digests'])} batches, longest wait {result['longest_wait']:.2f} s"
                      + ("" if ok else "  <-- broken"), flush=True)
            print(f"  {fault}: median longest wait {statistics.median(waits):.2f} s, "
                  f"max {max(waits):.2f} s", flush=True)
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main())
