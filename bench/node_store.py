#!/usr/bin/env python3
"""Writable node state against torch: rows per second of push (add) and of sparse optimizer
steps, volley.NodeStore / volley.nn.Embedding + volley.optim versus torch.nn.Embedding
(sparse=True) + torch.optim.SparseAdam / Adagrad on the same rows, 1 thread (and all threads).

A seeded table of 1M rows × 128 float32; batches of 10,000 ids drawn uniformly (with repeats,
as a batch of sampled nodes has them) and float32 gradients. Each figure is the best of 5
rounds of 10 batches, after one warm-up round; both sides in this process, interleaved.

    PYTHONPATH=python .venv/bin/python bench/node_store.py [--threads 1]
"""
import argparse
import time

import numpy as np
import torch

import volley

parser = argparse.ArgumentParser()
parser.add_argument("--threads", type=int, default=1)
parser.add_argument("--rows", type=int, default=1_000_000)
parser.add_argument("--dim", type=int, default=128)
parser.add_argument("--batch", type=int, default=10_000)
args = parser.parse_args()
torch.set_num_threads(args.threads)
volley.set_num_threads(args.threads)

rng = np.random.default_rng(0)
batches = [(torch.from_numpy(rng.integers(0, args.rows, args.batch)),
            torch.from_numpy(rng.standard_normal((args.batch, args.dim), dtype=np.float32)))
           for _ in range(10)]
weight = torch.from_numpy(rng.standard_normal((args.rows, args.dim), dtype=np.float32))

store = volley.NodeStore()
emb = volley.nn.Embedding(args.rows, args.dim, store=store)
store.push("embedding", np.arange(args.rows), weight)
reference = torch.nn.Embedding.from_pretrained(weight.clone(), freeze=False, sparse=True)


def best_rate(run) -> float:
    """Rows per second of run() over the ten batches: the best of 5 rounds after a warm-up."""
    run()
    best = float("inf")
    for _ in range(5):
        start = time.perf_counter()
        run()
        best = min(best, time.perf_counter() - start)
    return len(batches) * args.batch / best


def volley_push():
    for ids, values in batches:
        store.push("embedding", ids, values, op="add")


def torch_push():
    for ids, values in batches:
        reference.weight.data.index_add_(0, ids, values)


def volley_steps(kind):
    def run():
        for ids, grads in batches:
            store.step("embedding", ids, grads, optimizer=kind, lr=0.01,
                       eps=1e-8 if kind == "adam" else 1e-10)
    return run


def torch_steps(optimizer):
    def run():
        for ids, grads in batches:
            reference.weight.grad = torch.sparse_coo_tensor(ids[None], grads, weight.shape)
            optimizer.step()
    return run


def volley_train(optimizer):
    def run():
        for ids, grads in batches:
            optimizer.zero_grad()
            (emb(ids) * grads).sum().backward()
            optimizer.step()
    return run


def torch_train(optimizer):
    def run():
        for ids, grads in batches:
            optimizer.zero_grad()
            (reference(ids) * grads).sum().backward()
            optimizer.step()
    return run


rows = [
    ("push (add)", best_rate(volley_push), best_rate(torch_push)),
    ("step, Adagrad", best_rate(volley_steps("adagrad")),
     best_rate(torch_steps(torch.optim.Adagrad(reference.parameters(), lr=0.01)))),
    ("step, Adam", best_rate(volley_steps("adam")),
     best_rate(torch_steps(torch.optim.SparseAdam(reference.parameters(), lr=0.01)))),
    ("pull+backward+step, Adam", best_rate(volley_train(volley.optim.SparseAdam([emb], 0.01))),
     best_rate(torch_train(torch.optim.SparseAdam(reference.parameters(), lr=0.01)))),
]
print(f"{args.rows:,} rows × {args.dim} float32, batches of {args.batch:,} ids, "
      f"{args.threads} thread(s); rows/s")
print(f"{'':26s} {'volley':>12s} {'torch':>12s} {'volley/torch':>13s}")
for name, ours, theirs in rows:
    print(f"{name:26s} {ours:12,.0f} {theirs:12,.0f} {ours / theirs:12.2f}x")
