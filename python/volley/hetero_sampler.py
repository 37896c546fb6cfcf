"""Neighbor sampling over a ``HeteroGraph`` (PyG's heterogeneous NeighborLoader semantics).

The sampler is the C++ one of src/volley/sampling/hetero_sampler.h: a pure function of
(graph, seeds, options, batch index), identical for any thread count.

Example:
    >>> sampler = volley.HeteroNeighborSampler(dataset, [15, 10], seed=0)
    >>> batch = sampler.sample({"paper": [3, 7]}, batch_index=0)
    >>> batch["node"]["paper"][:2]                       # the seeds
    >>> batch["edge_index"][("author", "writes", "paper")]  # local ids [src; dst]

Temporal sampling (PyG's ``time_attr`` / ``input_time``): give node times per node type (or edge
times per edge type) and a time per seed; every sampled node and edge is then at or before its
seed's time, in a tree of its own (disjoint, ``batch`` says which):
    >>> sampler = volley.HeteroNeighborSampler(graph, [-1, -1], node_time={"paper": year})
    >>> batch = sampler.sample({"paper": [3, 7]}, seed_time={"paper": [2010, 2015]})
    >>> batch["batch"]["author"]                          # the tree (seed position) of each

On a GPU (``device="cuda"``, ``mode="GPU"`` or ``"UVA"``): the same batches, element for element,
sampled by the CUDA kernels and returned in host memory, disjoint and temporal ones too.
    >>> sampler = volley.HeteroNeighborSampler(graph, [15, 10], device="cuda", mode="UVA")
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Union

import numpy as np

from . import _cuda, _policy, _temporal, _tensor, _volley
from ._volley import HeteroNeighborSampler as _NativeSampler
from ._volley import VolleyTypeError, VolleyValueError
from .hetero import EdgeType, HeteroDataset, HeteroGraph, edge_type_of
from .sampler import NeighborSampler


class HeteroNeighborSampler:
    """Samples multi-hop neighborhoods of typed seeds.

    Args:
        graph: a ``HeteroGraph``, ``HeteroDataset`` or PyG ``HeteroData`` (its graph; with
            ``time_attr``, its times).
        num_neighbors: fanouts per hop: one list for every edge type, or a dict
            ``{edge_type: [...]}`` as PyG takes (keys: tuples or ``"src__rel__dst"`` names).
            ``-1`` takes all neighbors, ``0`` none. A dict must name every edge type unless
            ``default`` is given (as in PyG, a missing edge type is an error).
        replace: sample with replacement.
        weighted: sample ∝ edge weight on the edge types that have weights (others uniform).
        seed: the random seed (default: drawn from torch / numpy's global generator).
        default: with a dict, the fanouts of the edge types it does not name.
        disjoint: every seed grows a tree of its own (PyG's ``disjoint``); results carry
            ``batch``. Temporal sampling is always disjoint.
        node_time: temporal sampling by node time: ``{node_type: int times}``, one per node of
            each timed type (other types are not constrained, as in pyg-lib).
        edge_time: temporal sampling by edge time: ``{edge_type: int times}``, one per edge in
            ``edge_index`` order (edge id order).
        time_attr: with a ``HeteroData``: the node- or edge-level attribute holding the times
            (PyG's ``time_attr``), instead of ``node_time`` / ``edge_time``.
        temporal_strategy: ``"uniform"`` among the admissible neighbors, or ``"last"`` (the
            most recent ones).
        device: ``None``/``"cpu"`` (the CPU sampler), ``"cuda"``, ``"cuda:N"``, ``N`` or a
            ``torch.device``: sample with the CUDA kernels (every edge type placed on that
            device, with the times attached when temporal); the batches equal the CPU
            sampler's, disjoint and temporal ones too, and come back in host memory.
        mode: with a CUDA device, ``"UVA"`` (default: the graph in pinned host memory) or
            ``"GPU"`` (in device memory); ``"CPU"`` samples on the CPU.

    Raises:
        VolleyValueError: bad fanouts (negative below -1, lists of different lengths), fanouts
            for an edge type the graph lacks, a missing edge type: the message names the type.
            Times of an unknown type, of the wrong length or dtype (naming the type), both
            node and edge times, an unknown ``temporal_strategy``, ``weighted`` with times.
        VolleyTypeError: ``graph`` is neither a ``HeteroGraph``, a ``HeteroDataset`` nor a
            ``HeteroData``.
        VolleyValueError: on a CUDA device, a disjoint batch whose trees times the largest
            node type's count pass the int64 range (the message gives both).
        VolleyRuntimeError: a CUDA device in a build without CUDA or on a machine without it.
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
        disjoint: bool = False,
        node_time: Optional[Dict[str, Any]] = None,
        edge_time: Optional[Dict[Any, Any]] = None,
        time_attr: Optional[str] = None,
        temporal_strategy: str = "uniform",
        device: Any = None,
        mode: Optional[str] = None,
    ):
        ordinal, self._mode = _cuda.resolve(device, mode)
        if self._mode == "CPU":
            ordinal = None
        self._device = ordinal
        if time_attr is not None:
            if isinstance(graph, (HeteroGraph, HeteroDataset)) or node_time or edge_time:
                raise VolleyValueError(
                    "time_attr names an attribute of a PyG HeteroData: with a HeteroGraph, pass "
                    "node_time= or edge_time= (and not both kinds)")
            source, times = _temporal.typed_times(graph, time_attr)
            node_time, edge_time = (times, None) if source == "node" else (None, times)
        if isinstance(graph, HeteroDataset):
            graph = graph.graph
        elif hasattr(graph, "edge_types") and not isinstance(graph, HeteroGraph):
            graph = HeteroGraph.from_pyg(graph)
        if not isinstance(graph, HeteroGraph):
            raise VolleyTypeError(
                f"HeteroNeighborSampler takes a HeteroGraph or HeteroDataset, got "
                f"{type(graph).__name__}")
        self._graph = graph
        fanouts, by_type = _policy.check_fanouts(num_neighbors, default, typed=True)
        self._seed = (_tensor.default_seed() if seed is None
                      else _tensor.check_int(seed, "seed", 0, 2**64 - 1))
        if node_time and edge_time:
            raise VolleyValueError("give node_time or edge_time, not both")
        self._time_source = "node" if node_time else "edge" if edge_time else "none"
        self._node_time = {str(t): _temporal.as_times(v, f"node time of node type '{t}'")
                           for t, v in (node_time or {}).items()}
        edge_times = [(edge_type_of(t), _temporal.as_times(
            v, f"edge time of edge type {edge_type_of(t)}")) for t, v in (edge_time or {}).items()]
        self._disjoint = bool(disjoint) or self._time_source != "none"
        # What a copy is built from (``__reduce__``): the options, the times as given.
        self._arguments = dict(
            num_neighbors=num_neighbors, replace=bool(replace), weighted=bool(weighted),
            seed=self._seed, default=default, disjoint=bool(disjoint),
            node_time=dict(self._node_time) or None, edge_time=dict(edge_times) or None,
            temporal_strategy=str(temporal_strategy), device=ordinal, mode=self._mode)
        self._placed = None  # the graph placed for the GPU (a native CudaHeteroGraph)
        # One NeighborSamplerOptions, as every sampler and loader of either graph kind takes them.
        self._native_options = _volley.NeighborSamplerOptions(
            fanouts, replace=bool(replace), weighted=bool(weighted), seed=self._seed,
            disjoint=bool(disjoint), time_source=self._time_source,
            temporal_strategy=str(temporal_strategy))
        self._native_options.fanouts_by_type = by_type
        self._times = (list(self._node_time.items()), edge_times)
        if ordinal is not None:
            native = graph._native
            if self._time_source != "none":  # the GPU reads the times the CPU sampler reads
                native = _volley.attach_hetero_times(native, self._native_options, *self._times)
            self._use_placed(_volley.CudaHeteroGraph.place(native, self._mode, ordinal))
        else:
            self._native = _NativeSampler(graph._native, self._native_options, *self._times)

    def _use_placed(self, placed: Any) -> None:
        """Samples with the CUDA kernels over ``placed`` (a native ``CudaHeteroGraph``: placed
        here, or opened by handle in another process), kept as ``self._placed``."""
        self._placed = placed
        self._device, self._mode = placed.device, placed.mode
        self._native = _NativeSampler(placed, self._native_options, *self._times)

    @property
    def graph(self) -> HeteroGraph:
        """The graph sampled from."""
        return self._graph

    @property
    def device(self) -> Optional[int]:
        """The CUDA device ordinal that samples, or None (the CPU sampler)."""
        return self._device

    @property
    def mode(self) -> str:
        """``"GPU"``, ``"UVA"`` or ``"CPU"``."""
        return self._mode

    @property
    def seed(self) -> int:
        """The random seed."""
        return self._seed

    @property
    def time_source(self) -> str:
        """``"node"``, ``"edge"`` or ``"none"`` (not temporal)."""
        return self._time_source

    @property
    def node_time(self) -> Dict[str, np.ndarray]:
        """The node times by node type (empty unless sampling by node time)."""
        return dict(self._node_time)

    @property
    def disjoint(self) -> bool:
        """Whether every seed grows its own tree (always so when temporal)."""
        return self._disjoint

    def sample(self, seeds: Any, batch_index: int = 0, seed_time: Any = None,
               seed: Optional[int] = None) -> Dict[str, Any]:
        """One batch.

        Args:
            seeds: ``{node_type: ids}`` or a ``(node_type, ids)`` pair; ids distinct per type
                (unless disjoint).
            batch_index: the batch's index (part of every random stream's counter).
            seed_time: temporal sampling: ``{node_type: int times}`` (or, with a pair, the
                times), one per seed; a seed type left out takes its seeds' own node times.
            seed: the seed of the random streams (default: the sampler's ``seed``); a loader
                passes each epoch's seed.

        Returns:
            A dict: ``node`` ``{node_type: global ids}`` (seeds first), ``row`` / ``col``
            ``{edge_type: local ids}`` (row: in the destination type's list, col: in the
            source type's), ``edge_index`` ``{edge_type: [col; row]}`` (PyG's local
            edge_index), ``edge`` ``{edge_type: edge ids}``, ``num_sampled_nodes``
            ``{node_type: per hop}``, ``num_sampled_edges`` ``{edge_type: per hop}``,
            ``batch_size`` ``{node_type: number of seeds}`` (types with seeds); disjoint:
            ``batch`` ``{node_type: tree of each node}`` (the seed's position among all seeds).

        Raises:
            VolleyValueError: an unknown node type (naming it and the known ones), a duplicate
                seed; seed times missing (edge time, or a type without node time), given when
                not temporal, or of the wrong length or dtype.
            VolleyIndexError: a seed outside its type's range.
        """
        if isinstance(seeds, tuple) and len(seeds) == 2 and isinstance(seeds[0], str):
            if seed_time is not None:
                seed_time = {seeds[0]: seed_time}
            seeds = {seeds[0]: seeds[1]}
        if not isinstance(seeds, dict):
            raise VolleyTypeError(
                f"seeds must be a {{node_type: ids}} dict or a (node_type, ids) pair, got "
                f"{type(seeds).__name__}")
        groups = [(str(t), _tensor.as_ids(ids, f"seeds of node type {t}"))
                  for t, ids in seeds.items()]
        batch_index = _tensor.check_int(batch_index, "batch_index", 0, 2**63 - 1)
        seed = None if seed is None else _tensor.check_int(seed, "seed", 0, 2**64 - 1)
        raw = self._native.sample(groups, batch_index, self._seed_times(groups, seed_time), seed)
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
        if "batch" in raw:
            out["batch"] = {t: _tensor.to_output(v) for t, v in zip(node_types, raw["batch"])}
        return out

    def _seed_times(self, groups: List[Any], seed_time: Any) -> List[Optional[np.ndarray]]:
        """Per seed group, its int64 times or None (the sampler defaults to node times)."""
        if seed_time is None:
            return []
        if self._time_source == "none":
            raise VolleyValueError(
                "seed_time was given, but the sampler has no times (node_time / edge_time / "
                "time_attr)")
        if not isinstance(seed_time, dict):
            raise VolleyTypeError(
                f"seed_time must be a {{node_type: times}} dict, got {type(seed_time).__name__}")
        unknown = set(map(str, seed_time)) - {t for t, _ in groups}
        if unknown:
            raise VolleyValueError(
                f"seed_time for node type(s) {sorted(unknown)} without seeds")
        return [None if seed_time.get(t) is None else
                _temporal.as_times(seed_time[t], f"seed times of node type '{t}'")
                for t, _ in groups]

    # NeighborSampler's, for either graph kind: the graph shared, a GPU placement moved once to
    # memory other processes open; pickled as the graph, the options and the placement.
    share_memory_ = NeighborSampler.share_memory_
    __reduce__ = NeighborSampler.__reduce__

    def _pickled_options(self) -> dict:
        return dict(self._arguments, device=None, mode=None)

    def __repr__(self) -> str:
        return f"HeteroNeighborSampler(graph={self._graph!r}, seed={self._seed})"

