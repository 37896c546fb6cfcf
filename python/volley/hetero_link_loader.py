"""Link prediction on heterogeneous graphs: PyG's ``LinkNeighborLoader`` over a ``HeteroData``.

``volley.loader.LinkNeighborLoader(data, ..., edge_label_index=(edge_type, index))`` comes here
when ``data`` is a PyG ``HeteroData`` or a ``volley.HeteroDataset``. Each batch takes
``batch_size`` supervision edges of one edge type, draws negatives with the native typed
negative sampler (binary pairs or triplet destinations, each end over its own node type, keyed by
(seed, batch index): the same for any thread count, with every option of the homogeneous
loader), and samples the neighborhoods of their distinct end points with the heterogeneous
sampler.

Example:
    >>> loader = LinkNeighborLoader(data, [10, 5], batch_size=256, shuffle=True,
    ...                             edge_label_index=(("user", "rates", "movie"), None),
    ...                             neg_sampling="binary")
    >>> batch = next(iter(loader))
    >>> batch["user", "rates", "movie"].edge_label_index   # local ids: users, movies
"""

from __future__ import annotations

from typing import Any, Dict, Optional, Tuple

import numpy as np

from . import _policy, _pyg_compat, _temporal, _tensor, _volley
from ._volley import VolleyValueError
from .hetero_loader import HeteroNeighborLoader
from .link_loader import (LinkNeighborLoader, _edge_label, _edge_label_index, _edge_label_time,
                          _link_fields)
from .loader import TYPED_LOADERS, NeighborLoader


def _edge_type(value: Any, data: Any) -> Tuple[str, str, str]:
    """The full ``(src, rel, dst)`` of ``value``: a triple, or a ``(src, dst)`` pair naming one
    edge type of ``data`` (anything with ``edge_types``; as PyG resolves it)."""
    if isinstance(value, str):
        value = tuple(value.split("__"))
    value = tuple(value)
    if len(value) == 3:
        return value  # may be absent from the graph (no message-passing edges of that type)
    if len(value) == 2:
        matches = [t for t in data.edge_types if (t[0], t[2]) == value]
        if len(matches) == 1:
            return matches[0]
        if not matches:  # PyG's default relation: data["a", "b"] is ("a", "to", "b")
            return (value[0], "to", value[1])
        raise VolleyValueError(
            f"edge type {value}: {'no' if not matches else len(matches)} edge types go from "
            f"'{value[0]}' to '{value[1]}' ({matches}); name it as (src, relation, dst)")
    raise VolleyValueError(f"an edge type is (src, relation, dst) or (src, dst), got {value!r}")


class HeteroLinkNeighborLoader(HeteroNeighborLoader, LinkNeighborLoader):  # pylint: disable=too-many-instance-attributes
    """Link-prediction batches of a heterogeneous graph, as PyG's ``LinkNeighborLoader``.

    Args:
        data: a PyG ``HeteroData`` or ``volley.HeteroDataset`` (see ``HeteroNeighborLoader``).
        num_neighbors: fanouts (a list for every edge type, or a dict by edge type).
        edge_label_index: ``(edge_type, index)``: the supervision edges [2, M] of ``edge_type``
            (a triple, or a ``(src, dst)`` pair naming one edge type); ``index`` None: the edge
            type's ``edge_index``. An edge type without message-passing edges is allowed.
        edge_label: labels [M] or None; with binary negatives positives keep their label (plus
            1 when the labels' minimum is 0, as PyG does) and negatives get 0.
        neg_sampling, neg_sampling_ratio: PyG's ``NegativeSampling`` (``"binary"`` /
            ``"triplet"``, ``amount``, and ``weight`` (PyG 2.5: both end types) or
            ``src_weight`` / ``dst_weight`` (PyG 2.8)); negatives are drawn uniformly, or by
            those weights, over the source and destination types' nodes.
        neg_distribution, neg_degree_power: ``"degree"`` draws a source by its out-degree and a
            destination by its in-degree in the supervision edge type, to the power
            ``neg_degree_power`` (ignored when a weight is given).
        reject_existing, max_draws: redraw a negative that is an edge of the supervision edge
            type, up to ``max_draws`` draws.
        exclude_edges, undirected: remove the batch's positive pairs from its sampled edges of
            the supervision edge type, and with ``undirected`` their reverses from every edge
            type going from the destination type to the source type (``rev_*`` types).
        The other arguments are ``HeteroNeighborLoader``'s.

    Each batch is a ``HeteroData`` as ``HeteroNeighborLoader`` gives (the distinct end points
    of each type first, sorted, as ``n_id``'s seeds), plus on the supervision edge type
    ``input_id`` (positions in ``edge_label_index``) and, without negatives or binary,
    ``edge_label_index`` (local ids: row 0 in the source type's ``n_id``, row 1 in the
    destination's) and ``edge_label``; triplet: ``src_index`` on the source type and
    ``dst_pos_index`` / ``dst_neg_index`` ([B] or [B, amount]) on the destination type.

    Raises:
        VolleyValueError / VolleyIndexError: an unknown or ambiguous edge type, an id outside
        its type's range (naming the row and position), labels of the wrong length, labels with
        triplet negatives; ``time_attr`` without ``edge_label_time`` or the reverse, times of the
        wrong length or dtype; an unknown ``neg_distribution``, ``max_draws`` < 1, weights that
        are not finite and non-negative, degrees or weights of an end that are all 0.

    Temporal (``time_attr`` and ``edge_label_time``, one time per supervision edge) and
    ``disjoint`` batches follow PyG: every end point (negatives included) is a seed of its own
    with its edge's time, ``batch`` (per node type, modulo the batch size) names the supervision
    edge, the end points come first in seed order (``edge_label_index`` / ``src_index`` ...
    are positions), ``edge_label_time`` (binary) or ``seed_time`` (triplet) carry the times,
    and under node time each negative is drawn among the nodes of its type at or before its
    edge's time (exactly, as the homogeneous loader; the earliest node when none is).
    """

    _takes_input_nodes = False

    # LinkNeighborLoader's __init__ (its signature, written once): a typed graph's arguments go
    # to _init_typed_link.
    __init__ = LinkNeighborLoader.__init__

    def _init_typed_link(
        self, *, data: Any, num_neighbors: Any, edge_label_index: Any, edge_label: Any,
        edge_label_time: Any, replace: bool, subgraph_type: Any, disjoint: bool,
        temporal_strategy: str, neg_sampling: Any, neg_sampling_ratio: Optional[float],
        time_attr: Optional[str], weight_attr: Optional[str], transform: Any,
        transform_sampler_output: Any, is_sorted: bool, filter_per_worker: Optional[bool],
        neighbor_sampler: Any, directed: bool, exclude_edges: bool, undirected: bool,
        neg_distribution: str, neg_degree_power: float, reject_existing: bool, max_draws: int,
        kwargs: Dict[str, Any], **loader_args: Any,
    ) -> None:
        """``LinkNeighborLoader.__init__``'s body for a typed graph: the node loader's
        (``_init_nodes``: the typed ``NeighborLoader``'s, or the service's), then the
        supervision edges and their negatives."""
        if not (isinstance(edge_label_index, (tuple, list)) and len(edge_label_index) == 2
                and isinstance(edge_label_index[0], (str, tuple))) and not isinstance(
                    edge_label_index, (str, tuple)):
            raise VolleyValueError(
                "a heterogeneous LinkNeighborLoader needs edge_label_index=(edge_type, index) or "
                f"an edge type, got {type(edge_label_index).__name__}")
        if isinstance(edge_label_index, tuple) and len(edge_label_index) in (2, 3) and all(
                isinstance(part, str) for part in edge_label_index):
            edge_label_index = (edge_label_index, None)  # an edge type alone
        self._init_nodes(data, num_neighbors, dict(
            replace=replace, subgraph_type=subgraph_type, disjoint=disjoint, time_attr=time_attr,
            temporal_strategy=temporal_strategy, weight_attr=weight_attr, transform=transform,
            transform_sampler_output=transform_sampler_output, is_sorted=is_sorted,
            filter_per_worker=filter_per_worker, neighbor_sampler=neighbor_sampler,
            directed=directed, **loader_args, **kwargs))
        self.edge_type = _edge_type(edge_label_index[0], self.graph)
        self.edge_label_index = self._label_index(edge_label_index[1])
        self.input_nodes = np.arange(self.edge_label_index.shape[1], dtype=np.int64)
        len(self)  # the epoch policy's checks against the supervision edges (ranks, ...)
        self.neg_sampling = _pyg_compat.negative_sampling(neg_sampling, neg_sampling_ratio)
        self.edge_label = _edge_label(edge_label, len(self.input_nodes), self.neg_sampling[0])
        src_weight, dst_weight = self.neg_sampling[2:]
        ends = (("src", 0, src_weight), ("dst", 2, dst_weight))  # triplet draws no sources
        weights = {
            end: None if weight is None or (end == "src" and self.neg_sampling[0] != "binary")
            else _weights(weight, self._count(self.edge_type[index])) for end, index, weight in ends}
        source, times = ("none", {}) if time_attr is None else _temporal.typed_times(self.data,
                                                                                     time_attr)
        self.edge_label_time = _edge_label_time(edge_label_time, source, len(self.input_nodes))
        node_time = times if source == "node" else {}
        self._time_bounded = any(t in node_time for t in (self.edge_type[0], self.edge_type[2]))
        self.exclude_edges, self.undirected = bool(exclude_edges), bool(undirected)
        distribution, power, draws = _policy.negative_options(neg_distribution, neg_degree_power,
                                                              max_draws)
        self._negatives = self._negative_sampler(weights, node_time, distribution, power,
                                                 bool(reject_existing), draws)
        self._options.input_time = self.edge_label_time  # (loader(index) sets its own)
        self._native = self._native_link_pipeline()

    def _init_nodes(self, data: Any, num_neighbors: Any, args: Dict[str, Any]) -> None:
        """The node loader's part of the link loader over ``data`` (``NeighborLoader.__init__``
        with no input nodes: the typed body of this class's node loader)."""
        NeighborLoader.__init__(self, data, num_neighbors, input_nodes=None, **args)

    def _create_native(self, inputs: Any) -> Any:  # pylint: disable=unused-argument
        return self._native_link_pipeline()

    def _native_link_pipeline(self) -> Any:
        """The homogeneous link loader's C++ pipeline over the typed sampler (its epochs,
        negatives, seeds, workers and gathers: link_loader.h, "Typed graphs"), or None where
        Python builds the batches (no hops, induced or bidirectional subgraphs, partitions over
        the service)."""
        self._tables = {}
        directional = self.subgraph_type == "directional"
        node_tables = [self._native_tables(t, self._node_attrs[t]) for t in self.graph.node_types]
        edge_tables = [self._native_tables(t, self._edge_attrs[t] if directional else {})
                       for t in self.graph.edge_types]
        mode, amount = self.neg_sampling[:2]
        return _volley.LinkLoader(
            self._typed_source(), self.edge_type, self.edge_label_index, self.edge_label,
            self._options,
            None if mode == "none" else self._negatives, mode=mode, amount=float(amount),
            exclude_edges=self.exclude_edges, undirected=self.undirected,
            node_attrs=node_tables, edge_attrs=edge_tables)

    def _to_batch(self, raw: dict) -> Any:
        """The ``HeteroData`` of a native typed link batch (``EpochIterator``)."""
        positions = _tensor.to_numpy(raw["input_id"])
        positives = (self.edge_label_index[0, positions], self.edge_label_index[1, positions])
        batch = self._native_batch(raw, lambda nodes, edges, counts: self._exclude(
            nodes, edges, counts, positives))
        batch[self.edge_type].input_id = _tensor.to_output(raw["input_id"])
        ends = dict(src_index=self.edge_type[0], dst_pos_index=self.edge_type[2],
                    dst_neg_index=self.edge_type[2])
        for key, value in _link_fields(self, raw, _tensor.to_output).items():
            if key == "seed_time":  # on both end types
                batch[self.edge_type[0]].seed_time = batch[self.edge_type[2]].seed_time = value
            elif value is not None:
                batch[ends.get(key, self.edge_type)][key] = value
        return self._delivered(batch)

    def _negative_sampler(self, weights: dict, node_time: dict, distribution: str,
                          degree_power: float, reject_existing: bool, max_draws: int) -> Any:
        """The native sampler of the supervision edge type's negatives (seed 0; reseeded per
        batch with the epoch's sampler seed): each end over its own node type, with its weights
        and node times (negative_sampler.h, "Typed edges")."""
        if weights["src"] is not None or weights["dst"] is not None:
            distribution = "weights"
        src_type, _, dst_type = self.edge_type
        native = getattr(self.graph, "_native", None)
        if native is None:  # partitions over the service: node counts only
            return _volley.NegativeSampler.for_ends(
                self._count(src_type), self._count(dst_type), weights["src"], weights["dst"],
                max_draws, 0)
        return _volley.NegativeSampler.for_edge_type(
            native, self.edge_type, distribution, degree_power, weights["src"], weights["dst"],
            node_time.get(src_type), node_time.get(dst_type), reject_existing, max_draws, 0)

    def _count(self, node_type: str) -> int:
        counts = self.graph.num_nodes_dict
        if node_type not in counts:
            raise VolleyValueError(
                f"edge type {self.edge_type}: unknown node type '{node_type}' (node types: "
                f"{', '.join(counts)})")
        return counts[node_type]

    def _label_index(self, index: Any) -> np.ndarray:
        """The supervision edges (default: every edge of the type), checked as the homogeneous
        loader's (their ids against the node types: the native link loader, naming the type)."""
        if index is None:
            if self.edge_type not in self.graph.edge_types:
                raise VolleyValueError(f"edge type {self.edge_type} has no edges to supervise on")
            index = self.data[self.edge_type].edge_index
        return _edge_label_index(index, None)

    def _exclude(self, nodes: dict, edges: dict, counts: Any,
                 positives: Tuple[np.ndarray, np.ndarray]) -> Tuple[dict, Any]:
        """With ``exclude_edges``: ``edges`` without the batch's positive pairs (global ids),
        from the supervision edge type, and with ``undirected`` their reverses from every edge
        type going from the destination type to the source type; ``counts`` recounted."""
        if not self.exclude_edges:
            return edges, counts
        edges = dict(edges)
        src_type, _, dst_type = self.edge_type
        pairs = {self.edge_type: positives}
        if self.undirected:
            for edge_type in edges:
                if (edge_type[0], edge_type[2]) == (dst_type, src_type):
                    pairs[edge_type] = _union(pairs.get(edge_type), positives[::-1])
        for edge_type, (src, dst) in pairs.items():
            if edge_type in edges:
                edges[edge_type], counts = _without(edge_type, nodes, edges[edge_type], counts,
                                                    src, dst)
        return edges, counts

    def __repr__(self) -> str:
        return "LinkNeighborLoader()"


def _union(first: Optional[Tuple[np.ndarray, np.ndarray]],
           second: Tuple[np.ndarray, np.ndarray]) -> Tuple[np.ndarray, np.ndarray]:
    if first is None:
        return second
    return np.concatenate([first[0], second[0]]), np.concatenate([first[1], second[1]])


def _without(edge_type: Any, nodes: dict, edges: Tuple[Any, Any], counts: Any,
             src: np.ndarray, dst: np.ndarray) -> Tuple[Tuple[Any, Any], Any]:
    """The sampled ``(edge_index, e_id)`` of ``edge_type`` without the edges ``src[i] → dst[i]``
    (global ids), and ``counts`` with that type's edges per hop recounted."""
    import torch

    edge_index, e_id = edges
    if edge_index.shape[1] == 0 or len(src) == 0:
        return edges, counts
    index = edge_index.numpy()
    width = np.uint64(max(int(nodes[edge_type[2]].max()) if nodes[edge_type[2]].numel() else 0,
                          int(dst.max())) + 1)
    sampled = (nodes[edge_type[0]].numpy()[index[0]].astype(np.uint64) * width
               + nodes[edge_type[2]].numpy()[index[1]].astype(np.uint64))
    keep = ~np.isin(sampled, src.astype(np.uint64) * width + dst.astype(np.uint64))
    if keep.all():
        return edges, counts
    kept = (torch.from_numpy(np.ascontiguousarray(index[:, keep])),
            None if e_id is None else e_id[torch.from_numpy(keep)])
    if counts is None:
        return kept, counts
    per_hop = list(counts[1][edge_type])
    bounds = np.cumsum([0] + per_hop)
    per_hop = [int(keep[bounds[h]:bounds[h + 1]].sum()) for h in range(len(per_hop))]
    return kept, (counts[0], {**counts[1], edge_type: per_hop})


def _weights(weight: Any, count: int) -> np.ndarray:
    values = np.asarray(_tensor.to_numpy(weight), dtype=np.float64)
    if values.shape != (count,) or not np.all(np.isfinite(values)) or values.min() < 0 or values.sum() <= 0:
        raise VolleyValueError(
            f"neg_sampling weight must be {count} finite non-negative numbers with a positive sum, "
            f"got shape {list(values.shape)}")
    return values / values.sum()


TYPED_LOADERS["link"] = HeteroLinkNeighborLoader
# LinkNeighborLoader's one signature (its __init__, which this class inherits), for inspect.
HeteroLinkNeighborLoader.__signature__ = LinkNeighborLoader.__signature__  # type: ignore[attr-defined]

__all__ = ["HeteroLinkNeighborLoader"]
