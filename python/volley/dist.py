"""``volley.dist``: neighbor sampling and features of a partitioned graph served over gRPC.

Each partition of a partitioned dataset (``volley.partition``) is served by a ``volley serve``
process (or ``volley.dist.serve`` in-process). Trainers load batches that are *exactly* what
``volley.loader.NeighborLoader`` gives over the whole renumbered graph with the same seed and
options: sampling is a pure function of (seeds, fanouts, seed, batch index), and the servers
each sample their own nodes' neighbors.

Two modes, as in GraphLearn-for-PyTorch:

* ``"worker"``: every trainer also serves its partition and holds it in-process; nodes it owns
  are sampled and gathered locally, the rest by RPC to the other trainers' servers::

      server = volley.dist.serve("/data/cora-2", part=rank, listen="0.0.0.0:5000", token=token)
      loader = volley.dist.DistNeighborLoader(
          addresses, [10, 10], batch_size=64, input_nodes=train_ids, shuffle=True,
          mode="worker", local=server, token=token)

* ``"server-client"``: sampling servers run apart from the trainers (started with ``peers``,
  the addresses of every partition's server); a trainer holds no data and receives each epoch's
  batches from one server as a gRPC stream::

      loader = volley.dist.DistNeighborLoader(
          addresses, [10, 10], batch_size=64, input_nodes=train_ids, shuffle=True,
          mode="server-client", token=token)  # server: addresses[rank % len(addresses)]

Node ids are always in the partitioned (new) numbering: ``volley.partition.to_new_ids`` maps
ids of the original dataset, ``volley.partition.split_ids`` gives a split's new ids.

Failures surface in the training loop, never as a hang: a server that is down or dies raises
``VolleyConnectionError`` (a ``ConnectionError``), one that does not answer within ``deadline``
seconds ``VolleyTimeoutError`` (a ``TimeoutError``), a missing or wrong token
``VolleyPermissionError`` (a ``PermissionError``).

The service needs a build with gRPC (Debian's ``libgrpc++-dev`` and
``protobuf-compiler-grpc``); in other builds every entry point raises ``RuntimeError`` saying so.
"""

from __future__ import annotations

import os
import threading
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

import numpy as np

from . import _tensor, _volley
from .loader import NeighborLoader
from .partition import PartitionBook
from .sampler import NeighborSampler

PathLike = Union[str, "os.PathLike[str]"]

MODES = ("worker", "server-client")

_NO_DIST = (
    "this build of Volley has no distributed service: gRPC was not found when it was built. "
    "Install Debian's libgrpc++-dev and protobuf-compiler-grpc, then rebuild (scripts/dev.sh, "
    "or cmake with -DVOLLEY_DIST=ON, or pip install .)"
)


def available() -> bool:
    """Whether this build has the distributed service (gRPC)."""
    return bool(getattr(_volley, "_has_dist", False))


def _native() -> Any:
    if not available():
        raise RuntimeError(_NO_DIST)
    return _volley


def read_token(path: PathLike) -> str:
    """The access token in a token file: its first line without surrounding white space (what
    ``volley serve --token-file`` reads).

    Raises:
        OSError: the file cannot be read. ValueError: its first line is empty.
    """
    with open(path, encoding="utf-8") as stream:
        token = stream.readline().strip()
    if not token:
        raise ValueError(f"token file '{os.fspath(path)}' is empty (its first line is the token)")
    return token


class Server:
    """One partition served over gRPC in this process (see ``serve``).

    A context manager: leaving the ``with`` block shuts it down. Serving runs on the server's
    own threads; the Python thread is free (``wait`` blocks until ``shutdown``).
    """

    def __init__(self, native: Any):
        self._native = native

    @property
    def address(self) -> str:
        """``host:port`` to give clients (with the port the system chose for port 0)."""
        return self._native.address

    @property
    def port(self) -> int:
        return self._native.port

    @property
    def part(self) -> int:
        return self._native.part

    @property
    def fingerprint(self) -> str:
        """CRC-32 (hex) of the served ``partition.json``; clients check they agree."""
        return self._native.fingerprint

    @property
    def authenticated(self) -> bool:
        """Whether every call must carry the token."""
        return self._native.authenticated

    def stats(self) -> Dict[str, int]:
        """``requests``, ``failed_requests`` (refused or failed) and ``active_streams``."""
        return dict(self._native.stats())

    def shutdown(self, grace: float = 1.0) -> None:
        """Stops serving: refuses new calls, cancels epoch streams and waits up to ``grace``
        seconds for calls in flight. Idempotent."""
        self._native.shutdown(float(grace))

    def wait(self, timeout: Optional[float] = None) -> bool:
        """Blocks until ``shutdown`` (from another thread), at most ``timeout`` seconds.

        Returns:
            True when the server has stopped, False on timeout. Ctrl-C interrupts the wait.
        """
        waiter = getattr(self, "_waiter", None)
        if waiter is None:  # the native wait blocks without the GIL; wait on it from a thread
            waiter = self._waiter = threading.Thread(target=self._native.wait, daemon=True)
            waiter.start()
        waiter.join(timeout)
        return not waiter.is_alive()

    def __enter__(self) -> "Server":
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.shutdown()

    def __repr__(self) -> str:
        return (
            f"Server(part={self.part}, address='{self.address}', "
            f"authenticated={self.authenticated})"
        )


def serve(
    directory: PathLike,
    part: int,
    listen: str = "127.0.0.1:0",
    token: Optional[str] = None,
    peers: Optional[Sequence[str]] = None,
    threads: int = 0,
    *,
    peer_deadline: float = 30.0,
    concurrency: int = 0,
    max_message_bytes: int = 512 << 20,
    memory_limit_bytes: int = 4 << 30,
) -> Server:
    """Serves partition ``part`` of a partitioned dataset from this process (memory-mapped).

    The same service as ``volley serve DIR --part P``; it runs on its own threads until
    ``shutdown`` (or the ``with`` block ends, or the process exits).

    Args:
        directory: the partitioned dataset directory (holding ``partition.json``).
        part: the partition to serve.
        listen: ``host:port``; port 0 picks a free port (read it back from ``Server.address``).
            The default listens on loopback only; ``"0.0.0.0:PORT"`` for other machines.
        token: the access token every call must carry; None serves anyone who reaches the port.
        peers: every partition's server address in part order (this one's may be ``""``):
            needed for server-client mode, where this server samples across all partitions.
        threads: RPC handler threads at most (0: the default, 4 × cores, at least 8).
        peer_deadline: seconds per call to peers.
        concurrency: batches one epoch stream samples at once when the trainer does not say
            (0: cores).
        max_message_bytes: larger requests are refused.
        memory_limit_bytes: gRPC's memory quota for the server.

    Returns:
        A running ``Server``.

    Raises:
        VolleyOSError: the address cannot be bound, or the partition's files are bad.
        VolleyIndexError: ``part`` out of range.
        RuntimeError: a build without gRPC.
    """
    native = _native().Server(
        os.fspath(directory),
        int(part),
        listen=str(listen),
        token=token or "",
        threads=int(threads),
        peers=[str(p) for p in (peers or [])],
        peer_token=token or "",
        peer_deadline_seconds=float(peer_deadline),
        max_message_bytes=int(max_message_bytes),
        memory_limit_bytes=int(memory_limit_bytes),
        default_concurrency=int(concurrency),
    )
    return Server(native)


Local = Union[None, Server, Tuple[PathLike, int]]


class DistGraph:
    """The partitions served at ``addresses``, seen as one graph (new ids).

    Args:
        addresses: ``addresses[p]`` serves part ``p`` (``"host:port"``); the local part's entry
            may be ``""``.
        token: the servers' access token (None: none).
        deadline: seconds each call may take before ``VolleyTimeoutError``.
        connect_timeout: seconds to wait for servers that are still starting.
        local: worker mode, the partition this process holds (sampled and gathered without
            RPC): a ``(directory, part)`` pair, or a ``Server`` of this process (its memory is
            shared). None: every part by RPC.

    Raises:
        VolleyConnectionError: a server cannot be reached within ``connect_timeout``.
        VolleyPermissionError: a missing or wrong token.
        VolleyValueError: a server of another dataset, part or protocol version (named).
        RuntimeError: a build without gRPC.

    Thread-safe; picklable (the copy reconnects; a ``Server``-backed local part becomes a
    remote one, which changes nothing but speed).
    """

    def __init__(
        self,
        addresses: Sequence[str],
        *,
        token: Optional[str] = None,
        deadline: float = 30.0,
        connect_timeout: float = 30.0,
        local: Local = None,
    ):
        native = _native()
        if isinstance(addresses, str):
            addresses = [a.strip() for a in addresses.split(",")]
        self._addresses = [str(a) for a in addresses]
        self._token = token or ""
        self._deadline = float(deadline)
        self._connect_timeout = float(connect_timeout)
        options = dict(
            token=self._token,
            deadline_seconds=self._deadline,
            connect_seconds=self._connect_timeout,
        )
        self._local: Optional[Tuple[str, int]] = None
        if isinstance(local, Server):
            self._native = native.DistGraph.connect_to_server_partition(
                self._addresses, local._native, **options
            )
        elif local is not None:
            directory, part = _local_pair(local)
            self._local = (directory, part)
            self._native = native.DistGraph.connect(
                self._addresses, local_directory=directory, local_part=part, **options
            )
        else:
            self._native = native.DistGraph.connect(self._addresses, **options)
        self._info = dict(self._native.info)

    @property
    def addresses(self) -> List[str]:
        return list(self._addresses)

    @property
    def info(self) -> Dict[str, Any]:
        """What the servers serve: ``dataset_name``, ``fingerprint``, ``num_nodes``,
        ``num_parts``, ``num_edges``, ``feature_dim``, ``feature_dtype``, ``label_dtype``,
        ``num_classes``, ``has_weights``."""
        info = dict(self._info)
        info.pop("book", None)
        return info

    @property
    def book(self) -> PartitionBook:
        return PartitionBook(self._info["book"])

    @property
    def num_nodes(self) -> int:
        return int(self._info["num_nodes"])

    @property
    def num_edges(self) -> int:
        return int(self._info["num_edges"])

    @property
    def num_features(self) -> int:
        return int(self._info["feature_dim"])

    @property
    def num_classes(self) -> int:
        return int(self._info["num_classes"])

    @property
    def local_part(self) -> Optional[int]:
        """The partition held in this process (worker mode), or None."""
        part = self._native.local_part
        return None if part < 0 else int(part)

    @property
    def features(self) -> "DistFeatureStore":
        """Node features as a ``DistFeatureStore``."""
        return DistFeatureStore(self, "features")

    @property
    def labels(self) -> "DistFeatureStore":
        """Node labels as a ``DistFeatureStore``."""
        return DistFeatureStore(self, "labels")

    def __reduce__(self) -> tuple:
        return _reconnect, (
            self._addresses,
            dict(token=self._token, deadline=self._deadline,
                 connect_timeout=self._connect_timeout, local=self._local),
        )

    def __repr__(self) -> str:
        local = self.local_part
        return (
            f"DistGraph('{self._info['dataset_name']}', nodes={self.num_nodes:,}, "
            f"parts={self._info['num_parts']}"
            + (f", local_part={local}" if local is not None else "")
            + ")"
        )


def _reconnect(addresses: List[str], options: Dict[str, Any]) -> DistGraph:
    return DistGraph(addresses, **options)


def connect(addresses: Sequence[str], **options: Any) -> DistGraph:
    """``DistGraph(addresses, **options)``: connects to the servers of every partition."""
    return DistGraph(addresses, **options)


def _local_pair(local: Any) -> Tuple[str, int]:
    try:
        directory, part = local
        return os.fspath(directory), int(part)
    except (TypeError, ValueError):
        raise ValueError(
            "local must be a (directory, part) pair or a volley.dist.Server of this process, "
            f"got {local!r}"
        ) from None


def _as_graph(graph: Union[DistGraph, Sequence[str]], **options: Any) -> DistGraph:
    return graph if isinstance(graph, DistGraph) else DistGraph(graph, **options)


class DistSampler(NeighborSampler):
    """``volley.NeighborSampler`` over served partitions: the same results as the sampler over
    the whole renumbered graph (``sample`` gives ``(n_id, batch_size, adjs)``,
    ``sample_subgraph`` the raw arrays).

    Args:
        graph: a ``DistGraph``, or the servers' addresses (then ``options`` go to ``DistGraph``).
        sizes, replace, weighted, seed: as ``volley.NeighborSampler``.

    Raises:
        As ``volley.NeighborSampler``, plus the network errors of ``DistGraph``.
    """

    def __init__(
        self,
        graph: Union[DistGraph, Sequence[str]],
        sizes: Sequence[int],
        *,
        replace: bool = False,
        weighted: bool = False,
        seed: int = 0,
        **options: Any,
    ):
        self.graph = _as_graph(graph, **options)
        self._configure(
            sizes, replace, weighted, seed, has_weights=bool(self.graph._info["has_weights"])
        )

    def _sample_raw(self, seeds: np.ndarray, batch_index: int) -> dict:
        return self.graph._native.sample(
            seeds, self.sizes, self.replace, self.weighted, self.seed, batch_index
        )

    def share_memory_(self) -> "DistSampler":
        """Nothing to share: the graph lives on the servers (pickling reconnects)."""
        return self

    def __reduce__(self) -> tuple:
        return _rebuild_dist_sampler, (
            self.graph,
            dict(sizes=self.sizes, replace=self.replace, weighted=self.weighted, seed=self.seed),
            self._calls,
        )

    def __repr__(self) -> str:
        return (
            f"DistSampler(sizes={self.sizes}, replace={self.replace}, "
            f"weighted={self.weighted}, seed={self.seed}, graph={self.graph!r})"
        )


def _rebuild_dist_sampler(graph: DistGraph, options: Dict[str, Any], calls: int) -> DistSampler:
    sampler = DistSampler(graph, **options)
    sampler._calls = calls
    return sampler


class DistFeatureStore:
    """Feature rows (or labels) of served partitions, gathered by new id.

    Args:
        graph: a ``DistGraph``, or the servers' addresses (then ``options`` go to ``DistGraph``).
        kind: ``"features"`` or ``"labels"``.

    ``store[ids]`` and ``store.gather(ids)`` return a tensor (numpy without torch): [n, D] rows
    for features, int64 [n] for labels. Ids out of range raise ``VolleyIndexError``.
    """

    def __init__(
        self, graph: Union[DistGraph, Sequence[str]], kind: str = "features", **options: Any
    ):
        if kind not in ("features", "labels"):
            raise ValueError(f"kind must be 'features' or 'labels', got {kind!r}")
        self.graph = _as_graph(graph, **options)
        self.kind = kind

    def gather(self, ids: Any, dtype: Optional[str] = None) -> Any:
        """Rows of ``ids`` (int64 new ids), features converted to ``dtype`` (None: as stored)."""
        values = np.ascontiguousarray(_tensor.to_numpy(ids), dtype=np.int64).reshape(-1)
        native = self.graph._native
        if self.kind == "labels":
            return _tensor.to_output(native.gather_labels(values))
        return _tensor.to_output(native.gather_features(values, dtype or ""))

    def __getitem__(self, ids: Any) -> Any:
        return self.gather(ids)

    def __len__(self) -> int:
        return self.graph.num_nodes

    @property
    def shape(self) -> Tuple[int, ...]:
        if self.kind == "labels":
            return (self.graph.num_nodes,)
        return (self.graph.num_nodes, self.graph.num_features)

    @property
    def dtype(self) -> Optional[str]:
        """The stored dtype name (None: nothing stored)."""
        info = self.graph._info
        if self.kind == "labels":
            return info["label_dtype"]
        return info["feature_dtype"] if info["feature_dim"] else None

    def __repr__(self) -> str:
        return f"DistFeatureStore({self.kind}, shape={self.shape}, dtype={self.dtype})"


class DistNeighborLoader(NeighborLoader):
    """``volley.loader.NeighborLoader`` over partitions served by ``volley serve``.

    Yields the same batches (PyG ``Data`` with ``x``, ``y``, ``edge_index``, ``n_id``, ``e_id``,
    ``input_id``, ``batch_size``, ``num_sampled_nodes``, ``num_sampled_edges``; ids in the new
    numbering) as ``NeighborLoader`` over the whole renumbered graph with the same arguments,
    rank split included.

    Args:
        addresses: every partition's server, in part order (``"host:port"``; a comma-separated
            string works too), or a connected ``DistGraph`` (worker mode).
        num_neighbors, batch_size, input_nodes, shuffle, seed, replace, weighted, drop_last,
        prefetch, copy, transform, feature_dtype, rank, world_size: as ``NeighborLoader``
            (``input_nodes``: new ids or a boolean mask over them).
        num_workers: batches in flight at once (worker mode: this process's loader threads;
            server-client: batches the server samples at once). Network waits cost no CPU, so
            it may exceed the cores; default max(4, cores).
        mode: ``"worker"`` (sample across the servers from this process, own partition
            in-process) or ``"server-client"`` (a server samples and streams whole epochs).
        local: worker mode: the partition this trainer holds, ``(directory, part)`` or this
            process's ``Server``. Required unless ``addresses`` is a ``DistGraph``.
        server: server-client mode: the server that streams this trainer's batches; default
            ``addresses[rank % len(addresses)]`` (trainers spread over the servers).
        token: the servers' access token (None: none).
        deadline: seconds a call (worker) or the next batch (server-client) may take before
            ``VolleyTimeoutError``; a dead server raises ``VolleyConnectionError`` sooner.
        connect_timeout: seconds to wait for servers that are still starting.

    Raises:
        ValueError: a bad mode, ``local`` / ``server`` missing or given in the wrong mode, and
            what ``NeighborLoader`` refuses. The network errors of ``DistGraph``.
        RuntimeError: a build without gRPC.
    """

    def __init__(
        self,
        addresses: Union[DistGraph, Sequence[str], None],
        num_neighbors: Sequence[int],
        batch_size: int = 1,
        input_nodes: Any = None,
        shuffle: bool = False,
        num_workers: Optional[int] = None,
        seed: Optional[int] = None,
        *,
        mode: str = "worker",
        local: Local = None,
        server: Optional[str] = None,
        token: Optional[str] = None,
        deadline: float = 30.0,
        connect_timeout: float = 30.0,
        replace: bool = False,
        weighted: bool = False,
        drop_last: bool = False,
        prefetch: Optional[int] = None,
        copy: bool = False,
        transform: Any = None,
        feature_dtype: str = "float32",
        rank: Optional[int] = None,
        world_size: Optional[int] = None,
    ):
        native = _native()
        if mode not in MODES:
            raise ValueError(f"mode must be 'worker' or 'server-client', got {mode!r}")
        if isinstance(addresses, str):
            addresses = [a.strip() for a in addresses.split(",")]
        self.mode = mode
        self.data = None
        self._token = token or ""
        self._connection = dict(
            token=self._token,
            deadline_seconds=float(deadline),
            connect_seconds=float(connect_timeout),
        )
        rank_and_world = dict(rank=rank, world_size=world_size)
        if mode == "worker":
            if server is not None:
                raise ValueError("server= is for mode='server-client'; worker mode uses local=")
            if isinstance(addresses, DistGraph):
                if local is not None:
                    raise ValueError("pass local= to volley.dist.connect, not with a DistGraph")
                self.graph = addresses
            else:
                if local is None:
                    raise ValueError(
                        "mode='worker' needs local=(directory, part) or local=server (the "
                        "partition this trainer serves); to sample every partition over RPC, "
                        "pass volley.dist.connect(addresses) instead of the addresses"
                    )
                if not addresses:
                    raise ValueError("addresses must list every partition's server")
                self.graph = DistGraph(
                    addresses, token=token, deadline=deadline, connect_timeout=connect_timeout,
                    local=local,
                )
            self.server = None
            num_nodes = self.graph.num_nodes
        else:
            if local is not None:
                raise ValueError("local= is for mode='worker'; server-client trainers hold no data")
            if isinstance(addresses, DistGraph):
                addresses = addresses.addresses
            if server is None:
                if not addresses:
                    raise ValueError(
                        "mode='server-client' needs server='host:port' (or addresses to pick "
                        "one from by rank)"
                    )
                from .loader import _rank_and_world_size

                index, _ = _rank_and_world_size(rank, world_size)
                server = list(addresses)[index % len(addresses)]
            self.graph = None
            self.server = str(server)
            # The graph's size (for masks and the rank split) comes from the server's Info.
            fanouts = native.NeighborSamplerOptions([int(k) for k in num_neighbors])
            probe = native.ServerClientLoader(
                self.server, None, native.LoaderOptions(fanouts, batch_size=int(batch_size)),
                **self._connection,
            )
            num_nodes = int(probe.info["num_nodes"])
        self._setup(
            num_nodes,
            num_neighbors,
            batch_size=batch_size,
            input_nodes=input_nodes,
            shuffle=shuffle,
            num_workers=num_workers if num_workers else max(4, os.cpu_count() or 1),
            seed=seed,
            drop_last=drop_last,
            copy=copy,
            transform=transform,
            prefetch=prefetch,
            replace=replace,
            weighted=weighted,
            feature_dtype=feature_dtype,
            **rank_and_world,
        )

    def _create_native(self, input_nodes: Optional[np.ndarray]) -> Any:
        if self.mode == "worker":
            return _volley.NeighborLoader(self.graph._native, input_nodes, self._options)
        return _volley.ServerClientLoader(
            self.server, input_nodes, self._options, **self._connection
        )

    def __repr__(self) -> str:
        where = f"server='{self.server}'" if self.server else f"graph={self.graph!r}"
        return (
            f"DistNeighborLoader(mode='{self.mode}', {where}, "
            f"num_neighbors={self.num_neighbors}, batch_size={self.batch_size}, "
            f"batches={len(self)}, shuffle={self.shuffle}, num_workers={self.num_workers}"
            + (f", rank={self.rank}/{self.world_size}" if self.world_size > 1 else "")
            + ")"
        )


__all__ = [
    "DistFeatureStore",
    "DistGraph",
    "DistNeighborLoader",
    "DistSampler",
    "MODES",
    "Server",
    "available",
    "connect",
    "read_token",
    "serve",
]
