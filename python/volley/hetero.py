"""Heterogeneous graphs: typed nodes and edges, their datasets, and neighbor sampling over them.

Ids are per node type, as in PyG's ``HeteroData``; an edge type is a ``(src, relation, dst)``
tuple (or its name ``"src__relation__dst"``). Each edge type is stored as an in-neighbor CSR over
the destination type's ids whose indices are source-type ids (src/volley/graph/hetero_graph.h).

Example:
    >>> graph = volley.HeteroGraph.from_pyg(hetero_data)     # or from_edge_index_dict(...)
    >>> ds = volley.load_dataset("data/mag")                  # a HeteroDataset
    >>> data = ds.to_pyg()                                    # torch_geometric.data.HeteroData
    >>> sampler = volley.HeteroNeighborSampler(ds, [15, 10])
    >>> batch = sampler.sample({"paper": [0, 1, 2]})
    >>> batch["node"]["author"], batch["edge_index"][("author", "writes", "paper")]
"""

from __future__ import annotations

import os
from typing import Any, Dict, List, Optional, Tuple, Union

import numpy as np

from . import _tensor, _volley
from ._dataset_base import NativeDatasetView, NativeView
from ._volley import HeteroDatasetNative as _NativeDataset
from ._volley import HeteroGraph as _NativeGraph
from ._volley import NodeTypeData as _NodeTypeData
from ._volley import VolleyTypeError, VolleyValueError
from ._volley import build_bipartite_csr as _build_bipartite_csr
from ._volley import load_hetero_dataset as _load_hetero_dataset
from ._volley import read_hetero_edge_directory as _read_hetero_edge_directory
from ._volley import save_hetero_dataset as _save_hetero_dataset
from .graph import Graph

EdgeType = Tuple[str, str, str]
PathLike = Union[str, "os.PathLike[str]"]
_SPLITS = ("train", "val", "test")


def edge_type_of(value: Any) -> EdgeType:
    """An edge type as a ``(src, relation, dst)`` tuple.

    Args:
        value: a tuple or list of three strings, or a name ``"src__relation__dst"``.

    Raises:
        VolleyTypeError: anything else.
        VolleyValueError: a name that does not split into three parts.
    """
    if isinstance(value, str):
        parts = value.split("__")
        if len(parts) != 3 or not all(parts):
            raise VolleyValueError(
                f"'{value}' is not an edge type name: expected 'src__relation__dst'")
        return (parts[0], parts[1], parts[2])
    if isinstance(value, (tuple, list)) and len(value) == 3 and all(
            isinstance(part, str) for part in value):
        return (value[0], value[1], value[2])
    raise VolleyTypeError(
        f"an edge type is a (src, relation, dst) tuple of strings, got {value!r}")


class HeteroGraph(NativeView):
    """Typed nodes and typed edges (immutable; arrays shared, zero-copy).

    Build one with ``HeteroGraph.from_edge_index_dict`` or ``HeteroGraph.from_pyg``;
    ``HeteroDataset.graph`` holds one. ``share_memory_`` / pickling: as a dataset's
    (``NativeView``; as ``Graph.share_memory_``).
    """

    _sharing = (_volley.share_hetero_graph, _volley.hetero_graph_is_shared,
                _volley.hetero_graph_state, _volley.hetero_graph_from_state)

    def __init__(self, native: _NativeGraph):
        """Wraps a native graph (use the ``from_*`` constructors instead)."""
        self._native = native

    @classmethod
    def from_edge_index_dict(
        cls,
        edge_index_dict: Dict[Any, Any],
        num_nodes_dict: Optional[Dict[str, int]] = None,
        *,
        edge_weight_dict: Optional[Dict[Any, Any]] = None,
    ) -> "HeteroGraph":
        """Builds a graph from PyG's ``edge_index_dict``.

        Edge ``i`` of type ``(s, r, d)`` goes from source ``edge_index[0, i]`` (an ``s`` id) to
        ``edge_index[1, i]`` (a ``d`` id); edge ids record ``i``. Node types are the keys of
        ``num_nodes_dict`` (in its order) followed by any other type the edge types name.

        Args:
            edge_index_dict: ``{edge_type: int [2, E]}`` (torch tensors, numpy arrays).
            num_nodes_dict: ``{node_type: count}``; a missing type gets 1 + its largest id.
            edge_weight_dict: optional ``{edge_type: float [E]}``.

        Returns:
            The ``HeteroGraph``.

        Raises:
            VolleyValueError: a malformed edge type or edge_index, or a bad type name.
            VolleyIndexError: an id outside its type's range (the message names the type).
        """
        num_nodes = {str(k): int(v) for k, v in (num_nodes_dict or {}).items()}
        arrays = {}
        for key, edge_index in edge_index_dict.items():
            edge_type = edge_type_of(key)
            values = _tensor.to_numpy(edge_index)
            if values.ndim != 2 or values.shape[0] != 2 or not np.issubdtype(
                    values.dtype, np.integer):
                raise VolleyValueError(
                    f"edge type {edge_type}: edge_index must be an integer [2, E] array, got "
                    f"{values.dtype}{list(values.shape)}")
            values = np.ascontiguousarray(values, dtype=np.int64)
            arrays[edge_type] = values
            for end, row in ((edge_type[0], values[0]), (edge_type[2], values[1])):
                needed = int(row.max()) + 1 if row.size else 0
                if num_nodes_dict is None or end not in num_nodes_dict:
                    num_nodes[end] = max(num_nodes.get(end, 0), needed)
        weights = {edge_type_of(k): v for k, v in (edge_weight_dict or {}).items()}
        edges = []
        for edge_type, values in arrays.items():
            weight = weights.get(edge_type)
            if weight is not None:
                weight = np.ascontiguousarray(_tensor.to_numpy(weight), dtype=np.float32)
            csr = _build_bipartite_csr(values[0], values[1], num_nodes.get(edge_type[0], 0),
                                       num_nodes.get(edge_type[2], 0), weight,
                                       "__".join(edge_type))
            edges.append((edge_type, csr))
        return cls(_NativeGraph(list(num_nodes.items()), edges))

    @classmethod
    def from_pyg(cls, data: Any, *, weight_attr: str = "edge_weight") -> "HeteroGraph":
        """The graph of a PyG ``HeteroData`` (its ``edge_index`` and ``weight_attr`` per edge
        type, ``num_nodes`` per node type). See ``from_edge_index_dict``."""
        if not hasattr(data, "node_types") or not hasattr(data, "edge_types"):
            raise VolleyTypeError(
                f"HeteroGraph.from_pyg() takes a HeteroData, got {type(data).__name__}")
        num_nodes = {t: int(data[t].num_nodes) for t in data.node_types}
        edge_index = {t: data[t].edge_index for t in data.edge_types}
        weights = {t: data[t][weight_attr] for t in data.edge_types if weight_attr in data[t]}
        return cls.from_edge_index_dict(edge_index, num_nodes, edge_weight_dict=weights)

    @property
    def node_types(self) -> List[str]:
        """Node type names, in the graph's order."""
        return [name for name, _ in self._native.node_types]

    @property
    def edge_types(self) -> List[EdgeType]:
        """Edge types as ``(src, relation, dst)`` tuples, in the graph's order."""
        return [tuple(t) for t in self._native.edge_types]

    @property
    def num_nodes_dict(self) -> Dict[str, int]:
        """``{node_type: count}``."""
        return dict(self._native.node_types)

    @property
    def num_edges_dict(self) -> Dict[EdgeType, int]:
        """``{edge_type: count}``."""
        return {t: self._native.edges(t).num_edges for t in self.edge_types}

    def num_nodes(self, node_type: str) -> int:
        """The number of nodes of ``node_type`` (VolleyValueError listing the types if unknown)."""
        return self._native.num_nodes(node_type)

    def graph(self, edge_type: Any) -> Graph:
        """One edge type's CSR as a ``Graph`` (rows: destination ids; indices: source ids)."""
        return Graph(self._native.edges(edge_type_of(edge_type)))

    def edge_index(self, edge_type: Any) -> Any:
        """int64 [2, E] ``[source; destination]`` of one edge type, column i the edge of id i
        when the edge ids are a permutation (as built from an edge_index), else CSR order."""
        csr = self._native.edges(edge_type_of(edge_type))
        indptr = np.asarray(csr.indptr)
        rows = np.repeat(np.arange(len(indptr) - 1, dtype=np.int64), np.diff(indptr))
        cols = np.asarray(csr.indices).astype(np.int64)
        out = np.stack([cols, rows])
        ids = csr.edge_ids
        if ids is not None and len(ids):
            ids = np.asarray(ids)
            if ids.min() == 0 and ids.max() == len(ids) - 1 and np.all(
                    np.bincount(ids, minlength=len(ids)) == 1):
                ordered = np.empty_like(out)
                ordered[:, ids] = out
                out = ordered
        return _tensor.to_output(out)

    @property
    def edge_index_dict(self) -> Dict[EdgeType, Any]:
        """``{edge_type: edge_index}`` (see ``edge_index``)."""
        return {t: self.edge_index(t) for t in self.edge_types}

    def __repr__(self) -> str:
        nodes = ", ".join(f"{n}={c}" for n, c in self._native.node_types)
        edges = ", ".join(f"{'__'.join(t)}={c}" for t, c in self.num_edges_dict.items())
        return f"HeteroGraph(nodes: {nodes}; edges: {edges})"


class HeteroDataset(NativeDatasetView):
    """A heterogeneous graph with per-node-type data (features, labels, splits).

    Dict attributes are keyed by node type and hold only the types that have the array
    (zero-copy views; memory-mapped and read-only for a dataset loaded with ``mmap=True``).

    Attributes:
        graph: the ``HeteroGraph``.
        x_dict, y_dict: features / int64 labels per node type.
        train_idx_dict, val_idx_dict, test_idx_dict: int64 ids of each split per node type.
        num_classes_dict: number of classes per node type (0 without labels).
        name: the dataset's name.
    """

    _graph_class = HeteroGraph
    _sharing = (_volley.share_hetero_dataset, _volley.hetero_dataset_is_shared,
                _volley.hetero_dataset_state, _volley.hetero_dataset_from_state)

    def __init__(
        self,
        graph: HeteroGraph,
        x_dict: Optional[Dict[str, Any]] = None,
        y_dict: Optional[Dict[str, Any]] = None,
        *,
        train_idx_dict: Optional[Dict[str, Any]] = None,
        val_idx_dict: Optional[Dict[str, Any]] = None,
        test_idx_dict: Optional[Dict[str, Any]] = None,
        num_classes_dict: Optional[Dict[str, int]] = None,
        name: str = "",
    ):
        """Assembles a dataset (zero-copy for contiguous CPU arrays).

        Args:
            graph: the ``HeteroGraph``.
            x_dict: ``{node_type: features [N_t, D_t]}``; types without features are left out.
            y_dict: ``{node_type: int labels [N_t]}`` (-1: unlabelled).
            train_idx_dict, val_idx_dict, test_idx_dict: ``{node_type: ids}``.
            num_classes_dict: classes per labelled type; default ``y.max() + 1``.
            name: stored in ``volley.json`` when saved.

        Raises:
            VolleyTypeError: ``graph`` is not a ``HeteroGraph``.
            VolleyValueError: a key that is not a node type of the graph (naming it).
        """
        if not isinstance(graph, HeteroGraph):
            raise VolleyTypeError(f"graph must be a volley.HeteroGraph, got {type(graph).__name__}")
        types = graph.node_types
        given = {"x_dict": x_dict, "y_dict": y_dict, "train_idx_dict": train_idx_dict,
                 "val_idx_dict": val_idx_dict, "test_idx_dict": test_idx_dict,
                 "num_classes_dict": num_classes_dict}
        for what, values in given.items():
            for key in values or {}:
                if key not in types:
                    raise VolleyValueError(
                        f"{what}: '{key}' is not a node type (node types: {', '.join(types)})")
        node_data = []
        for node_type in types:
            data = _NodeTypeData()
            data.features = _tensor.to_input((x_dict or {}).get(node_type))
            data.labels = _as_int64((y_dict or {}).get(node_type), f"y of {node_type}")
            data.train_idx = _as_int64((train_idx_dict or {}).get(node_type), node_type)
            data.val_idx = _as_int64((val_idx_dict or {}).get(node_type), node_type)
            data.test_idx = _as_int64((test_idx_dict or {}).get(node_type), node_type)
            classes = (num_classes_dict or {}).get(node_type)
            if classes is None:
                labels = data.labels
                classes = int(labels.max()) + 1 if labels is not None and labels.size else 0
            data.num_classes = int(classes)
            node_data.append(data)
        native = _NativeDataset()
        native.name = name
        native.graph = graph._native
        native.node_data = node_data
        self._native = native

    @classmethod
    def from_pyg(cls, data: Any, *, name: str = "") -> "HeteroDataset":
        """A dataset from a PyG ``HeteroData`` (the inverse of ``to_pyg``).

        Reads the graph (``HeteroGraph.from_pyg``) and per node type ``x``, ``y`` and the splits
        (``train_mask``/``val_mask``/``test_mask`` or ``train_idx``/...). Features stay
        zero-copy (CPU tensors).

        Raises:
            VolleyTypeError: ``data`` is not a ``HeteroData``.
        """
        graph = HeteroGraph.from_pyg(data)
        fields: Dict[str, Dict[str, Any]] = {"x": {}, "y": {}, "train": {}, "val": {}, "test": {}}
        for node_type in data.node_types:
            store = data[node_type]
            for key in ("x", "y"):
                if key in store:
                    fields[key][node_type] = store[key]
            for split in _SPLITS:
                if f"{split}_mask" in store:
                    mask = _tensor.to_numpy(store[f"{split}_mask"])
                    fields[split][node_type] = np.flatnonzero(mask).astype(np.int64)
                elif f"{split}_idx" in store:
                    fields[split][node_type] = store[f"{split}_idx"]
        return cls(graph, fields["x"], fields["y"], train_idx_dict=fields["train"],
                   val_idx_dict=fields["val"], test_idx_dict=fields["test"], name=name)

    @property
    def node_types(self) -> List[str]:
        """Node type names."""
        return self.graph.node_types

    @property
    def edge_types(self) -> List[EdgeType]:
        """Edge types."""
        return self.graph.edge_types

    def _field(self, field: str) -> Dict[str, Any]:
        out = {}
        for node_type, data in zip(self.node_types, self._native.node_data):
            value = getattr(data, field)
            if value is not None:
                out[node_type] = _tensor.to_output(value)
        return out

    @property
    def x_dict(self) -> Dict[str, Any]:
        """``{node_type: features}`` for the types that have features."""
        return self._field("features")

    @property
    def y_dict(self) -> Dict[str, Any]:
        """``{node_type: int64 labels}`` for the labelled types."""
        return self._field("labels")

    @property
    def train_idx_dict(self) -> Dict[str, Any]:
        """``{node_type: training ids}``."""
        return self._field("train_idx")

    @property
    def val_idx_dict(self) -> Dict[str, Any]:
        """``{node_type: validation ids}``."""
        return self._field("val_idx")

    @property
    def test_idx_dict(self) -> Dict[str, Any]:
        """``{node_type: test ids}``."""
        return self._field("test_idx")

    @property
    def num_classes_dict(self) -> Dict[str, int]:
        """``{node_type: classes}`` for the labelled types."""
        return {t: d.num_classes for t, d in zip(self.node_types, self._native.node_data)
                if d.labels is not None}

    def save(self, path: PathLike) -> None:
        """Writes the dataset as a heterogeneous dataset directory (format version 2).

        Raises:
            VolleyValueError: an array that disagrees with its type's count (naming the type).
            VolleyOSError: the directory cannot be written.
        """
        _save_hetero_dataset(self._native, os.fspath(path))

    def to_pyg(self) -> Any:
        """The dataset as a PyG ``torch_geometric.data.HeteroData``.

        Per node type: ``num_nodes``, ``x`` (float32; zero-copy when stored as float32), ``y``,
        ``train_mask``/``val_mask``/``test_mask`` (bool) where present; per edge type
        ``edge_index`` (``HeteroGraph.edge_index``) and ``edge_weight`` when weighted.

        Raises:
            VolleyImportError: torch or torch_geometric is not importable.
        """
        torch, HeteroData = self._pyg_class("HeteroData")  # pylint: disable=invalid-name
        data = HeteroData()
        graph = self.graph
        x, y = self.x_dict, self.y_dict
        splits = {s: getattr(self, f"{s}_idx_dict") for s in _SPLITS}
        for node_type, count in graph.num_nodes_dict.items():
            store = data[node_type]
            store.num_nodes = count
            if node_type in x:
                store.x = x[node_type] if x[node_type].dtype == torch.float32 \
                    else x[node_type].float()
            if node_type in y:
                store.y = y[node_type]
            for split, ids in splits.items():
                if node_type in ids:
                    mask = torch.zeros(count, dtype=torch.bool)
                    mask[ids[node_type]] = True
                    store[f"{split}_mask"] = mask
        for edge_type in graph.edge_types:
            data[edge_type].edge_index = graph.edge_index(edge_type)
            weights = graph._native.edges(edge_type).weights
            if weights is not None:
                data[edge_type].edge_weight = graph.graph(edge_type).weights
        return data

    def __repr__(self) -> str:
        x = {t: list(v.shape) for t, v in self.x_dict.items()}
        return (f"HeteroDataset(name={self.name!r}, {self.graph!r}, x={x}, "
                f"num_classes={self.num_classes_dict})")


def load_hetero_dataset(path: PathLike, *, mmap: bool = True,
                        verify: bool = False) -> HeteroDataset:
    """Reads a heterogeneous dataset directory (``volley.load_dataset`` calls this for one).

    Raises:
        VolleyOSError: a missing or corrupt file, or a bad manifest (naming file and field).
        VolleyValueError: arrays that disagree with their type's counts (naming the type).
    """
    return HeteroDataset._from_native(
        _load_hetero_dataset(os.fspath(path), memory_map=mmap, verify_checksums=verify))


def read_hetero_edge_directory(path: PathLike) -> HeteroDataset:
    """A dataset from a directory of ``SRC__RELATION__DST.npy`` (or ``.txt``) edge files and
    optional ``TYPE.features.npy`` / ``TYPE.labels.npy`` / ``TYPE.train_idx.npy`` /
    ``TYPE.num_nodes`` files (what ``volley convert`` reads; src/volley/graph/io/hetero_edges.h).
    """
    return HeteroDataset._from_native(_read_hetero_edge_directory(os.fspath(path)))


def _as_int64(values: Any, what: str) -> Any:
    values = _tensor.to_input(values)
    if values is None:
        return None
    array = _tensor.to_numpy(values)
    if not np.issubdtype(array.dtype, np.integer):
        raise VolleyValueError(f"{what}: expected integer ids or labels, got {array.dtype}")
    return np.ascontiguousarray(array, dtype=np.int64)
