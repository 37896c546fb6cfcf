"""Partitioning: cut a dataset into K partitions, and load one partition without the rest.

Methods: ``"random"`` (balanced random), ``"metis"`` (k-way METIS on the symmetrised graph,
balancing nodes, in-edges and training nodes), ``"hotness"`` (METIS, then each node moves to the
partition that reads it most in a simulated epoch; plus a per-partition cache of hot remote
feature rows) and ``"stream"`` (Fennel, one pass over the CSR in chunks, bounded memory).

Nodes are renumbered so partition ``p`` owns the new ids ``[offsets[p], offsets[p + 1])``; a
``PartitionBook`` answers ``owner_of`` from those offsets alone. Each partition directory is a
dataset directory whose rows are its owned nodes and whose neighbor ids are *new global* ids;
``train_idx``/``val_idx``/``test_idx`` hold local rows (add ``first_node`` for global ids).

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
from typing import Any, Dict, List, Optional, Sequence, Union

import numpy as np

from . import _policy, _tensor, hetero_partition
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
            type (methods random, metis and stream; the arguments after ``seed`` are ignored)
            and gives a ``volley.hetero_partition.HeteroPartitionResult``.
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
        VolleyValueError: a bad option (named in the message), or a dataset without training
            nodes for hotness.
        VolleyOSError: the dataset cannot be read or the output cannot be written.
    """
    num_parts = _tensor.check_int(num_parts, "num_parts", 1, 2**20)
    seed = _tensor.check_int(seed, "seed", 0, 2**64 - 1)
    balance_tolerance = _tensor.check_real(balance_tolerance, "balance_tolerance")
    typed = _is_hetero_dataset(dataset)
    methods = hetero_partition.METHODS if typed else METHODS
    if method not in methods:
        raise VolleyValueError(f"method must be one of {', '.join(methods)}"
                               f"{' for a heterogeneous dataset' if typed else ''}, got {method!r}")
    options = dict(method=method, balance_tolerance=balance_tolerance, seed=seed)
    if typed:
        return hetero_partition.partition_typed(dataset, output, num_parts, options)
    options.update(
        fanouts=_policy.check_fanout_list(fanouts, "fanouts"),
        batch_size=_tensor.check_int(batch_size, "batch_size", 1, 2**31 - 1),
        cache_bytes=_tensor.byte_size(cache_bytes, "cache_bytes"),
        simulate_epoch=bool(simulate_epoch))
    if isinstance(dataset, Dataset):
        raw = _partition_dataset_in_memory(dataset._native, os.fspath(output), num_parts, **options)
    else:
        raw = _partition_dataset(os.fspath(dataset), os.fspath(output), num_parts, **options)
    return PartitionResult(
        book=PartitionBook(raw["offsets"]),
        part_nodes=list(raw["part_nodes"]),
        part_edges=list(raw["part_edges"]),
        part_train=list(raw["part_train"]),
        part_cached=list(raw["part_cached"]),
        quality=dict(raw["quality"]),
        seconds=raw["seconds"],
        assign_seconds=raw["assign_seconds"],
        path=os.fspath(output),
    )


def _is_hetero_dataset(dataset: Any) -> bool:
    """A ``volley.HeteroDataset`` or a heterogeneous (version 2) dataset directory."""
    if isinstance(dataset, HeteroDataset):
        return True
    if isinstance(dataset, Dataset):
        return False
    try:
        with open(os.path.join(os.fspath(dataset), "volley.json")) as manifest:
            return json.load(manifest).get("version") == 2
    except (OSError, ValueError, AttributeError):
        return False


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


def load_partition(
    path: PathLike, part: int, *, mmap: bool = True, verify: bool = False, validate: bool = True
) -> Partition:
    """Loads partition ``part`` without reading the rest of the graph.

    Args:
        path: the partitioned dataset directory (holding ``partition.json``).
        part: the partition index in ``[0, K)``.
        mmap: map the arrays read-only (nothing copied) instead of reading them.
        verify: check every array's CRC-32 (manifests are always checked).
        validate: check indptr and that neighbor / edge ids are in range (O(edges of the part)).

    Returns:
        The ``Partition``; for a heterogeneous partitioned directory a
        ``volley.hetero_partition.HeteroPartition`` (per-type ``books`` and ``first_node``, a
        ``HeteroDataset`` of the owned nodes).

    Raises:
        VolleyIndexError: ``part`` out of range.
        VolleyOSError: a missing, corrupt or mismatched file (e.g. a part directory from another
            run), naming the file, the field, the expected and the found value.
    """
    if hetero_partition.is_hetero_partitioned(path):
        return hetero_partition.load_hetero_partition(
            path, part, mmap=mmap, verify=verify, validate=validate)
    part = _tensor.check_int(part, "part", -(2**63), 2**63 - 1)  # the range: the native check
    native = _load_partition(
        os.fspath(path), part, memory_map=mmap, verify_checksums=verify, validate_graph=validate,
    )
    return Partition(native)


def read_partition_manifest(path: PathLike) -> Dict[str, Any]:
    """``partition.json`` of a partitioned dataset (checked first), as a dict."""
    return json.loads(_partition_manifest_json(os.fspath(path)))


def load_node_map(path: PathLike, *, node_type: Optional[str] = None, verify: bool = False) -> Any:
    """int64 [N]: the new id of each old node id (of ``node_type`` in a heterogeneous one)."""
    if node_type is not None:
        return hetero_partition.load_hetero_node_map(path, node_type, verify=verify)
    return _tensor.to_output(_load_node_map(os.fspath(path), verify_checksums=verify))


def invert_node_map(node_map: Any) -> Any:
    """int64 [N]: the old id of each new id (the inverse permutation)."""
    return _tensor.to_output(_invert_node_map(_tensor.to_input(node_map)))


def verify_partitioned_dataset(path: PathLike) -> List[str]:
    """Checks every file of a partitioned dataset (homogeneous or heterogeneous), checksums
    included; one line per problem."""
    if hetero_partition.is_hetero_partitioned(path):
        return hetero_partition.verify_hetero_partitioned_dataset(path)
    return list(_verify_partitioned_dataset(os.fspath(path)))


def to_new_ids(node_map: Union[PathLike, Any], old_ids: Any) -> Any:
    """Maps ids of the original dataset to the partitioned (new) numbering.

    Distributed loaders (``volley.dist``) and partitions speak new ids; seeds picked in the
    original dataset (e.g. its ``train_idx``) go through this first.

    Args:
        node_map: a partitioned dataset directory (its ``node_map.npy`` is read, memory-mapped),
            or the map itself (``load_node_map``: int64 [N], old id -> new id).
        old_ids: int ids (array / tensor / list), or a boolean mask over the N old ids.

    Returns:
        int64 new ids, in the order of ``old_ids`` (of the mask's True positions, ascending old
        id); a tensor when torch is importable.

    Raises:
        VolleyIndexError: an old id outside [0, N). VolleyValueError: a mask of the wrong length.
    """
    if isinstance(node_map, (str, os.PathLike)):
        node_map = _load_node_map(os.fspath(node_map), verify_checksums=False)
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
