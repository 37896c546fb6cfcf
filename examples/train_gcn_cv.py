"""Control-variate training (VR-GCN) of a 2-layer GCN against plain neighbor sampling.

    .venv/bin/python examples/train_gcn_cv.py                 # products-shaped, 240,000 nodes
    .venv/bin/python examples/train_gcn_cv.py --servers 2     # histories on 2 servers too
    .venv/bin/python examples/train_gcn_cv.py --nodes 2400000 --edges 62000000   # products-sized

The graph is a generated ogbn-products-shaped one (``volley generate --model powerlaw``: a
power-law degree distribution, 100 noisy features, 47 classes that the graph carries in part).
The model is a 2-layer GCN, ``Â relu(Â X W0 + b0) W1 + b1``, trained twice:

* **plain neighbor sampling**, fanouts ``[10, 10]``: each layer's ``Â h`` is estimated from the
  sampled neighbors (``volley.ControlVariate.estimate`` without history: the unbiased estimate
  ``(d(v) / k(v)) Σ Â_vu h_u`` that the VR-GCN paper compares against);
* **control variates**, fanout ``[2]``, with the preprocessing trick: ``U = Â X`` is computed
  once over the whole graph (``volley.aggregate``), so the first layer needs no sampling; the
  second layer samples 2 neighbors per node and corrects the estimate with every node's stored
  history of hidden activations (a table of a ``volley.NodeStore``: local, or on the servers
  of a partitioning with ``--servers K``), pushed back after every batch.

Both are evaluated exactly, over full neighborhoods. The script prints each one's test accuracy
(model of the best validation epoch) and epoch time, and exits non-zero when the control
variate's accuracy is more than ``--max-gap`` points below plain sampling's.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time

import torch
import torch.nn.functional as F

import volley
from volley.loader import NeighborLoader

from train_hetero import volley_cli

try:
    from torch_geometric.data import Data
except Exception as error:  # the loader takes a PyG Data
    sys.exit(f"train_gcn_cv.py needs torch_geometric ({error})")


class GCN(torch.nn.Module):
    """Two GCN layers, each ``Â h W + b`` written as ``Linear(Â h)``; the aggregations are
    given to ``forward`` (exact, sampled, or control-variate)."""

    def __init__(self, features: int, hidden: int, classes: int, dropout: float = 0.5):
        super().__init__()
        self.lin0 = torch.nn.Linear(features, hidden)
        self.lin1 = torch.nn.Linear(hidden, classes)
        self.dropout = dropout

    def hidden(self, aggregated_x: torch.Tensor) -> torch.Tensor:
        x = F.dropout(aggregated_x, p=self.dropout, training=self.training)
        return F.relu(self.lin0(x))

    @torch.no_grad()
    def full(self, u: torch.Tensor, graph) -> torch.Tensor:
        """Every node's logits over full neighborhoods, from ``u = Â X``."""
        self.eval()
        return self.lin1(volley.aggregate(graph, self.hidden(u), "gcn"))


def step(model, optimizer, out: torch.Tensor, target: torch.Tensor) -> float:
    loss = F.cross_entropy(out, target)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    return float(loss)


def plain_epoch(model, optimizer, loader, cv, x, y) -> None:
    """Fanouts [k1, k2]: both layers estimated from the sampled neighbors."""
    model.train()
    for batch in loader:
        first = batch.num_sampled_nodes[0] + batch.num_sampled_nodes[1]
        h = model.hidden(cv.estimate(batch, x[batch.n_id], targets=first))
        out = model.lin1(cv.estimate(batch, h))
        step(model, optimizer, out, y[batch.n_id[:batch.batch_size]])


def cv_epoch(model, optimizer, loader, cv, u, y, history) -> None:
    """Fanout [k]: the first layer exact from U, the second with control variates.
    ``history`` = (pull(ids), push(ids, rows)) of the stored hidden activations."""
    pull, push = history
    model.train()
    for batch in loader:
        seeds = batch.n_id[:batch.batch_size]
        h = model.hidden(u[batch.n_id])
        full = cv.history_aggregate(pull, seeds)
        out = model.lin1(cv.estimate(batch, h, pull(batch.n_id), full))
        step(model, optimizer, out, y[seeds])
        push(batch.n_id, h.detach())


def train(name, model, run_epoch, args, evaluate) -> tuple:
    """Trains for args.epochs; returns (test accuracy of the best-val epoch, mean epoch s)."""
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)
    best_val, best_state, seconds = -1.0, None, []
    for epoch in range(1, args.epochs + 1):
        started = time.perf_counter()
        run_epoch(model, optimizer)
        seconds.append(time.perf_counter() - started)
        val = evaluate(model, "val")
        if val > best_val:
            best_val, best_state = val, {k: v.clone() for k, v in model.state_dict().items()}
        print(f"{name}  epoch {epoch:3d}  val acc {val:.4f}  {seconds[-1]:.2f} s", flush=True)
    model.load_state_dict(best_state)
    steady = seconds[1:] or seconds  # the first epoch warms allocators and caches
    return evaluate(model, "test"), sum(steady) / len(steady)


def store_history(args, dataset, scratch, hidden):
    """(pull, push, close) of a [num_nodes, hidden] history table: in a local NodeStore, or on
    the servers of a random --servers-way partitioning (served in this process; the servers
    speak partitioned ids, so ids go through the partition's node map)."""
    n = dataset.num_nodes
    if not args.servers:
        store = volley.NodeStore()
        store.init("h1", n, hidden)
        return (lambda ids: store.pull("h1", ids),
                lambda ids, rows: store.push("h1", ids, rows), lambda: None)
    from volley.dist import serve
    from volley.partition import load_node_map

    parts = os.path.join(scratch, "parts")
    volley.partition(dataset, parts, args.servers, method="random", seed=args.seed)
    servers = [serve(parts, p) for p in range(args.servers)]
    new_id = torch.as_tensor(load_node_map(parts))
    store = volley.NodeStore(servers=[server.address for server in servers])
    store.init("h1", n, hidden, exist_ok=True)

    def close():
        for server in servers:
            server.shutdown()

    return (lambda ids: store.pull("h1", new_id[ids]),
            lambda ids, rows: store.push("h1", new_id[ids], rows), close)


def parse() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", help="a dataset directory (default: generate one)")
    parser.add_argument("--nodes", type=int, default=240_000)
    parser.add_argument("--edges", type=int, default=6_200_000)
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--batch-size", type=int, default=1024)
    parser.add_argument("--hidden", type=int, default=128)
    parser.add_argument("--lr", type=float, default=0.01)
    parser.add_argument("--fanouts", type=int, nargs=2, default=[10, 10],
                        help="plain neighbor sampling's fanouts")
    parser.add_argument("--cv-fanout", type=int, default=2, help="the control variate's fanout")
    parser.add_argument("--workers", type=int, default=1, help="C++ sampling threads")
    parser.add_argument("--servers", type=int, default=0,
                        help="keep the histories on this many servers instead of locally")
    parser.add_argument("--max-gap", type=float, default=1.0,
                        help="exit non-zero when the control variate is this many accuracy "
                             "points below plain sampling")
    parser.add_argument("--seed", type=int, default=0)
    return parser.parse_args()


def main() -> int:
    args = parse()
    torch.manual_seed(args.seed)
    with tempfile.TemporaryDirectory() as scratch:
        directory = args.dataset or os.path.join(scratch, "products")
        if not args.dataset:
            started = time.perf_counter()
            subprocess.run([volley_cli(), "-q", "generate", directory, "--model", "powerlaw",
                            "--nodes", str(args.nodes), "--edges", str(args.edges),
                            "--feature-dim", "100", "--classes", "47", "--seed",
                            str(args.seed)], check=True)
            print(f"generated {directory} in {time.perf_counter() - started:.1f} s")
        dataset = volley.load_dataset(directory, mmap=False)
        x, y = dataset.x.float(), dataset.y
        data = Data(edge_index=dataset.graph.to_edge_index(), num_nodes=dataset.num_nodes)
        print(f"{dataset.num_nodes:,} nodes, {dataset.num_edges:,} edges, "
              f"{dataset.num_features} features, {dataset.num_classes} classes, "
              f"{len(dataset.train_idx):,} training nodes")
        started = time.perf_counter()
        u = volley.aggregate(dataset.graph, x, "gcn")  # the preprocessing pass U = Â X
        print(f"U = Â X over the whole graph in {time.perf_counter() - started:.2f} s")
        cv = volley.ControlVariate(dataset.graph, "gcn")
        splits = {"val": dataset.val_idx, "test": dataset.test_idx}

        def evaluate(model, split):
            prediction = model.full(u, dataset.graph).argmax(dim=1)
            return float((prediction[splits[split]] == y[splits[split]]).float().mean())

        def loader(fanouts):
            return NeighborLoader(data, num_neighbors=fanouts, batch_size=args.batch_size,
                                  input_nodes=dataset.train_idx, shuffle=True, transform=cv,
                                  num_workers=args.workers, seed=args.seed)

        shape = (dataset.num_features, args.hidden, dataset.num_classes)
        plain_loader = loader(args.fanouts)
        plain = train(f"plain {args.fanouts}", GCN(*shape), lambda m, o: plain_epoch(
            m, o, plain_loader, cv, x, y), args, evaluate)
        pull, push, close = store_history(args, dataset, scratch, args.hidden)
        try:
            cv_loader = loader([args.cv_fanout])
            torch.manual_seed(args.seed)
            variate = train(f"cv [{args.cv_fanout}]", GCN(*shape), lambda m, o: cv_epoch(
                m, o, cv_loader, cv, u, y, (pull, push)), args, evaluate)
        finally:
            close()
    where = f"{args.servers} servers" if args.servers else "a local NodeStore"
    gap = 100 * (plain[0] - variate[0])
    print(f"plain neighbor sampling {args.fanouts}: test acc {plain[0]:.4f}, "
          f"epoch {plain[1]:.2f} s")
    print(f"control variates [{args.cv_fanout}] (histories in {where}): test acc "
          f"{variate[0]:.4f}, epoch {variate[1]:.2f} s ({plain[1] / variate[1]:.1f}x faster), "
          f"{-gap:+.2f} accuracy points")
    if gap > args.max_gap:
        print(f"the control variate is {gap:.2f} points below plain sampling "
              f"(allowed: {args.max_gap})", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
