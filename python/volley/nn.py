"""Learnable node embeddings held in a ``volley.NodeStore`` (needs torch).

    emb = volley.nn.Embedding(num_nodes, 64)                  # one table (Data)
    emb = volley.nn.Embedding({"author": 1134649, "field": 59965}, 64)   # a table per type
    optimizer = volley.optim.SparseAdam([emb], lr=0.01)
    h = emb(batch.n_id)                       # rows of the batch's nodes, requiring grad
    h = emb({"author": batch["author"].n_id, "field": batch["field"].n_id})   # a dict per type
    loss.backward(); optimizer.step(); optimizer.zero_grad()

The rows live in the store, not in ``module.parameters()``: DDP does not all-reduce them, and the
optimizer applies each batch's sparse gradient to the store's rows in C++ (the optimizer state
beside the rows). With a shared store (``NodeStore(shared=True)``) every process of the machine
trains the same table; see ``volley.optim`` for the distributed modes.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple, Union

import numpy as np

from . import _tensor
from .node_store import NodeStore

try:
    import torch

    _Module = torch.nn.Module
except ImportError:  # pragma: no cover (torch is needed; the import error comes at use)
    torch = None
    _Module = object

__all__ = ["Embedding"]


class Embedding(_Module):  # type: ignore[misc]
    """Node embeddings in a ``NodeStore``: one table, or one per node type.

    Args:
        num_nodes: rows (an int), or ``{node_type: rows}``.
        dim: columns of every table.
        name: the tables' name in the store (default ``"embedding"``).
        store: the ``NodeStore`` to create them in (default: a new local one; pass
            ``NodeStore(shared=True)`` to share the tables between processes).
        dtype: float32, float16 or bfloat16 rows (gradients and optimizer state are float32).
        init, scale, seed: the first values, as ``NodeStore.init`` (default: normal with std 1,
            torch.nn.Embedding's).
        optimizer_slots: state rows per row (2 fits SparseAdam and SparseAdagrad; 1 only
            SparseAdagrad; 0 none: the rows cannot be trained by volley.optim).

    ``forward(ids)`` returns float32 rows ``[len(ids), dim]`` on ``ids``' device, requiring grad
    while training; a dict of ids per type gives a dict of rows. The gradients are kept until the
    optimizer's ``step()`` / ``zero_grad()``.
    """

    def __init__(self, num_nodes: Union[int, Dict[str, int]], dim: int, *,
                 name: str = "embedding", store: Optional[NodeStore] = None,
                 dtype: Any = "float32", init: str = "normal", scale: float = 1.0, seed: int = 0,
                 optimizer_slots: int = 2, exist_ok: bool = False):
        if torch is None:
            from ._volley import VolleyImportError

            raise VolleyImportError("volley.nn.Embedding needs torch")
        super().__init__()
        self.store = store if store is not None else NodeStore()
        self.name = name
        self.typed = isinstance(num_nodes, dict)
        counts = num_nodes if self.typed else {None: num_nodes}
        for offset, (node_type, count) in enumerate(counts.items()):
            self.store.init(name, count, dim, node_type=node_type, dtype=dtype, init=init,
                            scale=scale, seed=seed + offset, optimizer_slots=optimizer_slots,
                            exist_ok=exist_ok)
        self.node_types: List[Optional[str]] = list(counts)
        self.dim = dim
        self._trace: List[Tuple[Optional[str], np.ndarray, Any]] = []

    @classmethod
    def from_store(cls, store: NodeStore, name: str = "embedding") -> "Embedding":
        """The embedding over tables ``name`` that ``store`` already holds (one per node type),
        e.g. a shared store another rank created and sent (``broadcast_object_list``).
        VolleyValueError when the store has no table of that name."""
        types = [node_type for node_type, table in store.names() if table == name]
        if not types:
            from ._volley import VolleyValueError

            raise VolleyValueError(f"the store has no tables named {name!r}: {store!r}")
        embedding = cls.__new__(cls)
        _Module.__init__(embedding)
        embedding.store, embedding.name = store, name
        embedding.typed = types != [None]
        embedding.node_types = types
        embedding.dim = store.size(name, types[0])[1]
        embedding._trace = []
        return embedding

    def forward(self, ids: Any) -> Any:
        if isinstance(ids, dict):
            return {node_type: self._rows(node_type, value) for node_type, value in ids.items()}
        if self.typed:
            from ._volley import VolleyTypeError

            raise VolleyTypeError("a typed Embedding takes a dict of ids per node type")
        return self._rows(None, ids)

    def _rows(self, node_type: Optional[str], ids: Any) -> Any:
        positions = _tensor.as_ids(ids, "ids")
        rows = self.store.pull(self.name, positions, node_type=node_type)
        if self.training and torch.is_grad_enabled():
            rows.requires_grad_(True)
            self._trace.append((node_type, positions, rows))
        device = ids.device if isinstance(ids, torch.Tensor) else None
        return rows if device is None or device.type == "cpu" else rows.to(device)

    def gradients(self) -> Dict[Optional[str], Tuple[np.ndarray, np.ndarray]]:
        """The traced rows' ids and float32 gradients per node type (rows without a gradient
        are left out), concatenated in forward order."""
        parts: Dict[Optional[str], List[Tuple[np.ndarray, np.ndarray]]] = {}
        for node_type, positions, rows in self._trace:
            if rows.grad is None:
                continue
            grad = rows.grad.detach().to("cpu", torch.float32).numpy()
            parts.setdefault(node_type, []).append((positions, grad))
        return {node_type: (np.concatenate([p for p, _ in pieces]),
                            np.ascontiguousarray(np.concatenate([g for _, g in pieces])))
                for node_type, pieces in parts.items()}

    def clear(self, backpropagated_only: bool = False) -> None:
        """Forgets the traced rows (the optimizer's step does, after applying them); with
        ``backpropagated_only``, only those that already have a gradient (``zero_grad``: a
        forward pass made before it still counts, as for torch parameters)."""
        if backpropagated_only:
            self._trace = [entry for entry in self._trace if entry[2].grad is None]
        else:
            self._trace.clear()

    def weight(self, node_type: Optional[str] = None) -> Any:
        """Every row of a table, as float32 (a copy)."""
        rows = self.store.size(self.name, node_type)[0]
        return self.store.pull(self.name, np.arange(rows, dtype=np.int64), node_type=node_type)

    def extra_repr(self) -> str:
        sizes = {t: self.store.size(self.name, t)[0] for t in self.node_types}
        shown = sizes[None] if not self.typed else sizes
        return f"{shown}, {self.dim}, name={self.name!r}, store={self.store!r}"
