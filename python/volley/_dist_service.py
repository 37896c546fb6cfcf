"""The distributed service's Python side: serving a partition (``serve``, ``Server``) and a
client connected to every partition's server (``DistGraph``). Public through ``volley.dist``,
which adds the sampler, feature and loader views on top; see its docstring for the topologies.
"""

from __future__ import annotations

import json
import os
import socket
import threading
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

import numpy as np

from . import _tensor, _volley
from ._volley import VolleyOSError, VolleyRuntimeError, VolleyValueError
from .partition import PartitionBook

PathLike = Union[str, "os.PathLike[str]"]


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
        raise VolleyRuntimeError(_NO_DIST)
    return _volley


def part_addresses(addresses: Any) -> List[str]:
    """Every part's servers, one entry per part in part order: ``"host:port"``, or a part's
    replicas as ``"host:port|host:port"`` or a list / tuple of addresses. A string lists the
    parts separated by commas. ``None`` and ``""`` entries stay (the local part's place)."""
    if isinstance(addresses, str):
        addresses = [a.strip() for a in addresses.split(",")]
    return ["|".join(str(r).strip() for r in a) if isinstance(a, (list, tuple))
            else "" if a is None else str(a) for a in (addresses or [])]


def partition_manifest(directory: PathLike) -> dict:
    """The partitioned dataset's ``partition.json`` (either kind of partitioning)."""
    directory = os.fspath(directory)
    path = os.path.join(directory, "partition.json")
    try:
        with open(path, encoding="utf-8") as stream:
            return json.load(stream)
    except FileNotFoundError:
        raise VolleyOSError(f"{directory!r} holds no partition.json: not a partitioned dataset "
                            f"(write one with `volley partition`)") from None
    except (OSError, ValueError) as error:
        raise VolleyOSError(f"cannot read {path!r}: {error}") from None


def read_token(path: PathLike) -> str:
    """The access token in a token file: its first line without surrounding white space (what
    ``volley serve --token-file`` reads).

    Raises:
        VolleyOSError: the file cannot be read. VolleyValueError: its first line is empty.
    """
    try:
        with open(path, encoding="utf-8") as stream:
            token = stream.readline().strip()
    except OSError as error:
        raise VolleyOSError(
            f"cannot read token file '{os.fspath(path)}': {error.strerror or error}"
        ) from error
    if not token:
        raise VolleyValueError(
            f"token file '{os.fspath(path)}' is empty (its first line is the token)"
        )
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
        self._native.shutdown(_tensor.check_real(grace, "grace", 0))

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
    max_request_bytes: int = 512 << 20,
    max_reply_bytes: int = 64 << 20,
    max_ids_per_call: int = 1 << 23,
    memory_limit_bytes: int = 4 << 30,
    max_message_bytes: Optional[int] = None,
    tls_cert: Optional[PathLike] = None,
    tls_key: Optional[PathLike] = None,
    tls_client_ca: Optional[PathLike] = None,
    peer_tls_ca: Optional[PathLike] = None,
    max_epoch_streams: int = 0,
    max_node_data_bytes: int = 0,
    rendezvous: Any = None,
    service: str = "default",
    advertise: Optional[str] = None,
    replica: bool = False,
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
        peers: every partition's server address in part order (this one's may be ``""``; a
            part's replicas as ``"a|b"`` or a list, as ``DistGraph``):
            needed for the server-client topology, where this server samples across all
            partitions.
        threads: RPC handler threads at most (0: the default, 8 × cores, at least 32).
        peer_deadline: seconds per call to peers.
        concurrency: batches one epoch stream samples at once when the trainer does not say
            (0: cores).
        max_request_bytes: larger request messages are refused (1 MiB to 1 GiB).
        max_reply_bytes: no reply (rows, picks, an epoch's batch) may be larger (64 KiB to
            1 GiB); it also caps a fanout with ``replace=True`` at ``(max_reply_bytes - 4) // 16``.
        max_ids_per_call: ids one request may list (at most ``max_request_bytes // 8``).
            Clients read these limits when they connect and split larger gathers and hops
            into several calls, so they never meet them; see docs/guide/distributed.md,
            "Server limits".
        memory_limit_bytes: gRPC's memory quota for the server.
        max_message_bytes: the old name of ``max_request_bytes`` (deprecated).
        tls_cert, tls_key: serve over TLS with this certificate and key (PEM files).
        tls_client_ca: mutual TLS: every client must present a certificate signed by this CA;
            calls to ``peers`` verify them against it and present ``tls_cert``.
        peer_tls_ca: call ``peers`` over TLS, verifying them against this CA (default:
            ``tls_client_ca`` when given, else plaintext).
        max_epoch_streams: server-client epoch streams open at once (0: 4 × ``threads``);
            one more is refused as busy (``VolleyConnectionError``). A stream whose trainer
            pauses holds no server thread, only its prefetched batches.
        max_node_data_bytes: the node tables (``volley.NodeStore(servers=...)``) this server
            holds at once, in bytes (0: half the machine's memory); a table that does not fit
            is refused with ``VolleyValueError``.
        rendezvous: register this part's address in torch.distributed's key-value store
            (``"env"``, ``"host:port"`` of a c10d TCPStore, or a ``torch.distributed.Store``;
            see ``volley._rendezvous``) under ``service``, so that loaders and other servers
            find it without an address list. With ``peers="rendezvous"`` the server also reads
            every part's address from there (waiting up to ``peer_deadline`` s for parts still
            starting) and samples across them (server-client topology).
        service: the name parts register under (one per partitioned dataset served).
        advertise: the ``host:port`` to register (default: ``listen``'s, or for a wildcard host
            this machine's address on the route to the rendezvous host).
        replica: with ``rendezvous``: this server is one of its part's replicas (its address
            joins the part's entry, ``"a|b"``; loaders spread their calls over them and fail over
            between them). Every server of a replicated part registers so; default: the server
            replaces its part's entry (one server a part, a restarted one included).

    A heterogeneous partitioned directory (``volley partition`` of a heterogeneous dataset) is
    served too: typed sampling and per-type rows for ``DistNeighborLoader(...,
    input_nodes=(node_type, ids))``, both topologies.

    Returns:
        A running ``Server``.

    Raises:
        VolleyOSError: the address cannot be bound, or the partition's files are bad.
        VolleyIndexError: ``part`` out of range.
        VolleyRuntimeError: a build without gRPC.
    """
    numbers = _server_numbers(
        part=part, threads=threads, concurrency=concurrency, max_epoch_streams=max_epoch_streams,
        max_request_bytes=max_request_bytes if max_message_bytes is None else max_message_bytes,
        max_reply_bytes=max_reply_bytes, max_ids_per_call=max_ids_per_call,
        memory_limit_bytes=memory_limit_bytes, max_node_data_bytes=max_node_data_bytes)
    peer_deadline = _tensor.check_seconds(peer_deadline, "peer_deadline")
    registered = None
    if rendezvous is not None:
        listen, peers, registered = _rendezvous_setup(
            directory, numbers["part"], str(listen), peers, rendezvous, str(service), advertise,
            peer_deadline, bool(replica))
    elif isinstance(peers, str) and peers == "rendezvous":
        raise VolleyValueError("peers='rendezvous' needs rendezvous= (where the parts register)")
    # Either kind of partition: the server reads it from the directory (server.h).
    native = _native().Server(
        os.fspath(directory),
        numbers["part"],
        listen=str(listen),
        token=token or "",
        threads=numbers["threads"],
        peers=part_addresses(peers),
        peer_token=token or "",
        peer_deadline_seconds=peer_deadline,
        max_request_bytes=numbers["max_request_bytes"],
        max_reply_bytes=numbers["max_reply_bytes"],
        max_ids_per_call=numbers["max_ids_per_call"],
        memory_limit_bytes=numbers["memory_limit_bytes"],
        default_concurrency=numbers["concurrency"],
        tls_cert=_path_or_empty(tls_cert),
        tls_key=_path_or_empty(tls_key),
        tls_client_ca=_path_or_empty(tls_client_ca),
        peer_tls_ca=_path_or_empty(peer_tls_ca),
        max_epoch_streams=numbers["max_epoch_streams"],
        max_node_data_bytes=numbers["max_node_data_bytes"],
    )
    if registered is not None:
        registered()
    return Server(native)


def _rendezvous_setup(directory: PathLike, part: int, listen: str, peers: Any, rendezvous: Any,
                      service: str, advertise: Optional[str], timeout: float,
                      replica: bool) -> tuple:
    """serve's rendezvous: a fixed port for ``listen`` (a free one when it says 0), this part's
    address registered once the server listens (the returned callable), and with
    ``peers="rendezvous"`` every part's address (this one registered first, so that the parts
    wait for each other, not for themselves)."""
    from . import _rendezvous

    store = _rendezvous.store_of(rendezvous, timeout)
    host, _, port_text = listen.rpartition(":")
    port = int(port_text) if port_text.isdigit() else 0
    if port == 0:  # pick the port now: the address is registered before the server starts
        with socket.socket(socket.AF_INET6 if ":" in host.strip("[]") else socket.AF_INET) as probe:
            probe.bind((host.strip("[]") or "0.0.0.0", 0))
            port = probe.getsockname()[1]
        listen = f"{host}:{port}"
    rendezvous_host = rendezvous.rpartition(":")[0] if isinstance(rendezvous, str) and \
        rendezvous != "env" else None
    address = advertise or _rendezvous.advertised_address(listen, port, rendezvous_host)
    num_parts = int(partition_manifest(directory)["num_parts"])  # either kind of partitioning
    fingerprint = _native().dataset_fingerprint(os.fspath(directory))

    def register() -> None:
        _rendezvous.register(store, service, part, num_parts, address, fingerprint, replica)

    if isinstance(peers, str) and peers == "rendezvous":
        register()
        return listen, _rendezvous.discover(store, service, timeout), None
    return listen, peers, register


def _server_numbers(**numbers: Any) -> Dict[str, int]:
    """``serve``'s integer arguments, each checked to be an integer: ``threads``,
    ``concurrency`` and ``max_epoch_streams`` count from 0 (at most 2**31 - 1); the range of the
    others (64-bit) is the server's own check, which names them too."""
    counts = ("threads", "concurrency", "max_epoch_streams")
    return {name: _tensor.check_int(value, name, 0, 2**31 - 1) if name in counts
            else _tensor.check_int(value, name, -(2**63), 2**63 - 1)
            for name, value in numbers.items()}


def _path_or_empty(path: Optional[PathLike]) -> str:
    return "" if path is None else os.fspath(path)


Local = Union[None, Server, Tuple[PathLike, int]]


class DistGraph:
    """The partitions served at ``addresses``, seen as one graph (new ids).

    Args:
        addresses: ``addresses[p]`` serves part ``p`` (``"host:port"``); the local part's entry
            may be ``""``. Replicas: several servers of one part, as ``"host:port|host:port"``
            or a list of addresses; calls are spread over them in turn, and a call to a replica
            that is unreachable or does not answer within ``deadline`` is made again on another
            (the same answer: sampling is a pure function of the request), so an epoch survives
            a lost replica with the same batches. Node tables (``RemoteNodeState``) live on each
            part's first server.
        token: the servers' access token (None: none).
        deadline: seconds each call may take before ``VolleyTimeoutError``.
        connect_timeout: seconds to wait for servers that are still starting.
        tls_ca: connect over TLS, verifying the servers' certificates against this CA (PEM
            file; the certificates must name the host or IP of the address).
        tls_cert, tls_key: a client certificate and its key (PEM files) for servers that
            require mutual TLS.
        local: worker topology: the partition this process holds (sampled and gathered without
            RPC): a ``(directory, part)`` pair, or a ``Server`` of this process (its memory is
            shared). None: every part by RPC.
        rendezvous, service: read the addresses from torch.distributed's key-value store
            instead (``addresses=None``), as ``DistNeighborLoader``.

    Raises:
        VolleyConnectionError: a server cannot be reached within ``connect_timeout``.
        VolleyPermissionError: a missing or wrong token.
        VolleyValueError: a server of another dataset, part or protocol version (named).
        VolleyRuntimeError: a build without gRPC.

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
        tls_ca: Optional[PathLike] = None,
        tls_cert: Optional[PathLike] = None,
        tls_key: Optional[PathLike] = None,
        rendezvous: Any = None,
        service: str = "default",
    ):
        native = _native()
        if rendezvous is not None:
            from . import _rendezvous

            if addresses is not None:
                raise VolleyValueError("give addresses or rendezvous=, not both")
            timeout = _tensor.check_seconds(connect_timeout, "connect_timeout")
            addresses = _rendezvous.discover(_rendezvous.store_of(rendezvous, timeout),
                                             str(service), timeout)
        self._addresses = part_addresses(addresses)
        self._token = token or ""
        self._deadline = _tensor.check_seconds(deadline, "deadline")
        self._connect_timeout = _tensor.check_seconds(connect_timeout, "connect_timeout")
        self._tls = dict(
            tls_ca=_path_or_empty(tls_ca),
            tls_cert=_path_or_empty(tls_cert),
            tls_key=_path_or_empty(tls_key),
        )
        options = dict(
            token=self._token,
            deadline_seconds=self._deadline,
            connect_seconds=self._connect_timeout,
            **self._tls,
        )
        self._native, self._local = connect_client(native.DistGraph, self._addresses, local,
                                                   options)
        self._info = dict(self._native.info)

    @property
    def addresses(self) -> List[str]:
        return list(self._addresses)

    def _connect_options(self) -> Dict[str, Any]:
        """How to reach the same servers (``volley.NodeStore(servers=graph)``)."""
        return dict(addresses=[a for a in self._addresses], token=self._token,
                    deadline_seconds=self._deadline, connect_seconds=self._connect_timeout,
                    **self._tls)

    @property
    def info(self) -> Dict[str, Any]:
        """What the servers serve: ``dataset_name``, ``fingerprint``, ``num_nodes``,
        ``num_parts``, ``num_edges``, ``feature_dim``, ``feature_dtype``, ``label_dtype``,
        ``num_classes``, ``has_weights``, ``has_edge_time``, ``has_node_time`` (whether the
        partitioned dataset holds times for temporal sampling)."""
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
        """The partition held in this process (worker topology), or None."""
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
                 connect_timeout=self._connect_timeout, local=self._local,
                 **{k: v or None for k, v in self._tls.items()}),
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


def connect_client(native_class: Any, addresses: List[str], local: Local,
                   options: Dict[str, Any]) -> Tuple[Any, Optional[Tuple[str, int]]]:
    """A native client of either graph kind (``_volley.DistGraph``, ``DistHeteroGraph``)
    connected to ``addresses`` with the connection keywords ``options``, and the ``(directory,
    part)`` it holds: ``local`` a ``Server`` of this process (its partition shared), a
    ``(directory, part)`` pair (loaded and sampled in-process), or None (every part by RPC)."""
    if isinstance(local, Server):
        return native_class.connect_to_server_partition(addresses, local._native, **options), None
    if local is None:
        return native_class.connect(addresses, **options), None
    directory, part = _local_pair(local)
    return (native_class.connect(addresses, local_directory=directory, local_part=part, **options),
            (directory, part))


def _local_pair(local: Any) -> Tuple[str, int]:
    try:
        directory, part = local
        return os.fspath(directory), int(part)
    except (TypeError, ValueError):
        raise VolleyValueError(
            "local must be a (directory, part) pair or a volley.dist.Server of this process, "
            f"got {local!r}"
        ) from None


def _as_graph(graph: Union[DistGraph, Sequence[str]], **options: Any) -> DistGraph:
    return graph if isinstance(graph, DistGraph) else DistGraph(graph, **options)


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
            raise VolleyValueError(f"kind must be 'features' or 'labels', got {kind!r}")
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
