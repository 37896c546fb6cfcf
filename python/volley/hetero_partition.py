"""Partitioning a heterogeneous dataset, and loading one of its partitions.

``volley.partition`` and ``volley.load_partition`` dispatch here when given a heterogeneous
dataset (directory or ``volley.HeteroDataset``) or a heterogeneous partitioned directory.

Methods: ``"random"`` (per node type, balanced random: every type's nodes and training nodes
spread evenly) and ``"metis"`` (k-way METIS on the type-merged symmetrised graph with one
balance constraint per node type, so every type is balanced and edges of all types are cut
as little as possible) and ``"stream"`` (Fennel, one pass over the node types in order, each node
placed where most of its already placed in-neighbors are; best with reverse edge types).

Renumbering is per node type: within type ``T``, partition ``p`` owns the new ids
``[offsets[T][p], offsets[T][p + 1])`` (``books[T]``); ``load_node_map(path, node_type=T)`` maps
old → new ids. Each partition is a heterogeneous dataset of its owned nodes: edge type
``(S, R, D)``'s rows are the owned ``D`` nodes, its source ids are new *global* ids of ``S``;
features, labels and splits (local rows) follow their nodes.

Example:
    >>> result = volley.partition("data/mag", "/tmp/mag-4", 4, method="metis")
    >>> result.quality["edge_cut_fraction"], result.quality["node_balance"]["author"]
    >>> part = volley.load_partition("/tmp/mag-4", 1)      # a HeteroPartition
    >>> part.books["author"].owner_of(part.first_node["author"])
    1
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Tuple, Union

import numpy as np

from . import _tensor
from ._volley import HeteroPartition as _NativePartition
from ._volley import is_hetero_partitioned_directory as _is_hetero_partitioned
from ._volley import load_hetero_partition as _load_partition
from ._volley import load_node_map as _load_node_map
from ._volley import partition_hetero_dataset as _partition
from ._volley import partition_hetero_dataset_in_memory as _partition_in_memory
from ._volley import partition_manifest_json as _manifest_json
from ._volley import verify_partitioned_dataset as _verify
from ._volley import VolleyValueError
from .hetero import HeteroDataset
from .partition_book import PartitionBook

PathLike = Union[str, "os.PathLike[str]"]
METHODS = ("random", "metis", "stream")


@dataclass
class HeteroPartitionResult:
    """What ``partition`` did on a heterogeneous dataset.

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


def is_hetero_partitioned(path: Any) -> bool:
    """Whether ``path`` is a heterogeneous partitioned dataset directory."""
    return isinstance(path, (str, os.PathLike)) and _is_hetero_partitioned(os.fspath(path))


def partition_typed(dataset: Union[PathLike, HeteroDataset], output: PathLike, num_parts: int,
                    options: Dict[str, Any]) -> HeteroPartitionResult:
    """``volley.partition`` of a heterogeneous dataset (``options``: method, balance_tolerance,
    seed, already checked)."""
    if isinstance(dataset, HeteroDataset):
        raw = _partition_in_memory(dataset._native, os.fspath(output), int(num_parts), **options)
    else:
        raw = _partition(os.fspath(dataset), os.fspath(output), int(num_parts), **options)
    return HeteroPartitionResult(
        books={t: PartitionBook(offsets) for t, offsets in raw["offsets"].items()},
        part_edges=[list(edges) for edges in raw["part_edges"]],
        quality=dict(raw["quality"]),
        seconds=raw["seconds"],
        assign_seconds=raw["assign_seconds"],
        path=os.fspath(output),
    )


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


def load_hetero_partition(
    path: PathLike, part: int, *, mmap: bool = True, verify: bool = False, validate: bool = True
) -> HeteroPartition:
    """Loads partition ``part`` of a heterogeneous partitioned dataset (``volley.load_partition``
    calls this for one).

    Args:
        path: the partitioned directory (holding ``partition.json`` of version 2).
        part: the partition index in ``[0, K)``.
        mmap: map the arrays read-only instead of reading them.
        verify: check every array's CRC-32 (manifests are always checked).
        validate: check every edge type's indptr and that source ids are below the source
            type's total.

    Raises:
        VolleyIndexError: ``part`` out of range, or a source id out of range.
        VolleyOSError: a missing, corrupt or mismatched file, naming the file, the field, the
            expected and the found value.
    """
    native = _load_partition(os.fspath(path), int(part), memory_map=mmap,
                             verify_checksums=verify, validate_graph=validate)
    return HeteroPartition(native)


def load_hetero_node_map(path: PathLike, node_type: str, *, verify: bool = False) -> Any:
    """``T.node_map.npy``: int64 ``[N_T]``, old id → new id of node type ``node_type``."""
    return _tensor.to_output(_load_node_map(os.fspath(path), node_type, verify_checksums=verify))


def read_hetero_partition_manifest(path: PathLike) -> Dict[str, Any]:
    """``partition.json`` of a heterogeneous partitioned dataset, checked, as a dict."""
    return json.loads(_manifest_json(os.fspath(path)))


def verify_hetero_partitioned_dataset(path: PathLike) -> List[str]:
    """Checks every file (manifests, node maps, parts with checksums and graph ids); one line per
    problem, empty when intact."""
    return list(_verify(os.fspath(path)))


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
    manifest = read_hetero_partition_manifest(path)
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
        new[_tensor.to_numpy(load_hetero_node_map(path, node_type))] = times
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
