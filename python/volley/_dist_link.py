"""``volley.dist.DistLinkNeighborLoader``: the link-prediction loader over served partitions."""

from __future__ import annotations

import os
from typing import Any, List, Optional, Sequence, Union

import numpy as np

from . import _policy, _pyg_compat, _volley
from ._dist_service import DistGraph, Local, _native, part_addresses
from ._volley import VolleyNotImplementedError, VolleyValueError
from .link_loader import LinkNeighborLoader
from .loader import TYPED_LOADERS


class DistLinkNeighborLoader(LinkNeighborLoader):
    """``volley.loader.LinkNeighborLoader`` over partitions served by ``volley serve``.

    Worker topology: this process samples across the servers (its own partition in-process,
    when it holds one). Negatives are drawn here; with ``reject_existing`` each negative pair is
    checked by the server that owns its CSR row (``HasEdges`` calls, split by owner and under
    each server's limits), and ``neg_distribution="degree"`` uses the degrees fetched once from
    the servers. Batches equal ``LinkNeighborLoader``'s over the whole renumbered graph with the
    same arguments (ids in the new numbering). The arguments not listed below (``edge_label``,
    ``neg_sampling``, ``neg_sampling_ratio``, ``batch_size``, ``shuffle``, ``seed``, ``replace``,
    ``weighted``, ``drop_last``, ``prefetch``, ``copy``, ``transform``, ``feature_dtype``,
    ``rank``, ``world_size``, ``exclude_edges``, ``undirected``, ``neg_distribution``,
    ``neg_degree_power``, ``reject_existing``, ``max_draws``) are ``LinkNeighborLoader``'s.

    Args:
        addresses: every partition's server, in part order (or a comma-separated string), or a
            connected ``DistGraph``.
        num_neighbors: fanout per hop, as ``LinkNeighborLoader``.
        edge_label_index: supervision edges [2, M] in new ids (required).
        num_workers: batches in flight at once (network waits cost no CPU); default
            max(4, cores).
        local: the partition this trainer holds, ``(directory, part)`` or this process's
            ``Server``; None samples every partition over RPC.
        token, deadline, connect_timeout, tls_ca, tls_cert, tls_key: as ``DistGraph``.
        disjoint: every supervision edge's end points grow subgraphs of their own (``batch``),
            as ``LinkNeighborLoader``.
        feature_dtype: dtype of ``x``; None: ``float32`` (heterogeneous partitions: as stored).
        topology, subgraph_type, time_attr, edge_label_time: only ``"worker"``, the directional
            subgraph and untimed sampling are served (the others are refused by name, for both
            graph kinds); ``default``: heterogeneous partitions, as ``LinkNeighborLoader``.

    Heterogeneous partitions: ``edge_label_index=(edge_type, index)`` returns a
    ``_dist_hetero_link.DistHeteroLinkNeighborLoader`` (a subclass with the same signature)
    whose batches are the local
    heterogeneous ``LinkNeighborLoader``'s ``HeteroData`` over the renumbered graph (binary and
    triplet negatives, ``disjoint``, ``exclude_edges`` / ``undirected``, the rank split; worker
    topology, untimed).

    Raises:
        VolleyValueError: no ``edge_label_index``, no addresses, and what
            ``LinkNeighborLoader`` refuses. The network errors of ``DistGraph``.
        VolleyNotImplementedError: another topology than ``"worker"``, induced or
            bidirectional subgraphs, temporal link sampling (one message for both graph kinds).
        VolleyRuntimeError: a build without gRPC.
    """

    def __new__(cls, *args: Any, **kwargs: Any) -> Any:
        """``edge_label_index=(edge_type, index)``: heterogeneous partitions
        (``_dist_hetero_link.DistHeteroLinkNeighborLoader``)."""
        edge_label_index = kwargs.get("edge_label_index", args[2] if len(args) > 2 else None)
        if cls is DistLinkNeighborLoader and _policy.is_typed_edge_label_index(edge_label_index):
            cls = TYPED_LOADERS["dist-link"]  # (_dist_hetero_link.py; the same __init__)
        return object.__new__(cls)

    def __init__(
        self,
        addresses: Union[DistGraph, Sequence[str], str],
        num_neighbors: Sequence[int],
        edge_label_index: Any = None,
        edge_label: Any = None,
        *,
        neg_sampling: Any = None,
        neg_sampling_ratio: Optional[float] = None,
        batch_size: int = 1,
        shuffle: bool = False,
        num_workers: Optional[int] = None,
        seed: Optional[int] = None,
        local: Local = None,
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
        exclude_edges: bool = False,
        undirected: bool = False,
        neg_distribution: str = "uniform",
        neg_degree_power: float = 0.75,
        reject_existing: bool = False,
        max_draws: int = 16,
        tls_ca: Optional[str] = None,
        tls_cert: Optional[str] = None,
        tls_key: Optional[str] = None,
        topology: Optional[str] = None,
        disjoint: bool = False,
        subgraph_type: Any = "directional",
        time_attr: Optional[str] = None,
        edge_label_time: Any = None,
        default: Optional[List[int]] = None,
    ):
        if self._typed:  # heterogeneous partitions: the same signature, the typed body
            self._init_typed_link(**{k: v for k, v in locals().items()
                                     if k not in ("self", "__class__")})
            return
        _native()  # VolleyRuntimeError without gRPC
        if default is not None:  # one fanout list: refused as any argument PyG does not take
            _pyg_compat.check_loader_kwargs({"default": default})
        _refuse_unserved(topology, subgraph_type, time_attr, edge_label_time)
        if isinstance(addresses, DistGraph):
            if local is not None:
                raise VolleyValueError("pass local= to volley.dist.connect, not with a DistGraph")
            graph = addresses
        else:
            addresses = part_addresses(addresses)
            if not addresses:
                raise VolleyValueError("addresses must list every partition's server")
            graph = DistGraph(addresses, token=token, deadline=deadline,
                              connect_timeout=connect_timeout, local=local, tls_ca=tls_ca,
                              tls_cert=tls_cert, tls_key=tls_key)
        self.topology = "worker"
        self.data, self.graph = None, graph
        self.subgraph_type, self.disjoint = "directional", bool(disjoint)
        self.filter_per_worker, self.is_sorted = None, False
        self.transform_sampler_output = None
        self.pin_memory = False
        self.device, self.mode = None, "CPU"
        self._link_inputs(None, edge_label_index, edge_label, neg_sampling, neg_sampling_ratio)
        distribution, power, draws = _policy.negative_options(neg_distribution, neg_degree_power,
                                                              max_draws)
        self._link_options = dict(
            distribution="weights" if self._weights is not None else distribution,
            degree_power=power,
            weights=self._weights,
            reject_existing=bool(reject_existing),
            max_draws=draws,
            exclude_edges=bool(exclude_edges),
            undirected=bool(undirected),
        )
        self._setup(
            graph.num_nodes,
            num_neighbors,
            batch_size=batch_size,
            input_nodes=None,
            shuffle=shuffle,
            num_workers=num_workers if num_workers else max(4, os.cpu_count() or 1),
            seed=seed,
            drop_last=drop_last,
            copy=copy,
            transform=transform,
            rank=rank,
            world_size=world_size,
            prefetch=prefetch,
            replace=replace,
            weighted=weighted,
            feature_dtype=feature_dtype or "float32",
            disjoint=self.disjoint,
        )

    def _create_native(self, input_nodes: Optional[np.ndarray]) -> Any:
        mode = self.neg_sampling[0] if self.neg_sampling else "none"
        amount = self.neg_sampling[1] if self.neg_sampling else 1.0
        return _volley.link_loader_over_source(
            self.graph._native,
            self.edge_label_index,
            self.edge_label,
            self._options,
            mode=mode,
            amount=amount,
            **self._link_options,
        )

    def __repr__(self) -> str:
        return (
            f"DistLinkNeighborLoader(graph={self.graph!r}, num_neighbors={self.num_neighbors}, "
            f"batch_size={self.batch_size}, edges={self.edge_label_index.shape[1]}, "
            f"batches={len(self)}, neg_sampling={self.neg_sampling}, shuffle={self.shuffle})"
        )


def _refuse_unserved(topology: Optional[str], subgraph_type: Any, time_attr: Any,
                     edge_label_time: Any) -> None:
    """``VolleyNotImplementedError`` naming what link prediction over the service does not do
    (for both graph kinds): another topology than the worker's, induced or bidirectional
    subgraphs, temporal link sampling."""
    name = getattr(subgraph_type, "value", subgraph_type)
    refused = {
        f"topology={topology!r}": topology not in (None, "worker"),
        f"subgraph_type={name!r}": name != "directional",
        "temporal link sampling (time_attr / edge_label_time)":
            time_attr is not None or edge_label_time is not None,
    }
    for what, asked in refused.items():
        if asked:
            raise VolleyNotImplementedError(
                f"{what} is not supported for link prediction over the service yet")
