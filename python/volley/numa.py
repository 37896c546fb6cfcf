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
``torchrun`` starts.
"""

from __future__ import annotations

import ctypes
import os
import platform
import re
from dataclasses import dataclass
from typing import List, Optional, Sequence

from ._volley import VolleyOSError, VolleyValueError

__all__ = ["NumaNode", "bind", "topology"]

SYSFS_NODES = "/sys/devices/system/node"
MPOL_PREFERRED = 1
_SET_MEMPOLICY = {"x86_64": 238, "aarch64": 237}  # syscall numbers


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


def _prefer_memory_of(node: int) -> None:
    number = _SET_MEMPOLICY.get(platform.machine())
    if number is None:
        raise VolleyOSError(f"set_mempolicy: unknown syscall number on {platform.machine()}")
    mask = (ctypes.c_ulong * 16)()  # 1024 nodes
    mask[node // 64] = 1 << (node % 64)
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.syscall(number, MPOL_PREFERRED, mask, ctypes.c_ulong(1024)) != 0:
        error = ctypes.get_errno()
        raise VolleyOSError(f"set_mempolicy(MPOL_PREFERRED, node {node}) failed: "
                            f"{os.strerror(error)}")


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
