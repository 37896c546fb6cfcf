"""Negative sampling for link prediction, seeded like neighbor sampling.

    neg = volley.NegativeSampler(graph, distribution="degree", reject_existing=True, seed=0)
    src, dst = neg.sample_pairs(2048, batch_index=b)          # PyG's "binary" negatives
    dst_neg = neg.sample_destinations(src_pos, 5, batch_index=b)  # "triplet": 5 per source

Negative ``i`` of batch ``b`` is a pure function of (graph, options, ``b``, ``i``): the result is
the same for any thread count, and a shorter request is a prefix of a longer one. The work runs
in C++ (``volley/sampling/negative_sampler.h``) with the GIL released.

``volley.loader.LinkNeighborLoader`` draws its negatives with this sampler (in C++, per batch);
the class is also usable on its own.
"""

from __future__ import annotations

from typing import Any, Tuple

import numpy as np

from . import _tensor, _volley
from ._volley import VolleyTypeError, VolleyValueError
from .graph import Graph

DISTRIBUTIONS = ("uniform", "degree")


class NegativeSampler:
    """Draws node pairs (or destinations for given sources) as link-prediction negatives.

    Args:
        graph: a ``volley.Graph`` (or a ``[2, E]`` edge index, converted with
            ``Graph.from_edge_index``).
        distribution: ``"uniform"`` (every node equally likely), ``"degree"`` (probability
            proportional to ``degree ** degree_power``, the degree being the node's number of
            in-neighbors in the default orientation; nodes of degree 0 are never drawn), or a
            float array of one non-negative weight per node (probability proportional to it).
        degree_power: the exponent of ``"degree"`` (word2vec's 0.75 by default).
        reject_existing: draw again a negative that is an edge of the graph (``src -> dst``),
            up to ``max_draws`` draws; a negative still an edge after that is kept and counted
            in ``kept_existing`` (e.g. a source linked to nearly every node).
        max_draws: draws per negative with ``reject_existing`` (at least 1).
        seed: the random seed.

    Raises:
        VolleyValueError: an unknown distribution, bad weights (wrong length, negative, not
            finite, all zero), a graph with no nodes, ``max_draws < 1``, every degree 0 with
            ``"degree"``, a ``degree_power`` that is not finite, a negative ``seed``.
        VolleyTypeError: ``distribution`` neither a name nor an array; ``max_draws`` or
            ``seed`` not an integer, ``degree_power`` not a number.
    """

    def __init__(
        self,
        graph: Any,
        distribution: Any = "uniform",
        *,
        degree_power: float = 0.75,
        reject_existing: bool = False,
        max_draws: int = 16,
        seed: int = 0,
    ):
        if not isinstance(graph, Graph):
            graph = Graph.from_edge_index(graph)
        self.graph = graph
        weights = None
        if isinstance(distribution, str):
            if distribution not in DISTRIBUTIONS:
                raise VolleyValueError(
                    f"distribution must be one of {DISTRIBUTIONS} or a weight array, "
                    f"got {distribution!r}"
                )
            kind = distribution
        else:
            try:
                weights = np.ascontiguousarray(_tensor.to_numpy(distribution), dtype=np.float64)
            except (TypeError, ValueError) as error:
                raise VolleyTypeError(
                    "distribution must be 'uniform', 'degree' or an array of node weights, "
                    f"got {type(distribution).__name__}"
                ) from error
            kind = "weights"
        self.distribution = kind
        self.kept_existing = 0
        max_draws = _tensor.check_int(max_draws, "max_draws", -(2**31), 2**31 - 1)  # >= 1: C++
        self._native = _volley.NegativeSampler(
            graph._csr, kind, _tensor.check_real(degree_power, "degree_power"), weights,
            bool(reject_existing), max_draws, _tensor.check_int(seed, "seed", 0, 2**64 - 1)
        )

    def sample_pairs(self, count: int, batch_index: int = 0) -> Tuple[Any, Any]:
        """``count`` random ``(src, dst)`` pairs (int64 tensors), each end drawn independently.

        ``kept_existing`` then holds how many of them are edges despite ``reject_existing``.
        """
        src, dst, kept = self._native.sample_pairs(_tensor.check_int(count, "count", 0, 2**63 - 1),
                                                   _batch_index(batch_index))
        self.kept_existing = kept
        return _tensor.to_output(src), _tensor.to_output(dst)

    def sample_destinations(self, sources: Any, per_source: int, batch_index: int = 0) -> Any:
        """``per_source`` negative destinations for each source id, as one int64 tensor
        ``[len(sources) * per_source]`` (the negatives of source ``i`` at ``i * per_source``..).

        Raises:
            VolleyIndexError: a source id out of range (naming it and its position).
            VolleyTypeError: sources that are not integers.
        """
        ids = _tensor.to_numpy(sources)
        if ids.size and not np.issubdtype(ids.dtype, np.integer):
            raise VolleyTypeError(f"sources must be integer node ids, got dtype {ids.dtype}")
        ids = np.ascontiguousarray(ids, dtype=np.int64).reshape(-1)
        per_source = _tensor.check_int(per_source, "per_source", 0, 2**63 - 1)
        dst, kept = self._native.sample_destinations(ids, per_source, _batch_index(batch_index))
        self.kept_existing = kept
        return _tensor.to_output(dst)

    def has_edge(self, src: int, dst: int) -> bool:
        """Whether ``src -> dst`` is an edge of the graph (VolleyIndexError for an id out of
        range)."""
        return self._native.has_edge(_tensor.check_int(src, "src", -(2**63), 2**63 - 1),
                                     _tensor.check_int(dst, "dst", -(2**63), 2**63 - 1))


def _batch_index(batch_index: Any) -> int:
    return _tensor.check_int(batch_index, "batch_index", 0, 2**64 - 1)
