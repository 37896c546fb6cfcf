"""Mini-batches of heterogeneous graphs: PyG's ``NeighborLoader`` over a ``HeteroData``.

``volley.loader.NeighborLoader(data, ...)`` comes here when ``data`` is a PyG ``HeteroData`` or a
``volley.HeteroDataset``; ``HeteroNeighborLoader`` is the same class by name. Sampling is the C++
heterogeneous sampler (``volley.HeteroNeighborSampler``: per-edge-type fanouts, each node expanded
once, at the hop that first reached it; a pure function of (seed, batch index), the same for any
thread count). Worker threads sample and gather the next batches while the model trains (the
sampler and torch's gathers release the GIL).

Example:
    >>> loader = NeighborLoader(hetero_data, num_neighbors=[15, 10], batch_size=1024,
    ...                         input_nodes=("paper", hetero_data["paper"].train_mask))
    >>> batch = next(iter(loader))         # a HeteroData
    >>> batch["paper"].x[:batch["paper"].batch_size]   # the seeds' features come first
"""

from __future__ import annotations

from typing import Any, Callable, Dict, List, Optional, Tuple

import numpy as np

from . import _cuda, _policy, _pyg_compat, _temporal, _tensor, _volley
from ._data_loader import LoaderBase
from .loader import TYPED_LOADERS, NeighborLoader
from ._volley import VolleyValueError
from .hetero import HeteroDataset, HeteroGraph
from .hetero_sampler import HeteroNeighborSampler


class HeteroNeighborLoader(NeighborLoader):
    """Heterogeneous mini-batches, as PyG's ``NeighborLoader`` gives for a ``HeteroData``.

    Args:
        data: a PyG ``HeteroData`` (``edge_index`` per edge type; any node- and edge-level
            attributes, ``x`` may be a ``volley.Feature``; with ``time_attr``, times) or a
            ``volley.HeteroDataset``
            (``x``, ``y`` and split masks per node type, as ``HeteroDataset.to_pyg`` gives).
        num_neighbors: fanouts per hop: a list for every edge type, or ``{edge_type: [...]}``
            (tuples or ``"src__rel__dst"``); ``-1`` all neighbors, ``0`` none. A dict must name
            every edge type (as in PyG) unless ``default`` is given.
        input_nodes: ``(node_type, ids)``, ``(node_type, bool mask)``, ``(node_type, None)`` or a
            node type name (every node of it).
        input_time: temporal sampling: one integer time per input node (default with node
            time: each seed's own time; required with edge time).
        time_attr: the node-level (``data[node_type][time_attr]``) or edge-level
            (``data[edge_type][time_attr]``) attribute holding integer times: every sampled
            node or edge is at or before its seed's time (types without it are not
            constrained, as in pyg-lib). Sampling is then disjoint.
        temporal_strategy: ``"uniform"`` among the admissible neighbors or ``"last"`` (the
            most recent).
        disjoint: every seed grows its own subgraph; batches carry ``batch`` per node type.
        replace, weighted: with replacement; proportionally to ``edge_weight`` where an edge
            type has one. weight_attr: weigh by this edge attribute instead (on the edge types
            that have it; the others uniformly).
        batch_size, shuffle, drop_last: as in ``torch.utils.data.DataLoader``.
        num_workers: threads preparing batches (0: all cores).
        rank, world_size: this process's share of the input nodes in data-parallel training,
            split exactly as the homogeneous loader splits (see its docstring): by default
            ``torch.distributed``'s rank and world size when a process group is initialised.
        prefetch: batches prepared ahead (default 2 x workers).
        seed, generator: the base seed (None: drawn from ``generator``, else torch's).
        transform: callable applied to each batch.
        default: with a dict ``num_neighbors``, the fanouts of the edge types it leaves out.
        device, mode: ``device="cuda"`` (or ``"cuda:N"``, ``N``, a ``torch.device``) samples
            with the CUDA kernels — ``mode="UVA"`` (default, the graph in pinned host memory) or
            ``"GPU"`` (in device memory); the batches equal the CPU loader's and are moved to
            the device, disjoint and temporal ones too. ``mode="CPU"`` samples on the CPU.
        The other arguments of PyG's loader are accepted where they change nothing
        (``is_sorted``, ``filter_per_worker``, ``pin_memory``, the worker-process options).

    Each batch is a ``HeteroData``: per node type ``n_id`` (global ids, seeds first on the input
    type), every node-level attribute of ``data`` indexed by it (``x``, ``y``, masks, ...) and
    ``num_sampled_nodes`` (per hop); per edge type ``edge_index`` (local ids: row 0 in the
    source type's ``n_id``, row 1 in the destination type's), ``e_id``, every edge-level
    attribute indexed by it and ``num_sampled_edges``; ``batch_size`` and ``input_id`` (positions
    in the input node list) on the input type, and ``seed_time`` there when ``input_time`` is
    given. Disjoint (or temporal): ``batch`` per node type, the position in the batch of the
    seed whose subgraph each node belongs to. Every node and edge type is present, possibly
    empty.

    Raises:
        VolleyValueError / VolleyIndexError: bad input nodes (an unknown type, an id outside its
            type's range), fanouts for an unknown edge type, a dict missing an edge type, bad
            times (not integers, the wrong length, ``input_time`` missing with edge time or for
            an input type without node time): the message names the type. As for a ``Data``:
            ``disjoint`` or temporal with ``subgraph_type="induced"``, weighted temporal
            sampling. VolleyNotImplementedError: a custom ``neighbor_sampler`` (as for a
            ``Data``).

    ``transform_sampler_output`` gets the batch's PyG ``HeteroSamplerOutput``; the attributes of
    the node and edge types whose ids it replaces are indexed anew.
    """

    _takes_input_nodes = True  # the link loader's seeds are edges
    device = None  # the torch.device batches are moved to (None: where they are made, the CPU)

    _typed = True
    # NeighborLoader's __init__ (its signature, written once), named here so that the typed link
    # loader's super().__init__ reaches it before LinkNeighborLoader's in the MRO.
    __init__ = NeighborLoader.__init__

    copy = False  # hand out copies of the pipeline's batch memory
    _x_dtype = None  # feature_dtype: x of every node type converted to it (None: as stored)
    # A HeteroDataset's features per node type: (to_pyg's x, the Feature over its store).
    _dataset_x: Dict[str, Tuple[Any, Any]] = {}

    def _init_typed(
        self, *, data: Any, num_neighbors: Any, input_nodes: Any, input_time: Any, replace: bool,
        disjoint: bool, temporal_strategy: str, time_attr: Optional[str],
        weight_attr: Optional[str], transform: Optional[Callable[[Any], Any]], batch_size: int,
        shuffle: bool, num_workers: int, drop_last: bool, seed: int, weighted: bool,
        prefetch: Optional[int], rank: Optional[int], world_size: Optional[int], device: Any,
        mode: Optional[str], default: Optional[List[int]], copy: bool,
        feature_dtype: Optional[str], cache_bytes: Any, policy: Optional[str],
        lookahead: Optional[int], _on_batch_start: Optional[Callable[[int], None]], **_: Any,
    ) -> None:
        """``NeighborLoader.__init__``'s body for a typed graph (its signature, written once,
        holds the defaults and the documentation; PyG's arguments are read there for both kinds,
        ``_pyg_compat.read_loader_arguments``)."""
        temporal = time_attr is not None or input_time is not None
        ordinal, mode = _cuda.resolve(device, mode)
        # Batches land where the model is: the device's tensors (the CPU on the emulated one).
        self.device = None if ordinal is None else _cuda.torch_device(ordinal)
        # As the homogeneous loader refuses them (and the C++ sampler weighted temporal picks).
        if (bool(disjoint) or temporal) and self.subgraph_type == "induced":
            raise VolleyValueError("disjoint sampling does not support subgraph_type='induced'")
        self.data = data.to_pyg() if isinstance(data, HeteroDataset) else data
        # A HeteroDataset's features through its native stores (the disk tier past half the RAM,
        # the row cache of cache_bytes / policy), in place of to_pyg's x while that stays.
        from ._loader_rows import typed_loader_rows

        rows = typed_loader_rows(data if isinstance(data, HeteroDataset) else None, cache_bytes,
                                 policy)
        self._dataset_x = {t: (self.data[t].x, x) for t, x in rows.items()}
        self.graph = _typed_graph(data, weight_attr)
        _policy.check_fanouts(num_neighbors, default, typed=True)
        source, times = "none", {}
        if time_attr is not None:
            source, times = _temporal.typed_times(self.data, time_attr)
        self._set_inputs(input_nodes, input_time, time_attr, temporal_strategy, source, times)
        times = {} if source == "none" else {f"{source}_time": times}  # the sampler's keyword
        self._set_options(
            None, len(self.input_nodes) if self._takes_input_nodes else 0, batch_size=batch_size,
            shuffle=shuffle, drop_last=drop_last, num_workers=num_workers, prefetch=prefetch,
            seed=seed, rank=rank, world_size=world_size, feature_dtype=feature_dtype or "float32",
            on_batch_start=_on_batch_start, lookahead=lookahead, input_time=self.input_time)
        # (a HeteroDataset's x is float32 unless asked otherwise, as to_pyg gives it)
        self.copy, self._x_dtype = bool(copy), feature_dtype or ("float32" if rows else None)
        self.disjoint = bool(disjoint) or bool(times)
        self.node_sampler = HeteroNeighborSampler(
            self.graph, num_neighbors, replace=replace, weighted=weighted or weight_attr is not None,
            seed=self.seed, default=default, disjoint=bool(disjoint),
            temporal_strategy=temporal_strategy, device=ordinal, mode=mode, **times)
        self.transform = transform
        self._epoch = 0
        self._read_attributes()
        self._explicit_num_nodes = {t for t in self.data.node_types if "num_nodes" in self.data[t]}
        self._attribute_key = _pyg_compat.attribute_key(self.data)
        self._native = self._create_native(self.input_nodes) if self._takes_input_nodes else None

    _call_argument = "positions"  # loader(positions): the name its errors give the argument
    _sampler_native = LoaderBase._sampler_native  # a framework sampler's batches: collate_fn

    def _set_inputs(self, input_nodes: Any, input_time: Any, time_attr: Optional[str],
                    temporal_strategy: str, source: str, timed_types: Any) -> None:
        """Sets the input nodes (``input_type``, ``input_nodes``), ``time_attr``,
        ``temporal_strategy`` and ``input_time`` (per input node, or None: the seeds' own node
        times, or no input nodes) of either typed loader, local or over the service: ``source``
        is the time source, ``timed_types`` the node types with node time. A link loader's
        inputs are its edges (set by it, with their times)."""
        self.time_attr, self.temporal_strategy, self.input_time = time_attr, temporal_strategy, None
        if self._takes_input_nodes:
            self.input_type, self.input_nodes, self._input_by_id = _policy.typed_input_nodes(
                input_nodes, self.graph.num_nodes_dict)
            self.input_time = _temporal.input_times(
                input_time, source, len(self.input_nodes),
                (lambda: None) if self.input_type in timed_types else None,
                of=f" of type '{self.input_type}'")

    # --- attributes ------------------------------------------------------------------------
    def _read_attributes(self) -> None:
        """Which attributes of ``data`` are node-level / edge-level (indexed per batch) and
        which are copied as they are (``_node_attrs``, ``_edge_attrs``, ``_graph_attrs``)."""
        from .feature import Feature

        nodes, edges, other = {}, {}, {}
        counts = self.graph.num_nodes_dict
        for node_type in self.graph.node_types:
            store = self.data[node_type] if node_type in self.data.node_types else {}
            # (a type only the graph knows, e.g. from edge types alone, has no attributes)
            nodes[node_type] = {
                key: _gatherable(value) for key, value in store.items()
                if key != "num_nodes" and (isinstance(value, Feature) or (
                    hasattr(value, "shape") and len(value.shape) > 0
                    and value.shape[0] == counts[node_type]))}
            given, x = self._dataset_x.get(node_type, (None, None))
            if x is not None and store.get("x") is given:  # (the dataset's rows, not replaced)
                nodes[node_type]["x"] = x
        for edge_type in self.graph.edge_types:
            store = self.data[edge_type]
            count = self.graph.num_edges_dict[edge_type]
            edges[edge_type] = {
                key: value for key, value in store.items()
                if key != "edge_index" and hasattr(value, "shape") and len(value.shape) > 0
                and value.shape[0] == count}
        for key, value in getattr(self.data, "_global_store", {}).items():
            other[key] = value
        self._node_attrs, self._edge_attrs, self._graph_attrs = nodes, edges, other

    # --- the C++ pipeline ------------------------------------------------------------------
    def _create_native(self, inputs: np.ndarray) -> Any:
        """The native typed loader over the input nodes ``inputs`` with ``self._options`` (which
        ``_pyg_compat.sample_seeds`` replaces for ``loader(positions)``), with the attribute
        tables C++ gathers."""
        self._tables: Dict[Any, Dict[str, Any]] = {}
        directional = self.subgraph_type == "directional"
        node_tables = [self._native_tables(t, self._node_attrs[t]) for t in self.graph.node_types]
        edge_tables = [self._native_tables(t, self._edge_attrs[t] if directional else {})
                       for t in self.graph.edge_types]
        return _volley.NeighborLoader(self._typed_source(), self.input_type, inputs,
                                      self._options, node_tables, edge_tables)

    def _typed_source(self) -> Any:
        """What the native typed loaders sample: this process's sampler (the distributed
        loaders: a ``DistHeteroSource`` over the service)."""
        return self.node_sampler._native

    def _native_tables(self, owner: Any, attrs: Dict[str, Any]) -> List[Tuple[str, Any]]:
        """The attributes of a node or edge type that C++ gathers (host arrays and stores of a
        dtype it knows); the others stay with Python (``_index``)."""
        from .feature import Feature

        tables = {}
        for key, value in attrs.items():
            if isinstance(value, Feature):
                store = value._native()
                if not store.on_cuda:
                    tables[key] = _pyg_compat.Table(key, store)
            elif _pyg_compat.gatherable(value):
                tables[key] = _pyg_compat.Table(key, value)
        self._tables[owner] = tables
        return [(key, table.rows) for key, table in tables.items()]

    def _consumer_stream(self) -> int:
        return 0  # host batches, moved to ``device`` afterwards

    def _to_batch(self, raw: dict) -> Any:
        """The ``HeteroData`` of a native typed batch (``EpochIterator``)."""
        return self._finish(self._native_batch(raw), _tensor.to_numpy(raw["input_id"]))

    def _native_batch(self, raw: dict, edit: Optional[Callable[..., Any]] = None) -> Any:
        """The ``HeteroData`` of a native typed batch's nodes, edges and attributes; ``edit``
        (the link loader's exclusion) changes the edges an induced or bidirectional subgraph
        recomputed: ``edit(nodes, edges, counts) -> (edges, counts)``."""
        def gathered(owner: Any, attrs: dict) -> dict:
            tables = self._tables.get(owner, {})  # (a source's own fields have no table)
            return {k: _pyg_compat.restore(tables[k], out(v)) if k in tables else out(v)
                    for k, v in attrs.items()}

        out = _tensor.to_output_copy if self.copy else _tensor.to_output
        nodes, trees, rows = {}, {}, {}
        for node_type, part in zip(self.graph.node_types, raw["node_types"]):
            nodes[node_type] = out(part["n_id"])
            if part["batch"] is not None:
                trees[node_type] = out(part["batch"])
            rows[node_type] = gathered(node_type, part["attrs"])
        edges = {}
        for edge_type, part in zip(self.graph.edge_types, raw["edge_types"]):
            edges[edge_type] = (out(part["edge_index"]), out(part["e_id"]))
            rows[edge_type] = gathered(edge_type, part["attrs"])
        counts = ({t: p["num_sampled_nodes"] for t, p in zip(nodes, raw["node_types"])},
                  {t: p["num_sampled_edges"] for t, p in zip(edges, raw["edge_types"])})
        if self.subgraph_type == "induced":
            edges, counts = {t: self._induced(t, nodes) for t in edges}, None
        elif self.subgraph_type == "bidirectional":
            edges, counts = _bidirectional(nodes, edges), None
        if edit is not None and self.subgraph_type != "directional":
            edges, counts = edit(nodes, edges, counts)
        if self.transform_sampler_output is not None:
            nodes, edges, counts, trees = _transformed(self.transform_sampler_output, nodes, edges,
                                                       counts, trees, rows)
        return self._assemble(nodes, edges, counts, trees, rows)

    # --- one batch -------------------------------------------------------------------------
    def _finish(self, out: Any, positions: np.ndarray) -> Any:
        """The input fields of a batch of the input nodes at ``positions``; on ``device``;
        transformed."""
        import torch

        seeds = self.input_nodes[positions]
        seed_time = None if self.input_time is None else self.input_time[positions]
        store = out[self.input_type]
        store.input_id = torch.as_tensor(seeds if self._input_by_id else positions)
        store.batch_size = int(len(positions))
        if seed_time is not None:
            store.seed_time = torch.from_numpy(seed_time)
        return self._delivered(out)

    def _delivered(self, batch: Any) -> Any:
        """A finished batch on ``device`` (sampled there, assembled on the host), transformed."""
        if self.device is not None:
            batch = batch.to(self.device)
        return self.transform(batch) if self.transform is not None else batch

    def _assemble(self, nodes: dict, edges: dict, counts: Any, trees: dict,
                  rows: Dict[Any, dict]) -> Any:
        """A ``HeteroData`` of sampled ``nodes`` / ``edges`` (see ``_sample``): every attribute
        at the batch's ids (``rows[type][key]`` where C++ gathered it already)."""
        from torch_geometric.data import HeteroData

        out = HeteroData()
        for key, value in self._graph_attrs.items():
            out[key] = value
        for node_type, attrs in self._node_attrs.items():
            store = out[node_type]
            store.n_id = n_id = nodes[node_type]
            for key, value in attrs.items():
                done = rows.get(node_type, {})
                store[key] = done[key] if key in done else _index(value, n_id)
                if key == "x" and self._x_dtype is not None:
                    store.x = _tensor.to_dtype(store.x, self._x_dtype)
            if counts is not None:
                store.num_sampled_nodes = list(counts[0][node_type])
            if node_type in self._explicit_num_nodes:  # as PyG: only where data sets it
                store.num_nodes = int(n_id.numel())
            if node_type in trees:  # disjoint: the seed position of each node's subgraph
                store.batch = trees[node_type]
        edge_index_type = _pyg_compat.edge_index_type()
        for edge_type, attrs in self._edge_attrs.items():
            store = out[edge_type]
            edge_index, e_id = edges[edge_type]
            if edge_index_type is not None:
                edge_index = edge_index_type(
                    edge_index, sort_order="col",
                    sparse_size=(len(nodes[edge_type[0]]), len(nodes[edge_type[2]])))
            store.edge_index = edge_index
            if e_id is not None:
                store.e_id = e_id
                for key, value in attrs.items():
                    done = rows.get(edge_type, {})
                    store[key] = done[key] if key in done else _index(value, e_id)
            if counts is not None:
                store.num_sampled_edges = list(counts[1][edge_type])
        return out

    def _induced(self, edge_type: Any, nodes: Dict[str, Any]) -> Tuple[Any, Any]:
        """Every edge of ``edge_type`` between the batch's nodes: ``(edge_index, e_id)``, by
        target in node order, each target's edges in CSR order."""
        import torch

        graph = self.graph.graph(edge_type)
        indptr, indices = _tensor.to_numpy(graph.indptr), _tensor.to_numpy(graph.indices)
        edge_ids = graph.edge_ids
        sources, targets = nodes[edge_type[0]].numpy(), nodes[edge_type[2]].numpy()
        begin, end = indptr[targets], indptr[targets + 1]
        lengths = end - begin
        target_local = np.repeat(np.arange(len(targets), dtype=np.int64), lengths)
        positions = np.arange(int(lengths.sum()), dtype=np.int64) - np.repeat(
            np.cumsum(lengths) - lengths, lengths) + np.repeat(begin, lengths)
        order = np.argsort(sources, kind="stable")
        neighbors = indices[positions].astype(np.int64)
        slot = np.minimum(np.searchsorted(sources[order], neighbors), max(len(sources) - 1, 0))
        keep = (sources[order][slot] == neighbors) if len(sources) else np.zeros(0, dtype=bool)
        edge_index = np.stack([order[slot][keep], target_local[keep]])
        e_id = positions[keep] if edge_ids is None else _tensor.to_numpy(edge_ids)[positions[keep]]
        return torch.from_numpy(edge_index), torch.from_numpy(np.ascontiguousarray(e_id))

    def __repr__(self) -> str:
        return "NeighborLoader()"  # as PyG's loaders print; options: describe()

    def describe(self) -> str:
        """The loader's options in one line."""
        return (f"HeteroNeighborLoader(input_type='{self.input_type}', "
                f"input_nodes={len(self.input_nodes)}, batch_size={self.batch_size}, "
                f"node_types={self.graph.node_types}, edge_types={len(self.graph.edge_types)})")


def _transformed(transform: Callable[[Any], Any], nodes: dict, edges: dict, counts: Any,
                 trees: dict, rows: Dict[Any, dict]) -> Tuple[dict, dict, Any, dict]:
    """PyG's ``transform_sampler_output`` over the batch's ``HeteroSamplerOutput``: its nodes,
    edges, counts and trees; the gathered attributes of a type whose ids it replaced are dropped
    from ``rows`` (indexed anew by ``_assemble``)."""
    import torch
    from torch_geometric.sampler import HeteroSamplerOutput

    out = transform(HeteroSamplerOutput(
        node=dict(nodes), row={t: e[0][0] for t, e in edges.items()},
        col={t: e[0][1] for t, e in edges.items()}, edge={t: e[1] for t, e in edges.items()},
        batch=dict(trees) or None, num_sampled_nodes=None if counts is None else counts[0],
        num_sampled_edges=None if counts is None else counts[1]))
    for owner, before, after in [*((t, nodes[t], out.node.get(t)) for t in nodes),
                                 *((t, edges[t][1], (out.edge or {}).get(t)) for t in edges)]:
        if after is not before:
            rows.pop(owner, None)
    edges = {t: (torch.stack([out.row[t], out.col[t]]), (out.edge or {}).get(t)) for t in out.row}
    counts = (None if out.num_sampled_nodes is None
              else (out.num_sampled_nodes, out.num_sampled_edges))
    return dict(out.node), edges, counts, dict(out.batch or {})


def _typed_graph(data: Any, weight_attr: Optional[str]) -> HeteroGraph:
    """The graph of a ``HeteroDataset`` or ``HeteroData``, weighted by ``weight_attr`` (default
    ``edge_weight``) on the edge types that have it; VolleyValueError when none has the named
    attribute, as the homogeneous loader refuses a missing one."""
    if isinstance(data, HeteroDataset):
        if weight_attr not in (None, "edge_weight"):
            raise VolleyValueError(
                f"weight_attr={weight_attr!r}: a volley.HeteroDataset is weighted by its graph's "
                "edge weights ('edge_weight')")
        return data.graph
    if weight_attr is not None and not any(weight_attr in data[t] for t in data.edge_types):
        raise VolleyValueError(
            f"weighted sampling needs data[edge_type].{weight_attr}, but no edge type has "
            f"attribute {weight_attr!r}")
    return HeteroGraph.from_pyg(data, weight_attr=weight_attr or "edge_weight")


def _bidirectional(nodes: Dict[str, Any], edges: Dict[Any, Tuple[Any, Any]]) -> dict:
    """PyG's bidirectional subgraph: each edge type merged with its reverse type (or itself),
    by PyG's own ``HeteroSamplerOutput.to_bidirectional``; edge ids dropped."""
    from torch_geometric.sampler import HeteroSamplerOutput

    out = HeteroSamplerOutput(node=nodes, row={t: e[0][0] for t, e in edges.items()},
                              col={t: e[0][1] for t, e in edges.items()},
                              edge={t: e[1] for t, e in edges.items()}).to_bidirectional()
    import torch

    return {t: (torch.stack([out.row[t], out.col[t]]), (out.edge or {}).get(t))
            for t in edges}


def _gatherable(value: Any) -> Any:
    """Feature matrices (2-d and wider) as a zero-copy ``volley.Feature``, whose C++ gather is
    several times faster than torch's ``index_select`` on large tables; the rest as they are."""
    from .feature import Feature

    if isinstance(value, Feature) or len(getattr(value, "shape", ())) < 2:
        return value
    try:
        return Feature(value)
    except Exception:  # a dtype or layout the store does not take: torch gathers it
        return value


def _index(value: Any, ids: Any) -> Any:
    """``value`` at ``ids``: a torch tensor (index_select), numpy array or ``volley.Feature``."""
    import torch

    if isinstance(value, torch.Tensor):  # where it lives (a CUDA or meta tensor stays there)
        return value.index_select(0, ids.to(value.device))
    if isinstance(value, np.ndarray):
        return torch.from_numpy(np.ascontiguousarray(value[ids.numpy()]))
    return value[ids]


is_hetero = _pyg_compat.is_hetero
TYPED_LOADERS["node"] = HeteroNeighborLoader
# NeighborLoader's one signature (its __init__, which this class inherits), for inspect.
HeteroNeighborLoader.__signature__ = NeighborLoader.__signature__  # type: ignore[attr-defined]

__all__ = ["HeteroNeighborLoader", "is_hetero"]
