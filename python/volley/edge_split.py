"""Edge splits for link prediction, written as a dataset directory (C++, streaming, parallel).

    >>> summary = volley.split_edges("data/cora", "/tmp/cora-link", val=0.05, test=0.1,
    ...                              undirected=True, seed=0)
    >>> ds = volley.load_dataset("/tmp/cora-link")
    >>> ds.graph                   # the training message-passing graph (no val / test edges)
    >>> ds.train_edges, ds.val_edges, ds.val_neg_edges   # int64 [2, M] (src, dst) pairs

The work is ``volley/graph/edge_split.h``: no Python loop, so a graph of tens of millions of edges
splits in seconds (see ``bench/RESULTS.md``).
"""

from __future__ import annotations

import os
from typing import Any, Dict, Union

from . import _tensor
from ._volley import VolleyTypeError
from ._volley import split_edges as _split_edges

PathLike = Union[str, "os.PathLike[str]"]


def split_edges(
    dataset: Any,
    out: PathLike,
    *,
    val: float = 0.05,
    test: float = 0.1,
    undirected: bool = False,
    seed: int = 0,
    neg_ratio: float = 1.0,
) -> Dict[str, int]:
    """Splits a dataset's edges into train / validation / test for link prediction.

    An edge (src, dst) belongs to one *unit*: the ordered pair, or with ``undirected`` the
    unordered pair, so that an edge and its reverse always land on the same side (parallel edges
    are one unit too). The units are shuffled with ``seed``; the first ``floor(val * U)`` are
    validation, the next ``floor(test * U)`` test, the rest training. ``out`` receives a dataset
    directory with:

    - the training message-passing graph (every input edge of a training unit, in the input's
      orientation, with its edge ids and weights), and the input's features, labels and node
      splits;
    - ``train_edges``, ``val_edges``, ``test_edges``: int64 [2, M] (src, dst) pairs, one per unit
      (``src <= dst`` with ``undirected``), in the seeded order;
    - ``val_neg_edges``, ``test_neg_edges``: ``round(neg_ratio * M)`` fixed negatives each, pairs
      of distinct nodes that are no edge (in either direction with ``undirected``), all different
      from each other; none when ``neg_ratio`` is 0.

    The result is a pure function of (dataset, arguments): the same bytes for any thread count.
    Runs in C++ with the GIL released, with a progress bar on a terminal.

    Args:
        dataset: a dataset directory, or a ``volley.Dataset``.
        out: the directory to write (must not exist, or be empty).
        val: fraction of the units for validation, in [0, 1).
        test: fraction of the units for testing, in [0, 1); ``val + test < 1``.
        undirected: treat an edge and its reverse as one edge.
        seed: the shuffle's and the negatives' seed.
        neg_ratio: negatives per validation / test pair (>= 0).

    Returns:
        A dict of counts: ``num_units``, ``num_train``, ``num_val``, ``num_test``,
        ``num_val_neg``, ``num_test_neg``, ``num_train_graph_edges``.

    Raises:
        VolleyValueError: a fraction outside [0, 1), fractions summing to 1 or more, a negative
            ``neg_ratio``, or too few non-edges for the negatives asked.
        VolleyOSError: ``dataset`` is no dataset directory, or ``out`` exists and is not an empty
            directory, or cannot be written.
        VolleyTypeError: ``dataset`` is neither a path nor a ``volley.Dataset``, or a number
            given as something else (a string, a float ``seed``).
    """
    from .dataset import Dataset

    if isinstance(dataset, Dataset):
        source: Any = dataset._native
    elif isinstance(dataset, (str, os.PathLike)):
        source = os.fspath(dataset)
    else:
        raise VolleyTypeError(
            "split_edges() takes a dataset directory or a volley.Dataset, "
            f"got {type(dataset).__name__}"
        )
    return dict(
        _split_edges(
            source,
            os.fspath(out),
            val=_tensor.check_real(val, "val"),
            test=_tensor.check_real(test, "test"),
            undirected=bool(undirected),
            seed=_tensor.check_int(seed, "seed", 0, 2**64 - 1),
            neg_ratio=_tensor.check_real(neg_ratio, "neg_ratio"),
        )
    )
