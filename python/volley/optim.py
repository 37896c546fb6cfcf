"""Sparse optimizers for ``volley.nn.Embedding``: each step updates only the rows a batch used,
in C++, with the optimizer state beside the rows in the store.

    optimizer = volley.optim.SparseAdam([emb], lr=0.01)
    loss.backward()
    optimizer.step()          # applies the batch's row gradients, then forgets them
    optimizer.zero_grad()

``SparseAdagrad`` follows ``torch.optim.Adagrad`` on sparse gradients (no lr decay, zero initial
sum), ``SparseAdam`` follows ``torch.optim.SparseAdam`` (its bias correction counts one step per
``step()`` that had gradients): a table trained with them matches ``torch.nn.Embedding(sparse=
True)`` trained with torch's (float rounding aside). An id used several times in a batch has its
gradients summed first.

Under ``torch.distributed`` (initialised when ``step()`` runs, world size > 1):

- ``mode="sync"`` (the default): every rank's row gradients are gathered, concatenated in rank
  order and applied once, so the result is deterministic and the same as one process applying
  them in that order. A store every rank reaches (``NodeStore(shared=True)`` handed to every
  rank, or ``NodeStore(servers=...)``) is updated by rank 0 and every rank waits for it (a
  barrier); a local store per rank is updated by each rank with the same gathered gradients
  (identical replicas).
- ``mode="hogwild"``: each rank applies its own gradients to a shared store or the servers at
  once, without waiting (asynchronous: faster, not deterministic; rows stay whole, see
  ``NodeStore``).
"""

from __future__ import annotations

from typing import Any, Dict, Iterable, List, Optional, Tuple

import numpy as np

from . import _tensor
from ._volley import VolleyTypeError, VolleyValueError

__all__ = ["SparseAdagrad", "SparseAdam"]

MODES = ("sync", "hogwild")


class _SparseOptimizer:
    _kind = ""

    def __init__(self, embeddings: Iterable[Any], lr: float, eps: float, mode: str,
                 betas: Tuple[float, float] = (0.9, 0.999), process_group: Any = None):
        from .nn import Embedding

        self.embeddings: List[Any] = list(embeddings)
        for embedding in self.embeddings:
            if not isinstance(embedding, Embedding):
                raise VolleyTypeError(
                    f"{type(self).__name__} trains volley.nn.Embedding modules, got "
                    f"{type(embedding).__name__}")
        self.lr = _tensor.check_real(lr, "lr", 0.0)
        self.eps = _tensor.check_real(eps, "eps", 0.0)
        if len(betas) != 2 or not all(0.0 <= b < 1.0 for b in betas):
            raise VolleyValueError(f"betas must be two numbers in [0, 1), got {betas!r}")
        self.betas = (float(betas[0]), float(betas[1]))
        self.mode = _tensor.check_choice(mode, "mode", MODES)
        self.process_group = process_group

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Forgets the row gradients computed since the last step (rows fetched by a forward
        pass not yet backpropagated stay: ``forward, zero_grad, backward, step`` works)."""
        for embedding in self.embeddings:
            embedding.clear(backpropagated_only=True)

    def step(self, closure: Any = None) -> None:
        """Applies the traced row gradients of every embedding, then forgets them."""
        loss = closure() if closure is not None else None
        world = self._world()
        for embedding in self.embeddings:
            gradients = embedding.gradients()
            for node_type in embedding.node_types:
                ids, grads = gradients.get(
                    node_type, (np.zeros(0, np.int64), np.zeros((0, embedding.dim), np.float32)))
                self._apply(embedding, node_type, ids, grads, world)
            embedding.clear()
        return loss

    def _apply(self, embedding: Any, node_type: Optional[str], ids: np.ndarray,
               grads: np.ndarray, world: Optional[Tuple[Any, int, int]]) -> None:
        def update(ids: np.ndarray, grads: np.ndarray) -> None:
            embedding.store.step(embedding.name, ids, grads, optimizer=self._kind, lr=self.lr,
                                 eps=self.eps, betas=self.betas, node_type=node_type)

        if world is not None and self.mode == "sync":
            dist, rank, size = world
            ids, grads = _all_gather_rows(dist, ids, grads, embedding.dim, self.process_group)
            reached_by_all = embedding.store.placement != "local"  # shared memory or servers
            if (rank == 0 or not reached_by_all) and len(ids):
                update(ids, grads)
            if reached_by_all:
                dist.barrier(group=self.process_group)
            return
        if len(ids):
            update(ids, grads)

    def _world(self) -> Optional[Tuple[Any, int, int]]:
        torch = _tensor.torch_module()
        if torch is None or not torch.distributed.is_available():
            return None
        dist = torch.distributed
        if not dist.is_initialized():
            return None
        size = dist.get_world_size(self.process_group)
        return (dist, dist.get_rank(self.process_group), size) if size > 1 else None

    def state_dict(self) -> Dict[str, Any]:
        """The options (the state itself is in the embeddings' store: ``store.state_dict()``)."""
        return {"lr": self.lr, "eps": self.eps, "betas": self.betas, "mode": self.mode}

    def load_state_dict(self, state: Dict[str, Any]) -> None:
        self.lr, self.eps = float(state["lr"]), float(state["eps"])
        self.betas, self.mode = tuple(state["betas"]), state["mode"]

    def __repr__(self) -> str:
        return f"{type(self).__name__}(lr={self.lr}, eps={self.eps}, mode={self.mode!r})"


def _all_gather_rows(dist: Any, ids: np.ndarray, grads: np.ndarray, dim: int,
                     group: Any) -> Tuple[np.ndarray, np.ndarray]:
    """Every rank's (ids, gradients), concatenated in rank order."""
    import torch

    size = dist.get_world_size(group)
    counts = [torch.zeros(1, dtype=torch.int64) for _ in range(size)]
    dist.all_gather(counts, torch.tensor([len(ids)], dtype=torch.int64), group=group)
    longest = max(int(c) for c in counts)
    padded_ids = torch.zeros(longest, dtype=torch.int64)
    padded_ids[:len(ids)] = torch.from_numpy(ids)
    padded_grads = torch.zeros(longest, dim, dtype=torch.float32)
    padded_grads[:len(ids)] = torch.from_numpy(grads)
    all_ids = [torch.empty_like(padded_ids) for _ in range(size)]
    all_grads = [torch.empty_like(padded_grads) for _ in range(size)]
    dist.all_gather(all_ids, padded_ids, group=group)
    dist.all_gather(all_grads, padded_grads, group=group)
    keep = [int(c) for c in counts]
    return (np.concatenate([i[:n].numpy() for i, n in zip(all_ids, keep)]),
            np.ascontiguousarray(np.concatenate([g[:n].numpy() for g, n in zip(all_grads, keep)])))


class SparseAdagrad(_SparseOptimizer):
    """Adagrad on the rows a batch used (torch.optim.Adagrad's update, sparse).

    Args:
        embeddings: ``volley.nn.Embedding`` modules (tables with at least 1 optimizer slot).
        lr, eps: as torch's (default 0.01, 1e-10).
        mode: ``"sync"`` or ``"hogwild"`` under torch.distributed (see the module docstring).
        process_group: the ``torch.distributed`` group (default: the world).
    """

    _kind = "adagrad"

    def __init__(self, embeddings: Iterable[Any], lr: float = 0.01, eps: float = 1e-10, *,
                 mode: str = "sync", process_group: Any = None):
        super().__init__(embeddings, lr, eps, mode, process_group=process_group)


class SparseAdam(_SparseOptimizer):
    """Adam on the rows a batch used (torch.optim.SparseAdam's update).

    Args:
        embeddings: ``volley.nn.Embedding`` modules (tables with 2 optimizer slots).
        lr, betas, eps: as torch's (default 0.001, (0.9, 0.999), 1e-8).
        mode, process_group: as ``SparseAdagrad``.
    """

    _kind = "adam"

    def __init__(self, embeddings: Iterable[Any], lr: float = 0.001,
                 betas: Tuple[float, float] = (0.9, 0.999), eps: float = 1e-8, *,
                 mode: str = "sync", process_group: Any = None):
        super().__init__(embeddings, lr, eps, mode, betas=betas, process_group=process_group)
