#!/usr/bin/env python3
"""Whole-graph aggregation: volley.aggregate against torch.sparse.mm on the same graph (the
adjacency as a CSR tensor whose values hold the op's coefficients, built once and not timed).

A seeded random graph (default 500,000 nodes, 10M edges drawn with uniform endpoints, duplicates
dropped, each row's sources sorted) and float32 rows of width 128; each figure is the best of 3 passes after a warm-up pass, both sides in one process,
at --threads threads (Volley and torch).

    PYTHONPATH=python .venv/bin/python bench/aggregate.py [--threads 1]
"""
import argparse
import time

import numpy as np
import torch

import volley

parser = argparse.ArgumentParser()
parser.add_argument("--threads", type=int, default=1)
parser.add_argument("--nodes", type=int, default=500_000)
parser.add_argument("--edges", type=int, default=10_000_000)
parser.add_argument("--dim", type=int, default=128)
args = parser.parse_args()
torch.set_num_threads(args.threads)
volley.set_num_threads(args.threads)

rng = np.random.default_rng(0)
edge_index = torch.from_numpy(rng.integers(0, args.nodes, (2, args.edges)))
# One matrix for both: duplicates dropped, each row's sources sorted (torch's CSR needs it).
adjacency = torch.sparse_coo_tensor(torch.stack([edge_index[1], edge_index[0]]),
                                    torch.ones(args.edges), (args.nodes, args.nodes)).coalesce()
target, source = adjacency.indices()
args.edges = len(target)
x = torch.from_numpy(rng.standard_normal((args.nodes, args.dim), dtype=np.float32))
graph = volley.Graph.from_edge_index(torch.stack([source, target]), args.nodes)
indptr = torch.from_numpy(volley._tensor.to_numpy(graph.indptr).astype(np.int64))
indices = torch.from_numpy(volley._tensor.to_numpy(graph.indices).astype(np.int64))
degree = (indptr[1:] - indptr[:-1]).float()


def coefficients(op: str) -> torch.Tensor:
    """The CSR values of the op's matrix (row = target, column = source)."""
    rows = torch.repeat_interleave(torch.arange(args.nodes), indptr[1:] - indptr[:-1])
    if op == "sum":
        return torch.ones(len(indices))
    if op == "mean":
        return 1.0 / degree.clamp(min=1)[rows]
    root = (degree + 1).rsqrt()  # gcn, self-loops folded into a diagonal term below
    return root[rows] * root[indices]


def best(run) -> float:
    run()
    times = []
    for _ in range(3):
        started = time.perf_counter()
        run()
        times.append(time.perf_counter() - started)
    return min(times)


print(f"{args.nodes:,} nodes, {args.edges:,} edges, rows of {args.dim} float32, "
      f"{args.threads} thread(s); seconds per pass (edges/s)")
print(f"{'op':6s} {'volley':>18s} {'torch.sparse.mm':>20s} {'torch/volley':>13s}")
for op in ("sum", "mean", "gcn"):
    matrix = torch.sparse_csr_tensor(indptr, indices, coefficients(op),
                                     (args.nodes, args.nodes))
    diagonal = 1.0 / (degree + 1) if op == "gcn" else None

    def with_torch():
        out = torch.sparse.mm(matrix, x)
        return out + diagonal[:, None] * x if diagonal is not None else out

    ours = best(lambda: volley.aggregate(graph, x, op))
    theirs = best(with_torch)
    assert torch.allclose(volley.aggregate(graph, x, op), with_torch(), atol=1e-4)
    print(f"{op:6s} {ours:8.3f} ({args.edges / ours / 1e6:5.1f}M) "
          f"{theirs:10.3f} ({args.edges / theirs / 1e6:5.1f}M) {theirs / ours:12.2f}x")
