"""``volley.dist``: neighbor sampling and features of a partitioned graph served over gRPC.

Each partition of a partitioned dataset (``volley.partition``) is served by a ``volley serve``
process (or ``volley.dist.serve`` in-process). Trainers load batches that are *exactly* what
``volley.loader.NeighborLoader`` gives over the whole renumbered graph with the same seed and
options: sampling is a pure function of (seeds, fanouts, seed, batch index), and the servers
each sample their own nodes' neighbors.

Two topologies (``topology=``), as GraphLearn-for-PyTorch's two modes:

* ``"worker"``: every trainer also serves its partition and holds it in-process; nodes it owns
  are sampled and gathered locally, the rest by RPC to the other trainers' servers::

      server = volley.dist.serve("/data/cora-2", part=rank, listen="0.0.0.0:5000", token=token)
      loader = volley.dist.DistNeighborLoader(
          addresses, [10, 10], batch_size=64, input_nodes=train_ids, shuffle=True,
          topology="worker", local=server, token=token)

* ``"server-client"``: sampling servers run apart from the trainers (started with ``peers``,
  the addresses of every partition's server); a trainer holds no data and receives each epoch's
  batches from one server as a gRPC stream::

      loader = volley.dist.DistNeighborLoader(
          addresses, [10, 10], batch_size=64, input_nodes=train_ids, shuffle=True,
          topology="server-client", token=token)  # server: addresses[rank % len(addresses)]

Node ids are always in the partitioned (new) numbering: ``volley.partition.to_new_ids`` maps
ids of the original dataset, ``volley.partition.split_ids`` gives a split's new ids.

Failures surface in the training loop, never as a hang: a server that is down or dies raises
``VolleyConnectionError`` (a ``ConnectionError``), one that does not answer within ``deadline``
seconds ``VolleyTimeoutError`` (a ``TimeoutError``), a missing or wrong token
``VolleyPermissionError`` (a ``PermissionError``).

The service needs a build with gRPC (Debian's ``libgrpc++-dev`` and
``protobuf-compiler-grpc``); in other builds every entry point raises ``VolleyRuntimeError``
(a ``RuntimeError``) saying so.

Serving and the connected graph (``serve``, ``Server``, ``DistGraph``, ``DistFeatureStore``) are
written in ``volley._dist_service``; this module adds the sampler and the loader on top.
"""

from __future__ import annotations

import os
import warnings
from typing import Any, Dict, List, Optional, Sequence, Union

import numpy as np

from . import _policy, _pyg_compat, _temporal, _tensor, _volley
from ._dist_service import (
    DistFeatureStore,
    DistGraph,
    Local,
    Server,
    _as_graph,
    _native,
    available,
    connect,
    part_addresses,
    read_token,
    serve,
)
from ._volley import VolleyValueError
from .loader import TYPED_LOADERS, NeighborLoader
from ._tensor import rank_and_world_size as _rank_and_world_size
from .sampler import NeighborSampler

TOPOLOGIES = ("worker", "server-client")



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


_MODE_DEPRECATED = (
    "DistNeighborLoader's mode= is now called topology= ('worker' or 'server-client'); "
    "mode= is accepted until the next release"
)


def _topology(topology: Optional[str], mode: Optional[str]) -> str:
    """The loader's topology from ``topology=`` or the deprecated ``mode=`` (default worker)."""
    if mode is not None:
        if mode not in TOPOLOGIES:
            raise VolleyValueError(
                f"DistNeighborLoader takes topology='worker' or 'server-client', got mode={mode!r} "
                "(GPU/UVA/CPU modes are NeighborLoader's)"
            )
        if topology is not None and topology != mode:
            raise VolleyValueError(
                f"topology={topology!r} and the deprecated mode={mode!r} disagree: pass topology="
            )
        warnings.warn(_MODE_DEPRECATED, DeprecationWarning, stacklevel=3)
        topology = mode
    if topology is None:
        return "worker"
    if topology not in TOPOLOGIES:
        raise VolleyValueError(f"topology must be 'worker' or 'server-client', got {topology!r}")
    return topology


def _connection(token: Optional[str], deadline: float, connect_timeout: float,
                tls: Dict[str, Any]) -> Dict[str, Any]:
    """The native clients' connection keywords, checked (both graph kinds)."""
    return dict(token=token or "", deadline_seconds=_tensor.check_seconds(deadline, "deadline"),
                connect_seconds=_tensor.check_seconds(connect_timeout, "connect_timeout"),
                **{k: "" if v is None else os.fspath(v) for k, v in tls.items()})


def _stream_server(topology: str, addresses: List[str], local: Any, server: Optional[str],
                   rank: Optional[int], world_size: Optional[int]) -> Optional[str]:
    """Checks ``local=`` / ``server=`` against the topology (both graph kinds) and returns the
    server that streams a server-client trainer's batches: ``server``, else
    ``addresses[rank % len(addresses)]``; None in the worker topology."""
    if topology == "worker":
        if server is not None:
            raise VolleyValueError(
                "server= is for topology='server-client'; topology='worker' uses local=")
        return None
    if local is not None:
        raise VolleyValueError(
            "local= is for topology='worker'; server-client trainers hold no data")
    if server is None:
        if not addresses:
            raise VolleyValueError(
                "topology='server-client' needs server='host:port' (or addresses to pick one "
                "from by rank)")
        index, _ = _rank_and_world_size(rank, world_size)
        server = list(addresses)[index % len(addresses)]
    return part_addresses([server])[0]  # "a|b" or a list: any of these servers


def __getattr__(name: str) -> Any:
    if name == "MODES":  # the name before topology=; kept for one release
        warnings.warn("volley.dist.MODES is now volley.dist.TOPOLOGIES", DeprecationWarning,
                      stacklevel=2)
        return TOPOLOGIES
    raise AttributeError(f"module 'volley.dist' has no attribute {name!r}")


class DistNeighborLoader(NeighborLoader):
    """``volley.loader.NeighborLoader`` over partitions served by ``volley serve``.

    Yields the same batches (PyG ``Data`` with ``x``, ``y``, ``edge_index``, ``n_id``, ``e_id``,
    ``input_id``, ``batch_size``, ``num_sampled_nodes``, ``num_sampled_edges``; ids in the new
    numbering) as ``NeighborLoader`` over the whole renumbered graph with the same arguments,
    rank split included.

    Args:
        addresses: every partition's server, in part order (``"host:port"``; a comma-separated
            string works too), or a connected ``DistGraph`` (worker topology).
        num_neighbors: as ``NeighborLoader``, and so are ``batch_size``, ``input_nodes`` (new
            ids or a boolean mask over them), ``shuffle``, ``seed``, ``replace``, ``weighted``,
            ``drop_last``, ``prefetch``, ``copy``, ``transform``, ``rank``, ``world_size`` and
            ``default`` (heterogeneous partitions only).
        feature_dtype: dtype of ``x``; None: ``float32`` over homogeneous partitions, each node
            type's stored dtype over heterogeneous ones.
        num_workers: batches in flight at once (worker topology: this process's loader threads;
            server-client: batches the server samples at once). Network waits cost no CPU, so
            it may exceed the cores; default max(4, cores).
        topology: ``"worker"`` (sample across the servers from this process, own partition
            in-process) or ``"server-client"`` (a server samples and streams whole epochs).
        mode: deprecated spelling of ``topology`` (accepted for one release with a
            ``DeprecationWarning``; ``NeighborLoader``'s ``mode`` means GPU / UVA / CPU).
        local: worker topology: the partition this trainer holds, ``(directory, part)`` or this
            process's ``Server``. Required unless ``addresses`` is a ``DistGraph``.
        server: server-client topology: the server that streams this trainer's batches; default
            ``addresses[rank % len(addresses)]`` (trainers spread over the servers). Several
            (``"a|b"`` or a list, each started with the peers): a stream whose server is lost
            (unreachable, no batch within ``deadline``) goes on from another one, from the
            first batch not yet delivered, with the same batches.
        token: the servers' access token (None: none).
        deadline: seconds a call (worker) or the next batch (server-client) may take before
            ``VolleyTimeoutError``; a dead server raises ``VolleyConnectionError`` sooner.
        connect_timeout: seconds to wait for servers that are still starting.
        tls_ca, tls_cert, tls_key: TLS, as ``DistGraph`` (the CA that signed the servers'
            certificates; a client certificate and key for mutual TLS).
        time_attr, input_time, temporal_strategy: temporal sampling, as ``NeighborLoader``
            over a ``volley.Dataset`` (either topology): ``time_attr`` is ``"edge_time"``,
            ``"node_time"`` or ``"time"`` (node time when the partitioned dataset has it, else
            edge time); ``input_time`` is one int64 per input node (required, except with node
            time, topology "worker" and ``local=(directory, part)``: the seeds' own times from
            the directory's node_time.npy are the default, as locally); each hop's
            targets travel to their owners with their seed's time, and the batches (with
            ``batch``) equal the local temporal loader's over the renumbered graph.
        disjoint: every seed gets a subgraph of its own (``batch``), as ``NeighborLoader``.
        rendezvous: read the servers' addresses from torch.distributed's key-value store, where
            ``volley.dist.serve(..., rendezvous=...)`` registered them (``"env"`` under torchrun,
            ``"host:port"`` of a c10d TCPStore, or a ``torch.distributed.Store``); then
            ``addresses`` may be None. Waits up to ``connect_timeout`` s for parts still
            registering.
        service: the name the servers registered under.

    Heterogeneous partitions: ``input_nodes=(node_type, ids)`` (or a node type name) returns a
    ``_dist_hetero.DistHeteroNeighborLoader`` (a subclass: the same signature, and
    ``isinstance(loader, DistNeighborLoader)`` holds) whose batches are the local heterogeneous loader's
    ``HeteroData`` over the renumbered graph (``num_neighbors`` a list or a per-edge-type dict,
    ``default`` for the missing types); either topology (server-client: the server was started
    with ``peers``), temporal (times per type written with
    ``volley.hetero_partition.write_times``) and disjoint sampling and the rank split included.

    Raises:
        VolleyValueError: a bad topology, ``local`` / ``server`` missing or given with the
            wrong topology, temporal sampling without ``input_time``, a ``time_attr`` the partitioned dataset has no times for, and what
            ``NeighborLoader`` refuses. The network errors of
            ``DistGraph``.
        VolleyRuntimeError: a build without gRPC.
    """

    def __new__(cls, *args: Any, **kwargs: Any) -> Any:
        """``input_nodes=(node_type, ids)`` (or a type name): heterogeneous partitions, the
        subclass ``_dist_hetero.DistHeteroNeighborLoader`` (the same ``__init__``)."""
        input_nodes = kwargs.get("input_nodes", args[3] if len(args) > 3 else None)
        if cls is DistNeighborLoader and _policy.is_hetero_input(input_nodes):
            cls = TYPED_LOADERS["dist-node"]  # (_dist_hetero.py, loaded by `import volley`)
        return object.__new__(cls)

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
        topology: Optional[str] = None,
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
        feature_dtype: Optional[str] = None,
        rank: Optional[int] = None,
        world_size: Optional[int] = None,
        mode: Optional[str] = None,
        tls_ca: Optional[str] = None,
        tls_cert: Optional[str] = None,
        tls_key: Optional[str] = None,
        time_attr: Optional[str] = None,
        input_time: Any = None,
        temporal_strategy: str = "uniform",
        disjoint: bool = False,
        rendezvous: Any = None,
        service: str = "default",
        default: Optional[List[int]] = None,
    ):
        if rendezvous is not None:
            addresses = _discovered(addresses, rendezvous, service, connect_timeout)
        if self._typed:  # heterogeneous partitions: the same signature, the typed body
            self._init_typed(**{k: v for k, v in locals().items() if k not in ("self", "__class__")})
            return
        if default is not None:  # one fanout list: refused as any argument PyG does not take
            _pyg_compat.check_loader_kwargs({"default": default})
        feature_dtype = feature_dtype or "float32"
        self.topology = _topology(topology, mode)
        self.data = None
        self.disjoint = bool(disjoint) or time_attr is not None  # PyG: temporal means disjoint
        rank_and_world = dict(rank=rank, world_size=world_size)
        tls = dict(tls_ca=tls_ca, tls_cert=tls_cert, tls_key=tls_key)
        info = self._connect(addresses, local, server, _connection(token, deadline, connect_timeout,
                                                                    tls), rank, world_size)
        num_nodes = int(info["num_nodes"])
        node_time = _partition_node_time(local) if self.server is None else None
        time_source = _temporal.service_time_source(info, time_attr, input_time, temporal_strategy,
                                                    node_time is not None)
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
            disjoint=self.disjoint,
            temporal=(time_source, temporal_strategy, input_time, _NoGraph(num_nodes, node_time)),
        )

    def _connect(self, addresses: Any, local: Any, server: Any, connection: Dict[str, Any],
                 rank: Optional[int], world_size: Optional[int], input_type: str = "",
                 ) -> Dict[str, Any]:
        """Connects (worker: every server, the local part in-process, ``_connect_worker``;
        server-client: the one server that streams the batches, ``_stream_server``) and returns
        what the service describes, for either graph kind (``input_type``: a typed loader's input
        node type, named by the server when it has no such type)."""
        listed = addresses.addresses if isinstance(addresses, DistGraph) else part_addresses(
            addresses)
        self.addresses, self._connection, self.graph = listed, connection, None
        self.server = _stream_server(self.topology, listed, local, server, rank, world_size)
        if self.server is None:
            return self._connect_worker(addresses if isinstance(addresses, DistGraph) else listed,
                                        local)
        probe = _native().ServerClientLoader(
            self.server, None, _volley.LoaderOptions(_volley.NeighborSamplerOptions()),
            input_type=input_type, **connection)  # (an unknown type: named here)
        return dict(probe.info)

    def _connect_worker(self, addresses: Any, local: Any) -> Dict[str, Any]:
        """The worker topology's ``DistGraph`` (``self.graph``: ``addresses`` itself, or the
        servers with the local part in-process) and what it describes."""
        if isinstance(addresses, DistGraph):
            if local is not None:
                raise VolleyValueError("pass local= to volley.dist.connect, not with a DistGraph")
            self.graph = addresses
            return self.graph.info
        if local is None:
            raise VolleyValueError(
                "topology='worker' needs local=(directory, part) or local=server (the "
                "partition this trainer serves); to sample every partition over RPC, "
                "pass volley.dist.connect(addresses) instead of the addresses"
            )
        if not addresses:
            raise VolleyValueError("addresses must list every partition's server")
        c = self._connection
        self.graph = DistGraph(addresses, token=c["token"], deadline=c["deadline_seconds"],
                               connect_timeout=c["connect_seconds"], local=local,
                               **{k: c[k] or None for k in ("tls_ca", "tls_cert", "tls_key")})
        return self.graph.info

    def _create_native(self, input_nodes: Optional[np.ndarray]) -> Any:
        if self.topology == "worker":
            return _volley.NeighborLoader(self.graph._native, input_nodes, self._options)
        return _volley.ServerClientLoader(
            self.server, input_nodes, self._options, **self._connection
        )

    @property
    def mode(self) -> str:
        """Deprecated: ``topology`` (``NeighborLoader.mode`` means GPU / UVA / CPU)."""
        warnings.warn(_MODE_DEPRECATED, DeprecationWarning, stacklevel=2)
        return self.topology

    def __repr__(self) -> str:
        where = f"server='{self.server}'" if self.server else f"graph={self.graph!r}"
        return (
            f"DistNeighborLoader(topology='{self.topology}', {where}, "
            f"num_neighbors={self.num_neighbors}, batch_size={self.batch_size}, "
            f"batches={len(self)}, shuffle={self.shuffle}, num_workers={self.num_workers}"
            + (f", rank={self.rank}/{self.world_size}" if self.world_size > 1 else "")
            + ")"
        )


def _discovered(addresses: Any, rendezvous: Any, service: str, timeout: float) -> Any:
    """The addresses registered under ``service`` in the rendezvous store (VolleyValueError when
    an address list is given too: one source of addresses)."""
    from . import _rendezvous

    if addresses is not None and not isinstance(addresses, DistGraph):
        raise VolleyValueError("give addresses or rendezvous=, not both")
    if isinstance(addresses, DistGraph):
        return addresses
    timeout = _tensor.check_seconds(timeout, "connect_timeout")
    return _rendezvous.discover(_rendezvous.store_of(rendezvous, timeout), str(service), timeout)


class _NoGraph:
    """What ``_temporal.graph_input_times`` reads of a graph, for a loader that holds none: the node
    count, and the node times by new id when the trainer reads its partitioned directory (the
    seeds' own times are then the default ``input_time``)."""

    def __init__(self, num_nodes: int, node_time: Any = None):
        self.num_nodes = num_nodes
        self.node_time = node_time


def _partition_node_time(local: Any) -> Optional[np.ndarray]:
    """``node_time.npy`` (int64 by new id, memory-mapped) of the partitioned directory that
    ``local=(directory, part)`` names, or None."""
    if not (isinstance(local, (tuple, list)) and len(local) == 2):
        return None
    path = os.path.join(os.fspath(local[0]), "node_time.npy")
    return np.load(path, mmap_mode="r") if os.path.exists(path) else None


from ._dist_link import DistLinkNeighborLoader  # noqa: E402 (after DistNeighborLoader)
from ._rendezvous import init_process_group  # noqa: E402

__all__ = [
    "DistFeatureStore",
    "DistGraph",
    "DistLinkNeighborLoader",
    "DistNeighborLoader",
    "DistSampler",
    "TOPOLOGIES",
    "Server",
    "available",
    "connect",
    "init_process_group",
    "read_token",
    "serve",
]
