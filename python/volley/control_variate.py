"""Control-variate training (VR-GCN): sampled blocks corrected by each node's stored history.

A GCN layer needs ``Σ_{u ∈ N(v)} Â_vu h_u`` for its targets. Neighbor sampling estimates it
from ``k(v)`` sampled neighbors, ``(d(v) / k(v)) Σ_sampled Â_vu h_u``: unbiased, but noisy
unless the fanout is large. Chen, Zhu and Song's control variate keeps a history ``h̄`` of every
node's activations and estimates only the difference from it::

    Σ_{u ∈ N(v)} Â_vu h̄_u  +  (d(v) / k(v)) Σ_sampled Â_vu (h_u - h̄_u)  (+ Â_vv (h_v - h̄_v))

The first term is exact (the full neighborhood, over stored rows, no gradient); the second is
small once the history is close to the current activations, so one or two sampled neighbors
per node are enough. ``ControlVariate`` gives what the estimator needs::

    cv = volley.ControlVariate(data, op="gcn")
    loader = volley.loader.NeighborLoader(data, num_neighbors=[2], batch_size=1024,
                                          input_nodes=train_idx, transform=cv)
    for batch in loader:
        h = torch.relu(lin0(u[batch.n_id]))               # fresh activations of every node
        history = store.pull("h1", batch.n_id)             # their stored history
        full = cv.history_aggregate(lambda ids: store.pull("h1", ids),
                                    batch.n_id[:batch.batch_size])
        out = lin1(cv.estimate(batch, h, history, full))   # [batch_size, dim]
        store.push("h1", batch.n_id, h.detach())

As a loader transform it adds ``batch.cv_weight`` (one estimator weight per sampled edge:
``Â_vu d(v) / k(v)``, with the whole graph's degrees) and ``batch.cv_self`` (``Â_vv`` per node:
``1 / (d(v) + 1)`` for ``"gcn"``, else 0). With no history ``estimate`` is plain neighbor
sampling's unbiased estimate; with fanout ``-1`` (every neighbor) it is exact whatever the
history is.
"""

from __future__ import annotations

from typing import Any, Callable, Optional, Union

import numpy as np

from . import _tensor
from ._volley import VolleyImportError, VolleyIndexError, VolleyTypeError, VolleyValueError

__all__ = ["ControlVariate"]

Rows = Union[Any, Callable[[Any], Any]]


def _torch() -> Any:
    torch = _tensor.torch_module()
    if torch is None:
        raise VolleyImportError("ControlVariate needs torch")
    return torch


class ControlVariate:
    """VR-GCN's estimator over the blocks of a ``NeighborLoader`` (see the module docstring).

    Args:
        graph: a ``volley.Graph`` or a PyG ``Data`` (its ``edge_index``); N(v) is node v's
            in-neighbors, as the loader samples them. Edge weights are not read.
        op: ``"gcn"`` (``Â = D̃^-1/2 (A + I) D̃^-1/2``, ``GCNConv``'s propagation), ``"mean"``
            (``1 / d(v)``) or ``"sum"`` (1), as in ``volley.aggregate``.

    Raises:
        VolleyValueError: an unknown op.
        VolleyTypeError: a graph that is neither a ``volley.Graph`` nor a ``Data``.
    """

    def __init__(self, graph: Any, op: str = "gcn"):
        from .aggregate import OPS, graph_of

        torch = _torch()
        self.op = _tensor.check_choice(op, "op", OPS)
        csr = graph_of(graph)
        self.num_nodes = int(csr.num_nodes)
        self._indptr = _tensor.to_numpy(csr.indptr).astype(np.int64)
        self._indices = _tensor.to_numpy(csr.indices).astype(np.int64)
        self._degree = torch.from_numpy(np.diff(self._indptr).astype(np.float32))

    def __call__(self, batch: Any) -> Any:
        """Adds ``cv_weight`` (per edge) and ``cv_self`` (per node) to a homogeneous batch."""
        torch = _torch()
        n_id, edge_index = getattr(batch, "n_id", None), getattr(batch, "edge_index", None)
        if n_id is None or edge_index is None:
            raise VolleyTypeError(f"ControlVariate reads a batch's n_id and edge_index; "
                                  f"{type(batch).__name__} has no "
                                  f"{'n_id' if n_id is None else 'edge_index'}")
        degree = self._degree[n_id]
        src, dst = edge_index[0], edge_index[1]
        sampled = torch.bincount(dst, minlength=int(n_id.shape[0])).to(torch.float32)
        scale = degree[dst] / sampled[dst]          # d(v) / k(v) for each edge's target
        batch.cv_weight = scale * self._norm(degree[src], degree[dst])
        batch.cv_self = (1.0 / (degree + 1.0) if self.op == "gcn"
                         else torch.zeros_like(degree))
        return batch

    def _norm(self, degree_u: Any, degree_v: Any) -> Any:
        """Â_vu for edges with these whole-graph in-degrees of source and target."""
        torch = _torch()
        if self.op == "gcn":
            return torch.rsqrt((degree_u + 1.0) * (degree_v + 1.0))
        if self.op == "mean":
            return 1.0 / degree_v.clamp(min=1.0)
        return torch.ones_like(degree_v)

    def history_aggregate(self, history: Rows, ids: Any) -> Any:
        """The exact term: ``Σ_{u ∈ N(v)} Â_vu h̄_u (+ Â_vv h̄_v)`` for every ``v`` in ``ids``,
        over full in-neighborhoods.

        Args:
            history: every node's stored rows, ``[num_nodes, dim]``, or a callable
                ``ids -> rows`` (e.g. ``lambda i: store.pull("h1", i)``, any placement of a
                ``volley.NodeStore``); it is called once, with the sorted unique ids needed.
            ids: the target nodes (int64).

        Returns:
            float32 ``[len(ids), dim]``, summed in CSR order (deterministic).

        Raises:
            VolleyIndexError: an id outside ``[0, num_nodes)``.
        """
        torch = _torch()
        targets = _tensor.as_ids(ids, "ids").astype(np.int64)
        outside = np.flatnonzero((targets < 0) | (targets >= self.num_nodes))
        if outside.size:
            raise VolleyIndexError(f"ids[{int(outside[0])}] = {int(targets[outside[0]])} is "
                                   f"outside the graph's {self.num_nodes} nodes")
        starts = self._indptr[targets]
        counts = self._indptr[targets + 1] - starts
        total = int(counts.sum())
        first = np.cumsum(counts) - counts
        positions = np.repeat(starts - first, counts) + np.arange(total, dtype=np.int64)
        neighbors = self._indices[positions]
        dst = np.repeat(np.arange(len(targets), dtype=np.int64), counts)
        needed = np.concatenate([neighbors, targets]) if self.op == "gcn" else neighbors
        unique, inverse = np.unique(needed, return_inverse=True)
        rows = history(torch.from_numpy(unique)) if callable(history) else \
            history[torch.from_numpy(unique)]
        rows = torch.as_tensor(rows, dtype=torch.float32)
        inverse = torch.from_numpy(inverse.reshape(-1))
        dst_t = torch.from_numpy(dst)
        degree_t = self._degree[torch.from_numpy(targets)]
        weight = self._norm(self._degree[torch.from_numpy(neighbors)], degree_t[dst_t])
        out = torch.zeros(len(targets), int(rows.shape[1]), dtype=torch.float32)
        out.index_add_(0, dst_t, rows[inverse[:total]] * weight[:, None])
        if self.op == "gcn":
            out += rows[inverse[total:]] / (degree_t + 1.0)[:, None]
        return out

    def estimate(self, batch: Any, h: Any, history: Optional[Any] = None,
                 aggregated: Optional[Any] = None, targets: Optional[int] = None) -> Any:
        """The layer's aggregation for the first ``targets`` nodes of the block.

        Args:
            batch: a batch that went through this transform.
            h: current activations of the block's first nodes (``h[i]`` for ``n_id[i]``; rows
                of every source the targets' sampled edges read).
            history: the stored history of the same rows (omitted: plain neighbor sampling's
                unbiased estimate, with no control variate).
            aggregated: ``history_aggregate`` of the targets (needed with ``history``).
            targets: how many leading nodes are this layer's targets (default
                ``batch.batch_size``; for an earlier layer of a deeper block, the nodes of the
                hops before the last).

        Returns:
            ``[targets, dim]``: differentiable in ``h``.

        Raises:
            VolleyValueError: a batch without ``cv_weight`` (not transformed), ``history``
                without ``aggregated``, or ``h`` with too few rows.
        """
        torch = _torch()
        weight = getattr(batch, "cv_weight", None)
        if weight is None:
            raise VolleyValueError("the batch has no cv_weight: pass the ControlVariate as the "
                                   "loader's transform=")
        if (history is None) != (aggregated is None):
            raise VolleyValueError("history and aggregated go together: pass both or neither")
        count = int(batch.batch_size if targets is None else targets)
        src, dst = batch.edge_index[0], batch.edge_index[1]
        keep = dst < count
        src, dst, weight = src[keep], dst[keep], weight[keep]
        needed = max(count, int(src.max()) + 1 if src.numel() else 0)
        if int(h.shape[0]) < needed:
            raise VolleyValueError(f"h has {int(h.shape[0])} rows; the block's {count} targets "
                                   f"read rows up to {needed - 1}")
        delta = h if history is None else h - history[:int(h.shape[0])].to(h.dtype)
        out = torch.zeros(count, int(h.shape[1]), dtype=h.dtype, device=h.device)
        out = out.index_add(0, dst.to(h.device), delta[src] * weight.to(h)[:, None])
        out = out + delta[:count] * batch.cv_self[:count].to(h)[:, None]
        return out if aggregated is None else out + aggregated.to(h)
