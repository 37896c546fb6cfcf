"""``volley.loader.NeighborLoader``: PyG's ``NeighborLoader`` interface on Volley's C++ pipeline.

Change one import::

    # from torch_geometric.loader import NeighborLoader
    from volley.loader import NeighborLoader

    loader = NeighborLoader(data, num_neighbors=[10, 10], batch_size=64,
                            input_nodes=data.train_mask, shuffle=True)
    for batch in loader:
        out = model(batch.x, batch.edge_index)[: batch.batch_size]

Worker *threads* in C++ sample and gather whole batches ahead of the training loop (no worker
processes, no pickling); the GIL is released while they work.
"""

from __future__ import annotations

import os
from typing import Any, Callable, Iterator, List, Optional, Sequence

import numpy as np

from . import _tensor
from ._volley import NeighborLoader as _NativeLoader
from .dataset import Dataset
from .graph import Graph


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


def _pyg_data_class() -> Optional[type]:
    try:
        from torch_geometric.data import Data
    except Exception:  # PyG absent or broken: fall back to volley.Batch
        return None
    return Data


def _as_input_nodes(input_nodes: Any, num_nodes: int) -> Optional[np.ndarray]:
    if input_nodes is None:
        return None
    if isinstance(input_nodes, tuple):
        raise ValueError("heterogeneous input_nodes (node_type, ids) are not supported yet")
    values = _tensor.to_numpy(input_nodes)
    if values.dtype == np.bool_:
        if values.shape != (num_nodes,):
            raise ValueError(
                f"a boolean input_nodes mask must have shape ({num_nodes},), got {values.shape}"
            )
        return np.nonzero(values)[0].astype(np.int64)
    if not np.issubdtype(values.dtype, np.integer):
        raise ValueError(f"input_nodes must hold integer ids or a boolean mask, got {values.dtype}")
    return np.ascontiguousarray(values, dtype=np.int64).reshape(-1)


class NeighborLoader:
    """Mini-batches of sampled subgraphs around seed nodes, with features and labels gathered.

    Argument names follow ``torch_geometric.loader.NeighborLoader``.

    Args:
        data: a PyG ``Data`` (``edge_index``, optional ``x``, ``y``, ``edge_weight``) or a
            ``volley.Dataset``.
        num_neighbors: fanout per hop, innermost first; ``-1`` takes all neighbors.
        batch_size: seeds per batch.
        input_nodes: seed ids (tensor/array/list), a boolean mask over nodes, or None for all.
        shuffle: reshuffle the seeds every epoch.
        num_workers: C++ worker threads (not processes); default: all cores.
        seed: base random seed. None draws one from ``torch.initial_seed()`` (so
            ``torch.manual_seed`` makes runs repeatable) or numpy when torch is absent.
        replace: sample with replacement.
        weighted: sample proportionally to edge weights (``data.edge_weight``).
        drop_last: drop the last incomplete batch.
        prefetch: batches prepared ahead of the consumer; default 2 × workers.
        copy: hand out copies instead of views of the pipeline's batch memory. Views are safe
            (the memory is never reused while referenced), so this is rarely needed.
        transform: optional callable applied to each batch.

    Each batch is a PyG ``Data`` when PyG is importable, else a ``volley.loader.Batch``; both
    carry ``x``, ``y``, ``edge_index``, ``n_id``, ``e_id``, ``input_id``, ``batch_size``,
    ``num_sampled_nodes`` and ``num_sampled_edges``. ``x`` is float32 (features stored as
    uint8/float16 are converted while gathered).

    Raises:
        ValueError / IndexError: inconsistent arguments (bad fanout, seed out of range, ...).
    """

    def __init__(
        self,
        data: Any,
        num_neighbors: Sequence[int],
        batch_size: int = 1,
        input_nodes: Any = None,
        shuffle: bool = False,
        num_workers: Optional[int] = None,
        seed: Optional[int] = None,
        *,
        replace: bool = False,
        weighted: bool = False,
        drop_last: bool = False,
        prefetch: Optional[int] = None,
        copy: bool = False,
        transform: Optional[Callable[[Any], Any]] = None,
        feature_dtype: str = "float32",
        _on_batch_start: Optional[Callable[[int], None]] = None,
    ):
        graph, x, y = self._unpack(data, weighted)
        self.data = data
        self.graph = graph
        self.num_neighbors = [int(k) for k in num_neighbors]
        self.batch_size = int(batch_size)
        self.shuffle = bool(shuffle)
        self.num_workers = int(num_workers) if num_workers else (os.cpu_count() or 1)
        self.seed = int(seed) if seed is not None else _default_seed()
        self.copy = bool(copy)
        self.transform = transform
        self.input_nodes = _as_input_nodes(input_nodes, graph.num_nodes)
        self._epoch = 0
        self._data_class = _pyg_data_class()
        self._native = _NativeLoader(
            graph._csr,
            None if x is None else _tensor.to_input(x),
            None if y is None else _tensor.to_input(y),
            self.input_nodes,
            self.num_neighbors,
            batch_size=self.batch_size,
            shuffle=self.shuffle,
            drop_last=bool(drop_last),
            num_threads=self.num_workers,
            prefetch=int(prefetch or 0),
            seed=self.seed,
            replace=bool(replace),
            weighted=bool(weighted),
            feature_dtype=feature_dtype,
            on_batch_start=_on_batch_start,
        )

    @staticmethod
    def _unpack(data: Any, weighted: bool):
        if isinstance(data, Dataset):
            return data.graph, data.x, data.y
        edge_index = getattr(data, "edge_index", None)
        if edge_index is None:
            raise TypeError(
                f"data must be a torch_geometric.data.Data with edge_index or a volley.Dataset, "
                f"got {type(data).__name__}"
            )
        weight = getattr(data, "edge_weight", None) if weighted else None
        if weighted and weight is None:
            raise ValueError("weighted=True needs data.edge_weight")
        cached = getattr(data, "_volley_graph", None)
        if cached is None or cached[1] != (id(edge_index), weighted):
            graph = Graph.from_edge_index(
                edge_index, num_nodes=getattr(data, "num_nodes", None), edge_weight=weight
            )
            try:  # cache on the Data object so several loaders share one graph
                object.__setattr__(data, "_volley_graph", (graph, (id(edge_index), weighted)))
            except Exception:
                pass
        else:
            graph = cached[0]
        return graph, getattr(data, "x", None), getattr(data, "y", None)

    def __len__(self) -> int:
        return self._native.num_batches

    def __iter__(self) -> Iterator[Any]:
        epoch = self._native.start_epoch(self._epoch)
        self._epoch += 1
        return _EpochIterator(self, epoch)

    def _to_batch(self, raw: dict) -> Any:
        def out(key: str) -> Any:
            value = _tensor.to_output(raw[key])
            if value is not None and self.copy:
                value = value.clone() if hasattr(value, "clone") else value.copy()
            return value

        fields = dict(
            x=out("x"),
            y=out("y"),
            edge_index=out("edge_index"),
            n_id=out("n_id"),
            e_id=out("e_id"),
            input_id=out("input_id"),
            batch_size=int(raw["batch_size"]),
            num_sampled_nodes=list(raw["num_sampled_nodes"]),
            num_sampled_edges=list(raw["num_sampled_edges"]),
        )
        if fields["x"] is None:
            del fields["x"]
        if fields["y"] is None:
            del fields["y"]
        if self._data_class is not None and _tensor.using_torch():
            batch = self._data_class(**fields)
        else:
            batch = Batch(**fields)
        return self.transform(batch) if self.transform is not None else batch

    def __repr__(self) -> str:
        return (
            f"NeighborLoader(num_neighbors={self.num_neighbors}, batch_size={self.batch_size}, "
            f"batches={len(self)}, shuffle={self.shuffle}, num_workers={self.num_workers})"
        )


class _EpochIterator:
    def __init__(self, loader: NeighborLoader, epoch: Any):
        self._loader = loader
        self._epoch = epoch

    def __iter__(self) -> "_EpochIterator":
        return self

    def __next__(self) -> Any:
        if self._epoch is None:
            raise StopIteration
        try:
            raw = self._epoch.next()
        except BaseException:
            self.close()
            raise
        if raw is None:
            self.close()
            raise StopIteration
        return self._loader._to_batch(raw)

    def __len__(self) -> int:
        return len(self._loader)

    def close(self) -> None:
        """Stops the epoch's workers (also done when the iterator is garbage-collected)."""
        if self._epoch is not None:
            self._epoch.stop()  # releases the GIL while joining
            self._epoch = None

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:
            pass


def _default_seed() -> int:
    torch = _tensor.torch_module()
    if torch is not None:
        return int(torch.initial_seed()) & 0x7FFFFFFFFFFFFFFF
    return int(np.random.SeedSequence().entropy) & 0x7FFFFFFFFFFFFFFF
