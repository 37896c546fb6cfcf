"""The link loaders' own arguments are checked once: the same bad value gives the same error class
and message for a ``Data`` and a ``HeteroData`` (``volley/_policy.py``'s ``negative_options``,
``_pyg_compat.negative_sampling``, the native negative sampler and loader policy)."""

from __future__ import annotations

import math

import numpy as np
import pytest

import volley
from volley.loader import LinkNeighborLoader

torch = pytest.importorskip("torch")
pytest.importorskip("torch_geometric")
from torch_geometric.data import Data, HeteroData  # noqa: E402

NODES = 60
WRITES = ("author", "writes", "paper")


def _edges(seed: int) -> torch.Tensor:
    rng = np.random.default_rng(seed)
    return torch.from_numpy(np.stack([rng.integers(0, NODES, 300), rng.integers(0, NODES, 300)]))


def _loaders():
    plain = Data(edge_index=_edges(1), num_nodes=NODES)
    typed = HeteroData()
    typed["author"].num_nodes = typed["paper"].num_nodes = NODES
    typed[WRITES].edge_index = _edges(2)
    return {
        "Data": lambda **kw: LinkNeighborLoader(plain, [2], **kw),
        "HeteroData": lambda **kw: LinkNeighborLoader(
            typed, [2], **{"edge_label_index": (WRITES, None), **kw}),
    }


BAD = {
    "max_draws=0": dict(neg_sampling="binary", max_draws=0),
    "max_draws=2.5": dict(neg_sampling="binary", max_draws=2.5),
    "max_draws='3'": dict(neg_sampling="binary", max_draws="3"),
    "neg_distribution='zipf'": dict(neg_sampling="binary", neg_distribution="zipf"),
    "neg_distribution=3": dict(neg_sampling="binary", neg_distribution=3),
    "neg_degree_power='a'": dict(neg_sampling="binary", neg_distribution="degree",
                                 neg_degree_power="a"),
    "neg_degree_power=nan": dict(neg_sampling="binary", neg_distribution="degree",
                                 neg_degree_power=math.nan),
    "neg_sampling='quadruplet'": dict(neg_sampling="quadruplet"),
    "amount=-1": dict(neg_sampling=dict(mode="binary", amount=-1)),
    "amount='x'": dict(neg_sampling=dict(mode="binary", amount="x")),
    "triplet amount=1.5": dict(neg_sampling=dict(mode="triplet", amount=1.5)),
    "batch_size=0": dict(neg_sampling="binary", batch_size=0),
}


def _error(make, kwargs):
    with pytest.raises(volley.VolleyError) as caught:
        make(**kwargs)
    return type(caught.value), str(caught.value)


@pytest.mark.parametrize("case", list(BAD), ids=list(BAD))
def test_the_same_bad_argument_gives_the_same_error_for_both_kinds(case):
    loaders = _loaders()
    errors = {kind: _error(make, BAD[case]) for kind, make in loaders.items()}
    assert errors["Data"] == errors["HeteroData"], errors
    assert errors["Data"][1], "the message names nothing"


def test_negative_options_name_the_argument_and_the_value():
    make = _loaders()["HeteroData"]
    with pytest.raises(volley.VolleyValueError, match="max_draws must be >= 1, got 0"):
        make(neg_sampling="binary", max_draws=0)
    with pytest.raises(volley.VolleyTypeError, match=r"max_draws must be an integer, got 2.5"):
        make(neg_sampling="binary", max_draws=2.5)
    with pytest.raises(volley.VolleyValueError, match='neg_distribution must be .*got "zipf"'):
        make(neg_sampling="binary", neg_distribution="zipf")
    with pytest.raises(volley.VolleyTypeError, match="neg_degree_power must be a number, got 'a'"):
        make(neg_sampling="binary", neg_degree_power="a")


# The supervision edges, labels and times: one check for both kinds (link_loader.py's
# _edge_label_index / _edge_label / _edge_label_time; ids against their node type in C++).
SUPERVISION = {
    "float ids": (dict(index=[[0.5, 1.0], [2.0, 3.0]]), "VolleyTypeError",
                  "edge_label_index must hold integer node ids, got float"),
    "shape [3, 2]": (dict(index=[[0, 1]] * 3), "VolleyValueError",
                     "edge_label_index must have shape [2, M], got [3, 2]"),
    "id out of range": (dict(index=[[0, NODES], [1, 2]]), "VolleyIndexError",
                        f"edge_label_index[0, 1] = {NODES} is out of range for "),
    "negative id": (dict(index=[[0, 1], [-1, 2]]), "VolleyIndexError",
                    "edge_label_index[1, 0] = -1 is out of range for "),
    "labels of another length": (dict(edge_label=np.zeros(5)), "VolleyValueError",
                                 "edge_label must hold one label per supervision edge (300), "
                                 "got shape [5]"),
    "2-d labels": (dict(edge_label=np.zeros((300, 2))), "VolleyValueError",
                   "edge_label must hold one label per supervision edge (300), got shape [300, 2]"),
    "labels with triplets": (dict(edge_label=np.zeros(300), neg_sampling="triplet"),
                             "VolleyValueError", "edge_label must be None for triplet negative"),
    "times without time_attr": (dict(edge_label_time=np.zeros(300, dtype=np.int64)),
                                "VolleyValueError", "edge_label_time was given without time_attr"),
}


@pytest.mark.parametrize("case", list(SUPERVISION), ids=list(SUPERVISION))
def test_supervision_edges_are_checked_once_for_both_kinds(case):
    arguments, error, message = SUPERVISION[case]
    arguments = dict(arguments)
    index = arguments.pop("index", None)
    index = None if index is None else torch.tensor(index)
    for kind, make in _loaders().items():
        if kind == "Data":
            kwargs = {} if index is None else dict(edge_label_index=index)
        else:
            kwargs = dict(edge_label_index=(WRITES, index))
        got = _error(make, {**kwargs, **arguments})
        assert got[0].__name__ == error and message in got[1], (kind, got)
    if "out of range" in message:  # the typed message names the node type of the row
        row_type = "author" if message.startswith("edge_label_index[0") else "paper"
        assert f"node type '{row_type}' with {NODES} nodes" in _error(
            _loaders()["HeteroData"], dict(edge_label_index=(WRITES, index)))[1]
