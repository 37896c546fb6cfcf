"""What the training examples share: the GraphSAGE model, one epoch of training, ROC-AUC.

Imported by ``train_sage.py``, ``train_sage_ddp.py``, ``dist_train_sage.py``, ``link_pred.py``
and ``temporal_link_pred.py`` (``examples/`` is on ``sys.path`` when one of them runs). Uses
PyG's ``SAGEConv`` when PyG is importable, else a plain-torch mean-aggregation layer.
``roc_auc`` scores the link-prediction examples.
"""

from __future__ import annotations

import argparse
from typing import Any, Callable, Iterable, List, Optional

import torch
import torch.nn.functional as F

try:
    from torch_geometric.nn import SAGEConv
except Exception:  # PyG absent: fall back to a plain-torch layer
    SAGEConv = None


def training_parser(description: str, *, epochs: int, batch_size: int, fanouts: List[int],
                    hidden: int, lr: float, workers: int, workers_help: str
                    ) -> argparse.ArgumentParser:
    """A parser with the options every example takes (``--epochs``, ``--batch-size``,
    ``--fanouts``, ``--hidden``, ``--lr``, ``--workers``, ``--seed``), with these defaults."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--epochs", type=int, default=epochs)
    parser.add_argument("--batch-size", type=int, default=batch_size)
    parser.add_argument("--fanouts", type=int, nargs="+", default=fanouts)
    parser.add_argument("--hidden", type=int, default=hidden)
    parser.add_argument("--lr", type=float, default=lr)
    parser.add_argument("--workers", type=int, default=workers, help=workers_help)
    parser.add_argument("--seed", type=int, default=0)
    return parser


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


LAYER_NAME = "PyG SAGEConv" if SAGEConv is not None else "plain-torch mean aggregation"


class GraphSAGE(torch.nn.Module):
    """``num_layers`` SAGE layers with ReLU and dropout between them (and on the input features
    when ``input_dropout``)."""

    def __init__(self, in_channels: int, hidden: int, out_channels: int, num_layers: int = 2,
                 dropout: float = 0.5, input_dropout: bool = True):
        super().__init__()
        layer = SAGEConv if SAGEConv is not None else MeanSAGEConv
        sizes = [in_channels] + [hidden] * (num_layers - 1) + [out_channels]
        self.convs = torch.nn.ModuleList(layer(a, b) for a, b in zip(sizes[:-1], sizes[1:]))
        self.dropout = dropout
        self.input_dropout = input_dropout

    def forward(self, x: torch.Tensor, edge_index: torch.Tensor) -> torch.Tensor:
        if self.input_dropout:
            x = F.dropout(x, p=self.dropout, training=self.training)
        for i, conv in enumerate(self.convs):
            x = conv(x, edge_index)
            if i < len(self.convs) - 1:
                x = F.dropout(F.relu(x), p=self.dropout, training=self.training)
        return x


def train_epoch(model: torch.nn.Module, optimizer: torch.optim.Optimizer, batches: Iterable[Any],
                device: Optional[torch.device] = None, max_batches: int = 0,
                after_step: Optional[Callable[[int], None]] = None) -> torch.Tensor:
    """One pass over ``batches`` (PyG ``Data`` with ``x``, ``y``, ``edge_index``, ``batch_size``):
    cross-entropy on each batch's seed nodes, one optimizer step per batch.

    Args:
        device: where to move each batch first (None: leave it where it is).
        max_batches: stop after this many batches (0: no cap).
        after_step: called with the batch's index in this pass after each optimizer step (to
            checkpoint, for instance).

    Returns:
        float64 [3]: the loss summed over seed nodes, the correctly predicted seeds, the seeds.
    """
    model.train()
    totals = torch.zeros(3, dtype=torch.float64)
    for index, batch in enumerate(batches):
        if max_batches and index >= max_batches:
            break
        if device is not None:
            batch = batch.to(device)
        optimizer.zero_grad()
        out = model(batch.x, batch.edge_index)[: batch.batch_size]
        target = batch.y[: batch.batch_size]
        loss = F.cross_entropy(out, target)
        loss.backward()
        optimizer.step()
        if after_step is not None:
            after_step(index)
        correct = int((out.argmax(dim=1) == target).sum())
        totals += torch.tensor([float(loss) * batch.batch_size, correct, batch.batch_size],
                               dtype=torch.float64)
    return totals


def epoch_line(epoch: int, totals: torch.Tensor) -> str:
    """``epoch   N  loss L  train acc A`` from ``train_epoch``'s totals."""
    loss_sum, correct, seen = totals.tolist()
    return f"epoch {epoch:3d}  loss {loss_sum / seen:.4f}  train acc {correct / seen:.3f}"


def roc_auc(score: torch.Tensor, label: torch.Tensor) -> float:
    """Area under the ROC curve: the probability that a random positive outranks a random
    negative (ties count half), from the average ranks of the scores."""
    _, inverse, counts = torch.unique(score, return_inverse=True, return_counts=True)
    ends = torch.cumsum(counts, 0).double()
    ranks = (ends - (counts.double() - 1) / 2)[inverse]  # 1-based, tied scores averaged
    positive = label > 0
    count_pos, count_neg = int(positive.sum()), int((~positive).sum())
    rank_sum = float(ranks[positive].sum())
    return (rank_sum - count_pos * (count_pos + 1) / 2) / (count_pos * count_neg)
