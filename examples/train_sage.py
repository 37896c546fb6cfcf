"""Train a 2-layer GraphSAGE on the bundled Cora with Volley's NeighborLoader.

    scripts/dev.sh main                 # or: .venv/bin/python examples/train_sage.py --epochs 30

The only Volley-specific line is the loader: ``volley.loader.NeighborLoader`` takes the arguments
of ``torch_geometric.loader.NeighborLoader``. Uses PyG's ``SAGEConv`` when PyG is importable, else a
plain-torch mean-aggregation layer. Evaluation runs the model on the full graph (Cora is small).
"""

from __future__ import annotations

import argparse
import sys
import time

import torch
import torch.nn.functional as F

import volley
from volley.loader import NeighborLoader

try:
    from torch_geometric.nn import SAGEConv
except Exception:  # PyG absent: fall back to a plain-torch layer
    SAGEConv = None

try:
    from tqdm import tqdm
except Exception:
    tqdm = None


class MeanSAGEConv(torch.nn.Module):
    """GraphSAGE with mean aggregation in plain torch: W1·x_i + W2·mean_{j→i} x_j."""

    def __init__(self, in_channels: int, out_channels: int):
        super().__init__()
        self.lin_self = torch.nn.Linear(in_channels, out_channels)
        self.lin_neighbors = torch.nn.Linear(in_channels, out_channels, bias=False)

    def forward(self, x: torch.Tensor, edge_index: torch.Tensor) -> torch.Tensor:
        source, target = edge_index
        summed = torch.zeros_like(x).index_add_(0, target, x[source])
        count = torch.zeros(x.size(0), dtype=x.dtype, device=x.device).index_add_(
            0, target, torch.ones_like(target, dtype=x.dtype)
        )
        mean = summed / count.clamp(min=1).unsqueeze(1)
        return self.lin_self(x) + self.lin_neighbors(mean)


class GraphSAGE(torch.nn.Module):
    def __init__(self, in_channels: int, hidden: int, out_channels: int, dropout: float = 0.5):
        super().__init__()
        layer = SAGEConv if SAGEConv is not None else MeanSAGEConv
        self.conv1 = layer(in_channels, hidden)
        self.conv2 = layer(hidden, out_channels)
        self.dropout = dropout

    def forward(self, x: torch.Tensor, edge_index: torch.Tensor) -> torch.Tensor:
        x = F.dropout(x, p=self.dropout, training=self.training)
        x = F.relu(self.conv1(x, edge_index))
        x = F.dropout(x, p=self.dropout, training=self.training)
        return self.conv2(x, edge_index)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=20)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--fanouts", type=int, nargs="+", default=[10, 10])
    parser.add_argument("--hidden", type=int, default=64)
    parser.add_argument("--lr", type=float, default=0.01)
    parser.add_argument("--workers", type=int, default=2, help="C++ sampling threads")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--dataset", default="cora", help="cora, citeseer, or a dataset directory")
    parser.add_argument("--min-test-accuracy", type=float, default=0.75,
                        help="exit non-zero when the final test accuracy is below this")
    args = parser.parse_args()

    torch.manual_seed(args.seed)
    if args.dataset in ("cora", "citeseer"):
        dataset = getattr(volley.datasets, args.dataset)()
    else:
        dataset = volley.load_dataset(args.dataset)
    x = dataset.x.float()  # bag-of-words stored as uint8; the loader converts on gather too
    y = dataset.y
    edge_index = dataset.graph.to_edge_index()  # [sources; targets], for full-graph evaluation
    print(f"{dataset.name}: {dataset.num_nodes:,} nodes, {dataset.num_edges:,} edges, "
          f"{dataset.num_features:,} features, {dataset.num_classes} classes; "
          f"layer: {'PyG SAGEConv' if SAGEConv is not None else 'plain-torch mean aggregation'}")

    loader = NeighborLoader(dataset, num_neighbors=args.fanouts, batch_size=args.batch_size,
                            input_nodes=dataset.train_idx, shuffle=True,
                            num_workers=args.workers, seed=args.seed)
    model = GraphSAGE(dataset.num_features, args.hidden, dataset.num_classes)
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr, weight_decay=5e-4)

    @torch.no_grad()
    def accuracy(ids: torch.Tensor) -> float:
        model.eval()
        prediction = model(x, edge_index).argmax(dim=1)
        return float((prediction[ids] == y[ids]).float().mean())

    best_val, best_state = -1.0, None
    for epoch in range(1, args.epochs + 1):
        model.train()
        start = time.perf_counter()
        total_loss = correct = seen = 0
        batches = loader if tqdm is None else tqdm(
            loader, desc=f"epoch {epoch:3d}", leave=False, disable=not sys.stderr.isatty())
        for batch in batches:
            optimizer.zero_grad()
            out = model(batch.x, batch.edge_index)[: batch.batch_size]
            target = batch.y[: batch.batch_size]
            loss = F.cross_entropy(out, target)
            loss.backward()
            optimizer.step()
            total_loss += float(loss) * batch.batch_size
            correct += int((out.argmax(dim=1) == target).sum())
            seen += batch.batch_size
        seconds = time.perf_counter() - start
        val = accuracy(dataset.val_idx)
        if val > best_val:  # model selection on the validation split
            best_val = val
            best_state = {k: v.clone() for k, v in model.state_dict().items()}
        print(f"epoch {epoch:3d}  loss {total_loss / seen:.4f}  train acc {correct / seen:.3f}  "
              f"val acc {val:.3f}  {seconds:.2f}s", flush=True)

    model.load_state_dict(best_state)
    test = accuracy(dataset.test_idx)
    print(f"test accuracy {test:.3f} (model of the epoch with the best val accuracy, {best_val:.3f})")
    if test < args.min_test_accuracy:
        print(f"test accuracy {test:.3f} is below {args.min_test_accuracy}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
