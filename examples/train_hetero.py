"""Train a heterogeneous GraphSAGE (PyG's to_hetero) on a generated ogbn-mag-shaped graph.

    .venv/bin/python examples/train_hetero.py                    # ~20,000 papers, a few minutes
    .venv/bin/python examples/train_hetero.py --nodes 8000 --epochs 3   # quicker

The graph comes from ``volley generate --model hetero --reverse`` (papers, authors, institutions
and fields of study; writes, cites, affiliated_with, has_topic and their reverses), whose paper
labels are partly carried by the graph: a paper's authors and topics hint at its class. The only
Volley-specific line is the loader: ``volley.loader.NeighborLoader`` takes a ``HeteroData`` (or a
``volley.HeteroDataset``) and ``input_nodes=("paper", mask)`` as PyG's does, and yields
``HeteroData`` batches. A features-only MLP on the same split is trained and printed beside it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time

import torch
import torch.nn.functional as F

import volley
from volley.loader import NeighborLoader

from _common import training_parser

try:
    from torch_geometric.nn import SAGEConv, to_hetero
except Exception as error:  # the heterogeneous model needs PyG
    sys.exit(f"train_hetero.py needs torch_geometric ({error})")


def volley_cli() -> str:
    """The ``volley`` command: $VOLLEY_CLI, the one beside this Python, or the one on PATH."""
    for path in (os.environ.get("VOLLEY_CLI"), os.path.join(sys.prefix, "bin", "volley"),
                 shutil.which("volley")):
        if path and os.access(path, os.X_OK):
            return path
    sys.exit("no volley command found: install the wheel, or set VOLLEY_CLI to the built CLI")


def generate(directory: str, nodes: int, dim: int, classes: int, seed: int) -> None:
    command = [volley_cli(), "-q", "generate", directory, "--model", "hetero", "--reverse",
               "--nodes", str(nodes), "--feature-dim", str(dim), "--classes", str(classes),
               "--seed", str(seed)]
    subprocess.run(command, check=True)


class Sage(torch.nn.Module):
    """Two SAGE layers; ``to_hetero`` gives every edge type its own weights."""

    def __init__(self, hidden: int, out: int, dropout: float):
        super().__init__()
        self.conv1 = SAGEConv((-1, -1), hidden)
        self.conv2 = SAGEConv((-1, -1), out)
        self.dropout = torch.nn.Dropout(dropout)

    def forward(self, x, edge_index):
        x = F.relu(self.conv1(x, edge_index))
        return self.conv2(self.dropout(x), edge_index)


class HeteroSage(torch.nn.Module):
    """``to_hetero(Sage)`` over the papers' features and, for the types without features
    (authors, institutions, fields of study, as in ogbn-mag), ``inputs`` per node:
    ``"torch"`` a ``torch.nn.Embedding`` per type (dense rows, trained by the model's optimizer),
    ``"volley"`` a ``volley.nn.Embedding`` (rows in a ``volley.NodeStore``, trained by
    ``volley.optim.SparseAdam`` on the rows a batch used), ``"zeros"`` nothing to learn."""

    def __init__(self, data, hidden: int, out: int, inputs: str = "torch", store=None,
                 id_maps=None):
        super().__init__()
        featureless = {t: data[t].num_nodes for t in data.node_types if "x" not in data[t]}
        self.inputs, self.hidden = inputs, hidden
        # A store on the partition servers speaks partitioned (new) ids: id_maps[t][old] = new.
        self.id_maps = id_maps or {}
        if inputs == "torch":
            self.embeddings = torch.nn.ModuleDict(
                {t: torch.nn.Embedding(n, hidden) for t, n in featureless.items()})
        elif inputs == "volley":
            self.embeddings = volley.nn.Embedding(featureless, hidden, store=store)
        self.featureless = list(featureless)
        self.gnn = to_hetero(Sage(hidden, out, 0.5), data.metadata(), aggr="mean")

    def forward(self, batch):
        x = {t: batch[t].x for t in batch.node_types if t not in self.featureless}
        ids = {t: batch[t].n_id for t in self.featureless}
        if self.inputs == "volley":
            x.update(self.embeddings({t: self.id_maps[t][n_id] if t in self.id_maps else n_id
                                      for t, n_id in ids.items()}))
        else:
            x.update({t: self.embeddings[t](n_id) if self.inputs == "torch"
                      else torch.zeros(len(n_id), self.hidden) for t, n_id in ids.items()})
        return self.gnn(x, batch.edge_index_dict)

    def optimizers(self, lr: float, embedding_lr: float) -> list:
        """The model's Adam, and for volley's embeddings their sparse Adam (each row is updated
        only by the batches that sample it: a larger step suits it)."""
        optimizers = [torch.optim.Adam(self.parameters(), lr=lr, weight_decay=5e-4)]
        if self.inputs == "volley":
            optimizers.append(volley.optim.SparseAdam([self.embeddings], lr=embedding_lr))
        return optimizers


def run_epoch(model, loader, optimizers=()):
    """One pass over ``loader`` (training when ``optimizers`` are given); returns (loss,
    accuracy) over the papers the batches were built for."""
    model.train(bool(optimizers))
    total_loss, correct, count = 0.0, 0, 0
    for batch in loader:
        size = batch["paper"].batch_size
        with torch.set_grad_enabled(bool(optimizers)):
            out = model(batch)["paper"][:size]
            y = batch["paper"].y[:size]
            loss = F.cross_entropy(out, y)
        if optimizers:
            for optimizer in optimizers:
                optimizer.zero_grad()
            loss.backward()
            for optimizer in optimizers:
                optimizer.step()
        total_loss += float(loss) * size
        correct += int((out.argmax(dim=1) == y).sum())
        count += size
    return total_loss / max(count, 1), correct / max(count, 1)


def train_mlp(data, epochs: int, hidden: int, lr: float) -> float:
    """A features-only baseline on the same split: test accuracy of a 2-layer MLP."""
    paper = data["paper"]
    mlp = torch.nn.Sequential(torch.nn.Linear(paper.x.shape[1], hidden), torch.nn.ReLU(),
                              torch.nn.Dropout(0.5), torch.nn.Linear(hidden, int(paper.y.max()) + 1))
    optimizer = torch.optim.Adam(mlp.parameters(), lr=lr)
    train = paper.train_mask
    for _ in range(epochs * 20):
        mlp.train()
        optimizer.zero_grad()
        F.cross_entropy(mlp(paper.x[train]), paper.y[train]).backward()
        optimizer.step()
    mlp.eval()
    with torch.no_grad():
        prediction = mlp(paper.x[paper.test_mask]).argmax(dim=1)
    return float((prediction == paper.y[paper.test_mask]).float().mean())


def load_graph(args, keep_dataset: bool = False):
    """The HeteroData of --dataset, or of a generated mag-shaped graph of --nodes papers (and
    the volley.HeteroDataset with ``keep_dataset``)."""
    with tempfile.TemporaryDirectory() as scratch:
        directory = args.dataset or os.path.join(scratch, "mag")
        if args.dataset is None:
            started = time.perf_counter()
            generate(directory, args.nodes, 64, 8, args.seed)
            print(f"generated {directory} in {time.perf_counter() - started:.1f} s")
        dataset = volley.load_dataset(directory, mmap=False)
        data = dataset.to_pyg()
    counts = ", ".join(f"{t} {n:,}" for t, n in dataset.graph.num_nodes_dict.items())
    edges = sum(dataset.graph.num_edges_dict.values())
    print(f"{dataset.name}: {counts}; {edges:,} edges of {len(data.edge_types)} types")
    return (data, dataset) if keep_dataset else data


def train_gnn(data, args, inputs: str = "torch", store=None, id_maps=None) -> float:
    """Trains HeteroSage(inputs, store, id_maps) on the papers' split; prints each epoch; the
    test accuracy."""
    torch.manual_seed(args.seed)

    def loader(mask, shuffle):
        return NeighborLoader(data, num_neighbors=args.fanouts, batch_size=args.batch_size,
                              input_nodes=("paper", mask), shuffle=shuffle,
                              num_workers=args.workers, seed=args.seed)

    train_loader = loader(data["paper"].train_mask, True)
    val_loader, test_loader = loader(data["paper"].val_mask, False), loader(data["paper"].test_mask, False)
    model = HeteroSage(data, args.hidden, int(data["paper"].y.max()) + 1, inputs, store, id_maps)
    with torch.no_grad():  # lazy layers: one batch fixes their input sizes
        model(next(iter(train_loader)))
    optimizers = model.optimizers(args.lr, args.embedding_lr)
    for epoch in range(1, args.epochs + 1):
        started = time.perf_counter()
        loss, train_accuracy = run_epoch(model, train_loader, optimizers)
        _, val_accuracy = run_epoch(model, val_loader)
        print(f"{inputs:6s} epoch {epoch:3d}  loss {loss:.4f}  train {train_accuracy:.3f}  "
              f"val {val_accuracy:.3f}  ({time.perf_counter() - started:.1f} s)", flush=True)
    return run_epoch(model, test_loader)[1]


def hetero_parser():
    parser = training_parser(__doc__.splitlines()[0], epochs=6, batch_size=256, fanouts=[10, 5],
                             hidden=64, lr=0.005, workers=2, workers_help="sampling threads")
    parser.add_argument("--nodes", type=int, default=20000, help="papers of the generated graph")
    parser.add_argument("--dataset", help="a heterogeneous dataset directory (default: generate)")
    parser.add_argument("--embedding-lr", type=float, default=0.05,
                        help="SparseAdam's step for volley.nn.Embedding rows")
    return parser


def main() -> int:
    parser = hetero_parser()
    parser.add_argument("--min-gain", type=float, default=None,
                        help="exit non-zero unless the GNN's test accuracy beats the MLP's by this")
    args = parser.parse_args()
    data = load_graph(args)
    test_accuracy = train_gnn(data, args)
    mlp_accuracy = train_mlp(data, args.epochs, args.hidden, 0.01)
    print(f"test accuracy: heterogeneous GraphSAGE {test_accuracy:.3f}, features-only MLP "
          f"{mlp_accuracy:.3f} ({100 * (test_accuracy - mlp_accuracy):+.1f} points)")
    if args.min_gain is not None and test_accuracy < mlp_accuracy + args.min_gain:
        print(f"below the required gain of {args.min_gain}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
