"""Learnable embeddings for featureless node types, in a volley.NodeStore, against zero inputs.

    .venv/bin/python examples/train_hetero_embeddings.py                 # ~20,000 papers
    .venv/bin/python examples/train_hetero_embeddings.py --nodes 8000 --epochs 4

On a generated ogbn-mag-shaped graph whose authors, institutions and fields of study have no
features, a heterogeneous GraphSAGE (``train_hetero.py``'s) is trained twice: with a
``volley.nn.Embedding`` row per featureless node (trained by ``volley.optim.SparseAdam`` on the
rows each batch used, in C++), and with those types' inputs zeroed. A paper's authors and topics
hint at its class, so the learned rows should carry that signal and win.
"""

from __future__ import annotations

import sys

from train_hetero import hetero_parser, load_graph, train_gnn


def main() -> int:
    parser = hetero_parser()
    parser.add_argument("--min-gain", type=float, default=None,
                        help="exit non-zero unless the embeddings beat zero inputs by this")
    args = parser.parse_args()
    data = load_graph(args)
    learned = train_gnn(data, args, "volley")
    zeros = train_gnn(data, args, "zeros")
    print(f"test accuracy: learnable embeddings {learned:.3f}, zero inputs {zeros:.3f} "
          f"({100 * (learned - zeros):+.1f} points)")
    if args.min_gain is not None and learned < zeros + args.min_gain:
        print(f"below the required gain of {args.min_gain}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
