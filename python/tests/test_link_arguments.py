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
        "HeteroData": lambda **kw: LinkNeighborLoader(typed, [2], edge_label_index=(WRITES, None),
                                                      **kw),
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
