"""Temporal link prediction on a generated interaction stream: train on the past, test the future.

    .venv/bin/python examples/temporal_link_pred.py    # --temporal-strategy uniform, --fanouts 5 3

The data is ``volley generate --model temporal`` (run by the script into a temporary directory;
``--dataset DIR`` reuses one): users take items one event at a time, event e at time e, and a
user's next item is most likely in the cluster of the user's *recent* items (its interest drifts).
The events are split by time: the first 70% train, the next 15% validate, the last 15% test.
Every validation / test event (u, i, t) is scored against a corrupted one (u, j, t), j a random
item, the same pairs for every model. Three models, each with the epoch of its best validation
ROC-AUC:

1. **GNN, temporal sampling**: ``volley.loader.LinkNeighborLoader(time_attr="time",
   edge_label_time=t - 1, temporal_strategy=...)`` over the whole stream. Each end point of a pair
   at time t sees only edges of time <= t - 1 (the loader admits times <= the seed time, so t - 1
   keeps the event itself out), whether it trains, validates or tests: no leakage, and at test
   time it uses everything that happened before t.
2. **GNN, no time constraint**: the same model and loader without ``time_attr``, on static
   graphs: it trains on the graph of the training events and is validated and tested on the
   graph of every event before the test period (what a model built at the end of validation
   has). Its neighborhoods hold the future: while training, later training events (and the
   event it scores); while validating, the validation event itself and what followed it. So its
   validation ROC-AUC is optimistic (the script also prints it on the graph of the training
   events), and its test ROC-AUC (test events are not in the graph) shows what it is worth.
3. **Per-node embeddings, no graph**: a score ``<e_u, e_i> + b_i`` learned from the training
   events (matrix factorization): each user's long-run taste, no recency.

Node inputs are learned embeddings (the generator's features carry nothing about the clusters).
The GNN is ``_common.GraphSAGE`` (one layer per ``--fanouts`` entry) on top of them, with a
dot-product decoder; its training negatives are the loader's "triplet" negatives, drawn in C++
among items only (``NegativeSampling`` weight: 1 per item, 0 per user).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from typing import Callable, Dict, List, Optional, Tuple

import torch
import torch.nn.functional as F

import volley
from volley.loader import LinkNeighborLoader

from _common import LAYER_NAME, GraphSAGE, roc_auc, training_parser

try:
    from torch_geometric.data import Data
except Exception:  # the loaders take PyG Data
    Data = None

ITEM_SHARE = 5  # the generator makes num_nodes // 5 items, with ids after the users (generate.h)


@dataclass
class Stream:
    """An interaction stream in time order: event k is ``user[k] -> item[k]`` at ``time[k]``.

    ``edge_index`` / ``edge_time`` hold every event both ways (int64 [2, 2M] / [2M]), the graph
    the loaders sample.
    """

    user: torch.Tensor
    item: torch.Tensor
    time: torch.Tensor
    edge_index: torch.Tensor
    edge_time: torch.Tensor
    num_nodes: int
    num_users: int


@dataclass
class Pairs:
    """Scored pairs of one split: positives (the split's events) then as many corrupted ones.

    ``index`` int64 [2, 2P] (user, item), ``label`` float [2P] (1 / 0), ``time`` int64 [2P]: the
    seed time of each pair, its event's time - 1 (a corrupted pair takes its event's).
    """

    index: torch.Tensor
    label: torch.Tensor
    time: torch.Tensor


def find_cli(given: Optional[str]) -> str:
    """The ``volley`` CLI: ``given``, else ``$VOLLEY_CLI``, else ``volley`` on PATH or beside
    this Python. Exits with a message naming what was tried when there is none."""
    candidates = [given, os.environ.get("VOLLEY_CLI"), "volley",
                  os.path.join(sys.prefix, "bin", "volley")]
    for path in candidates:
        if path and shutil.which(path):
            return path
    tried = ", ".join(str(path) for path in candidates if path)
    sys.exit(f"no volley CLI found (tried {tried}): pass --cli or set VOLLEY_CLI")


def generate(cli: str, directory: str, args) -> None:
    """Runs ``volley generate DIRECTORY --model temporal`` with the example's options."""
    command = [cli, "-q", "generate", directory, "--model", "temporal",
               "--nodes", str(args.nodes), "--edges", str(args.events),
               "--classes", str(args.clusters), "--homophily", str(args.homophily),
               "--seed", str(args.seed)]
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        sys.exit(f"{' '.join(command)} failed ({result.returncode}): {result.stderr.strip()}")


def load_stream(directory: str) -> Stream:
    """The events of a ``--model temporal`` dataset directory, in time order.

    Each event is stored twice (both ways, one edge time); the user -> item copy is kept.
    Raises ValueError when the directory is not such a stream (no edge times, or an edge
    without exactly one user end).
    """
    dataset = volley.load_dataset(directory)
    graph = dataset.graph
    if graph.edge_time is None:
        raise ValueError(f"{directory} has no edge times: generate it with --model temporal")
    edge_index = torch.as_tensor(graph.to_edge_index()).long()
    edge_time = torch.as_tensor(graph.edge_time).long()
    num_nodes = dataset.num_nodes
    num_users = num_nodes - max(num_nodes // ITEM_SHARE, 1)
    from_user = edge_index[0] < num_users
    if not torch.equal(from_user, edge_index[1] >= num_users):
        raise ValueError(f"{directory}: an edge without exactly one user end (< {num_users})")
    event_time, order = torch.sort(edge_time[from_user], stable=True)
    user, item = edge_index[:, from_user][:, order]
    return Stream(user=user, item=item, time=event_time, edge_index=edge_index,
                  edge_time=edge_time, num_nodes=num_nodes, num_users=num_users)


def make_pairs(stream: Stream, events: torch.Tensor, generator: torch.Generator) -> Pairs:
    """The pairs that score the events at positions ``events``: each event, then the same user
    with a uniformly drawn item at the same time."""
    user, item, seed_time = stream.user[events], stream.item[events], stream.time[events] - 1
    other = torch.randint(stream.num_users, stream.num_nodes, (len(events),), generator=generator)
    return Pairs(index=torch.stack([torch.cat([user, user]), torch.cat([item, other])]),
                 label=torch.cat([torch.ones(len(events)), torch.zeros(len(events))]),
                 time=torch.cat([seed_time, seed_time]))


class LinkGNN(torch.nn.Module):
    """Learned node embeddings, then ``GraphSAGE`` over a batch's sampled subgraph."""

    def __init__(self, num_nodes: int, hidden: int, num_layers: int, dropout: float):
        super().__init__()
        self.embedding = torch.nn.Embedding(num_nodes, hidden)
        torch.nn.init.normal_(self.embedding.weight, std=0.1)
        self.gnn = GraphSAGE(hidden, hidden, hidden, num_layers=num_layers, dropout=dropout,
                             input_dropout=False)

    def forward(self, n_id: torch.Tensor, edge_index: torch.Tensor) -> torch.Tensor:
        """Representations [len(n_id), hidden] of a batch's nodes (global ids ``n_id``)."""
        return self.gnn(self.embedding(n_id), edge_index)


class NodeEmbeddings(torch.nn.Module):
    """The no-graph baseline: ``<e_u, e_i> + b_i`` (matrix factorization with item biases)."""

    def __init__(self, num_nodes: int, hidden: int):
        super().__init__()
        self.embedding = torch.nn.Embedding(num_nodes, hidden)
        torch.nn.init.normal_(self.embedding.weight, std=0.1)
        self.bias = torch.nn.Parameter(torch.zeros(num_nodes))

    def forward(self, index: torch.Tensor) -> torch.Tensor:
        """Scores of the pairs ``index`` [2, P] (global ids)."""
        src, dst = index
        return (self.embedding(src) * self.embedding(dst)).sum(-1) + self.bias[dst]


def pair_loss(positive: torch.Tensor, negative: torch.Tensor) -> torch.Tensor:
    """Binary cross-entropy: positives toward 1, negatives toward 0."""
    return (F.binary_cross_entropy_with_logits(positive, torch.ones_like(positive))
            + F.binary_cross_entropy_with_logits(negative, torch.zeros_like(negative))) / 2


def gnn_epoch(model: LinkGNN, optimizer: torch.optim.Optimizer, loader) -> float:
    """One pass over a triplet loader: each positive against its negative item. Mean loss."""
    model.train()
    total, count = 0.0, 0
    for batch in loader:
        optimizer.zero_grad()
        h = model(batch.n_id, batch.edge_index)
        source = h[batch.src_index]
        loss = pair_loss((source * h[batch.dst_pos_index]).sum(-1),
                         (source * h[batch.dst_neg_index]).sum(-1))
        loss.backward()
        optimizer.step()
        total += float(loss) * batch.src_index.numel()
        count += batch.src_index.numel()
    return total / max(count, 1)


@torch.no_grad()
def gnn_scores(model: LinkGNN, loader, count: int) -> torch.Tensor:
    """The score of each of a loader's ``count`` pairs (by ``input_id``), model in eval mode."""
    model.eval()
    scores = torch.empty(count)
    for batch in loader:
        h = model(batch.n_id, batch.edge_index)
        src, dst = batch.edge_label_index
        scores[batch.input_id] = (h[src] * h[dst]).sum(-1)
    return scores


def embedding_epoch(model: NodeEmbeddings, optimizer: torch.optim.Optimizer, stream: Stream,
                    events: torch.Tensor, batch_size: int, generator: torch.Generator) -> float:
    """One shuffled pass over the training events, each against a uniformly drawn item."""
    model.train()
    total = 0.0
    order = events[torch.randperm(len(events), generator=generator)]
    for chunk in order.split(batch_size):
        optimizer.zero_grad()
        user, item = stream.user[chunk], stream.item[chunk]
        other = torch.randint(stream.num_users, stream.num_nodes, (len(chunk),),
                              generator=generator)
        loss = pair_loss(model(torch.stack([user, item])), model(torch.stack([user, other])))
        loss.backward()
        optimizer.step()
        total += float(loss) * len(chunk)
    return total / max(len(order), 1)


def fit(name: str, model: torch.nn.Module, run_epoch: Callable[[], float],
        evaluate: Callable[[str], float], keys: List[str], epochs: int) -> Dict[str, float]:
    """Trains ``epochs`` epochs, printing a line each, and keeps the epoch of the best ROC-AUC
    ``evaluate("val")``. Returns that model's ``evaluate(key)`` for each of ``keys``."""
    best_val, best_state = -1.0, None
    for epoch in range(1, epochs + 1):
        start = time.perf_counter()
        loss = run_epoch()
        seconds = time.perf_counter() - start
        val = evaluate("val")
        if val > best_val:  # model selection on the validation split
            best_val = val
            best_state = {k: v.clone() for k, v in model.state_dict().items()}
        print(f"{name:<10} epoch {epoch:3d}  loss {loss:.4f}  val auc {val:.3f}  {seconds:.2f}s",
              flush=True)
    model.load_state_dict(best_state)
    return {key: best_val if key == "val" else evaluate(key) for key in keys}


def train_gnn(name: str, train_data, evaluation: Dict[str, Tuple[object, Pairs]],
              train_index: torch.Tensor, train_time: Optional[torch.Tensor],
              item_weight: torch.Tensor, args) -> Dict[str, float]:
    """Trains ``LinkGNN`` with ``LinkNeighborLoader`` over ``train_data`` (PyG ``Data``):
    temporal (``time_attr="time"``, the pairs' seed times given) when ``train_time`` is not
    None, else unconstrained. ``evaluation`` maps a name ("val", "test", ...) to the graph that
    scores it and its pairs. Returns the ROC-AUC of each, model of the best "val" epoch."""
    temporal = {}
    if train_time is not None:
        temporal = dict(time_attr="time", temporal_strategy=args.temporal_strategy)
    common = dict(num_neighbors=args.fanouts, num_workers=args.workers, seed=args.seed,
                  **temporal)
    train_loader = LinkNeighborLoader(
        train_data, edge_label_index=train_index, edge_label_time=train_time,
        neg_sampling=dict(mode="triplet", amount=1, weight=item_weight),
        batch_size=args.batch_size, shuffle=True, **common)
    eval_loaders = {
        key: LinkNeighborLoader(
            data, edge_label_index=pairs.index, edge_label=pairs.label,
            edge_label_time=pairs.time if train_time is not None else None,
            batch_size=args.eval_batch_size, **common)
        for key, (data, pairs) in evaluation.items()
    }
    torch.manual_seed(args.seed)
    model = LinkGNN(train_data.num_nodes, args.hidden, len(args.fanouts), args.dropout)
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)

    def evaluate(key: str) -> float:
        label = evaluation[key][1].label
        return roc_auc(gnn_scores(model, eval_loaders[key], label.numel()), label)

    return fit(name, model, lambda: gnn_epoch(model, optimizer, train_loader), evaluate,
               list(evaluation), args.epochs)


def train_embeddings(stream: Stream, pairs: Dict[str, Pairs], train_events: torch.Tensor,
                     args) -> Dict[str, float]:
    """Trains the no-graph baseline on the training events; ROC-AUC of each of ``pairs``."""
    torch.manual_seed(args.seed)
    generator = torch.Generator().manual_seed(args.seed + 1)
    model = NodeEmbeddings(stream.num_nodes, args.hidden)
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)

    @torch.no_grad()
    def evaluate(key: str) -> float:
        model.eval()
        return roc_auc(model(pairs[key].index), pairs[key].label)

    return fit("embeddings", model,
               lambda: embedding_epoch(model, optimizer, stream, train_events, args.batch_size,
                                       generator),
               evaluate, list(pairs), args.epochs)


def parse_args(argv: Optional[List[str]] = None):
    """The example's options: ``training_parser``'s and the data's."""
    parser = training_parser(__doc__.splitlines()[0], epochs=5, batch_size=512, fanouts=[5],
                             hidden=32, lr=0.01, workers=2, workers_help="C++ sampling threads")
    parser.add_argument("--temporal-strategy", default="last", choices=["last", "uniform"],
                        help="which admissible neighbors the temporal GNN samples")
    parser.add_argument("--dropout", type=float, default=0.0)
    parser.add_argument("--eval-batch-size", type=int, default=2048)
    parser.add_argument("--nodes", type=int, default=2500, help="users + items (items: 1/5)")
    parser.add_argument("--events", type=int, default=60000, help="interactions in the stream")
    parser.add_argument("--clusters", type=int, default=10, help="item clusters (interests)")
    parser.add_argument("--homophily", type=float, default=0.8,
                        help="share of a user's events in its current interest cluster")
    parser.add_argument("--dataset", help="a --model temporal dataset directory to use instead "
                        "of generating one")
    parser.add_argument("--cli", help="the volley CLI that generates the stream "
                        "(default: $VOLLEY_CLI, or volley on PATH)")
    return parser.parse_args(argv)


def split_events(stream: Stream) -> Tuple[torch.Tensor, torch.Tensor, torch.Tensor, int, int]:
    """Positions of the training, validation and test events (70 / 15 / 15% by time) and the
    two boundary times: training events are before ``t_val``, test events at ``t_test`` or
    later."""
    count = stream.time.numel()
    t_val = int(stream.time[int(0.70 * count)])
    t_test = int(stream.time[int(0.85 * count)])
    positions = torch.arange(count)
    return (positions[stream.time < t_val],
            positions[(stream.time >= t_val) & (stream.time < t_test)],
            positions[stream.time >= t_test], t_val, t_test)


def run_models(stream: Stream, args) -> Dict[str, Dict[str, float]]:
    """Splits the stream by time and trains the three models; their ROC-AUCs by name."""
    train, val, test, t_val, t_test = split_events(stream)
    generator = torch.Generator().manual_seed(args.seed)
    pairs = {"val": make_pairs(stream, val, generator), "test": make_pairs(stream, test, generator)}
    print(f"stream: {stream.num_users:,} users, {stream.num_nodes - stream.num_users:,} items, "
          f"{stream.time.numel():,} events; train: t < {t_val:,} ({len(train):,} events), "
          f"val: t < {t_test:,} ({len(val):,}), test: the rest ({len(test):,}); "
          f"layer: {LAYER_NAME}, fanouts {args.fanouts}")
    item_weight = (torch.arange(stream.num_nodes) >= stream.num_users).double()
    train_index = torch.stack([stream.user[train], stream.item[train]])

    def graph(until: Optional[int] = None, **times):
        keep = slice(None) if until is None else stream.edge_time < until
        return Data(edge_index=stream.edge_index[:, keep], num_nodes=stream.num_nodes, **times)

    full = graph(time=stream.edge_time)  # every event; the sampler hides the future
    past, known = graph(t_val), graph(t_test)  # training events; every event before the test
    return {
        "temporal": train_gnn("temporal", full, {k: (full, p) for k, p in pairs.items()},
                              train_index, stream.time[train] - 1, item_weight, args),
        "static": train_gnn("static", past, {"val": (known, pairs["val"]),
                                             "test": (known, pairs["test"]),
                                             "val_past": (past, pairs["val"])},
                            train_index, None, item_weight, args),
        "embeddings": train_embeddings(stream, pairs, train, args),
    }


def main(argv: Optional[List[str]] = None) -> int:
    args = parse_args(argv)
    if Data is None:
        print("this example needs torch_geometric (Data)", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="volley-temporal-") as scratch:
        directory = args.dataset
        if directory is None:
            directory = os.path.join(scratch, "stream")
            generate(find_cli(args.cli), directory, args)
        try:
            stream = load_stream(directory)
        except ValueError as error:
            print(error, file=sys.stderr)
            return 2
    results = run_models(stream, args)
    rows = [("temporal", f'GNN, temporal sampling ("{args.temporal_strategy}")'),
            ("static", "GNN, no time constraint"),
            ("embeddings", "per-node embeddings, no graph")]
    print("ROC-AUC (model of the epoch with the best val AUC):")
    for key, label in rows:
        auc = results[key]
        print(f"  {label:<34} val {auc['val']:.3f}  test {auc['test']:.3f}")
    print(f"  the unconstrained GNN's val AUC is optimistic: its validation graph holds each "
          f"validation event and what followed it\n  (the same model validated on the graph of "
          f"the training events: val {results['static']['val_past']:.3f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
