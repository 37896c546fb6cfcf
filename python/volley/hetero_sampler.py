"""Neighbor sampling over a ``HeteroGraph`` (PyG's heterogeneous NeighborLoader semantics).

The sampler is the C++ one of src/volley/sampling/hetero_sampler.h: a pure function of
(graph, seeds, options, batch index), identical for any thread count.

Example:
    >>> sampler = volley.HeteroNeighborSampler(dataset, [15, 10], seed=0)
    >>> batch = sampler.sample({"paper": [3, 7]}, batch_index=0)
    >>> batch["node"]["paper"][:2]                       # the seeds
    >>> batch["edge_index"][("author", "writes", "paper")]  # local ids [src; dst]
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Union

import numpy as np

from . import _tensor
from ._volley import HeteroNeighborSampler as _NativeSampler
from ._volley import VolleyTypeError
from .hetero import EdgeType, HeteroDataset, HeteroGraph, edge_type_of


class HeteroNeighborSampler:
    """Samples multi-hop neighborhoods of typed seeds.

    Args:
        graph: a ``HeteroGraph`` or ``HeteroDataset``.
        num_neighbors: fanouts per hop: one list for every edge type, or a dict
            ``{edge_type: [...]}`` as PyG takes (keys: tuples or ``"src__rel__dst"`` names).
            ``-1`` takes all neighbors, ``0`` none. A dict must name every edge type unless
            ``default`` is given (as in PyG, a missing edge type is an error).
        replace: sample with replacement.
        weighted: sample ∝ edge weight on the edge types that have weights (others uniform).
        seed: the random seed (default: drawn from torch / numpy's global generator).
        default: with a dict, the fanouts of the edge types it does not name.

    Raises:
        VolleyValueError: bad fanouts (negative below -1, lists of different lengths), fanouts
            for an edge type the graph lacks, a missing edge type: the message names the type.
        VolleyTypeError: ``graph`` is neither a ``HeteroGraph`` nor a ``HeteroDataset``.
    """

    def __init__(
        self,
        graph: Union[HeteroGraph, HeteroDataset],
        num_neighbors: Union[List[int], Dict[Any, List[int]]],
        *,
        replace: bool = False,
        weighted: bool = False,
        seed: Optional[int] = None,
        default: Optional[List[int]] = None,
    ):
        if isinstance(graph, HeteroDataset):
            graph = graph.graph
        if not isinstance(graph, HeteroGraph):
            raise VolleyTypeError(
                f"HeteroNeighborSampler takes a HeteroGraph or HeteroDataset, got "
                f"{type(graph).__name__}")
        self._graph = graph
        if isinstance(num_neighbors, dict):
            fanouts = [int(k) for k in (default or [])]
            by_type = [(edge_type_of(k), [int(n) for n in v]) for k, v in num_neighbors.items()]
        else:
            fanouts = [int(k) for k in num_neighbors]
            by_type = []
        self._seed = _tensor.default_seed() if seed is None else int(seed)
        self._native = _NativeSampler(graph._native, fanouts, by_type, replace=bool(replace),
                                      weighted=bool(weighted), seed=self._seed)

    @property
    def graph(self) -> HeteroGraph:
        """The graph sampled from."""
        return self._graph

    @property
    def seed(self) -> int:
        """The random seed."""
        return self._seed

    def sample(self, seeds: Any, batch_index: int = 0) -> Dict[str, Any]:
        """One batch.

        Args:
            seeds: ``{node_type: ids}`` or a ``(node_type, ids)`` pair; ids distinct per type.
            batch_index: the batch's index (part of every random stream's counter).

        Returns:
            A dict: ``node`` ``{node_type: global ids}`` (seeds first), ``row`` / ``col``
            ``{edge_type: local ids}`` (row: in the destination type's list, col: in the
            source type's), ``edge_index`` ``{edge_type: [col; row]}`` (PyG's local
            edge_index), ``edge`` ``{edge_type: edge ids}``, ``num_sampled_nodes``
            ``{node_type: per hop}``, ``num_sampled_edges`` ``{edge_type: per hop}``,
            ``batch_size`` ``{node_type: number of seeds}`` (types with seeds).

        Raises:
            VolleyValueError: an unknown node type (naming it and the known ones), a duplicate
                seed.
            VolleyIndexError: a seed outside its type's range.
        """
        if isinstance(seeds, tuple) and len(seeds) == 2 and isinstance(seeds[0], str):
            seeds = {seeds[0]: seeds[1]}
        if not isinstance(seeds, dict):
            raise VolleyTypeError(
                f"seeds must be a {{node_type: ids}} dict or a (node_type, ids) pair, got "
                f"{type(seeds).__name__}")
        groups = [(str(t), _tensor.as_ids(ids, f"seeds of node type {t}"))
                  for t, ids in seeds.items()]
        raw = self._native.sample(groups, int(batch_index))
        node_types = self._graph.node_types
        edge_types: List[EdgeType] = self._graph.edge_types
        out: Dict[str, Any] = {
            "node": {t: _tensor.to_output(v) for t, v in zip(node_types, raw["nodes"])},
            "row": {t: _tensor.to_output(v) for t, v in zip(edge_types, raw["rows"])},
            "col": {t: _tensor.to_output(v) for t, v in zip(edge_types, raw["cols"])},
            "edge": {t: _tensor.to_output(v) for t, v in zip(edge_types, raw["edge_ids"])},
            "edge_index": {
                t: _tensor.to_output(np.stack([c, r]))
                for t, r, c in zip(edge_types, raw["rows"], raw["cols"])
            },
            "num_sampled_nodes": dict(zip(node_types, raw["nodes_per_hop"])),
            "num_sampled_edges": dict(zip(edge_types, raw["edges_per_hop"])),
            "batch_size": {t: n for t, n in zip(node_types, raw["num_seeds"]) if t in seeds},
        }
        return out

    def __repr__(self) -> str:
        return f"HeteroNeighborSampler(graph={self._graph!r}, seed={self._seed})"
