"""Partitioning: cut a dataset into K partitions, and load one partition without the rest.

Methods: ``"random"`` (balanced random), ``"metis"`` (k-way METIS on the symmetrised graph,
balancing nodes, in-edges and training nodes), ``"hotness"`` (METIS, then each node moves to the
partition that reads it most in a simulated epoch; plus a per-partition cache of hot remote
feature rows) and ``"stream"`` (Fennel, one pass over the CSR in chunks, bounded memory).

Nodes are renumbered so partition ``p`` owns the new ids ``[offsets[p], offsets[p + 1])``; a
``PartitionBook`` answers ``owner_of`` from those offsets alone. Each partition directory is a
dataset directory whose rows are its owned nodes and whose neighbor ids are *new global* ids;
``train_idx``/``val_idx``/``test_idx`` hold local rows (add ``first_node`` for global ids).

One set of functions serves both graph kinds: a heterogeneous dataset (directory or
``volley.HeteroDataset``; methods random, metis and stream) is partitioned per node type and gives
a ``HeteroPartitionResult``; its partitions load as ``HeteroPartition`` (a book per node type:
within type ``T`` part ``p`` owns ``[offsets[T][p], offsets[T][p + 1])``; edge type ``(S, R, D)``'s
rows are the owned ``D`` nodes, its source ids new global ids of ``S``);
``load_node_map(path, node_type=T)`` reads a type's map; ``write_times`` adds the time files of
temporal sampling over the service.

Example:
    >>> result = volley.partition("data/cora", "/tmp/cora-4", 4, method="metis")
    >>> result.quality["edge_cut_fraction"]
    0.066...
    >>> part = volley.load_partition("/tmp/cora-4", 2)
    >>> part.book.owner_of(part.first_node)
    2
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

import numpy as np

from . import _policy, _tensor
from ._volley import HeteroPartition as _NativeHeteroPartition
from ._volley import Partition as _NativePartition
from ._volley import VolleyIndexError, VolleyValueError
from ._volley import invert_node_map as _invert_node_map
from ._volley import load_node_map as _load_node_map
from ._volley import load_partition as _load_partition
from ._volley import partition_dataset as _partition_dataset
from ._volley import partition_dataset_in_memory as _partition_dataset_in_memory
from ._volley import partition_manifest_json as _partition_manifest_json
from ._volley import verify_partitioned_dataset as _verify_partitioned_dataset
from .dataset import Dataset
from .hetero import HeteroDataset
from .partition_book import PartitionBook

PathLike = Union[str, "os.PathLike[str]"]

METHODS = ("random", "metis", "hotness", "stream")


@dataclass
class PartitionResult:
    """What ``partition`` did: the book, per-partition counts, quality figures and timings.

    ``quality`` holds ``edge_cut_fraction``, ``cut_edges``, ``node_balance``, ``edge_balance``,
    ``train_balance`` (largest / mean part) and, when an epoch was simulated,
    ``remote_access_fraction`` (``_cached``: counting the cache as local) and, for hotness,
    ``metis_remote_access_fraction`` and ``random_remote_access_fraction``.
    """

    book: PartitionBook
    part_nodes: List[int]
    part_edges: List[int]
    part_train: List[int]
    part_cached: List[int]
    quality: Dict[str, Optional[float]]
    seconds: float
    assign_seconds: float
    path: str = ""


def partition(
    dataset: Union[PathLike, Dataset],
    output: PathLike,
    num_parts: int,
    *,
    method: str = "metis",
    balance_tolerance: float = 0.05,
    seed: int = 0,
    fanouts: Sequence[int] = (15, 10, 5),
    batch_size: int = 1024,
    cache_bytes: int = 0,
    simulate_epoch: bool = False,
) -> PartitionResult:
    """Partitions a dataset and writes a partitioned dataset directory at ``output``.

    Runs without the GIL. Features are copied partition by partition in one streaming pass;
    ``"stream"`` also reads the graph in chunks (bounded memory).

    Args:
        dataset: a dataset directory (read memory-mapped) or a ``volley.Dataset``; a
            heterogeneous one (directory or ``volley.HeteroDataset``) is partitioned per node
            type (methods random, metis and stream; ``fanouts``, ``batch_size`` and
            ``cache_bytes`` unused, ``simulate_epoch`` refused) and gives a
            ``HeteroPartitionResult``.
        output: the directory to write (created; a previous partition.json there is replaced).
        num_parts: number of partitions K >= 1.
        method: ``"random"``, ``"metis"``, ``"hotness"`` or ``"stream"``.
        balance_tolerance: allowed imbalance of nodes, in-edges and training nodes per partition
            (0.05: at most 5% above the mean).
        seed: random seed (shuffles, METIS, the simulated epoch).
        fanouts: neighbor-sampler fanouts of the simulated epoch (hotness, ``simulate_epoch``).
        batch_size: seeds per batch of the simulated epoch.
        cache_bytes: per-partition byte budget (or a size such as ``"64M"``) for cached hot
            remote feature rows (hotness).
        simulate_epoch: also report remote reads for random / metis / stream.

    Returns:
        A ``PartitionResult``.

    Raises:
        VolleyValueError: a bad option (named in the message), a dataset without training
            nodes for hotness, or hotness / ``simulate_epoch`` for a heterogeneous dataset.
        VolleyOSError: the dataset cannot be read or the output cannot be written.
    """
    num_parts = _tensor.check_int(num_parts, "num_parts", 1, 2**20)
    seed = _tensor.check_int(seed, "seed", 0, 2**64 - 1)
    balance_tolerance = _tensor.check_real(balance_tolerance, "balance_tolerance")
    if method not in METHODS:
        raise VolleyValueError(f"method must be one of {', '.join(METHODS)}, got {method!r}")
    options = dict(
        method=method, balance_tolerance=balance_tolerance, seed=seed,
        fanouts=_policy.check_fanout_list(fanouts, "fanouts"),
        batch_size=_tensor.check_int(batch_size, "batch_size", 1, 2**31 - 1),
        cache_bytes=_tensor.byte_size(cache_bytes, "cache_bytes"),
        simulate_epoch=bool(simulate_epoch))
    if isinstance(dataset, (Dataset, HeteroDataset)):
        raw = _partition_dataset_in_memory(dataset._native, os.fspath(output), num_parts, **options)
    else:
        raw = _partition_dataset(os.fspath(dataset), os.fspath(output), num_parts, **options)
    common = dict(quality=dict(raw["quality"]), seconds=raw["seconds"],
                  assign_seconds=raw["assign_seconds"], path=os.fspath(output))
    if isinstance(raw["offsets"], dict):  # a heterogeneous dataset: a book per node type
        return HeteroPartitionResult(
            books={t: PartitionBook(offsets) for t, offsets in raw["offsets"].items()},
            part_edges=[list(edges) for edges in raw["part_edges"]], **common)
    return PartitionResult(
        book=PartitionBook(raw["offsets"]), part_nodes=list(raw["part_nodes"]),
        part_edges=list(raw["part_edges"]), part_train=list(raw["part_train"]),
        part_cached=list(raw["part_cached"]), **common)


class Partition:
    """One partition of a partitioned dataset.

    Attributes:
        part: its index.
        book: the ``PartitionBook`` of the whole partitioned dataset.
        dataset: a ``volley.Dataset`` of the owned nodes: row r is new id ``first_node + r``;
            ``dataset.graph`` rows list neighbor ids in the new global numbering (use its
            ``indptr``/``indices`` arrays; they may exceed the row count); features, labels and
            split ids (local rows) as stored.
        first_node: the first new id it owns.
        cache_ids: int64 new ids of cached remote nodes (hottest first), or None.
        cache_features: their feature rows [C, D], or None.
    """

    def __init__(self, native: _NativePartition):
        self._native = native
        self.part: int = native.part
        self.book = PartitionBook(native.book)
        self.dataset = Dataset._from_native(native.data)
        self.first_node: int = native.first_node

    @property
    def num_nodes(self) -> int:
        """Owned nodes."""
        return self.book.range(self.part).stop - self.first_node

    @property
    def node_ids(self) -> Any:
        """int64 new global ids of the owned nodes, in row order (a new array)."""
        return _tensor.to_output(
            np.arange(self.first_node, self.first_node + self.num_nodes, dtype=np.int64)
        )

    @property
    def cache_ids(self) -> Any:
        """int64 new ids of the cached remote nodes, or None."""
        return _tensor.to_output(self._native.cache_ids)

    @property
    def cache_features(self) -> Any:
        """Feature rows of the cached nodes [C, D], or None."""
        return _tensor.to_output(self._native.cache_features)

    def __repr__(self) -> str:
        return (
            f"Partition(part={self.part}/{self.book.num_parts}, nodes=[{self.first_node}, "
            f"{self.first_node + self.num_nodes}), edges={self.dataset.num_edges})"
        )


@dataclass
class HeteroPartitionResult:
    """What ``partition`` did on a heterogeneous dataset (``PartitionResult`` per node type).

    Attributes:
        books: ``{node_type: PartitionBook}``.
        part_edges: ``part_edges[p][r]``: edges of edge type ``r`` (graph order) stored by part p.
        quality: ``edge_cut_fraction`` and ``cut_edges`` over all edge types,
            ``cut_edges_per_type`` (``{(src, rel, dst): cut}``), ``node_balance``
            (``{node_type: largest / mean part}``) and ``edge_balance``.
        seconds, assign_seconds: wall time of the whole call and of the assignment.
        path: the output directory.
    """

    books: Dict[str, PartitionBook]
    part_edges: List[List[int]]
    quality: Dict[str, Any]
    seconds: float
    assign_seconds: float
    path: str = ""


class HeteroPartition:
    """One partition of a heterogeneous partitioned dataset.

    Attributes:
        part: its index.
        books: ``{node_type: PartitionBook}`` of the whole partitioned dataset.
        dataset: a ``volley.HeteroDataset`` of the owned nodes: node type T's row r is new id
            ``first_node[T] + r``; every edge type's source ids are new global ids of its source
            type (read the ``indptr``/``indices`` arrays; they may exceed the part's counts);
            features, labels and split ids (local rows) as stored.
        first_node: ``{node_type: first new id owned}``.
    """

    def __init__(self, native: _NativePartition):
        self._native = native
        self.part: int = native.part
        self.books: Dict[str, PartitionBook] = {
            t: PartitionBook(book) for t, book in native.books.items()}
        self.dataset = HeteroDataset._from_native(native.data)
        self.first_node: Dict[str, int] = {
            t: book.range(self.part).start for t, book in self.books.items()}

    @property
    def num_nodes(self) -> Dict[str, int]:
        """Owned nodes per node type."""
        return {t: len(book.range(self.part)) for t, book in self.books.items()}

    def node_ids(self, node_type: str) -> Any:
        """int64 new global ids of the owned nodes of ``node_type``, in row order."""
        r = self.books[node_type].range(self.part)
        return _tensor.to_output(np.arange(r.start, r.stop, dtype=np.int64))

    def __repr__(self) -> str:
        counts = ", ".join(f"{t}={n}" for t, n in self.num_nodes.items())
        num_parts = next(iter(self.books.values())).num_parts
        return f"HeteroPartition(part={self.part}/{num_parts}, {counts})"


def load_partition(
    path: PathLike, part: int, *, mmap: bool = True, verify: bool = False, validate: bool = True
) -> Partition:
    """Loads partition ``part`` without reading the rest of the graph.

    Args:
        path: the partitioned dataset directory (holding ``partition.json``).
        part: the partition index in ``[0, K)``.
        mmap: map the arrays read-only (nothing copied) instead of reading them.
        verify: check every array's CRC-32 (manifests are always checked).
        validate: check indptr and that neighbor / edge ids are in range (O(edges of the part);
            every edge type's in a heterogeneous one).

    Returns:
        The ``Partition``; for a heterogeneous partitioned directory a
        ``HeteroPartition`` (per-type ``books`` and ``first_node``, a
        ``HeteroDataset`` of the owned nodes).

    Raises:
        VolleyIndexError: ``part`` out of range.
        VolleyOSError: a missing, corrupt or mismatched file (e.g. a part directory from another
            run), naming the file, the field, the expected and the found value.
    """
    part = _tensor.check_int(part, "part", -(2**63), 2**63 - 1)  # the range: the native check
    native = _load_partition(
        os.fspath(path), part, memory_map=mmap, verify_checksums=verify, validate_graph=validate,
    )
    if isinstance(native, _NativeHeteroPartition):
        return HeteroPartition(native)
    return Partition(native)


def read_partition_manifest(path: PathLike) -> Dict[str, Any]:
    """``partition.json`` of a partitioned dataset of either kind (checked first), as a dict."""
    return json.loads(_partition_manifest_json(os.fspath(path)))


def load_node_map(path: PathLike, *, node_type: Optional[str] = None, verify: bool = False) -> Any:
    """int64 [N]: the new id of each old node id (of ``node_type`` in a heterogeneous one)."""
    return _tensor.to_output(
        _load_node_map(os.fspath(path), node_type or "", verify_checksums=verify))


def invert_node_map(node_map: Any) -> Any:
    """int64 [N]: the old id of each new id (the inverse permutation)."""
    return _tensor.to_output(_invert_node_map(_tensor.to_input(node_map)))


def verify_partitioned_dataset(path: PathLike) -> List[str]:
    """Checks every file of a partitioned dataset (homogeneous or heterogeneous: manifests, node
    maps, parts with checksums and graph ids, time files); one line per problem."""
    return list(_verify_partitioned_dataset(os.fspath(path)))


def to_new_ids(node_map: Union[PathLike, Any], old_ids: Any, *,
               node_type: Optional[str] = None) -> Any:
    """Maps ids of the original dataset to the partitioned (new) numbering.

    Distributed loaders (``volley.dist``) and partitions speak new ids; seeds picked in the
    original dataset (e.g. its ``train_idx``) go through this first.

    Args:
        node_map: a partitioned dataset directory (its node map of ``node_type`` is read,
            memory-mapped), or the map itself (``load_node_map``: int64 [N], old id -> new id).
        old_ids: int ids (array / tensor / list), or a boolean mask over the N old ids.
        node_type: the node type of the ids in a heterogeneous directory.

    Returns:
        int64 new ids, in the order of ``old_ids`` (of the mask's True positions, ascending old
        id); a tensor when torch is importable.

    Raises:
        VolleyIndexError: an old id outside [0, N). VolleyValueError: a mask of the wrong length.
    """
    if isinstance(node_map, (str, os.PathLike)):
        node_map = _load_node_map(os.fspath(node_map), node_type or "", verify_checksums=False)
    mapping = _tensor.to_numpy(node_map)
    ids = _tensor.to_numpy(old_ids)
    if ids.dtype == np.bool_:
        if ids.shape != mapping.shape:
            raise VolleyValueError(
                f"a boolean mask of old ids must have shape {mapping.shape}, got {ids.shape}"
            )
        ids = np.nonzero(ids)[0]
    ids = np.asarray(ids, dtype=np.int64).reshape(-1)
    bad = np.nonzero((ids < 0) | (ids >= len(mapping)))[0]
    if len(bad):
        raise VolleyIndexError(
            f"old id {int(ids[bad[0]])} at position {int(bad[0])} out of range for a graph with "
            f"{len(mapping)} nodes"
        )
    return _tensor.to_output(np.ascontiguousarray(mapping[ids], dtype=np.int64))


def split_ids(path: PathLike, split: str = "train") -> Any:
    """The new ids of a split (``"train"``, ``"val"`` or ``"test"``) over all partitions.

    Each partition stores its split as local rows; this adds each part's first id and
    concatenates in part order (ascending new ids). Reads only the split arrays (memory-mapped).

    Raises:
        VolleyValueError: an unknown split name.
    """
    if split not in ("train", "val", "test"):
        raise VolleyValueError(f"split must be 'train', 'val' or 'test', got {split!r}")
    num_parts = len(read_partition_manifest(path)["offsets"]) - 1
    chunks = []
    for p in range(num_parts):
        part = load_partition(path, p, validate=False)
        rows = getattr(part.dataset, f"{split}_idx")
        if rows is not None:
            chunks.append(_tensor.to_numpy(rows).astype(np.int64) + part.first_node)
    ids = np.concatenate(chunks) if chunks else np.zeros(0, dtype=np.int64)
    return _tensor.to_output(np.sort(ids))


def write_times(path: PathLike, node_time: Optional[Dict[str, Any]] = None,
                edge_time: Optional[Dict[Any, Any]] = None) -> List[str]:
    """Adds timestamps to a heterogeneous partitioned directory, for temporal sampling over the
    service (``volley serve``; ``DistNeighborLoader(..., time_attr=...)``).

    Args:
        path: the partitioned directory.
        node_time: ``{node_type: int times}``, one per node in the ORIGINAL numbering (as the
            input dataset's ids); written as ``T.node_time.npy`` by new id.
        edge_time: ``{edge_type: int times}``, one per edge by edge id (PyG's
            ``data[edge_type].time``; partitioning keeps edge ids); written as
            ``S__R__D.edge_time.npy``.

    Returns:
        The files written. Every server reads the whole arrays at start (a neighbor owned by
        another part is admitted by its own time); restart the servers after writing.

    Raises:
        VolleyValueError: an unknown type, or times that are not 1-d integers with one entry per
            node of the type / edge of the edge type (naming the type and both lengths).
    """
    from ._temporal import as_times
    from .hetero import edge_type_of

    path = os.fspath(path)
    manifest = read_partition_manifest(path)
    if manifest["version"] != 2:
        raise VolleyValueError(f"{path}: write_times adds the time files of a heterogeneous "
                               f"partitioned directory; a homogeneous one takes its node times "
                               f"from its input (node_time.npy)")
    counts = {t["name"]: int(t["num_nodes"]) for t in manifest["node_types"]}
    edges = {(t["src"], t["relation"], t["dst"]): int(t["num_edges"])
             for t in manifest["edge_types"]}
    staged = []
    for node_type, value in (node_time or {}).items():
        if node_type not in counts:
            raise VolleyValueError(f"node_time: unknown node type {node_type!r} (node types: "
                                   f"{', '.join(counts)})")
        times = _checked_times(as_times(value, f"node time of node type '{node_type}'"),
                               counts[node_type], f"node time of node type '{node_type}'", "node")
        new = np.empty_like(times)
        new[_tensor.to_numpy(load_node_map(path, node_type=node_type))] = times
        staged.append((f"{node_type}.node_time.npy", new))
    for key, value in (edge_time or {}).items():
        edge_type = tuple(edge_type_of(key))
        if edge_type not in edges:
            raise VolleyValueError(f"edge_time: unknown edge type {edge_type} (edge types: "
                                   f"{', '.join(map(edge_type_key, edges))})")
        what = f"edge time of edge type {edge_type_key(edge_type)}"
        staged.append((f"{edge_type_key(edge_type)}.edge_time.npy",
                       _checked_times(as_times(value, what), edges[edge_type], what, "edge")))
    written = []
    for name, times in staged:  # all checked before anything is written
        np.save(os.path.join(path, name), times)
        written.append(os.path.join(path, name))
    return written


def _checked_times(times: np.ndarray, expected: int, what: str, per: str) -> np.ndarray:
    if times.shape[0] != expected:
        raise VolleyValueError(
            f"{what} must have one entry per {per} ({expected}), got {times.shape[0]}")
    return times


def edge_type_key(edge_type: Tuple[str, str, str]) -> str:
    """``"src__rel__dst"``, the name used in ``partition.json`` and file names."""
    return "__".join(edge_type)
