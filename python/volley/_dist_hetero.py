"""Heterogeneous partitions over the distributed service (``volley serve`` of a heterogeneous
partitioned directory): ``DistNeighborLoader(addresses, ..., input_nodes=("paper", ids))``
lands here.

The batches are built by the local typed loader's C++ pipeline over the service's source
(``DistHeteroSource``, ``volley/dist/hetero_client.h``: per hop, every edge type's frontier goes
to its owners as typed ``SampleHop`` calls, all at once, merged and relabeled as the local
heterogeneous sampler does; features and labels fetched per node type with ``GetRows``). They
equal ``volley.loader.NeighborLoader(hetero_data, ...)``'s over the whole renumbered graph (new
ids per node type) with the same arguments. Server-client topology:
the trainer sends the epoch's seeds (in the local loader's order) to one server started with
``peers``, which samples and gathers every batch and streams it back
(``volley/dist/hetero_client.h``, ``HeteroBatchStream``).

Temporal sampling: ``volley.hetero_partition.write_times(directory, node_time=..., edge_time=...)``
adds times per type to the partitioned directory; ``time_attr`` ("node_time", "edge_time", or
"time": node times when any type has them, else edge times), ``input_time`` and
``temporal_strategy`` then work as in the local loader (over a ``HeteroData`` holding those times
as ``time_attr``): the seed time travels with each hop's targets, untimed types are
unconstrained, batches are disjoint (``batch`` per node type). ``disjoint=True`` alone gives
every seed its own tree. ``rank`` / ``world_size`` split each epoch's input nodes as
``volley.loader.NeighborLoader`` does for homogeneous graphs (pad to a multiple of
``world_size``, or drop the tail with ``drop_last``; rank r takes positions r, r + world_size,
...).

Example:
    >>> servers = [volley.dist.serve("data/mag-2", p) for p in range(2)]
    >>> loader = volley.dist.DistNeighborLoader(
    ...     [s.address for s in servers], [10, 5], batch_size=512,
    ...     input_nodes=("paper", train_ids), topology="worker")
    >>> batch = next(iter(loader))            # a HeteroData, ids in the new numbering
"""
from __future__ import annotations

import os
from typing import Any, Dict, List, Optional

import numpy as np

from . import _policy, _temporal, _volley
from ._policy import is_hetero_input
from ._volley import VolleyValueError
from .dist import DistNeighborLoader, _connection, _topology
from .hetero_loader import HeteroNeighborLoader
from .loader import TYPED_LOADERS


class _ServiceGraph:
    """The node and edge types the servers describe (what the loader reads of a graph)."""

    def __init__(self, info: Dict[str, Any]):
        self.node_types: List[str] = [t["name"] for t in info["node_types"]]
        self.edge_types: List[tuple] = [tuple(t) for t in info["edge_types"]]
        self.num_nodes_dict: Dict[str, int] = {t["name"]: int(t["num_nodes"])
                                               for t in info["node_types"]}
        self.num_edges_dict = dict(zip(self.edge_types, info["num_edges"]))


class DistHeteroNeighborLoader(HeteroNeighborLoader, DistNeighborLoader):
    """``DistNeighborLoader`` over heterogeneous partitions (see the module docstring and
    ``DistNeighborLoader``), in either topology. Each batch is a ``HeteroData`` as the local
    heterogeneous loader gives: per node type ``n_id`` (new ids), ``x`` / ``y`` where the type has
    them, ``num_sampled_nodes``; per edge type ``edge_index``, ``e_id``, ``num_sampled_edges``;
    ``input_id`` and ``batch_size`` on the input type.

    ``local=(directory, part)``: this trainer holds that part (memory-mapped) and samples and
    gathers it in-process, without RPC (``addresses[part]`` may be ``""``); ``local=server``:
    the same with the partition of this process's own ``volley.dist.serve`` server.
    ``topology="server-client"``: ``server`` (default ``addresses[0]``) must have been started
    with ``peers``; it streams the batches (one request per epoch, its stream held open while
    the trainer reads).

    ``time_attr`` / ``input_time`` / ``temporal_strategy`` / ``disjoint``: see the module
    docstring; ``rank`` / ``world_size``: this trainer's share of every epoch (default:
    ``torch.distributed``'s when initialised, else all of it); ``len(loader)`` counts its
    batches.

    Raises:
        VolleyValueError / VolleyIndexError: as the local loader (an unknown node or edge
            type, an input id outside its type's range, ``input_time`` of the wrong length or
            missing for an input type without node times, naming the type), a ``time_attr``
            whose times the directory lacks, weighted temporal sampling, and the servers'
            errors (a homogeneous server, mismatched fingerprints, a time file of the wrong
            length naming its type) as ``DistGraph``.
    """

    # DistNeighborLoader's __init__ (its signature, written once), which hands a typed loader's
    # arguments to _init_typed.
    __init__ = DistNeighborLoader.__init__

    def _init_typed(self, *, addresses: Any, num_neighbors: Any, batch_size: int,
                    input_nodes: Any, shuffle: bool, num_workers: Optional[int],
                    seed: Optional[int], topology: Optional[str], local: Any, server: Any,
                    token: Optional[str], deadline: float, connect_timeout: float,
                    replace: bool, weighted: bool, drop_last: bool, prefetch: Optional[int],
                    copy: bool, transform: Any, feature_dtype: Optional[str],
                    rank: Optional[int], world_size: Optional[int], mode: Optional[str],
                    tls_ca: Any, tls_cert: Any, tls_key: Any, time_attr: Optional[str],
                    input_time: Any, temporal_strategy: str, disjoint: bool,
                    default: Optional[List[int]], **discovery: Any) -> None:
        """``DistNeighborLoader.__init__``'s body over heterogeneous partitions (``discovery``:
        the rendezvous arguments, already applied to ``addresses``)."""
        self.copy = bool(copy)
        topology = _topology(topology, mode)
        connection = _connection(token, deadline, connect_timeout,
                                 dict(tls_ca=tls_ca, tls_cert=tls_cert, tls_key=tls_key))
        self.topology = topology
        info = self._connect(addresses, local, server, connection, rank, world_size,
                             input_nodes if isinstance(input_nodes, str)
                             else input_nodes[0] if is_hetero_input(input_nodes) else "")
        self.graph = _ServiceGraph(info)
        self.data = None
        self.subgraph_type = "directional"
        # The service's times by dist.py's rules (a link loader's edges are untimed: refused).
        timed_types = {t["name"] for t in info["node_types"] if t.get("has_node_time")}
        service = dict(dataset_name=info["dataset_name"], has_node_time=bool(timed_types),
                       has_edge_time=any(info.get("has_edge_time", [])),
                       time_hint="add them with volley.hetero_partition.write_times")
        time_source = _temporal.service_time_source(service, time_attr, input_time,
                                                    temporal_strategy, None)
        self._set_inputs(input_nodes, input_time, time_attr, temporal_strategy, time_source,
                         timed_types)
        self.disjoint = bool(disjoint) or time_source != "none"
        self._set_options(
            None, len(self.input_nodes) if self._takes_input_nodes else 0, batch_size=batch_size,
            shuffle=shuffle, drop_last=drop_last, prefetch=prefetch, seed=seed, rank=rank,
            num_workers=num_workers if num_workers else max(4, os.cpu_count() or 1),
            world_size=world_size, input_time=self.input_time)
        fanouts, by_type = _policy.check_fanouts(num_neighbors, default, typed=True)
        # The sampling options, as the local samplers take them (fanouts per edge type in
        # ``fanouts_by_type``): the service's source samples with them, or the streaming server.
        self._sampling = _volley.NeighborSamplerOptions(
            fanouts, replace=bool(replace), weighted=bool(weighted), disjoint=bool(disjoint),
            time_source=time_source, temporal_strategy=temporal_strategy)
        self._sampling.fanouts_by_type = by_type
        self._feature_dtype = feature_dtype or ""
        self.node_sampler, self._tables = None, {}  # (x and y are the service's own fields)
        self.transform = transform
        self.is_sorted, self.filter_per_worker, self.pin_memory = False, None, False
        self._epoch = 0
        self._node_attrs = self._remote_attributes(info)
        self._edge_attrs = {t: {} for t in self.graph.edge_types}
        self._graph_attrs: Dict[str, Any] = {}
        self._explicit_num_nodes: set = set()
        self._native = self._create_native(self.input_nodes) if self._takes_input_nodes else None

    def _create_native(self, inputs: np.ndarray) -> Any:
        """The native typed pipeline: worker topology, the typed loader over a
        ``DistHeteroSource`` (which samples across the servers and gathers ``x`` / ``y``);
        server-client, a ``ServerClientLoader`` whose server runs that loader."""
        if self.topology == "worker":
            return super()._create_native(inputs)
        from ._dist_service import _native

        self._tables = {}
        self._options.sampler = self._sampling  # (the server's loader samples with it)
        return _native().ServerClientLoader(
            self.server, inputs, self._options, input_type=self.input_type,
            typed_feature_dtype=self._feature_dtype, **self._connection)

    def _typed_source(self) -> Any:
        from ._dist_service import _native

        return _native().DistHeteroSource(self.client, self._sampling,
                                          feature_dtype=self._feature_dtype)

    def _connect_worker(self, addresses: Any, local: Any) -> Dict[str, Any]:
        """The worker topology's native typed client (``self.client``: every server, the local
        part in-process; ``local=None``: every part by RPC) and what the service describes."""
        from ._dist_service import _native, connect_client

        if not addresses:
            raise VolleyValueError("addresses must list every partition's server in part order")
        self.client, _ = connect_client(_native().DistHeteroGraph, addresses, local,
                                        self._connection)
        return self.client.info

    @staticmethod
    def _remote_attributes(info: Dict[str, Any]) -> Dict[str, Dict[str, Any]]:
        """Per node type: ``x`` (features) and ``y`` (labels) where the servers have them, the
        batch's own fields (gathered by the source in the worker topology, streamed with each
        batch in server-client)."""
        return {t["name"]: {key: None for key, present in (
                    ("x", t["feature_dim"] > 0), ("y", t["label_dtype"] is not None)) if present}
                for t in info["node_types"]}

    def __repr__(self) -> str:
        return "NeighborLoader()"

    def describe(self) -> str:
        return (f"DistHeteroNeighborLoader(topology='{self.topology}', "
                f"servers={len(self.addresses)}, input_type='{self.input_type}', "
                f"input_nodes={len(self.input_nodes)}, batch_size={self.batch_size}"
                + (f", rank={self.rank}/{self.world_size}" if self.world_size > 1 else "")
                + (f", time_attr={self.time_attr!r}" if self.time_attr else "") + ")")


TYPED_LOADERS["dist-node"] = DistHeteroNeighborLoader  # DistNeighborLoader's typed subclass

__all__ = ["DistHeteroNeighborLoader", "is_hetero_input"]
