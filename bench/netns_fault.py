"""Multi-host fault test of the distributed service: servers and a trainer in separate network
namespaces joined by veth links, a fault injected mid-epoch, the time until the trainer raises.

    sudo PYTHONPATH=python .venv/bin/python bench/netns_fault.py --trials 20 [--deadline 2]

Namespaces (Linux, root; `ip netns`, `ip link` from iproute2):

    volley-t  (trainer)  --veth 10.77.0.0/24--  volley-s0 (part 0)
                         --veth 10.77.1.0/24--  volley-s1 (part 1)
    volley-s0  --veth 10.77.2.0/24--  volley-s1          (server-client peers)

Topologies: "worker" (the trainer holds part 0 in-process and calls part 1's server) and
"server-client" (the trainer streams epochs from part 0's server, which calls part 1's).
Faults: "link-down" takes the trainer's link to the server it calls (part 1 in worker mode,
part 0 in server-client mode) down with `ip link set ... down` — a true partition: no reset,
packets vanish — and "kill" SIGKILLs that server in its namespace. The promise checked: the
trainer raises VolleyTimeoutError / VolleyConnectionError within the deadline plus 1 s of the
fault. Prints one line per trial and a summary (max and median time to error) per case; exits 1
if any trial broke the promise. The quick test (python/tests/test_dist_netns.py) runs one
trial of each case.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Dict, List, Optional

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NS_T, NS_S0, NS_S1 = "volley-t", "volley-s0", "volley-s1"
# (namespace a, interface in a, address in a, namespace b, interface in b, address in b)
LINKS = [
    (NS_T, "vt0", "10.77.0.1", NS_S0, "vs0t", "10.77.0.2"),
    (NS_T, "vt1", "10.77.1.1", NS_S1, "vs1t", "10.77.1.2"),
    (NS_S0, "vs0p", "10.77.2.1", NS_S1, "vs1p", "10.77.2.2"),
]
PORT = 5000

# The trainer: loads batches forever; prints "ready" after the first ones, then on the first
# error "error <monotonic time> <class name>" and exits.
TRAINER = r"""
import sys, time
import numpy as np
import volley, volley.dist as vd
directory, topology, deadline = sys.argv[1], sys.argv[2], float(sys.argv[3])
try:
    if topology == "worker":
        graph = vd.DistGraph(["", "10.77.1.2:%d"], deadline=deadline, connect_timeout=20,
                             local=(directory, 0))
        loader = vd.DistNeighborLoader(graph, [10, 10], batch_size=64, shuffle=True,
                                       num_workers=2)
    else:
        loader = vd.DistNeighborLoader(["10.77.0.2:%d"], [10, 10], batch_size=64,
                                       shuffle=True, topology="server-client",
                                       server="10.77.0.2:%d", deadline=deadline,
                                       connect_timeout=20, num_workers=2)
    announced = False
    while True:
        for i, batch in enumerate(loader):
            if not announced and i >= 2:
                print("ready", flush=True)
                announced = True
except (volley.VolleyTimeoutError, volley.VolleyConnectionError) as error:
    print("error", time.monotonic(), type(error).__name__, flush=True)
    print(str(error)[:300], file=sys.stderr, flush=True)
except Exception as error:
    print("error", time.monotonic(), "UNEXPECTED:" + type(error).__name__, flush=True)
    print(str(error)[:300], file=sys.stderr, flush=True)
""" % (PORT, PORT, PORT)


def sh(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(list(args), check=check, capture_output=True, text=True)


def teardown() -> None:
    for ns in (NS_T, NS_S0, NS_S1):
        sh("ip", "netns", "del", ns, check=False)


def setup() -> None:
    teardown()
    for ns in (NS_T, NS_S0, NS_S1):
        sh("ip", "netns", "add", ns)
        sh("ip", "-n", ns, "link", "set", "lo", "up")
    for ns_a, if_a, ip_a, ns_b, if_b, ip_b in LINKS:
        sh("ip", "link", "add", if_a, "netns", ns_a, "type", "veth", "peer", "name", if_b,
           "netns", ns_b)
        sh("ip", "-n", ns_a, "addr", "add", f"{ip_a}/24", "dev", if_a)
        sh("ip", "-n", ns_b, "addr", "add", f"{ip_b}/24", "dev", if_b)
        sh("ip", "-n", ns_a, "link", "set", if_a, "up")
        sh("ip", "-n", ns_b, "link", "set", if_b, "up")


def netns_permitted() -> Optional[str]:
    """None when namespaces and veth links can be made here, else why not."""
    if os.geteuid() != 0:
        return "needs root (ip netns)"
    probe = "volley-probe"
    made = sh("ip", "netns", "add", probe, check=False)
    if made.returncode != 0:
        return "ip netns add failed: " + made.stderr.strip()
    try:
        veth = sh("ip", "-n", probe, "link", "add", "vp0", "type", "veth", "peer", "name", "vp1",
                  check=False)
        if veth.returncode != 0:
            return "veth links not permitted: " + veth.stderr.strip()
    finally:
        sh("ip", "netns", "del", probe, check=False)
    return None


def start_server(cli: str, directory: str, part: int, peers: bool) -> subprocess.Popen:
    ns = NS_S0 if part == 0 else NS_S1
    args = ["ip", "netns", "exec", ns, cli, "serve", directory, "--part", str(part),
            "--listen", f"0.0.0.0:{PORT}", "--deadline", "2"]
    if peers:
        args += ["--peers", "," + f"10.77.2.2:{PORT}" if part == 0 else f"10.77.2.1:{PORT},"]
    process = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                               text=True, env=dict(os.environ, VOLLEY_PROGRESS="0"))
    line = process.stdout.readline()
    if "listening on" not in line:
        raise RuntimeError(f"server {part} did not start: {line!r}")
    return process


def one_trial(cli: str, directory: str, topology: str, fault: str, deadline: float) -> float:
    """Seconds from the fault to the trainer's error (inf: none within deadline + 10 s)."""
    setup()
    servers = [start_server(cli, directory, p, topology == "server-client") for p in (0, 1)]
    trainer = subprocess.Popen(
        ["ip", "netns", "exec", NS_T, sys.executable, "-c", TRAINER, directory, topology,
         str(deadline)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env=dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python")))
    try:
        line = trainer.stdout.readline()
        if line.strip() != "ready":
            raise RuntimeError(f"trainer did not start: {line!r} {trainer.stderr.read()[:2000]}")
        target = 1 if topology == "worker" else 0  # the server the trainer calls
        fault_time = time.monotonic()
        if fault == "link-down":
            sh("ip", "-n", NS_T, "link", "set", f"vt{target}", "down")
        else:
            servers[target].kill()
        line = trainer.stdout.readline()  # blocks until the trainer's error line
        parts = line.split()
        if len(parts) < 3 or parts[0] != "error" or parts[2].startswith("UNEXPECTED"):
            print(f"  unexpected trainer output: {line!r} {trainer.stderr.read()[:500]}")
            return float("inf")
        return float(parts[1]) - fault_time
    finally:
        for process in [trainer, *servers]:
            process.kill()
            process.wait()
        teardown()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--trials", type=int, default=20)
    parser.add_argument("--deadline", type=float, default=2.0)
    parser.add_argument("--cli", default=os.environ.get(
        "VOLLEY_CLI", os.path.join(ROOT, "build/dev/tools/volley/volley")))
    parser.add_argument("--topologies", default="worker,server-client")
    parser.add_argument("--faults", default="link-down,kill")
    arguments = parser.parse_args()
    why_not = netns_permitted()
    if why_not:
        print(f"netns_fault: cannot run here: {why_not}")
        return 2
    sys.path.insert(0, os.path.join(ROOT, "python"))
    import volley  # noqa: F401  (fails early when the module is not built)

    with tempfile.TemporaryDirectory(prefix="volley-netns-") as tmp:
        directory = os.path.join(tmp, "cora-2")
        sh(arguments.cli, "partition", os.path.join(ROOT, "data/cora"), directory, "--parts", "2",
           "--method", "random")
        results: Dict[str, List[float]] = {}
        broken = 0
        for topology in arguments.topologies.split(","):
            for fault in arguments.faults.split(","):
                case = f"{topology} / {fault}"
                times = results.setdefault(case, [])
                for trial in range(arguments.trials):
                    seconds = one_trial(arguments.cli, directory, topology, fault,
                                        arguments.deadline)
                    times.append(seconds)
                    ok = seconds <= arguments.deadline + 1.0
                    broken += not ok
                    print(f"{case} trial {trial}: error after {seconds:.2f} s"
                          + ("" if ok else "  <-- over deadline + 1 s"), flush=True)
        print(f"\nsummary (deadline {arguments.deadline} s, promise: error within deadline + 1 s)")
        for case, times in results.items():
            print(f"  {case:28s} trials {len(times):3d}  median {statistics.median(times):.2f} s"
                  f"  max {max(times):.2f} s")
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main())
