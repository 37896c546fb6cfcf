#!/usr/bin/env python3
"""CUDA IPC on a real GPU: two processes on one GPU share one placed graph.

The sender places a generated graph on cuda:0 (GPU mode, then UVA mode), samples a batch and
pickles the sampler; a receiver process unpickles it and samples the same batch. Checked:

  * the receiver's batch equals the sender's, and both equal the CPU sampler's;
  * the device's free memory (cudaMemGetInfo, through torch) drops by less than a quarter of the
    placed graph's device bytes while the receiver opens and samples: no second copy on the
    device (CUDA IPC maps the sender's memory);
  * a receiver started after the sender exits fails with VolleyOSError naming the handle.

Prints one JSON line per case; exits 1 on the first failed check.

    python bench/gpu_ipc.py                  # 2M nodes, 40M edges (about 0.33 GB of indices)
    python bench/gpu_ipc.py --smoke          # a small graph (checks the script; emulated too)
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import pickle
import subprocess
import sys
import tempfile

import numpy as np

import volley

SEEDS = np.arange(0, 200000, 97, dtype=np.int64)
TIMEOUT = 300


def _digest(sampler: volley.NeighborSampler) -> str:
    sub = sampler.sample_subgraph(SEEDS % sampler.graph.num_nodes, batch_index=5)
    digest = hashlib.sha256()
    for array in (sub.n_id, sub.row, sub.col, sub.e_id):
        digest.update(np.ascontiguousarray(volley._tensor.to_numpy(array)).tobytes())
    return digest.hexdigest()


def _free_bytes() -> int:
    import torch

    if not torch.cuda.is_available():
        return 0  # the emulated device (--smoke): nothing to measure
    torch.cuda.synchronize(0)
    return int(torch.cuda.mem_get_info(0)[0])


def receive(path: str) -> None:
    """Opens the pickled sampler of `path`; prints its digest and the free-memory drop."""
    import torch

    if torch.cuda.is_available():
        torch.zeros(1, device="cuda:0")  # the CUDA context first: not counted as the graph
    before = _free_bytes()
    with open(path, "rb") as payload:
        sampler = pickle.load(payload)
    digest = _digest(sampler)
    print(digest, before - _free_bytes(), flush=True)


def _receive(path: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, os.path.abspath(__file__), "--receive", path],
                          capture_output=True, text=True, timeout=TIMEOUT)


def check(mode: str, graph: volley.Graph, directory: str) -> bool:
    cpu = _digest(volley.NeighborSampler(graph, [15, 10], seed=3))
    sampler = volley.NeighborSampler(graph, [15, 10], device="cuda:0", mode=mode, seed=3)
    sender = _digest(sampler)
    path = os.path.join(directory, f"sampler-{mode}.pkl")
    with open(path, "wb") as out:
        pickle.dump(sampler, out)
    placed_bytes = sampler._placed.device_bytes
    result = _receive(path)
    fields = result.stdout.split()
    ok = result.returncode == 0 and len(fields) == 2
    grown = int(fields[1]) if ok else -1
    report = dict(case=f"ipc-{mode}", placed_device_bytes=placed_bytes, receiver_growth=grown,
                  same_as_sender=ok and fields[0] == sender, same_as_cpu=sender == cpu)
    ok = ok and fields[0] == sender == cpu and grown < max(placed_bytes // 4, 64 << 20)
    print(json.dumps(dict(report, ok=ok)), flush=True)
    if not ok:
        print(result.stderr[-3000:], file=sys.stderr)
    return ok


def stale(directory: str) -> bool:
    """A placed graph's handle whose sender exited: VolleyOSError naming it."""
    path = os.path.join(directory, "stale.pkl")
    code = ("import pickle, sys, volley, numpy as np\n"
            "g = volley.Graph.from_edge_index(np.array([[0, 1], [1, 0]]), num_nodes=2)\n"
            "s = volley.NeighborSampler(g, [2], device='cuda:0', mode='GPU')\n"
            f"open({path!r}, 'wb').write(pickle.dumps(s._placed))\n")  # the placed graph alone
    subprocess.run([sys.executable, "-c", code], check=True, timeout=TIMEOUT)
    result = _receive(path)
    ok = result.returncode != 0 and "VolleyOSError" in result.stderr and "'ipc:cuda:0:" in result.stderr
    print(json.dumps(dict(case="stale-handle", ok=ok)), flush=True)
    return ok


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--smoke", action="store_true", help="a small graph")
    parser.add_argument("--receive", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.receive:
        receive(args.receive)
        return 0
    nodes, edges = (5000, 50000) if args.smoke else (2_000_000, 40_000_000)
    rng = np.random.default_rng(7)
    graph = volley.Graph.from_edge_index(rng.integers(0, nodes, size=(2, edges)), num_nodes=nodes)
    with tempfile.TemporaryDirectory() as directory:
        results = [check("GPU", graph, directory), check("UVA", graph, directory),
                   stale(directory)]
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
