"""Golden checksums of ``volley.loader.NeighborLoader`` batches for the documented option sets.

A SHA-256 per epoch over every batch's arrays (``n_id``, ``edge_index``, ``e_id``, ``x``, ``y``,
``input_id``, ``batch_size`` and the per-hop counts), on a seeded generated graph and on bundled
Cora. ``test_golden_batches.py`` compares the loader against ``data/golden_batches.json``, so a
change that alters any batch of any option set fails a test.

Regenerate (only for an intended, documented change of the batches)::

    PYTHONPATH=python python python/tests/golden_batches.py --write

History: recorded before the loader's policy moved to C++. The rank split with
``shuffle=True`` then changed once, from numpy's generator to Philox (the single-process epoch
order); only the entries with ``world_size > 1`` and ``shuffle=True`` were regenerated
(``golden_batches.py --write --rank-split``).

The heterogeneous option sets (``het-*``, a ``HeteroData`` of ``generated_hetero_data``) were
recorded when the heterogeneous loader adopted the homogeneous loader's epoch policy, from its
Python batch assembly; the C++ typed pipeline that builds those batches now must match them.
The heterogeneous link option sets (``hetlink-*``, ``LinkNeighborLoader`` on the same data) were
recorded from the Python assembly when their negatives moved to the native typed negative
sampler; the C++ typed link pipeline that builds those batches now must match them. The sets
without hops and the link loader's induced and bidirectional sets were recorded from the Python
assembly before the typed pipeline took them over.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path
from typing import Any, Dict, List, Tuple

import numpy as np

GOLDEN_PATH = Path(__file__).resolve().parent / "data" / "golden_batches.json"
EPOCHS = 2

_MASK = (1 << 64) - 1


def _splitmix(values: np.ndarray) -> np.ndarray:
    """SplitMix64 of uint64 ``values`` (exact integer arithmetic: the same on every platform)."""
    with np.errstate(over="ignore"):
        z = values.astype(np.uint64) + np.uint64(0x9E3779B97F4A7C15)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return z ^ (z >> np.uint64(31))


def generated_graph(num_nodes: int = 3000, num_edges: int = 30000, width: int = 6,
                    num_classes: int = 5) -> Dict[str, np.ndarray]:
    """A seeded graph with skewed degrees, float32 features, int64 labels and edge weights.

    Built from SplitMix64 hashes of counters only (no library RNG), so the bytes never change
    with numpy's version: sources are skewed towards low ids (hubs), targets uniform.
    """
    counter = np.arange(4 * num_edges + num_nodes * (width + 1), dtype=np.uint64)
    bits = _splitmix(counter)
    unit = (bits >> np.uint64(11)).astype(np.float64) / float(1 << 53)  # [0, 1)
    e = num_edges
    source = np.minimum((unit[:e] ** 2 * num_nodes).astype(np.int64), num_nodes - 1)
    target = (bits[e : 2 * e] % np.uint64(num_nodes)).astype(np.int64)
    weight = (unit[2 * e : 3 * e] * 4.0).astype(np.float32)
    weight[bits[3 * e : 4 * e] % np.uint64(10) == 0] = 0.0  # some zero-weight edges
    rest = unit[4 * e :]
    x = (rest[: num_nodes * width].reshape(num_nodes, width) * 2.0 - 1.0).astype(np.float32)
    y = (bits[4 * e + num_nodes * width :] % np.uint64(num_classes)).astype(np.int64)
    return dict(edge_index=np.stack([source, target]), x=x, y=y, edge_weight=weight,
                num_nodes=np.int64(num_nodes))


def option_sets() -> List[Tuple[str, str, Dict[str, Any]]]:
    """(name, dataset, NeighborLoader keyword arguments): the documented option combinations.

    ``input`` names an input-node choice resolved per dataset (``all``, ``ids``, ``mask``).
    """
    sets: List[Tuple[str, str, Dict[str, Any]]] = []

    def add(name: str, dataset: str, **kwargs: Any) -> None:
        sets.append((name, dataset, kwargs))

    base = dict(num_neighbors=[5, 3], batch_size=64, input="ids", seed=11)
    for shuffle in (False, True):
        for drop_last in (False, True):
            for workers in (1, 2):
                add(f"gen-shuffle{int(shuffle)}-drop{int(drop_last)}-w{workers}", "generated",
                    **{**base, "shuffle": shuffle, "drop_last": drop_last, "num_workers": workers})
    for fanout in ([10], [-1], [4, -1], [3, 2, 2], [0, 5]):
        name = "gen-fanout" + "_".join(str(k) for k in fanout)
        add(name, "generated", **{**base, "num_neighbors": fanout, "shuffle": True,
                                  "num_workers": 2})
    add("gen-replace", "generated", **{**base, "replace": True, "shuffle": True})
    add("gen-weighted", "generated", **{**base, "weighted": True, "shuffle": True})
    add("gen-weighted-replace", "generated", **{**base, "weighted": True, "replace": True})
    add("gen-batch1", "generated", **{**base, "batch_size": 1, "input": "few"})
    add("gen-batch1000-all", "generated", **{**base, "batch_size": 1000, "input": "all",
                                             "shuffle": True})
    add("gen-mask", "generated", **{**base, "input": "mask", "shuffle": True})
    add("gen-float16", "generated", **{**base, "feature_dtype": "float16", "shuffle": True})
    add("gen-copy-numpy", "generated", **{**base, "copy": True, "format": "numpy",
                                          "shuffle": True})
    add("gen-batch-class", "generated", **{**base, "format": "batch", "shuffle": True})
    for world in (2, 3):
        for rank in range(world):
            for shuffle in (False, True):
                for drop_last in (False, True):
                    add(f"gen-rank{rank}of{world}-shuffle{int(shuffle)}-drop{int(drop_last)}",
                        "generated", **{**base, "input": "odd", "rank": rank,
                                        "world_size": world, "shuffle": shuffle,
                                        "drop_last": drop_last, "num_workers": 1 + rank % 2})
    cora = dict(num_neighbors=[10, 5], batch_size=128, seed=3)
    add("cora-train", "cora", **{**cora, "input": "train", "shuffle": True, "num_workers": 2})
    add("cora-all-noshuffle", "cora", **{**cora, "input": "all", "num_workers": 1})
    add("cora-all-neighbors", "cora", **{**cora, "num_neighbors": [-1], "input": "train"})
    for rank in range(2):
        add(f"cora-rank{rank}of2", "cora", **{**cora, "input": "train", "shuffle": True,
                                               "rank": rank, "world_size": 2})
        add(f"cora-rank{rank}of2-noshuffle", "cora", **{**cora, "input": "all", "rank": rank,
                                                         "world_size": 2})
    hetero_option_sets(add)
    hetero_link_option_sets(add)
    return sets


def hetero_link_option_sets(add: Any) -> None:
    """The heterogeneous link loader's documented options (``supervise``: the supervision edges,
    every third edge of ``writes`` or ``cites``)."""
    base = dict(num_neighbors=[3, 2], batch_size=96, supervise="writes", seed=7, shuffle=True,
                num_workers=2)
    add("hetlink-none", "hetero-link", **{**base, "supervise": "cites", "num_workers": 1})
    add("hetlink-binary", "hetero-link", **{**base, "neg_sampling": "binary"})
    add("hetlink-binary-labels", "hetero-link", **{**base, "neg_sampling_ratio": 2.0,
                                                   "labels": True})
    add("hetlink-triplet", "hetero-link", **{**base, "neg_sampling": {"mode": "triplet",
                                                                       "amount": 3}})
    add("hetlink-weights", "hetero-link", **{**base, "neg_sampling": "binary", "weights": True})
    add("hetlink-degree-reject", "hetero-link", **{**base, "neg_sampling": "binary",
                                                   "neg_distribution": "degree",
                                                   "reject_existing": True})
    add("hetlink-exclude-undirected", "hetero-link", **{**base, "neg_sampling": "binary",
                                                        "exclude_edges": True,
                                                        "undirected": True})
    add("hetlink-disjoint-triplet", "hetero-link", **{**base, "disjoint": True,
                                                      "neg_sampling": {"mode": "triplet",
                                                                       "amount": 2}})
    add("hetlink-temporal", "hetero-link", **{**base, "supervise": "cites",
                                              "neg_sampling": "binary", "time_attr": "time"})
    add("hetlink-no-hops", "hetero-link", **{**base, "num_neighbors": [],
                                             "neg_sampling": "binary"})
    add("hetlink-disjoint-no-hops", "hetero-link", **{**base, "num_neighbors": [],
                                                      "disjoint": True, "neg_sampling": "binary"})
    for kind in ("induced", "bidirectional"):
        add(f"hetlink-{kind}", "hetero-link", **{**base, "subgraph_type": kind,
                                                 "neg_sampling": "binary"})
        add(f"hetlink-{kind}-exclude-undirected", "hetero-link", **{
            **base, "subgraph_type": kind, "neg_sampling": {"mode": "triplet", "amount": 2},
            "exclude_edges": True, "undirected": True})


def hetero_option_sets(add: Any) -> None:
    """The heterogeneous loader's documented options, on ``generated_hetero_data``."""
    base = dict(num_neighbors=[4, 3], batch_size=64, input="paper-ids", seed=5)
    for shuffle in (False, True):
        for drop_last in (False, True):
            for workers in (1, 2):
                add(f"het-shuffle{int(shuffle)}-drop{int(drop_last)}-w{workers}", "hetero",
                    **{**base, "shuffle": shuffle, "drop_last": drop_last, "num_workers": workers})
    cites = ("paper", "cites", "paper")
    add("het-dict-default", "hetero", **{**base, "num_neighbors": {cites: [6, -1]},
                                         "default": [2, 1], "shuffle": True})
    add("het-all-neighbors", "hetero", **{**base, "num_neighbors": [-1], "input": "author"})
    add("het-replace", "hetero", **{**base, "replace": True, "shuffle": True})
    add("het-weighted", "hetero", **{**base, "weight_attr": "edge_weight", "shuffle": True})
    add("het-disjoint", "hetero", **{**base, "disjoint": True, "shuffle": True})
    add("het-temporal", "hetero", **{**base, "time_attr": "time", "shuffle": True})
    add("het-temporal-last", "hetero", **{**base, "time_attr": "time",
                                          "temporal_strategy": "last"})
    add("het-mask", "hetero", **{**base, "input": "paper-mask", "shuffle": True})
    for kind in ("induced", "bidirectional"):
        add(f"het-{kind}", "hetero", **{**base, "subgraph_type": kind, "shuffle": True})
    add("het-no-hops", "hetero", **{**base, "num_neighbors": [], "shuffle": True})
    add("het-disjoint-no-hops", "hetero", **{**base, "num_neighbors": [], "disjoint": True})
    for world in (2, 3):
        for rank in range(world):
            for shuffle in (False, True):
                add(f"het-rank{rank}of{world}-shuffle{int(shuffle)}", "hetero",
                    **{**base, "rank": rank, "world_size": world, "shuffle": shuffle,
                       "drop_last": rank == 1, "num_workers": 1 + rank % 2})


def generated_hetero_data() -> Any:
    """A seeded ``HeteroData`` from ``generated_graph``'s hashes: 3000 papers (x, y, time) cite
    each other (weighted); 800 authors (x) write papers and are written by them."""
    import torch
    from torch_geometric.data import HeteroData

    graph = generated_graph()
    papers, authors = int(graph["num_nodes"]), 800
    bits = _splitmix(np.arange(10**6, 10**6 + 6 * papers, dtype=np.uint64))
    data = HeteroData()
    data["paper"].x = torch.from_numpy(graph["x"])
    data["paper"].y = torch.from_numpy(graph["y"])
    data["paper"].time = torch.from_numpy((bits[:papers] % np.uint64(50)).astype(np.int64))
    data["author"].x = torch.from_numpy(graph["x"][:authors, :4].copy())
    cites = data["paper", "cites", "paper"]
    cites.edge_index = torch.from_numpy(graph["edge_index"])
    cites.edge_weight = torch.from_numpy(graph["edge_weight"])
    writer = (bits[papers:3 * papers] % np.uint64(authors)).astype(np.int64)
    paper = np.repeat(np.arange(papers, dtype=np.int64), 2)
    data["author", "writes", "paper"].edge_index = torch.from_numpy(np.stack([writer, paper]))
    data["paper", "rev_writes", "author"].edge_index = torch.from_numpy(np.stack([paper, writer]))
    return data


def _hetero_inputs(kind: str, data: Any) -> Any:
    papers = int(data["paper"].num_nodes)
    if kind == "paper-ids":
        return ("paper", np.arange(2, papers, 4, dtype=np.int64)[::-1].copy())
    if kind == "paper-mask":
        return ("paper", (np.arange(papers) * 5) % 7 < 2)
    if kind == "author":
        return "author"
    raise ValueError(kind)


def hetero_digest_update(digest: Any, batch: Any) -> None:
    """Feeds one ``HeteroData`` batch's fields, per type in a fixed order, into ``digest``."""
    def field(name: str, value: Any) -> None:
        if value is None:
            digest.update(f"{name}:none;".encode())
            return
        if isinstance(value, (list, tuple, int)):
            value = np.asarray(value, dtype=np.int64)
        dtype, shape, raw = _field_bytes(value)
        digest.update(f"{name}:{dtype}:{shape};".encode())
        digest.update(raw)

    for node_type in sorted(batch.node_types):
        store = batch[node_type]
        for key in ("n_id", "x", "y", "time", "batch", "num_sampled_nodes", "input_id",
                    "batch_size", "seed_time"):
            field(f"{node_type}.{key}", getattr(store, key, None))
    for edge_type in sorted(batch.edge_types):
        store = batch[edge_type]
        for key in ("edge_index", "e_id", "edge_weight", "num_sampled_edges"):
            field(f"{edge_type}.{key}", getattr(store, key, None))


def hetero_link_digest_update(digest: Any, batch: Any) -> None:
    """``hetero_digest_update``, then the link fields of every type."""
    hetero_digest_update(digest, batch)
    for owner in sorted(batch.node_types) + sorted(batch.edge_types):
        store = batch[owner]
        for key in ("input_id", "edge_label_index", "edge_label", "edge_label_time", "src_index",
                    "dst_pos_index", "dst_neg_index"):
            if key in store:
                dtype, shape, raw = _field_bytes(store[key])
                digest.update(f"{owner}.{key}:{dtype}:{shape};".encode())
                digest.update(raw)


def changed_by_rank_split(name: str, kwargs: Dict[str, Any]) -> bool:
    """Whether an option set's batches were allowed to change when the rank split moved to
    Philox: several ranks with a shuffled epoch (unshuffled splits stay bit-identical)."""
    return kwargs.get("world_size", 1) > 1 and bool(kwargs.get("shuffle", False))


def _inputs(kind: str, num_nodes: int, dataset: Any) -> Any:
    if kind == "all":
        return None
    if kind == "ids":
        return np.arange(0, num_nodes, 3, dtype=np.int64)[::-1].copy()
    if kind == "few":
        return np.arange(7, num_nodes, 97, dtype=np.int64)
    if kind == "odd":
        return np.arange(1, 1001, 2, dtype=np.int64)  # 500 ids: uneven over 3 ranks
    if kind == "mask":
        mask = np.zeros(num_nodes, dtype=bool)
        mask[(np.arange(num_nodes) * 7) % 11 < 4] = True
        return mask
    if kind == "train":
        return dataset.train_idx
    raise ValueError(kind)


def _data(dataset: str, fmt: str) -> Any:
    import torch

    if dataset == "cora":
        import volley

        return volley.datasets.cora()
    graph = generated_graph()
    from torch_geometric.data import Data

    return Data(
        edge_index=torch.from_numpy(graph["edge_index"]), x=torch.from_numpy(graph["x"]),
        y=torch.from_numpy(graph["y"]), edge_weight=torch.from_numpy(graph["edge_weight"]),
        num_nodes=int(graph["num_nodes"]),
    )


def _field_bytes(value: Any) -> Tuple[str, Tuple[int, ...], bytes]:
    array = value if isinstance(value, np.ndarray) else value.detach().cpu().numpy()
    array = np.ascontiguousarray(array)
    return str(array.dtype), tuple(array.shape), array.tobytes()


def batch_digest_update(digest: Any, batch: Any) -> None:
    """Feeds one batch's fields, in a fixed order, into ``digest``."""
    for key in ("n_id", "edge_index", "e_id", "x", "y", "input_id"):
        value = getattr(batch, key, None)
        if value is None:
            digest.update(f"{key}:none;".encode())
            continue
        dtype, shape, raw = _field_bytes(value)
        digest.update(f"{key}:{dtype}:{shape};".encode())
        digest.update(raw)
    counts = [int(batch.batch_size)] + [-1] + list(batch.num_sampled_nodes) + [-1] + list(
        batch.num_sampled_edges
    )
    digest.update(np.asarray(counts, dtype=np.int64).tobytes())


def run_option_set(dataset: str, kwargs: Dict[str, Any], epochs: int = EPOCHS) -> Dict[str, Any]:
    """Iterates the loader ``epochs`` times; returns its length and one SHA-256 per epoch."""
    import volley
    import volley._tensor
    from volley.loader import NeighborLoader

    kwargs = dict(kwargs)
    fmt = kwargs.pop("format", "pyg")
    if dataset == "hetero":
        return _run_hetero(kwargs, epochs)
    if dataset == "hetero-link":
        return _run_hetero_link(kwargs, epochs)
    data = _data(dataset, fmt)
    num_nodes = int(data.num_nodes)
    kwargs["input_nodes"] = _inputs(kwargs.pop("input"), num_nodes, data)
    saved_torch = volley._tensor._torch
    saved_class = volley.loader._pyg_data_class
    try:
        if fmt == "numpy":
            volley._tensor._torch = None
        elif fmt == "batch":
            volley.loader._pyg_data_class = lambda: None
        loader = NeighborLoader(data, **kwargs)
        return _digests(loader, epochs, "Data" if fmt == "pyg" else "Batch", batch_digest_update)
    finally:
        volley._tensor._torch = saved_torch
        volley.loader._pyg_data_class = saved_class


def _run_hetero(kwargs: Dict[str, Any], epochs: int) -> Dict[str, Any]:
    from volley.loader import NeighborLoader

    data = generated_hetero_data()
    kwargs["input_nodes"] = _hetero_inputs(kwargs.pop("input"), data)
    return _digests(NeighborLoader(data, **kwargs), epochs, "HeteroData", hetero_digest_update)


def _run_hetero_link(kwargs: Dict[str, Any], epochs: int) -> Dict[str, Any]:
    import torch
    from volley.loader import LinkNeighborLoader

    data = generated_hetero_data()
    edge_type = {"writes": ("author", "writes", "paper"),
                 "cites": ("paper", "cites", "paper")}[kwargs.pop("supervise")]
    index = data[edge_type].edge_index[:, ::3]
    kwargs["edge_label_index"] = (edge_type, index)
    count = index.shape[1]
    if kwargs.pop("labels", False):
        kwargs["edge_label"] = torch.arange(count) % 3
    if kwargs.pop("weights", False):
        kwargs["neg_sampling"] = dict(
            mode="binary", src_weight=(torch.arange(800) % 5).double(),
            dst_weight=(torch.arange(3000) % 7 == 0).double())
    if "time_attr" in kwargs:
        kwargs["edge_label_time"] = data["paper"].time[index[1]] + 5
    return _digests(LinkNeighborLoader(data, **kwargs), epochs, "HeteroData",
                    hetero_link_digest_update)


def _digests(loader: Any, epochs: int, batch_class: str, update: Any) -> Dict[str, Any]:
    """The loader's length and one ``count:SHA-256`` per epoch over its batches (``update``
    feeds one batch into the digest)."""
    digests = []
    for _ in range(epochs):
        digest = hashlib.sha256()
        count = 0
        for batch in loader:
            assert type(batch).__name__ == batch_class, type(batch)
            update(digest, batch)
            count += 1
        digests.append(f"{count}:{digest.hexdigest()}")
    return dict(num_batches=len(loader), epochs=digests)


def main(argv: List[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--write", action="store_true", help="rewrite the golden file")
    parser.add_argument("--only", default="", help="only the option sets whose name has this")
    parser.add_argument("--rank-split", action="store_true",
                        help="only the option sets the Philox rank split changed")
    args = parser.parse_args(argv)
    current = {
        name: run_option_set(dataset, kwargs)
        for name, dataset, kwargs in option_sets()
        if args.only in name and (not args.rank_split or changed_by_rank_split(name, kwargs))
    }
    golden = json.loads(GOLDEN_PATH.read_text()) if GOLDEN_PATH.exists() else {}
    differing = sorted(name for name, value in current.items() if golden.get(name) != value)
    print(f"{len(current)} option sets, {len(differing)} differ from {GOLDEN_PATH.name}")
    for name in differing:
        print("  differs:", name)
    if args.write:
        golden.update(current)
        GOLDEN_PATH.parent.mkdir(parents=True, exist_ok=True)
        GOLDEN_PATH.write_text(json.dumps(golden, indent=1, sort_keys=True) + "\n")
        print("wrote", GOLDEN_PATH)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
