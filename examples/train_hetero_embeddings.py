"""Learnable embeddings for featureless node types, in a volley.NodeStore, against zero inputs.

    .venv/bin/python examples/train_hetero_embeddings.py                 # ~20,000 papers
    .venv/bin/python examples/train_hetero_embeddings.py --nodes 8000 --epochs 4
    .venv/bin/python examples/train_hetero_embeddings.py --servers 2     # the store on 2 servers

On a generated ogbn-mag-shaped graph whose authors, institutions and fields of study have no
features, a heterogeneous GraphSAGE (``train_hetero.py``'s) is trained twice: with a
``volley.nn.Embedding`` row per featureless node (trained by ``volley.optim.SparseAdam`` on the
rows each batch used, in C++), and with those types' inputs zeroed. A paper's authors and topics
hint at its class, so the learned rows should carry that signal and win.

With ``--servers K`` the embeddings are trained a second time with their store on the servers of
a K-part partitioning of the same graph (``volley.dist.serve``, in this process; the rows live in
the servers' memory and every pull, push and optimizer step goes over gRPC, split by owner). The
servers speak partitioned (new) ids, so the model maps the loader's ids through the partition's
node maps. The rows start from other random values (initialisation is keyed by id), so the
accuracy matches the local store's within noise, not bit for bit.
"""

from __future__ import annotations

import os
import sys
import tempfile

import torch

from volley.partition import load_node_map

from train_hetero import hetero_parser, load_graph, train_gnn


def train_on_servers(data, dataset, args) -> float:
    """train_gnn with the embeddings' store on args.servers in-process servers."""
    import volley.dist

    with tempfile.TemporaryDirectory() as scratch:
        parts = os.path.join(scratch, "parts")
        volley.partition(dataset, parts, args.servers, method="random", seed=args.seed)
        servers = [volley.dist.serve(parts, p) for p in range(args.servers)]
        try:
            store = volley.NodeStore(servers=[server.address for server in servers])
            id_maps = {t: torch.as_tensor(load_node_map(parts, node_type=t))
                       for t in data.node_types}
            return train_gnn(data, args, "volley", store=store, id_maps=id_maps)
        finally:
            for server in servers:
                server.shutdown()


def main() -> int:
    parser = hetero_parser()
    parser.add_argument("--min-gain", type=float, default=None,
                        help="exit non-zero unless the embeddings beat zero inputs by this")
    parser.add_argument("--servers", type=int, default=0,
                        help="also train with the embeddings' store on this many servers")
    args = parser.parse_args()
    data, dataset = load_graph(args, keep_dataset=True)
    learned = train_gnn(data, args, "volley")
    served = train_on_servers(data, dataset, args) if args.servers else None
    zeros = train_gnn(data, args, "zeros")
    print(f"test accuracy: learnable embeddings {learned:.3f}, zero inputs {zeros:.3f} "
          f"({100 * (learned - zeros):+.1f} points)")
    gains = [learned - zeros]
    if served is not None:
        print(f"test accuracy: learnable embeddings on {args.servers} servers {served:.3f} "
              f"({100 * (served - zeros):+.1f} points over zero inputs, "
              f"{100 * (served - learned):+.1f} against the local store)")
        gains.append(served - zeros)
    if args.min_gain is not None and min(gains) < args.min_gain:
        print(f"below the required gain of {args.min_gain}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
