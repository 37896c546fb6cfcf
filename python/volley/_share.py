"""Sharing Volley objects between processes on one machine: shared memory, pickled by handle.

``Graph``, ``Dataset``, ``HeteroGraph``, ``HeteroDataset``, ``Feature`` and ``NeighborSampler``
have ``share_memory_()``: it copies each of their arrays that is not in shared memory yet into an
anonymous shared segment (Linux ``memfd_create``) once, keeps arrays that already are, and
returns the object. Pickling one of
them — ``torch.multiprocessing.spawn`` arguments, ``multiprocessing`` queues,
``torch.distributed.broadcast_object_list`` — then sends *handles* (segment, offset, dtype,
shape), and unpickling attaches to the same memory: nothing is copied, and every process's
proportional set size counts its share of one copy.

Pickling an object that is not shared yet shares it first, in place (the object's arrays move to
shared memory; views taken earlier keep the old memory). So a pickle is a reference to memory of
the pickling process, not a copy of the data: it can be loaded only on the same machine, by the
same user, while the pickling process (or a process that attached) still holds the object. Use
``volley.save_dataset`` to store data.

Lifetime: the segments have no name in ``/dev/shm``. The kernel frees a segment when the last
process holding it lets go, whether processes exit normally or are killed (``kill -9`` included),
so nothing leaks. A handle names the process that pickled it (``memfd:<pid>:<fd>:...``); loading
it after that process has exited raises ``VolleyOSError`` naming the handle. A process that
attached holds its own handle and can pass the object on.
"""

from __future__ import annotations

from typing import Any, Optional

from . import _volley
from ._volley import VolleyOSError

__all__ = ["proportional_set_size"]


# The helpers below take and return the native objects (``_volley.Csr``, ``_volley.Dataset``,
# ``_volley.FeatureStore``), never the Python wrappers: this module imports nothing of the package
# but the native core, so ``graph``, ``dataset``, ``feature`` and ``sampler`` can all import it
# (each module keeps its own unpickling function next to its class).

# --- Graph ----------------------------------------------------------------------------------


def share_csr(csr: Any) -> Any:
    """The native graph with its arrays in shared memory (itself when already shared)."""
    return csr if _volley.csr_is_shared(csr) else _volley.share_csr(csr)


def csr_state(csr: Any) -> tuple:
    """The handles of a shared native graph's arrays (what a pickle carries)."""
    return _volley.csr_state(csr)


def attach_csr(state: tuple) -> Any:
    """The native graph attached to the shared arrays of ``csr_state``."""
    return _volley.csr_from_state(state)


# --- FeatureStore ---------------------------------------------------------------------------


def share_feature_store(store: Any) -> Any:
    """The store in memory other processes open by handle: host tiers as one shared tier in id
    order (kept when it already is one); GPU tiers in shareable device and pinned memory, their
    layout kept (kept when they are already)."""
    if store.on_cuda:
        return store.to_shareable()
    return store if _volley.feature_store_is_shared(store) else _volley.share_feature_store(store)


def feature_store_state(store: Any) -> tuple:
    """Handles of a shared store (``share_feature_store`` first): ("host", handle) or ("gpu",
    the GPU tiers' handles and layout)."""
    if store.on_cuda:
        return ("gpu", _volley.gpu_feature_store_state(store))
    return ("host", _volley.feature_store_state(store))


def attach_feature_store(state: tuple) -> Any:
    """The native store opened on the memory ``feature_store_state`` names (zero-copy)."""
    kind, handles = state
    if kind == "gpu":
        return _volley.gpu_feature_store_from_state(handles)
    return _volley.feature_store_from_state(handles)


# --- memory accounting ----------------------------------------------------------------------


def proportional_set_size(pid: Optional[int] = None) -> int:
    """Proportional set size (PSS) of a process in bytes: its private pages plus its share of
    every page it shares (a page mapped by k processes counts 1/k). The PSS of all processes
    sums to the memory they use together, so it shows whether arrays are copied or shared.

    Args:
        pid: the process (default: this one).

    Returns:
        Bytes, from ``/proc/<pid>/smaps_rollup`` (Linux >= 4.14).
    """
    path = f"/proc/{'self' if pid is None else int(pid)}/smaps_rollup"
    with open(path) as rollup:
        for line in rollup:
            if line.startswith("Pss:"):
                return int(line.split()[1]) * 1024
    raise VolleyOSError(f"{path} has no Pss line")
