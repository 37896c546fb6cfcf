"""Link prediction on the bundled Cora: GraphSAGE encoder, dot-product decoder, Volley's loader.

    .venv/bin/python examples/link_pred.py                  # --dataset citeseer, --epochs 10

The only Volley-specific line is the loader: ``volley.loader.LinkNeighborLoader`` takes the
arguments of ``torch_geometric.loader.LinkNeighborLoader``; each batch brings its positive
supervision edges and as many random negative pairs ("binary" negatives, drawn in C++), with
``edge_label_index`` pointing into the batch's nodes. The edges are split with PyG's
``RandomLinkSplit`` (80/10/10, both directions of an edge on the same side; training message
passing uses the training edges only). Validation and test ROC-AUC use the full-graph
embeddings over the split's fixed negatives.
"""

from __future__ import annotations

import random
import sys
import time

import torch
import torch.nn.functional as F

import volley
from volley.loader import LinkNeighborLoader

from _common import LAYER_NAME, GraphSAGE, roc_auc, training_parser

try:
    from tqdm import tqdm
except Exception:
    tqdm = None

try:
    from torch_geometric.data import Data
    from torch_geometric.transforms import RandomLinkSplit
except Exception:  # the edge split comes from PyG
    Data = RandomLinkSplit = None


def main() -> int:
    parser = training_parser(__doc__.splitlines()[0], epochs=5, batch_size=256, fanouts=[10, 10],
                             hidden=128, lr=0.005, workers=2, workers_help="C++ sampling threads")
    parser.add_argument("--dataset", default="cora", help="cora or citeseer")
    parser.add_argument("--min-test-auc", type=float, default=0.85,
                        help="exit non-zero when the final test ROC-AUC is below this")
    args = parser.parse_args()
    if RandomLinkSplit is None:
        print("this example needs torch_geometric (RandomLinkSplit)", file=sys.stderr)
        return 2

    torch.manual_seed(args.seed)
    random.seed(args.seed)  # RandomLinkSplit's negatives use Python's random too
    dataset = getattr(volley.datasets, args.dataset)()
    data = Data(x=dataset.x.float(), edge_index=dataset.graph.to_edge_index(),
                num_nodes=dataset.num_nodes)
    split = RandomLinkSplit(num_val=0.1, num_test=0.1, is_undirected=True,
                            add_negative_train_samples=False)
    train_data, val_data, test_data = split(data)
    print(f"{dataset.name}: {dataset.num_nodes:,} nodes, {dataset.num_edges:,} edges; "
          f"{train_data.edge_label_index.size(1):,} training / "
          f"{val_data.edge_label_index.size(1) // 2:,} validation / "
          f"{test_data.edge_label_index.size(1) // 2:,} test positives; layer: {LAYER_NAME}")

    loader = LinkNeighborLoader(train_data, num_neighbors=args.fanouts,
                                edge_label_index=train_data.edge_label_index,
                                edge_label=train_data.edge_label, neg_sampling="binary",
                                batch_size=args.batch_size, shuffle=True,
                                num_workers=args.workers, seed=args.seed)
    model = GraphSAGE(dataset.num_features, args.hidden, args.hidden, dropout=0.3)
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)

    @torch.no_grad()
    def evaluate(split_data) -> float:
        model.eval()
        h = model(split_data.x, split_data.edge_index)
        src, dst = split_data.edge_label_index
        return roc_auc((h[src] * h[dst]).sum(dim=-1), split_data.edge_label)

    best_val, best_state = -1.0, None
    for epoch in range(1, args.epochs + 1):
        start = time.perf_counter()
        model.train()
        total_loss, total_pairs = 0.0, 0
        batches = loader if tqdm is None else tqdm(
            loader, desc=f"epoch {epoch:3d}", leave=False, disable=not sys.stderr.isatty())
        for batch in batches:
            optimizer.zero_grad()
            h = model(batch.x, batch.edge_index)
            src, dst = batch.edge_label_index
            score = (h[src] * h[dst]).sum(dim=-1)
            loss = F.binary_cross_entropy_with_logits(score, batch.edge_label)
            loss.backward()
            optimizer.step()
            total_loss += float(loss) * score.numel()
            total_pairs += score.numel()
        seconds = time.perf_counter() - start
        val, test = evaluate(val_data), evaluate(test_data)
        if val > best_val:  # model selection on the validation split
            best_val = val
            best_state = {k: v.clone() for k, v in model.state_dict().items()}
        print(f"epoch {epoch:3d}  loss {total_loss / total_pairs:.4f}  val auc {val:.3f}  "
              f"test auc {test:.3f}  {seconds:.2f}s", flush=True)

    model.load_state_dict(best_state)
    test = evaluate(test_data)
    print(f"test ROC-AUC {test:.3f} (model of the epoch with the best val AUC, {best_val:.3f})")
    if test < args.min_test_auc:
        print(f"test ROC-AUC {test:.3f} is below {args.min_test_auc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
