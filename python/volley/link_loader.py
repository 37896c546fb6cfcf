"""``volley.loader.LinkNeighborLoader``: PyG's ``LinkNeighborLoader`` on Volley's C++ pipeline.

Change one import::

    # from torch_geometric.loader import LinkNeighborLoader
    from volley.loader import LinkNeighborLoader

    loader = LinkNeighborLoader(train_data, num_neighbors=[10, 10], batch_size=256,
                                edge_label_index=train_data.edge_label_index,
                                edge_label=train_data.edge_label,
                                neg_sampling="binary", shuffle=True)
    for batch in loader:
        h = model(batch.x, batch.edge_index)
        src, dst = batch.edge_label_index
        loss = F.binary_cross_entropy_with_logits((h[src] * h[dst]).sum(-1), batch.edge_label)

Negatives are drawn in C++ (``volley.NegativeSampler``'s draws), a pure function of the seed,
the epoch and the batch index, identical for any number of worker threads.
"""

from __future__ import annotations

import inspect
import os
from typing import Any, Callable, List, Optional, Sequence

import numpy as np

from . import _policy, _pyg_compat, _temporal, _tensor, _volley
from .dataset import Dataset
from ._data_loader import LoaderBase
from .loader import TYPED_LOADERS, NeighborLoader

_LINK_KEYS = ("edge_label", "edge_label_index", "edge_label_time")


def _edge_label_index(value: Any, num_edges_default: Any) -> np.ndarray:
    if value is None:
        value = num_edges_default
    if isinstance(value, (tuple, list)) and len(value) == 2 and isinstance(value[0], (str, tuple)):
        raise _volley.VolleyValueError(
            f"edge_label_index=({value[0]!r}, ...) names an edge type: that needs a HeteroData or "
            "volley.HeteroDataset, not a homogeneous graph"
        )
    index = _tensor.to_numpy(value)
    if index.size and not np.issubdtype(index.dtype, np.integer):
        raise _volley.VolleyTypeError(f"edge_label_index must hold integer node ids, got {index.dtype}")
    index = np.ascontiguousarray(index, dtype=np.int64)
    if index.ndim != 2 or index.shape[0] != 2:
        raise _volley.VolleyValueError(
            f"edge_label_index must have shape [2, M], got {list(index.shape)}"
        )
    return index


def _edge_label_time(value: Any, time_source: str, count: int) -> Optional[np.ndarray]:
    """``edge_label_time`` checked: int64 [count] with ``time_attr``, None without (PyG's
    pairing of the two); VolleyValueError naming what is wrong."""
    if time_source == "none":
        if value is not None:
            raise _volley.VolleyValueError(
                "edge_label_time was given without time_attr: name the node or edge time to "
                "sample by"
            )
        return None
    if value is None:
        raise _volley.VolleyValueError(
            f"temporal link sampling (time_attr, {time_source} time) needs edge_label_time: "
            "one time per supervision edge"
        )
    times = _tensor.to_numpy(value)
    if times.ndim != 1 or times.shape[0] != count:
        raise _volley.VolleyValueError(
            f"edge_label_time must have one entry per supervision edge ({count}), got shape "
            f"{list(times.shape)}"
        )
    return _tensor.int64_times(times, "edge_label_time")


def _edge_label(value: Any, count: int, mode: str) -> Optional[np.ndarray]:
    """``edge_label`` checked (one label per supervision edge; none with triplet negatives, as
    in PyG), moved up by one when binary negatives take the label 0 (PyG); both graph kinds."""
    if value is None:
        return None
    if mode == "triplet":
        raise _volley.VolleyValueError(
            "edge_label must be None for triplet negative sampling (as in PyG)")
    labels = _tensor.to_numpy(value)
    if labels.ndim != 1 or labels.shape[0] != count:
        raise _volley.VolleyValueError(
            f"edge_label must hold one label per supervision edge ({count}), got shape "
            f"{list(labels.shape)}")
    return labels + 1 if mode == "binary" and labels.size and labels.min() == 0 else labels


def _link_fields(loader: Any, raw: dict, out: Callable[[Any], Any]) -> dict:
    """A link batch's own fields, either graph kind (a typed batch puts them on the end types and
    the supervision edge type): triplet ``src_index``, ``dst_pos_index``, ``dst_neg_index`` and,
    temporal, ``seed_time`` (the sources' times); else ``edge_label_index``, ``edge_label`` and,
    temporal, ``edge_label_time``."""
    mode, amount = (loader.neg_sampling or ("none", 1.0))[:2]
    times = None
    if loader.edge_label_time is not None:
        times = loader.edge_label_time[_tensor.to_numpy(raw["input_id"])]
    if mode == "triplet":
        dst_neg = out(raw["dst_neg_index"])
        fields = dict(src_index=out(raw["src_index"]), dst_pos_index=out(raw["dst_pos_index"]),
                      dst_neg_index=dst_neg.reshape(-1) if amount == 1 else dst_neg)  # PyG: [B]
        if times is not None:  # PyG: the sources' times
            fields["seed_time"] = out(times)
        return fields
    fields = dict(edge_label_index=out(raw["edge_label_index"]), edge_label=out(raw["edge_label"]))
    if times is not None:  # PyG: positives', then negative j takes j mod B's
        pairs = _tensor.shape_of(fields["edge_label_index"])[1]
        fields["edge_label_time"] = out(np.resize(times, pairs) if times.size else times)
    return fields


class LinkNeighborLoader(NeighborLoader):
    """Mini-batches for link prediction: supervision edges, negatives, and the sampled
    neighborhood of every end point, as PyG's ``torch_geometric.loader.LinkNeighborLoader``.

    Batches are PyG ``Data`` (``volley.loader.Batch`` without PyG) with PyG's fields:
    ``x``, ``y`` and every other node / edge attribute of ``data`` (indexed by ``n_id`` /
    ``e_id``), ``edge_index``, ``n_id`` (the distinct end points of the batch's positive and
    negative pairs, sorted, first), ``e_id``, ``input_id`` (positions in ``edge_label_index``),
    ``num_sampled_nodes`` / ``num_sampled_edges``, and

    * no negatives or ``"binary"``: ``edge_label_index`` [2, L] local ids into ``n_id`` (the
      batch's positives first, then ``ceil(amount × B)`` random pairs) and ``edge_label``
      (``edge_label`` given: its values, plus 1 when its minimum is 0, as PyG does, and 0 for
      negatives; else 1.0 / 0.0; None without negatives and without labels);
    * ``"triplet"``: ``src_index`` [B], ``dst_pos_index`` [B] and ``dst_neg_index``
      [B, amount] ([B] when amount is 1) local ids.

    Args:
        data: a PyG ``Data`` or a ``volley.Dataset`` (homogeneous).
        num_neighbors: fanout per hop; ``-1`` takes all neighbors.
        edge_label_index: supervision edges [2, M] (tensor / array); None: ``data.edge_index``.
        edge_label: labels [M] (any numeric dtype), or None. Not with ``"triplet"``.
        edge_label_time: with ``time_attr``, the time of each supervision edge [M] (integers):
            both end points are sampled with it as their seed time (neighbors no later than it,
            disjoint per end point, as PyG); negatives take their positive's time and, with node
            time, are drawn among the nodes no later than it (PyG's rule; the earliest node when
            none is). Batches then carry ``edge_label_time`` (``seed_time`` for ``"triplet"``)
            and ``batch``.
        time_attr: the node or edge time of ``data`` to sample by (as in ``NeighborLoader``).
        replace: as in ``volley.loader.NeighborLoader``, like the arguments below.
        subgraph_type, weight_attr, transform, transform_sampler_output: as there.
        is_sorted, filter_per_worker, neighbor_sampler, directed: as there.
        disjoint: each end point its own subgraph (PyG's ``disjoint=True``): ``n_id`` starts
            with the end points as they come (sources, then destinations, then triplet
            negatives; no dedupe), ``batch`` gives each node's supervision edge (position in
            the batch, negatives by position modulo the batch, as PyG). Forced by temporal
            sampling.
        temporal_strategy: ``"uniform"`` or ``"last"``; no effect without temporal sampling.
        neg_sampling: PyG's ``NegativeSampling(mode, amount, weight)``, ``"binary"`` /
            ``"triplet"`` (amount 1) or a dict of those arguments; ``weight`` [N] draws nodes
            proportionally to it (else uniformly, or see ``neg_distribution``).
        neg_sampling_ratio: PyG's deprecated spelling of ``NegativeSampling("binary", ratio)``.
        batch_size: positive supervision edges per batch.
        shuffle, drop_last, num_workers, pin_memory, generator: as in ``NeighborLoader``.
        kwargs: the ``DataLoader`` arguments that only tune PyG's worker processes: no effect.

    Other Parameters:
        seed, weighted, prefetch, copy, feature_dtype: as in ``NeighborLoader``.
        rank, world_size: as there; ranks share out the supervision edges.
        exclude_edges: remove each batch's positive edges from its message-passing
            ``edge_index`` (no leakage without a separate split); with ``undirected`` their
            reverses too. PyG has no such option: it expects disjoint message-passing and
            supervision edges (``RandomLinkSplit``).
        undirected: see ``exclude_edges``.
        neg_distribution: ``"uniform"`` (PyG's) or ``"degree"`` (P(v) ∝ degree^neg_degree_power,
            word2vec's 0.75 by default); ignored when ``neg_sampling`` has a ``weight``.
        neg_degree_power: see ``neg_distribution``.
        reject_existing: redraw negatives that are edges of the graph (up to ``max_draws``
            draws each; those still edges are kept, counted in ``batch.negatives_kept_existing``
            of the native batch). PyG does not reject.
        max_draws: see ``reject_existing``.
        default: for a ``HeteroData`` with a dict ``num_neighbors``, the fanouts of the edge types
            it leaves out (as in ``NeighborLoader``).

    Raises:
        VolleyValueError / VolleyIndexError: an id of ``edge_label_index`` out of range (naming
        it and its position), ``edge_label`` of the wrong length, a negative or non-finite
        amount, labels with triplet sampling. An empty ``edge_label_index`` is an epoch without
        batches. VolleyNotImplementedError: temporal, disjoint or heterogeneous input.
    """

    edge_label_time: Optional[np.ndarray] = None  # int64 [M] under temporal sampling
    _reserved_keys = _LINK_KEYS

    def __new__(cls, data: Any = None, *args: Any, **kwargs: Any) -> Any:
        """HeteroData / volley.HeteroDataset: the heterogeneous link loader."""
        if cls is LinkNeighborLoader and _pyg_compat.is_typed_input(data):
            return object.__new__(TYPED_LOADERS["link"])  # initialised by Python, as a subclass
        return object.__new__(cls)

    def __init__(
        self,
        data: Any,
        num_neighbors: Sequence[int],
        edge_label_index: Any = None,
        edge_label: Any = None,
        edge_label_time: Any = None,
        replace: bool = False,
        subgraph_type: Any = "directional",
        disjoint: bool = False,
        temporal_strategy: str = "uniform",
        neg_sampling: Any = None,
        neg_sampling_ratio: Optional[float] = None,
        time_attr: Optional[str] = None,
        weight_attr: Optional[str] = None,
        transform: Optional[Callable[[Any], Any]] = None,
        transform_sampler_output: Optional[Callable[[Any], Any]] = None,
        is_sorted: bool = False,
        filter_per_worker: Optional[bool] = None,
        neighbor_sampler: Any = None,
        directed: bool = True,
        *,
        batch_size: int = 1,
        shuffle: bool = False,
        num_workers: int = 0,
        drop_last: bool = False,
        pin_memory: bool = False,
        generator: Any = None,
        seed: Optional[int] = None,
        weighted: bool = False,
        prefetch: Optional[int] = None,
        copy: bool = False,
        feature_dtype: Optional[str] = None,
        rank: Optional[int] = None,
        world_size: Optional[int] = None,
        exclude_edges: bool = False,
        undirected: bool = False,
        neg_distribution: str = "uniform",
        neg_degree_power: float = 0.75,
        reject_existing: bool = False,
        max_draws: int = 16,
        _on_batch_start: Optional[Callable[[int], None]] = None,
        default: Optional[List[int]] = None,
        **kwargs: Any,
    ):
        if self._typed:  # a HeteroData: the same signature, the typed link loader's body
            self._init_typed_link(**{k: v for k, v in locals().items()
                                     if k not in ("self", "__class__")})
            return
        if default is not None:  # one fanout list: refused as any argument PyG does not take
            kwargs["default"] = default
        data, seed = _pyg_compat.read_loader_arguments(
            self, data, kwargs, temporal_strategy=temporal_strategy, neighbor_sampler=neighbor_sampler,
            subgraph_type=subgraph_type, directed=directed, is_sorted=is_sorted,
            filter_per_worker=filter_per_worker, pin_memory=pin_memory, seed=seed,
            transform_sampler_output=transform_sampler_output, generator=generator)
        kind = self.subgraph_type
        self.device, self.mode = None, "CPU"
        graph, x, y = self._unpack(data, weighted, weight_attr)
        graph, time_source = _temporal.attach(graph, data, time_attr, isinstance(data, Dataset))
        self.disjoint = bool(disjoint) or time_source != "none"  # PyG: temporal means disjoint
        self.data, self.graph = data, graph
        self._row_settings = (feature_dtype, None, None)
        self._bind_rows(x, y)
        self._link_inputs(data, edge_label_index, edge_label, neg_sampling, neg_sampling_ratio)
        self.edge_label_time = _edge_label_time(
            edge_label_time, time_source, self.edge_label_index.shape[1]
        )
        distribution, power, draws = _policy.negative_options(neg_distribution, neg_degree_power,
                                                              max_draws)
        self._link_options = dict(
            distribution="weights" if self._weights is not None else distribution,
            degree_power=power,
            weights=self._weights,
            reject_existing=bool(reject_existing),
            max_draws=draws,
            exclude_edges=bool(exclude_edges),
            undirected=bool(undirected),
        )
        self._setup(
            graph.num_nodes,
            num_neighbors,
            batch_size=batch_size,
            input_nodes=None,
            shuffle=shuffle,
            num_workers=num_workers if num_workers else (os.cpu_count() or 1),
            seed=seed,
            drop_last=drop_last,
            copy=copy,
            transform=transform,
            rank=rank,
            world_size=world_size,
            prefetch=prefetch,
            replace=replace,
            weighted=weighted or weight_attr is not None,
            feature_dtype=self._feature_dtype,
            on_batch_start=_on_batch_start,
            subgraph_type=kind,
            disjoint=self.disjoint,
            temporal=(time_source, temporal_strategy, None, graph),
        )

    # ``loader(index)`` takes positions of the supervision edges, as PyG's collate_fn; a
    # framework sampler's batches are built by it, one at a time.
    collate_fn = LoaderBase.collate_fn
    _sampler_native = LoaderBase._sampler_native

    def _input_times(self, temporal: tuple) -> Optional[np.ndarray]:
        return self.edge_label_time  # the native link loader's input_time: one per edge

    def _link_inputs(self, data, edge_label_index, edge_label, neg_sampling, ratio) -> None:
        """Supervision edges, labels and negative sampling, checked and converted."""
        default = None if isinstance(data, Dataset) else getattr(data, "edge_index", None)
        if edge_label_index is None and default is None:
            raise _volley.VolleyValueError("edge_label_index is needed for a volley.Dataset")
        self.edge_label_index = _edge_label_index(edge_label_index, default)
        mode, amount, src_weight, weight = _pyg_compat.negative_sampling(neg_sampling, ratio)
        if mode == "binary" and src_weight is not weight:
            raise _volley.VolleyNotImplementedError(
                "binary negatives with different src_weight and dst_weight: a homogeneous graph's "
                "negatives are drawn from one distribution (give weight, or the same tensor twice)"
            )
        self.neg_sampling = (mode, amount) if mode != "none" else None
        self.edge_label = _edge_label(edge_label, self.edge_label_index.shape[1], mode)
        self._weights = None
        if weight is not None:
            self._weights = np.ascontiguousarray(_tensor.to_numpy(weight), dtype=np.float64).reshape(-1)

    def _create_native(self, input_nodes: Optional[np.ndarray]) -> Any:
        mode = self.neg_sampling[0] if self.neg_sampling else "none"
        amount = self.neg_sampling[1] if self.neg_sampling else 1.0
        return _volley.LinkLoader(
            *self._rows,
            self.edge_label_index,
            self.edge_label,
            self._options,
            mode=mode,
            amount=amount,
            node_attrs=[(t.name, t.rows) for t in self._node_tables],
            edge_attrs=[(t.name, t.rows) for t in self._edge_tables],
            **self._link_options,
        )

    def __call__(self, index: Any) -> Any:
        """The batch of the supervision edges at positions ``index`` of ``edge_label_index``
        (a list, tensor or array of positions), as PyG's ``loader(index)``: one batch with the
        loader's options and seed (batch index 0 of the current epoch), negatives drawn for it;
        ``input_id`` holds ``index``. VolleyIndexError for a position out of range."""
        self._refresh_attributes()
        positions = np.ascontiguousarray(_tensor.to_numpy(index)).reshape(-1)
        if positions.dtype.kind not in "iu":
            raise _volley.VolleyTypeError(f"index must hold integer positions, got {positions.dtype}")
        positions = positions.astype(np.int64, copy=False)
        count = self.edge_label_index.shape[1]
        bad = np.flatnonzero((positions < 0) | (positions >= count))
        if bad.size:
            raise _volley.VolleyIndexError(
                f"index[{bad[0]}] = {positions[bad[0]]} is not a position of edge_label_index "
                f"(it has {count} edges)"
            )
        saved = (self.edge_label_index, self.edge_label, self._options)
        self.edge_label_index = np.ascontiguousarray(saved[0][:, positions])
        if saved[1] is not None:
            self.edge_label = _tensor.to_input(_tensor.to_numpy(saved[1])[positions])
        self._options = _volley.LoaderOptions(
            saved[2].sampler,
            batch_size=max(1, len(positions)),
            num_threads=1,
            seed=saved[2].seed,
            feature_dtype=saved[2].feature_dtype,
        )
        if self.edge_label_time is not None:
            self._options.input_time = np.ascontiguousarray(self.edge_label_time[positions])
        try:
            native = self._create_native(None)
        finally:
            self.edge_label_index, self.edge_label, self._options = saved
        stream = native.start_epoch(self._epoch)
        try:
            raw = stream.next(self._consumer_stream())
        finally:
            stream.stop()
        if raw is None:  # no positions: no batch
            raise _volley.VolleyValueError("index is empty: there is no batch of zero edges")
        raw["input_id"] = positions[_tensor.to_numpy(raw["input_id"]).astype(np.int64)]
        return self._to_batch(raw)

    def _add_fields(self, fields: dict, raw: dict, out: Callable[[Any], Any]) -> None:
        fields.pop("batch_size", None)  # PyG's link batches have none
        fields.update(_link_fields(self, raw, out))

    def describe(self) -> str:
        """The loader's options in one line."""
        return (
            f"LinkNeighborLoader(num_neighbors={self.num_neighbors}, batch_size={self.batch_size}, "
            f"edges={self.edge_label_index.shape[1]}, batches={len(self)}, "
            f"neg_sampling={self.neg_sampling}, shuffle={self.shuffle}, "
            f"num_workers={self.num_workers})"
        )


# inspect.signature(LinkNeighborLoader) reads __init__, not the dispatching __new__.
LinkNeighborLoader.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
    list(inspect.signature(LinkNeighborLoader.__init__).parameters.values())[1:])
