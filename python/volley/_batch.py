"""``volley.loader.Batch``: the batch class used when PyG is not importable."""

from __future__ import annotations

from typing import Any


class Batch:
    """One mini-batch, with the fields of PyG's ``NeighborLoader`` batches.

    Used when PyG is not importable (otherwise batches are ``torch_geometric.data.Data``).

    Attributes:
        x: features of ``n_id`` [n, D] (float32 by default), or None.
        y: labels of ``n_id`` [n] int64, or None.
        edge_index: int64 [2, E] local ids (row 0 sources, row 1 targets).
        n_id: int64 [n] global ids; the first ``batch_size`` are the seeds.
        e_id: int64 [E] edge ids.
        input_id: int64 [batch_size] positions of the seeds in ``input_nodes``.
        batch_size: number of seeds.
        num_sampled_nodes, num_sampled_edges: per-hop counts (lists).
    """

    def __init__(self, **fields: Any):
        self.__dict__.update(fields)

    @property
    def num_nodes(self) -> int:
        return int(self.n_id.shape[0])

    def __repr__(self) -> str:
        parts = []
        for key, value in self.__dict__.items():
            shape = getattr(value, "shape", None)
            parts.append(f"{key}={list(shape)}" if shape is not None else f"{key}={value}")
        return f"Batch({', '.join(parts)})"
