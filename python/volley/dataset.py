"""Datasets: a graph with node features, labels and splits, and their directory format.

A dataset directory holds ``volley.json`` plus one ``.npy`` file per array (see
ARCHITECTURE.md, "On-disk formats"); ``numpy.load(path, mmap_mode="r")`` reads every array too.

Example:
    >>> ds = volley.load_dataset("data/cora")          # arrays memory-mapped, nothing copied
    >>> ds.x.shape, ds.num_classes
    (torch.Size([2708, 1433]), 7)
    >>> data = ds.to_pyg()                             # torch_geometric.data.Data
"""

from __future__ import annotations

import os
from typing import Any, List, NamedTuple, Optional, Union

import numpy as np

from . import _tensor, _volley
from ._volley import Dataset as _NativeDataset
from ._volley import dataset_store as _dataset_store
from ._volley import VolleyTypeError, VolleyValueError
from ._volley import is_hetero_dataset_directory as _is_hetero_dataset_directory
from ._volley import load_dataset as _load_dataset
from ._volley import planetoid_split as _planetoid_split
from ._volley import random_split as _random_split
from ._volley import save_dataset as _save_dataset
from ._volley import verify_dataset as _verify_dataset
from ._dataset_base import NativeDatasetView
from .feature import Feature
from .graph import Graph

PathLike = Union[str, "os.PathLike[str]"]


class Dataset(NativeDatasetView):
    """A graph with its node data.

    Array attributes are zero-copy views (torch tensors when torch is importable, numpy arrays
    otherwise). A dataset loaded with ``mmap=True`` views read-only memory-mapped files: do not
    write into its arrays in place (see ``volley._tensor``).

    Attributes:
        graph: the ``Graph`` (N nodes, E edges).
        x: node features [N, D] in the dtype stored on disk, or None.
        y: int64 [N] labels, or None.
        feature, label: ``x`` and ``y`` as ``volley.Feature`` stores (gather by id), or None.
        train_idx, val_idx, test_idx: int64 node ids of each split, or None.
        train_edges, val_edges, test_edges, val_neg_edges, test_neg_edges: int64 [2, M]
            (src, dst) pairs of a link split written by ``volley.split_edges``, or None.
        num_classes: number of label classes (0 without labels).
        name: the dataset's name ("cora").
    """

    _graph_class = Graph
    _sharing = (_volley.share_dataset, _volley.dataset_is_shared, _volley.dataset_state,
                _volley.dataset_from_state)

    def __init__(
        self,
        graph: Graph,
        x: Any = None,
        y: Any = None,
        *,
        train_idx: Any = None,
        val_idx: Any = None,
        test_idx: Any = None,
        num_classes: Optional[int] = None,
        name: str = "",
    ):
        """Assembles a dataset from a graph and arrays (zero-copy for contiguous CPU arrays).

        Args:
            graph: the ``Graph``.
            x: features [N, D] (any Volley dtype: float32/16, bfloat16, int8, uint8, ...).
            y: int64 [N] labels (other integer dtypes are converted).
            train_idx, val_idx, test_idx: int64 node ids (other integer dtypes are converted).
            num_classes: number of classes; default ``y.max() + 1`` when ``y`` is given, else 0.
            name: a name, stored in ``volley.json`` when saved.

        Raises:
            VolleyTypeError: ``graph`` is not a ``Graph``.
            VolleyValueError: an array with an unsupported dtype.
        """
        if not isinstance(graph, Graph):
            raise VolleyTypeError(f"graph must be a volley.Graph, got {type(graph).__name__}")
        native = _NativeDataset()
        native.name = name
        native.graph = graph._csr
        native.features = _tensor.to_input(x)
        native.labels = _as_int64(y)
        native.train_idx = _as_int64(train_idx)
        native.val_idx = _as_int64(val_idx)
        native.test_idx = _as_int64(test_idx)
        if num_classes is None:
            labels = native.labels
            num_classes = int(labels.max()) + 1 if labels is not None and labels.size else 0
        native.num_classes = int(num_classes)
        self._native = native

    @classmethod
    def from_pyg(cls, data: Any, *, name: str = "", undirected: bool = False) -> "Dataset":
        """A dataset from a PyG ``torch_geometric.data.Data`` (the inverse of ``to_pyg``).

        Reads ``edge_index`` (edge ``i`` goes from ``edge_index[0, i]`` to
        ``edge_index[1, i]``; the graph stores in-neighbors, as PyG aggregates them) and, when
        present, ``num_nodes``, ``x``, ``y``, ``edge_weight``, ``time`` (node time when it has
        one entry per node, else edge time, PyG's convention) and the splits: ``train_mask`` /
        ``val_mask`` / ``test_mask`` (bool [N]) or ``train_idx`` / ``val_idx`` / ``test_idx``
        (node ids). Other fields are not kept. Zero-copy where the native arrays allow (CPU
        ``x``); the graph is built in C++.

        Args:
            data: a ``Data`` (or any object with those attributes).
            name: the dataset's name (stored in ``volley.json`` when saved).
            undirected: also store every edge reversed (one edge per pair, like
                ``torch_geometric.utils.to_undirected``).

        Returns:
            The ``Dataset``.

        Raises:
            VolleyValueError: no ``edge_index``; labels that are not one class id per node
                (``y`` of shape [N, C] with C > 1, or fractional values: regression or
                multi-label targets); a 2-D mask (several splits: pick a column first); a
                heterogeneous ``HeteroData``.
            VolleyIndexError: an edge names a node >= ``num_nodes``.
        """
        if not hasattr(data, "edge_index") and hasattr(data, "node_types"):
            raise VolleyValueError(
                "Dataset.from_pyg() takes a homogeneous Data; for a HeteroData use "
                "volley.HeteroDataset.from_pyg()"
            )
        edge_index = getattr(data, "edge_index", None)
        if edge_index is None:
            raise VolleyValueError("Dataset.from_pyg(): the data has no edge_index")
        num_nodes = getattr(data, "num_nodes", None)
        graph = Graph.from_edge_index(
            edge_index,
            num_nodes=None if num_nodes is None else int(num_nodes),
            undirected=undirected,
            drop_duplicates=undirected,
            edge_weight=getattr(data, "edge_weight", None),
            **_pyg_times(data, edge_index, num_nodes),
        )
        splits = {
            split: _split_ids(data, split, graph.num_nodes) for split in ("train", "val", "test")
        }
        return cls(
            graph,
            getattr(data, "x", None),
            _class_labels(getattr(data, "y", None)),
            train_idx=splits["train"],
            val_idx=splits["val"],
            test_idx=splits["test"],
            name=name,
        )

    @property
    def num_nodes(self) -> int:
        """Number of nodes N."""
        return self._native.graph.num_nodes

    @property
    def num_edges(self) -> int:
        """Number of edges E."""
        return self._native.graph.num_edges

    @property
    def num_classes(self) -> int:
        """Number of label classes (0 without labels)."""
        return self._native.num_classes

    @property
    def num_features(self) -> int:
        """Feature dimension D (0 without features)."""
        features = self._native.features
        return int(features.shape[1]) if features is not None and features.ndim == 2 else 0

    @property
    def x(self) -> Any:
        """Node features [N, D] as stored (zero-copy), or None."""
        return _tensor.to_output(self._native.features)

    @property
    def y(self) -> Any:
        """int64 [N] node labels (zero-copy), or None."""
        return _tensor.to_output(self._native.labels)

    @property
    def feature(self) -> Any:
        """The features as a ``volley.Feature`` (zero-copy over ``x``; a mapped dataset stays
        mapped), or None. ``dataset.feature[n_id]`` gathers rows with the C++ kernel."""
        store = _dataset_store(self._native, "features")
        return None if store is None else Feature._from_store(store)

    @property
    def label(self) -> Any:
        """The labels as a ``volley.Feature`` over ``y`` (a vector store), or None."""
        store = _dataset_store(self._native, "labels")
        return None if store is None else Feature._from_store(store)

    @property
    def train_idx(self) -> Any:
        """int64 training node ids (zero-copy), or None."""
        return _tensor.to_output(self._native.train_idx)

    @property
    def val_idx(self) -> Any:
        """int64 validation node ids (zero-copy), or None."""
        return _tensor.to_output(self._native.val_idx)

    @property
    def test_idx(self) -> Any:
        """int64 test node ids (zero-copy), or None."""
        return _tensor.to_output(self._native.test_idx)

    @property
    def train_edges(self) -> Any:
        """int64 [2, M] training supervision pairs of a link split (zero-copy), or None."""
        return _tensor.to_output(self._native.train_edges)

    @property
    def val_edges(self) -> Any:
        """int64 [2, M] validation pairs of a link split (zero-copy), or None."""
        return _tensor.to_output(self._native.val_edges)

    @property
    def test_edges(self) -> Any:
        """int64 [2, M] test pairs of a link split (zero-copy), or None."""
        return _tensor.to_output(self._native.test_edges)

    @property
    def val_neg_edges(self) -> Any:
        """int64 [2, M] fixed validation negatives of a link split (zero-copy), or None."""
        return _tensor.to_output(self._native.val_neg_edges)

    @property
    def test_neg_edges(self) -> Any:
        """int64 [2, M] fixed test negatives of a link split (zero-copy), or None."""
        return _tensor.to_output(self._native.test_neg_edges)

    @property
    def train_mask(self) -> Any:
        """bool [N], True at ``train_idx`` (a new array), or None without a split."""
        return self._mask(self._native.train_idx)

    @property
    def val_mask(self) -> Any:
        """bool [N], True at ``val_idx`` (a new array), or None without a split."""
        return self._mask(self._native.val_idx)

    @property
    def test_mask(self) -> Any:
        """bool [N], True at ``test_idx`` (a new array), or None without a split."""
        return self._mask(self._native.test_idx)

    def _mask(self, ids: Optional[np.ndarray]) -> Any:
        if ids is None:
            return None
        mask = np.zeros(self.num_nodes, dtype=np.bool_)
        mask[ids] = True
        return _tensor.to_output(mask)

    def save(self, path: PathLike) -> None:
        """Writes the dataset as a dataset directory (see ``save_dataset``)."""
        save_dataset(self, path)

    def to_pyg(self) -> Any:
        """The dataset as a PyG ``torch_geometric.data.Data``.

        Fields: ``x`` (float32 [N, D]; zero-copy when stored as float32, else converted),
        ``edge_index`` (int64 [2, E]; for the default ``"in"`` graph row v's neighbors are the
        sources, so column k is ``[neighbor, v]``), ``y`` (int64 [N]), ``train_mask``,
        ``val_mask``, ``test_mask`` (bool [N]), ``edge_weight`` (float32 [E]) when the graph is
        weighted, and ``num_nodes``. Fields the dataset lacks are left out.

        Returns:
            A ``torch_geometric.data.Data``.

        Raises:
            VolleyImportError: torch or torch_geometric is not importable.
        """
        torch, Data = self._pyg_class("Data")  # pylint: disable=invalid-name
        graph = self.graph
        fields = {"edge_index": graph.to_edge_index(), "num_nodes": self.num_nodes}
        x = self.x
        if x is not None:
            fields["x"] = x if x.dtype == torch.float32 else x.float()
        for name in ("y", "train_mask", "val_mask", "test_mask"):
            value = getattr(self, name)
            if value is not None:
                fields[name] = value
        if self._native.graph.weights is not None:
            fields["edge_weight"] = graph.weights
        return Data(**fields)

    def __repr__(self) -> str:
        features = self._native.features
        x = f"{features.dtype}{list(features.shape)}" if features is not None else None
        splits = ", ".join(
            f"{name}={len(ids)}"
            for name, ids in (
                ("train", self._native.train_idx),
                ("val", self._native.val_idx),
                ("test", self._native.test_idx),
            )
            if ids is not None
        )
        return (
            f"Dataset(name={self.name!r}, num_nodes={self.num_nodes}, num_edges={self.num_edges}, "
            f"x={x}, num_classes={self.num_classes}" + (f", {splits}" if splits else "") + ")"
        )


def load_dataset(path: PathLike, *, mmap: bool = True, verify: bool = False) -> Any:
    """Reads a dataset directory.

    Args:
        path: the directory (holding ``volley.json``).
        mmap: map the arrays read-only instead of reading them into memory (nothing copied;
            the arrays must not be written in place). ``False`` reads private, writable copies.
        verify: also check every array's CRC-32 against the manifest (reads all bytes once).

    Returns:
        The ``Dataset``; for a heterogeneous directory (format version 2) a
        ``volley.HeteroDataset``. The graph is validated (O(E)). Loading runs without the GIL.

    Raises:
        VolleyOSError: a missing, truncated or corrupt file, or a bad manifest (the message
            names the file and field).
        VolleyValueError: arrays that disagree with each other.
    """
    if _is_hetero_dataset_directory(os.fspath(path)):
        from .hetero import load_hetero_dataset

        return load_hetero_dataset(path, mmap=mmap, verify=verify)
    native = _load_dataset(os.fspath(path), memory_map=mmap, verify_checksums=verify)
    return Dataset._from_native(native)


def save_dataset(dataset: Any, path: PathLike, *, name: str = "") -> None:
    """Writes ``dataset`` as a dataset directory (created if missing; Volley's files replaced).

    Example:
        >>> volley.save_dataset(data, "products")   # a PyG Data, e.g. from PygNodePropPredDataset
        >>> ds = volley.load_dataset("products")    # memory-mapped from now on

    Args:
        dataset: a ``Dataset``, or a PyG ``Data`` (converted with ``Dataset.from_pyg``); a
            ``HeteroDataset`` or PyG ``HeteroData`` is written as a heterogeneous directory.
        path: the target directory.
        name: the name stored for a PyG ``Data`` (default: the directory's name).

    Raises:
        VolleyOSError: the directory or a file cannot be written.
        VolleyValueError: arrays disagree with the graph (e.g. feature rows != num_nodes), or a
            dtype ``.npy`` cannot hold (bfloat16).
    """
    from .hetero import HeteroDataset

    if isinstance(dataset, HeteroDataset) or (
        not isinstance(dataset, Dataset) and hasattr(dataset, "edge_types")
    ):
        if not isinstance(dataset, HeteroDataset):  # a PyG HeteroData
            default_name = os.path.basename(os.path.normpath(os.fspath(path)))
            dataset = HeteroDataset.from_pyg(dataset, name=name or default_name)
        dataset.save(path)
        return
    if not isinstance(dataset, Dataset):
        if not hasattr(dataset, "edge_index"):
            raise VolleyTypeError(
                "save_dataset() takes a volley.Dataset or a torch_geometric Data (or a "
                "HeteroDataset / HeteroData), "
                f"got {type(dataset).__name__}"
            )
        default_name = os.path.basename(os.path.normpath(os.fspath(path)))
        dataset = Dataset.from_pyg(dataset, name=name or default_name)
    _save_dataset(dataset._native, os.fspath(path))


def verify_dataset(path: PathLike) -> List[str]:
    """Checks every file of a dataset directory against its manifest, checksums included.

    Args:
        path: the dataset directory.

    Returns:
        One line per problem found; empty when the dataset is intact. Heterogeneous
        directories are checked type by type.
    """
    if _is_hetero_dataset_directory(os.fspath(path)):
        from ._volley import verify_hetero_dataset

        return list(verify_hetero_dataset(os.fspath(path)))
    return list(_verify_dataset(os.fspath(path)))


class Split(NamedTuple):
    """Node ids of a train / validation / test split: int64, sorted, disjoint."""

    train: Any
    val: Any
    test: Any


def planetoid_split(
    labels: Any,
    num_classes: Optional[int] = None,
    *,
    per_class: int = 20,
    num_val: int = 500,
    num_test: int = 1000,
    seed: int = 0,
) -> Split:
    """The split of Kipf & Welling (PyG's ``Planetoid(split="random")``), seeded.

    ``per_class`` random nodes of each class train; then ``num_val`` and ``num_test`` random
    nodes of the remaining labelled ones. The same seed gives the same split on every platform
    and thread count.

    Args:
        labels: integer [N] labels; -1 marks an unlabelled node (never chosen).
        num_classes: number of classes; default ``labels.max() + 1``.
        per_class: training nodes per class (all of a class when it has fewer).
        num_val: validation nodes.
        num_test: test nodes.
        seed: random seed.

    Returns:
        A ``Split`` of int64 node-id arrays.

    Raises:
        VolleyValueError: a label outside [-1, num_classes) (naming the node), too few
            labelled nodes left for ``num_val + num_test``, or a negative count.
        VolleyTypeError: a count or ``seed`` that is not an integer.
    """
    labels = _tensor.to_input(labels)
    if num_classes is None:
        label_values = _tensor.to_numpy(labels)
        num_classes = int(label_values.max()) + 1 if label_values.size else 0
    counts = dict(num_classes=num_classes, per_class=per_class, num_val=num_val, num_test=num_test)
    counts = {name: _tensor.check_int(value, name, 0, 2**63 - 1) for name, value in counts.items()}
    train, val, test = _planetoid_split(
        labels, **counts, seed=_tensor.check_int(seed, "seed", 0, 2**64 - 1))
    return Split(*(_tensor.to_output(ids) for ids in (train, val, test)))


def random_split(
    num_nodes: int, *, train_fraction: float = 0.6, val_fraction: float = 0.2, seed: int = 0
) -> Split:
    """A uniform random split of nodes [0, num_nodes), seeded.

    Args:
        num_nodes: number of nodes N.
        train_fraction: floor(train_fraction * N) nodes train.
        val_fraction: floor(val_fraction * N) nodes validate; the rest test.
        seed: random seed.

    Returns:
        A ``Split`` of int64 node-id arrays.

    Raises:
        VolleyValueError: a fraction outside [0, 1] (NaN included), or fractions summing to more
            than 1; a negative ``num_nodes`` or ``seed``.
        VolleyTypeError: ``num_nodes`` or ``seed`` not an integer, a fraction not a number.
    """
    train, val, test = _random_split(
        _tensor.check_int(num_nodes, "num_nodes", 0, 2**63 - 1),
        train_fraction=_tensor.check_real(train_fraction, "train_fraction", 0, 1),
        val_fraction=_tensor.check_real(val_fraction, "val_fraction", 0, 1),
        seed=_tensor.check_int(seed, "seed", 0, 2**64 - 1),
    )
    return Split(*(_tensor.to_output(ids) for ids in (train, val, test)))


def _class_labels(y: Any) -> Any:
    """PyG's ``y`` as int64 class ids [N]: [N, 1] is flattened (OGB's layout); float labels
    are accepted when every value is a whole number or NaN (an unlabelled node, stored as -1)."""
    if y is None:
        return None
    y = _tensor.to_input(y)
    shape = _tensor.shape_of(y)
    if len(shape) == 2 and shape[1] == 1:
        y = y.reshape(-1)
    elif len(shape) != 1:
        raise VolleyValueError(
            f"y has shape {list(shape)}; Volley stores one class id per node ([N] or [N, 1]), "
            "so multi-label and multi-target labels are not supported"
        )
    if _tensor.dtype_name(y).startswith(("float", "bfloat")):
        values = _tensor.to_numpy(y).astype(np.float64)
        labelled = ~np.isnan(values)
        if not np.all(np.floor(values[labelled]) == values[labelled]):
            raise VolleyValueError(
                "y holds fractional values (a regression target?); Volley stores class ids"
            )
        y = np.where(labelled, values, -1).astype(np.int64)
    return y


def _split_ids(data: Any, split: str, num_nodes: int) -> Any:
    """The node ids of ``split`` from ``<split>_mask`` (bool [N]) or ``<split>_idx``."""
    mask = getattr(data, f"{split}_mask", None)
    if mask is None:
        return getattr(data, f"{split}_idx", None)
    values = _tensor.to_numpy(mask)
    if values.ndim != 1 or values.shape[0] != num_nodes:
        raise VolleyValueError(
            f"{split}_mask has shape {list(values.shape)}, expected [{num_nodes}] (a 2-D mask "
            f"holds several splits: pick one, e.g. data.{split}_mask = data.{split}_mask[:, 0])"
        )
    return np.flatnonzero(values).astype(np.int64)


def _as_int64(values: Any) -> Any:
    """``values`` (ids or labels) for the native module, as int64 (no copy when it already is)."""
    values = _tensor.to_input(values)
    if values is None:
        return None
    torch = _tensor.torch_module()
    if torch is not None and isinstance(values, torch.Tensor):
        if values.dtype.is_floating_point or values.dtype == torch.bool:
            raise VolleyValueError(f"expected integer ids or labels, got {values.dtype}")
        return values if values.dtype == torch.int64 else values.long()
    if not np.issubdtype(values.dtype, np.integer):
        raise VolleyValueError(f"expected integer ids or labels, got {values.dtype}")
    return values.astype(np.int64, copy=False)


def _pyg_times(data: Any, edge_index: Any, num_nodes: Any) -> dict:
    """``data.time`` as ``Graph.from_edge_index`` keyword arguments: node time when it has one
    entry per node (PyG checks node attributes first), edge time when one per edge, else none."""
    time = getattr(data, "time", None)
    if time is None:
        return {}
    length = _tensor.shape_of(time)[0] if len(_tensor.shape_of(time)) == 1 else -1
    if num_nodes is not None and length == int(num_nodes):
        return {"node_time": time}
    if length == _tensor.shape_of(edge_index)[1]:
        return {"edge_time": time}
    raise VolleyValueError(
        f"data.time must have one entry per node ({num_nodes}) or per edge "
        f"({_tensor.shape_of(edge_index)[1]}), got shape {list(_tensor.shape_of(time))}"
    )
