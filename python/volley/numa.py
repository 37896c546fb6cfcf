"""NUMA placement: bind a process's threads and new memory to one NUMA node of the machine.

    import volley.numa
    node = volley.numa.bind()          # under torchrun: node LOCAL_RANK % number of nodes

On a machine with several sockets, a trainer whose threads and buffers (host feature tiers,
pinned buffers, batches) sit on one node reads them at that node's bandwidth instead of across
the interconnect. ``topology()`` reads the nodes from ``/sys/devices/system/node`` (their CPUs
and memory); ``bind(rank)`` picks node ``rank % len(nodes)`` (or ``node=``), sets the CPU
affinity of every thread of the process to that node's CPUs (threads started later inherit it,
Volley's own pools included) and asks the kernel to place the process's new memory there
(``set_mempolicy(MPOL_PREFERRED)``). On a machine with one node it does nothing. Setting
``VOLLEY_NUMA_BIND=1`` in the environment makes ``import volley`` call ``bind()``, for ranks that
``torchrun`` starts. ``place(x, policy)`` copies a host feature tier onto pages interleaved over
every node, or onto the process's own node (a replica per node with one trainer per node).
"""

from __future__ import annotations

import ctypes
import os
import platform
import re
from dataclasses import dataclass
from typing import Any, List, Optional, Sequence

import numpy as np

from ._volley import VolleyOSError, VolleyValueError

__all__ = ["NumaNode", "bind", "place", "topology"]

SYSFS_NODES = "/sys/devices/system/node"
MPOL_PREFERRED, MPOL_BIND, MPOL_INTERLEAVE = 1, 2, 3
_SET_MEMPOLICY = {"x86_64": 238, "aarch64": 237}  # syscall numbers
_MBIND = {"x86_64": 237, "aarch64": 235}
_POLICIES = ("interleave", "local")


@dataclass(frozen=True)
class NumaNode:
    """One NUMA node: its id, its CPUs and its memory in bytes (0 when the kernel does not say)."""

    id: int
    cpus: tuple
    memory_bytes: int


def _cpu_list(text: str, where: str) -> tuple:
    """``"0-3,8,10-11"`` -> (0, 1, 2, 3, 8, 10, 11)."""
    cpus: List[int] = []
    for piece in text.strip().split(","):
        if not piece:
            continue
        match = re.fullmatch(r"(\d+)(?:-(\d+))?", piece)
        if match is None:
            raise VolleyValueError(f"{where}: cannot read CPU list {text.strip()!r}")
        first, last = int(match.group(1)), int(match.group(2) or match.group(1))
        if last < first:
            raise VolleyValueError(f"{where}: CPU range {piece!r} runs backwards")
        cpus.extend(range(first, last + 1))
    return tuple(cpus)


def topology(root: str = SYSFS_NODES) -> List[NumaNode]:
    """The NUMA nodes under ``root`` (a sysfs ``node`` directory), by id; nodes without CPUs
    (memory-only) are left out. A machine whose kernel shows no node directory is one node with
    every CPU this process may use."""
    nodes = []
    entries = sorted(os.listdir(root)) if os.path.isdir(root) else []
    for entry in entries:
        match = re.fullmatch(r"node(\d+)", entry)
        if match is None:
            continue
        folder = os.path.join(root, entry)
        with open(os.path.join(folder, "cpulist")) as f:
            cpus = _cpu_list(f.read(), os.path.join(folder, "cpulist"))
        memory = 0
        meminfo = os.path.join(folder, "meminfo")
        if os.path.exists(meminfo):
            with open(meminfo) as f:
                found = re.search(r"MemTotal:\s+(\d+)\s+kB", f.read())
            memory = int(found.group(1)) * 1024 if found else 0
        if cpus:
            nodes.append(NumaNode(int(match.group(1)), cpus, memory))
    if not nodes:
        nodes = [NumaNode(0, tuple(sorted(os.sched_getaffinity(0))), 0)]
    return sorted(nodes, key=lambda node: node.id)


def _pick(nodes: Sequence[NumaNode], rank: Optional[int], node: Optional[int]) -> NumaNode:
    if node is not None:
        for candidate in nodes:
            if candidate.id == node:
                return candidate
        raise VolleyValueError(f"no NUMA node {node} (nodes: "
                               f"{', '.join(str(n.id) for n in nodes)})")
    if rank is None:
        rank = int(os.environ.get("LOCAL_RANK", "0"))
    if rank < 0:
        raise VolleyValueError(f"rank must be >= 0, got {rank}")
    return nodes[rank % len(nodes)]


def _syscall(table: dict, name: str, *args: Any) -> None:
    """Calls the memory-policy syscall ``name`` (its number by machine in ``table``);
    VolleyOSError naming the call and the kernel's reason when it fails."""
    number = table.get(platform.machine())
    if number is None:
        raise VolleyOSError(f"{name}: unknown syscall number on {platform.machine()}")
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.syscall(number, *args) != 0:
        raise VolleyOSError(f"{name} failed: {os.strerror(ctypes.get_errno())}")


def _node_mask(nodes: Sequence[int]) -> Any:
    mask = (ctypes.c_ulong * 16)()  # 1024 nodes
    for node in nodes:
        mask[node // 64] |= 1 << (node % 64)
    return mask


def _prefer_memory_of(node: int) -> None:
    _syscall(_SET_MEMPOLICY, f"set_mempolicy(MPOL_PREFERRED, node {node})", MPOL_PREFERRED,
             _node_mask([node]), ctypes.c_ulong(1024))


def _mbind(address: int, length: int, mode: int, nodes: Sequence[int], what: str) -> None:
    """Asks the kernel to place the (not yet touched) pages of [address, address + length) on
    ``nodes`` by ``mode``."""
    _syscall(_MBIND, f"mbind({what}, nodes {list(nodes)})", ctypes.c_void_p(address),
             ctypes.c_ulong(length), mode, _node_mask(nodes), ctypes.c_ulong(1024), 0)


def bind(rank: Optional[int] = None, *, node: Optional[int] = None,
         root: str = SYSFS_NODES, memory: bool = True) -> NumaNode:
    """Binds this process to one NUMA node: every thread's CPU affinity to the node's CPUs
    and, with ``memory``, new memory preferred on the node.

    Args:
        rank: picks node ``rank % len(nodes)`` (default: ``$LOCAL_RANK``, or 0).
        node: this node id instead.
        root: the sysfs node directory (a fake tree in tests).
        memory: also set the memory policy.

    Returns:
        The node bound to (the only node, untouched, on a one-node machine).

    Raises:
        VolleyValueError: an unknown node, a negative rank, an unreadable CPU list.
        VolleyOSError: the kernel refused the affinity or the memory policy.
    """
    nodes = topology(root)
    chosen = _pick(nodes, rank, node)
    if len(nodes) == 1:
        return chosen
    cpus = set(chosen.cpus)
    for task in os.listdir("/proc/self/task"):
        try:
            os.sched_setaffinity(int(task), cpus)
        except ProcessLookupError:  # a thread that ended meanwhile
            continue
        except OSError as error:
            raise VolleyOSError(f"cannot bind to NUMA node {chosen.id}'s CPUs "
                                f"{sorted(cpus)}: {error}") from error
    if memory:
        _prefer_memory_of(chosen.id)
    return chosen


def _local_node(nodes: Sequence[NumaNode]) -> NumaNode:
    """The node whose CPUs hold every CPU this process may run on (``bind`` makes it so)."""
    allowed = set(os.sched_getaffinity(0))
    for node in nodes:
        if allowed <= set(node.cpus):
            return node
    spanned = sorted(node.id for node in nodes if allowed & set(node.cpus))
    raise VolleyValueError(
        f"place(policy='local'): this process runs on the CPUs of NUMA nodes {spanned}, not of "
        "one node; call volley.numa.bind() first (or pass node=)")


def place(array: Any, policy: str = "interleave", *, node: Optional[int] = None,
          root: str = SYSFS_NODES) -> Any:
    """A copy of ``array`` whose memory pages lie on the NUMA nodes ``policy`` names: the host
    feature tier of ``volley.Feature(place(x, ...))`` read at the bandwidth of the nodes that
    read it, as DGL's NUMA guide advises.

    Args:
        array: a numpy array or a CPU torch tensor (any dtype and shape).
        policy: ``"interleave"``: pages spread over every node in turn (one trainer reading
            from all sockets gets their combined bandwidth); ``"local"``: on the node this
            process is bound to (``bind``), so that one trainer per node, each calling it,
            holds a replica on its own node.
        node: place every page on this node instead.
        root: the sysfs node directory (a fake tree in tests).

    Returns:
        The copy, of the input's kind (numpy or torch), with the input's values; on a machine
        with one node, ``array`` itself (nothing to place).

    Raises:
        VolleyValueError: an unknown policy or node; ``"local"`` in a process not bound to
            one node. VolleyOSError: the kernel refused the placement (naming it).
    """
    import mmap

    from . import _tensor

    if policy not in _POLICIES:
        raise VolleyValueError(f"policy must be one of {_POLICIES}, got {policy!r}")
    nodes = topology(root)
    if len(nodes) == 1:
        return array
    if node is not None:
        targets, mode = [_pick(nodes, None, node).id], MPOL_BIND
    elif policy == "local":
        targets, mode = [_local_node(nodes).id], MPOL_BIND
    else:
        targets, mode = [n.id for n in nodes], MPOL_INTERLEAVE
    values = np.ascontiguousarray(_tensor.to_numpy(array))
    length = max(values.nbytes, 1)
    pages = mmap.mmap(-1, length)  # fresh anonymous pages: placed when first written
    address = ctypes.addressof(ctypes.c_char.from_buffer(pages))
    _mbind(address, length, mode, targets, "MPOL_BIND" if mode == MPOL_BIND else "MPOL_INTERLEAVE")
    copy = np.frombuffer(pages, dtype=values.dtype, count=values.size).reshape(values.shape)
    copy[...] = values
    torch = _tensor.torch_module()
    if torch is not None and isinstance(array, torch.Tensor):
        return torch.from_numpy(copy)
    return copy
