"""Train a 2-layer GraphSAGE on the bundled Cora with Volley's NeighborLoader.

    scripts/dev.sh main                 # or: .venv/bin/python examples/train_sage.py --epochs 30

The only Volley-specific line is the loader: ``volley.loader.NeighborLoader`` takes the arguments
of ``torch_geometric.loader.NeighborLoader``. The model and the training loop are in ``_common.py``
(PyG's ``SAGEConv`` when PyG is importable, else a plain-torch mean-aggregation layer).
Evaluation runs the model on the full graph (Cora is small).
"""

from __future__ import annotations

import sys
import time

import torch

import volley
from volley.loader import NeighborLoader

from _common import LAYER_NAME, GraphSAGE, epoch_line, train_epoch, training_parser

try:
    from tqdm import tqdm
except Exception:
    tqdm = None


def main() -> int:
    parser = training_parser(__doc__.splitlines()[0], epochs=20, batch_size=64, fanouts=[10, 10],
                             hidden=64, lr=0.01, workers=2, workers_help="C++ sampling threads")
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
          f"layer: {LAYER_NAME}")

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
        start = time.perf_counter()
        batches = loader if tqdm is None else tqdm(
            loader, desc=f"epoch {epoch:3d}", leave=False, disable=not sys.stderr.isatty())
        totals = train_epoch(model, optimizer, batches)
        seconds = time.perf_counter() - start
        val = accuracy(dataset.val_idx)
        if val > best_val:  # model selection on the validation split
            best_val = val
            best_state = {k: v.clone() for k, v in model.state_dict().items()}
        print(f"{epoch_line(epoch, totals)}  val acc {val:.3f}  {seconds:.2f}s", flush=True)

    model.load_state_dict(best_state)
    test = accuracy(dataset.test_idx)
    print(f"test accuracy {test:.3f} (model of the epoch with the best val accuracy, "
          f"{best_val:.3f})")
    if test < args.min_test_accuracy:
        print(f"test accuracy {test:.3f} is below {args.min_test_accuracy}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
