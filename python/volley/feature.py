"""``volley.Feature``: node features (or labels) in tiers, gathered by id.

A ``Feature`` wraps Volley's native ``FeatureStore`` (``src/volley/feature/feature_store.h``): an
N×D matrix (or an [N] vector) held in host memory, a shared-memory segment, or a read-only
memory-mapped ``.npy`` file, optionally with the hottest rows copied into a cache tier.
``feature[n_id]`` gathers rows with a multi-threaded C++ kernel, without the GIL.

Example:
    >>> x = volley.Feature(torch.randn(1000, 64))               # zero-copy over the tensor
    >>> x[torch.tensor([3, 1, 3])].shape
    torch.Size([3, 64])
    >>> big = volley.Feature("papers100M/features.npy",          # mapped, not loaded
    ...                      cache_bytes="4G", hot_order="degree", graph=graph)
    >>> shared = volley.Feature(x_tensor, shared=True)          # other processes:
    >>> same = volley.Feature.attach(shared.shared_name)        # ... attach by name
    >>> x = volley.Feature(x_tensor).share_memory_()            # or pickle by handle (spawn,
    ...                                                         # queues): nothing can leak

Quiver users: ``quiver.Feature(rank=0, device_list=[0], device_cache_size="4G",
cache_policy="device_replicate", csr_topo=csr_topo).from_cpu_tensor(x)`` works the same way
with ``volley.Feature`` (``csr_topo`` may be a ``volley.Graph``; its degrees order the cache). On
a machine without a GPU, ``device_cache_size`` becomes the host cache tier.

On a GPU (``device="cuda"``): the hottest rows (``device_cache_size`` / ``cache_bytes`` of them;
all rows when neither is given) live in device memory, the rest in pinned host memory (UVA) or,
for a path with ``disk``, in the file, read through the disk tier; ``feature[n_id]`` gathers on
the GPU and returns a CUDA tensor, ready on torch's current stream.

On several GPUs (``devices=[0, 1, 2, 3]``, Quiver's "p2p_clique_replicate"): the cache is
sharded within each peer-access clique and replicated across cliques (docs/guide/gpu.md).
"""

from __future__ import annotations

import os
from typing import Any, List, Optional, Sequence, Union

import numpy as np

from . import _cuda, _policy, _share, _tensor
from . import _volley
from ._volley import FeatureStore as _NativeStore
from ._volley import disk_io_support as _disk_io_support
from ._volley import VolleyRuntimeError, VolleyTypeError, VolleyValueError
from ._volley import hotness_by_degree as _hotness_by_degree
from ._volley import hotness_by_sampling as _hotness_by_sampling
from .graph import Graph

PathLike = Union[str, "os.PathLike[str]"]

def _as_ids(ids: Any, num_rows: int) -> Any:
    """Row ids for the native gather: a 1-d int64 CPU tensor or numpy array."""
    if isinstance(ids, slice):
        return np.arange(*ids.indices(num_rows), dtype=np.int64)
    if isinstance(ids, (bool, np.bool_)):
        raise VolleyTypeError(f"ids must be integers, got the bool {ids!r}")
    if isinstance(ids, (int, np.integer)):
        return np.array([ids], dtype=np.int64)
    if isinstance(ids, (list, tuple)) and len(ids) == 0:
        return np.zeros(0, dtype=np.int64)  # x[[]]: no rows, as torch gives
    if isinstance(ids, (str, bytes, float)) or ids is None:
        raise VolleyTypeError(f"ids must be integers, got {ids!r} ({type(ids).__name__})")
    ids = _tensor.to_input(ids)
    torch = _tensor.torch_module()
    if torch is not None and isinstance(ids, torch.Tensor):
        if ids.dtype == torch.bool:
            return torch.nonzero(ids).reshape(-1)
        if ids.dtype.is_floating_point:
            raise VolleyTypeError(f"ids must be integers, got {ids.dtype}")
        return ids.reshape(-1).long().contiguous()
    if ids.dtype == np.bool_:
        return np.nonzero(ids)[0].astype(np.int64)
    if not np.issubdtype(ids.dtype, np.integer):
        raise VolleyTypeError(f"ids must be integers, got {ids.dtype}")
    return np.ascontiguousarray(ids.reshape(-1), dtype=np.int64)


def _check_out(out: Any) -> None:
    """Refuses an ``out`` the native gather could not write in place (it would write a copy)."""
    torch = _tensor.torch_module()
    if torch is not None and isinstance(out, torch.Tensor):
        if out.device.type != "cpu":
            raise VolleyValueError(f"out must be a CPU tensor, got one on {out.device}")
        if not out.is_contiguous():
            raise VolleyValueError(
                f"out must be C-contiguous (written in place), got a tensor of shape "
                f"{tuple(out.shape)} with strides {out.stride()}; pass out.contiguous() and copy "
                f"back, or omit out"
            )
        return
    if not isinstance(out, np.ndarray):
        raise VolleyTypeError(
            f"out must be a torch tensor or a numpy array, got {type(out).__name__}")
    if not out.flags.c_contiguous:
        raise VolleyValueError(
            f"out must be C-contiguous (written in place), got an array of shape {out.shape} "
            f"with strides {out.strides}; pass np.ascontiguousarray(out) and copy back, or omit "
            f"out"
        )
    if not out.flags.writeable:
        raise VolleyValueError("out must be writable, got a read-only array")


def hotness_by_degree(graph: Graph) -> Any:
    """Rows ordered by in-degree, highest first (ties by smaller id).

    Args:
        graph: a ``volley.Graph``.

    Returns:
        int64 [N] row ids (a tensor, or numpy without torch): a ``hot_order`` for ``Feature``.
    """
    return _tensor.to_output(_hotness_by_degree(_graph_csr(graph)))


def hotness_by_sampling(
    graph: Graph,
    seeds: Any,
    num_neighbors: Sequence[int],
    batch_size: int,
    *,
    max_batches: int = 0,
    replace: bool = False,
    weighted: bool = False,
    seed: int = 0,
) -> Any:
    """Rows ordered by how often a simulated epoch samples them (Quiver/GLT "sampling probability").

    The seeds are cut, in order, into batches of ``batch_size`` (at most ``max_batches``, 0 for
    all); each batch is sampled as the loader would and every sampled node counts once. The
    result is deterministic for any thread count.

    Args:
        graph: a ``volley.Graph``.
        seeds: the training node ids (tensor, array or list).
        num_neighbors: fanout per hop, as for the loader.
        batch_size: seeds per simulated batch.
        max_batches: limit on simulated batches (0: the whole epoch).
        replace: sample with replacement.
        weighted: sample proportionally to edge weights.
        seed: random seed of the simulated epoch.

    Returns:
        int64 [N] row ids, hottest first (ties by smaller id).
    """
    seed_ids = _as_ids(seeds, 0)
    order = _hotness_by_sampling(
        _graph_csr(graph),
        seed_ids,
        _policy.check_fanout_list(num_neighbors),
        _tensor.check_int(batch_size, "batch_size", 1, 2**31 - 1),
        max_batches=_tensor.check_int(max_batches, "max_batches", 0, 2**63 - 1),
        replace=bool(replace),
        weighted=bool(weighted),
        seed=_tensor.check_int(seed, "seed", 0, 2**64 - 1),
    )
    return _tensor.to_output(order)


def _graph_csr(graph: Any) -> Any:
    if isinstance(graph, Graph):
        return graph._csr
    raise VolleyTypeError(f"expected a volley.Graph, got {type(graph).__name__}")


def disk_io_support() -> str:
    """How this process reads a feature disk tier, detected once.

    Returns:
        ``"io_uring"``, or ``"pread (io_uring refused: <reason>)"`` where the kernel or a
        sandbox (seccomp, some containers) refuses io_uring.
    """
    return str(_disk_io_support())


def _check_policy(policy: Optional[str], cache_given: bool) -> str:
    """The native row-cache policy for ``Feature(policy=...)``."""
    if policy is None:
        return "static" if cache_given else "dynamic"
    if policy not in ("static", "dynamic", "sieve", "lookahead"):
        raise VolleyValueError(
            f'policy must be "static", "dynamic" (SIEVE) or "lookahead", got {policy!r}'
        )
    return policy


class Feature:
    """An N×D feature matrix (or [N] labels) in tiers; ``feature[n_id]`` gathers rows.

    Args:
        data: a torch tensor or numpy array (used zero-copy), a path to an ``.npy`` file
            (memory-mapped read-only: a matrix of any size opens; one larger than half the RAM
            is read through the disk tier, see ``disk``), or None to fill later with
            ``from_cpu_tensor`` (Quiver style).
        cache_bytes: bytes (or a size such as ``"8G"``) of host memory for rows: with
            ``policy="static"`` a compact tier of the hottest rows (the other rows are read from
            ``data`` itself); with ``policy="dynamic"`` a SIEVE cache in front of the disk tier.
            None: no cache for an array; a quarter of the RAM for a disk tier.
        policy: the row cache of a path: ``"static"`` (hottest rows by ``hot_order``, the
            default when ``cache_bytes`` is given) or ``"dynamic"`` (SIEVE, filled by misses;
            the default otherwise) or ``"lookahead"`` (pre-filled with the hottest rows; a
            ``NeighborLoader`` over it samples 8 batches ahead and the cache keeps the rows
            those batches use soonest, Belady's rule; rows no coming batch uses go coldest
            first). Needs the disk tier (``disk=True`` or a file past half the RAM).
        disk: for a path, None picks the disk tier by itself when the file exceeds half the RAM
            (rows read with io_uring and O_DIRECT past the page cache); True / False force it.
            With ``device``: the rows no device caches stay in the file, read at each gather
            through the disk tier (its row cache: SIEVE, a quarter of the RAM; or "lookahead").
        io_uring: False reads the disk tier with pread (io_uring is detected at open anyway;
            ``volley.disk_io_support()`` says which).
        read_ahead: with "lookahead", read announced rows ahead (off by default: no gain seen).
        hot_order: which rows are hottest: None (id order), ``"degree"`` (in-degree of
            ``graph``), or int64 row ids hottest first (e.g. from ``hotness_by_sampling``).
        graph: the ``volley.Graph`` for ``hot_order="degree"``.
        shared: copy the matrix into a named /dev/shm segment other processes can attach to
            (``Feature.attach(feature.shared_name)``; pickling a shared Feature attaches too).
            The name outlives a run whose processes are all killed; ``share_memory_()`` (an
            anonymous segment, pickled by handle) leaves nothing behind and is preferred.
        rank, device_list, device_cache_size, cache_policy, csr_topo: Quiver's arguments.
            ``device_cache_size`` is taken as ``cache_bytes`` and ``csr_topo`` (a
            ``volley.Graph``) as ``graph`` with ``hot_order="degree"``; the others are accepted
            and ignored on the CPU.
        devices: distinct visible CUDA devices (ordinals or ``"cuda:N"``) holding the device
            cache together, each up to ``cache_bytes`` / ``device_cache_size`` bytes of rows,
            sharded per peer-access clique; ``device`` (default: the first) gathers. The rows no
            clique caches: pinned, or on the disk as ``disk`` says.
        device: None (the CPU tiers above) or a CUDA device (``"cuda"``, ``"cuda:N"``, an
            ordinal, a ``torch.device``): the rows go to that GPU's tiers — the hottest
            ``cache_bytes`` (or ``device_cache_size``) bytes of rows in device memory, all rows
            when no size is given, the rest in pinned host memory — and ``feature[ids]`` gathers
            on the GPU into a CUDA tensor (ready on torch's current stream). ``gather`` with
            ``dtype`` converts on the GPU; ``out`` receives a copy.

    Raises:
        VolleyValueError / VolleyIndexError: a bad hot order or unsupported array; ``devices``
            empty, with a device twice or unknown, or without ``device``; ``disk=True`` for an
            array; ``policy="static"`` on a GPU over the disk.
        VolleyOSError: an unreadable ``.npy`` file.
        VolleyRuntimeError: a CUDA ``device`` in a build without CUDA or on a machine without
            that device; ``devices`` where no CUDA device is visible.
    """

    def __init__(
        self,
        data: Any = None,
        *,
        cache_bytes: Union[int, str, None] = None,
        hot_order: Any = None,
        graph: Optional[Graph] = None,
        shared: bool = False,
        rank: int = 0,
        device_list: Optional[List[int]] = None,
        device_cache_size: Union[int, str, None] = None,
        cache_policy: Optional[str] = None,
        csr_topo: Optional[Graph] = None,
        device: Any = None,
        policy: Optional[str] = None,
        disk: Optional[bool] = None,
        io_uring: bool = True,
        read_ahead: bool = False,
        devices: Optional[Sequence[Any]] = None,
    ):
        self._device = _cuda.parse_device(device)
        self._devices = _cuda.parse_device_list(devices, self._device)
        if self._devices and self._device is None:
            self._device = self._devices[0]
        if self._device is not None and shared:
            raise VolleyValueError(
                "shared=True is for host memory; a Feature on a CUDA device cannot be shared"
            )
        if isinstance(data, (int, np.integer)) and not isinstance(data, bool):
            data = None  # quiver.Feature(rank, ...): the first positional argument is the rank
        self.rank = rank
        self.device_list = device_list
        self.cache_policy = cache_policy
        self._cache_bytes = _tensor.byte_size(cache_bytes, "cache_bytes") or _tensor.byte_size(
            device_cache_size, "device_cache_size")
        self._cache_given = cache_bytes is not None or device_cache_size is not None
        self._policy = _check_policy(policy, self._cache_given)
        # On a device cache_bytes sizes the device cache; the disk's row cache is SIEVE by default.
        self._device_policy = _check_policy(policy, False)
        self._disk = disk
        self._io_uring = bool(io_uring)
        self._read_ahead = bool(read_ahead)
        if csr_topo is not None:
            graph = graph if graph is not None else csr_topo
            hot_order = "degree" if hot_order is None else hot_order
        self._hot_order = hot_order
        self._graph = graph
        self._shared = bool(shared)
        self._store: Optional[_NativeStore] = None
        if data is not None:
            self._build(data)

    # --- construction -------------------------------------------------------------------------

    def from_cpu_tensor(self, tensor: Any) -> "Feature":
        """Fills the feature from a CPU tensor or numpy array (Quiver's entry point).

        Returns:
            self, so ``volley.Feature(...).from_cpu_tensor(x)`` can be assigned directly.
        """
        self._build(tensor)
        return self

    def from_mmap(self, path: PathLike) -> "Feature":
        """Fills the feature from an ``.npy`` file, memory-mapped read-only. Returns self."""
        self._build(os.fspath(path))
        return self

    @classmethod
    def attach(cls, shared_name: str) -> "Feature":
        """Attaches to a shared feature made in this or another process (``shared=True``)."""
        feature = cls()
        feature._store = _NativeStore.attach_shared(shared_name)
        return feature

    @classmethod
    def _from_store(cls, store: _NativeStore) -> "Feature":
        feature = cls()
        feature._store = store
        if store.on_cuda:  # (a GPU store opened by handle)
            feature._device, feature._devices = store.device, list(store.devices)
        return feature

    def _hot_order_ids(self) -> Any:
        order = self._hot_order
        if order is None:
            return None
        if isinstance(order, str):
            if order != "degree":
                raise VolleyValueError(
                    f'hot_order must be None, "degree" or an array of row ids, got {order!r}'
                )
            if self._graph is None:
                raise VolleyValueError('hot_order="degree" needs graph= (a volley.Graph)')
            return _hotness_by_degree(_graph_csr(self._graph))
        return _as_ids(order, 0)

    def _build(self, data: Any) -> None:
        if self._disk and not isinstance(data, (str, os.PathLike, _NativeStore)):
            raise VolleyValueError(
                "disk=True: the disk tier reads a mapped .npy file; pass its path, not an array"
            )
        if self._device is not None:
            self._build_device(data)
            return
        tiers = [("host", self._cache_bytes)] if self._cache_bytes > 0 else []
        hot_order = self._hot_order_ids()
        if isinstance(data, _NativeStore):
            self._store = data
        elif isinstance(data, (str, os.PathLike)):
            if self._shared:
                raise VolleyValueError("shared=True copies an array; pass the array, not a path")
            self._store = _NativeStore.from_npy(
                os.fspath(data),
                [],
                hot_order,
                cache_bytes=self._cache_bytes if self._cache_given else -1,
                policy=self._policy,
                disk=self._disk,
                io_uring=self._io_uring,
                read_ahead=self._read_ahead,
            )
        else:
            matrix = _tensor.to_input(data)
            if self._shared:
                if tiers or hot_order is not None:
                    raise VolleyValueError(
                        "shared=True holds the whole matrix: no cache_bytes/hot_order"
                    )
                self._store = _NativeStore.create_shared(matrix)
            elif tiers or hot_order is not None:
                self._store = _NativeStore.build(matrix, tiers, hot_order)
            else:
                self._store = _NativeStore(matrix)

    def _build_device(self, data: Any) -> None:
        """The GPU tiers (``device=``): a device tier of the hottest ``cache_bytes`` (all rows
        without a size), the rest pinned (for a path: left in the file when ``disk`` says so)."""
        if isinstance(data, _NativeStore):
            raise VolleyValueError(
                "a native FeatureStore cannot be moved to a CUDA device; pass the array"
            )
        hot_order = self._hot_order_ids()
        budget = self._cache_bytes if self._cache_bytes > 0 else -1
        devices = ([self._device] + [d for d in self._devices if d != self._device]
                   if self._devices else [])  # the gathering device first
        if isinstance(data, (str, os.PathLike)):  # the cold rows pinned, or left on the disk
            self._store = _NativeStore.from_npy(
                os.fspath(data), [("cuda", budget)], hot_order, policy=self._device_policy,
                disk=self._disk, io_uring=self._io_uring, read_ahead=self._read_ahead,
                device=self._device, devices=devices)
            return
        matrix = _tensor.to_input(data)
        self._store = _NativeStore.build(
            matrix, [("cuda", budget)], hot_order, self._device, devices)

    @property
    def device(self) -> Any:
        """Where ``feature[ids]`` returns rows: a ``torch.device`` ("cpu" or "cuda:N"; the
        strings without torch)."""
        name = "cpu" if self._device is None else f"cuda:{self._device}"
        torch = _tensor.torch_module()
        return torch.device(name) if torch is not None else name

    @property
    def devices(self) -> List[int]:
        """CUDA ordinals holding the device cache, the gathering one first ([] on the CPU)."""
        return [int(d) for d in self._native().devices]

    def _native(self) -> _NativeStore:
        if self._store is None:
            raise VolleyRuntimeError(
                "this Feature holds no data yet: call from_cpu_tensor(x) first"
            )
        return self._store

    # --- access -------------------------------------------------------------------------------

    def __getitem__(self, ids: Any) -> Any:
        """Rows ``ids`` (int64 ids, a boolean mask, a slice or an int) in the stored dtype.

        Returns:
            A torch tensor [n, D] (or [n] for a vector; [D] for an int index), numpy without
            torch.

        Raises:
            VolleyIndexError: an id out of range (the message names it and its position).
        """
        store = self._native()
        if store.on_cuda:
            rows = self._gather_device(ids)
        else:
            rows = _tensor.to_output(store.gather(_as_ids(ids, store.num_rows)))
        if isinstance(ids, (int, np.integer)):
            return rows[0]
        return rows

    def gather(self, ids: Any, dtype: Optional[str] = None, out: Any = None, threads: int = 0) -> Any:
        """Rows ``ids``, optionally converted, optionally written into ``out``.

        Args:
            ids: int64 row ids (tensor, array or list), a boolean mask or a slice.
            dtype: output dtype name (``"float32"``; default: as stored). float16, bfloat16 and
                integers convert exactly to float32; integers to int64; float32 to float16 or
                bfloat16 by round-to-nearest-even.
            out: a writable C-contiguous CPU tensor/array of the output dtype with ``len(ids)
                × D`` elements to write into (no allocation).
            threads: 1 gathers on the calling thread; otherwise Volley's thread pool.

        Returns:
            The rows (a new tensor/array), or ``out`` when given.
        """
        store = self._native()
        if store.on_cuda:
            rows = self._gather_device(ids)
            if dtype is not None:
                rows = rows.to(getattr(_tensor.torch_module(), dtype))
            if out is None:
                return rows
            out.copy_(rows.reshape(out.shape))
            return out
        id_array = _as_ids(ids, store.num_rows)
        threads = _tensor.check_int(threads, "threads", 0, 65536)
        if out is None:
            return _tensor.to_output(store.gather(id_array, dtype=dtype, threads=threads))
        _check_out(out)
        store.gather(id_array, dtype=dtype, out=out, threads=threads)
        return out

    def _gather_device(self, ids: Any) -> Any:
        """Rows ``ids`` gathered on the GPU: a CUDA tensor ready on torch's current stream."""
        torch = _tensor.torch_module()
        if torch is not None and isinstance(ids, torch.Tensor) and ids.is_cuda:
            if ids.dtype == torch.bool:
                ids = torch.nonzero(ids).reshape(-1)
            id_array = ids.reshape(-1).long().contiguous()
        else:
            id_array = _as_ids(ids, len(self))
        stream = _cuda.current_stream(self._device)
        return _tensor.to_output(self._native().gather(id_array, stream=stream))

    def size(self, dim: Optional[int] = None) -> Any:
        """The shape (as ``torch.Tensor.size``), or one dimension of it."""
        shape = self.shape
        return shape if dim is None else shape[dim]

    def dim(self) -> int:
        """Number of dimensions: 2 for a matrix, 1 for a vector."""
        return int(self._native().ndim)

    @property
    def shape(self) -> tuple:
        """(N, D), or (N,) for a vector."""
        store = self._native()
        return (store.num_rows, store.width) if store.ndim == 2 else (store.num_rows,)

    @property
    def dtype(self) -> Any:
        """The stored dtype: a torch dtype when torch is importable, else a numpy dtype (or the
        name "bfloat16", which numpy lacks)."""
        name = self._native().dtype
        torch = _tensor.torch_module()
        if torch is not None:
            return getattr(torch, name if name != "bool" else "bool")
        return name if name == "bfloat16" else np.dtype(name)

    @property
    def disk_io(self) -> str:
        """How the disk tier reads rows (``"io_uring, O_DIRECT, 64 reads in flight"``), or
        ``""`` when the rows are in memory or read through a map."""
        return str(self._native().disk_io)

    @property
    def disk_stats(self) -> tuple:
        """(rows served from memory, rows read from the disk) by the disk tier so far."""
        hits, misses = self._native().disk_stats
        return int(hits), int(misses)

    @property
    def tiers(self) -> List[dict]:
        """One dict per tier, fastest first: ``location``, ``rows``, ``nbytes``, ``shared_name``."""
        return list(self._native().tiers)

    @property
    def shared_name(self) -> str:
        """Name of the shared-memory segment (``shared=True``), else ""."""
        return self._native().shared_name

    def __len__(self) -> int:
        return int(self._native().num_rows)

    def share_memory_(self) -> "Feature":
        """Moves the rows into memory other processes open by handle, once; returns self.

        Host tiers: a store that is one shared tier (``shared=True``, or shared before) is
        kept; a tiered store becomes one shared tier holding every row in id order (cache tiers
        are per process). On a CUDA device the device shards and pinned rows keep their layout
        and move to memory opened by CUDA IPC handle (pinned rows: a memfd segment page-locked
        in each process), as placed graphs do (docs/guide/gpu.md). Pickling then sends handles
        and the receiving process opens the same memory; it is freed when the last process lets
        go, even after ``kill -9`` (host tiers; see ``volley._share``).
        """
        self._store = _share.share_feature_store(self._native())
        return self

    def __reduce__(self) -> Any:
        store = self._native()
        if store.shared_name:  # shared=True: attach the named segment
            return (Feature.attach, (store.shared_name,))
        self.share_memory_()  # pickling an unshared feature shares it first
        return (_rebuild_feature, (_share.feature_store_state(self._store), self.rank))

    def __repr__(self) -> str:
        if self._store is None:
            return "Feature(empty)"
        if self._store.on_cuda:
            return f"Feature({self._store.describe()})"
        tiers = ", ".join(f"{t['location']}:{t['rows']}" for t in self._store.tiers)
        return f"Feature(shape={self.shape}, dtype={self._store.dtype}, tiers=[{tiers}])"


def _rebuild_feature(state: tuple, rank: int) -> Feature:
    """Unpickles a ``Feature`` by attaching to its shared rows."""
    feature = Feature._from_store(_share.attach_feature_store(state))
    feature.rank = rank
    return feature
