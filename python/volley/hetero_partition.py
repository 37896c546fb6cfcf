"""The names of heterogeneous partitioning, kept for callers: ``volley.partition`` serves both
graph kinds (``partition``, ``load_partition``, ``load_node_map(path, node_type=T)``,
``read_partition_manifest``, ``verify_partitioned_dataset``, ``write_times``)."""

from __future__ import annotations

from typing import Any

from .partition import HeteroPartition, HeteroPartitionResult, PathLike, edge_type_key
from .partition import load_node_map, write_times
from .partition import load_partition as load_hetero_partition
from .partition import read_partition_manifest as read_hetero_partition_manifest
from .partition import verify_partitioned_dataset as verify_hetero_partitioned_dataset

METHODS = ("random", "metis", "stream")

__all__ = ["HeteroPartition", "HeteroPartitionResult", "METHODS", "edge_type_key",
           "load_hetero_node_map", "load_hetero_partition", "read_hetero_partition_manifest",
           "verify_hetero_partitioned_dataset", "write_times"]


def load_hetero_node_map(path: PathLike, node_type: str, *, verify: bool = False) -> Any:
    """``T.node_map.npy``: ``volley.partition.load_node_map(path, node_type=T)``."""
    return load_node_map(path, node_type=node_type, verify=verify)
