"""Link prediction over heterogeneous partitions: ``volley.dist.DistLinkNeighborLoader(addresses,
..., edge_label_index=(edge_type, index))`` lands here.

The batches equal ``volley.loader.LinkNeighborLoader(hetero_data, ...)``'s over the whole
renumbered graph (new ids per node type) with the same arguments, bit for bit: the batch
(supervision edges, negatives drawn from a Philox stream of (seed, batch index), the end points
as seeds, the labels and the triplet indices) is the local heterogeneous link loader's
(``HeteroLinkNeighborLoader._make_batch``), and the sampling and the rows are the distributed
heterogeneous node loader's (``_dist_hetero``: typed ``SampleHop`` calls to the owners, features
and labels per node type by ``GetRows``, the trainer's own part in-process with ``local=``).
Negatives need no server: they are drawn uniformly (or by ``weight``) over a type's id range,
which the servers describe.

The batches are built by the local loader's C++ pipeline (``volley/loader/link_loader.h``) over
the service's typed source (``DistHeteroSource``), so ``disjoint``, ``exclude_edges`` /
``undirected`` and a ``rank`` / ``world_size`` split work as locally. Worker topology only and
untimed (the homogeneous link loader has no server-client mode either); negatives by degree or
rejecting existing edges need the whole graph on the trainer. The rest is refused by name.

Example:
    >>> servers = [volley.dist.serve("data/mag-2", p) for p in range(2)]
    >>> writes = ("author", "writes", "paper")
    >>> loader = volley.dist.DistLinkNeighborLoader(
    ...     [s.address for s in servers], [10, 5], edge_label_index=(writes, new_index),
    ...     neg_sampling="binary", batch_size=256, shuffle=True)
    >>> batch = next(iter(loader))       # a HeteroData, ids in the new numbering
    >>> batch[writes].edge_label_index   # local ids: authors, papers
"""

from __future__ import annotations

from typing import Any, List, Optional

import numpy as np

from ._dist_hetero import DistHeteroNeighborLoader
from ._volley import VolleyNotImplementedError, VolleyTypeError, VolleyValueError
from .hetero_link_loader import HeteroLinkNeighborLoader


def is_typed_edge_label_index(edge_label_index: Any) -> bool:
    """Whether ``edge_label_index`` names an edge type: ``(edge_type, index)`` with the edge
    type a ``(src, rel, dst)`` / ``(src, dst)`` tuple of names or ``"src__rel__dst"``, or an
    edge type alone."""
    def names_a_type(value: Any) -> bool:
        return isinstance(value, str) or (
            isinstance(value, tuple) and len(value) in (2, 3)
            and all(isinstance(part, str) for part in value))

    if names_a_type(edge_label_index):
        return True
    return (isinstance(edge_label_index, (tuple, list)) and len(edge_label_index) == 2
            and names_a_type(edge_label_index[0]))


# Options of the link loaders that need the whole graph on the trainer (its degrees and edges),
# and their defaults.
_HOMOGENEOUS_ONLY = dict(neg_distribution="uniform", reject_existing=False, copy=False)


class DistHeteroLinkNeighborLoader(HeteroLinkNeighborLoader, DistHeteroNeighborLoader):
    """``DistLinkNeighborLoader`` over heterogeneous partitions (see the module docstring).

    Args:
        addresses: every partition's server, in part order (or a comma-separated string).
        num_neighbors: fanouts, a list for every edge type or ``{edge_type: [...]}`` (with
            ``default`` for the types it leaves out), as ``HeteroNeighborLoader``.
        edge_label_index: ``(edge_type, index)``: the supervision edges [2, M] of ``edge_type``
            in new ids (row 0 of the source type, row 1 of the destination type); the edge
            type may have no message-passing edges. ``index`` is required (the local loader's
            ``None``, every edge of the type, would need the whole edge list on the trainer).
        edge_label, neg_sampling, neg_sampling_ratio: as ``HeteroLinkNeighborLoader``
            (``"binary"`` / ``"triplet"``, ``amount``, ``weight`` or ``src_weight`` /
            ``dst_weight`` over the end types' new ids).
        local: the partition this trainer holds, ``(directory, part)`` or this process's
            ``Server`` (``addresses[part]`` may then be ``""``).
        token, deadline, connect_timeout, tls_ca, tls_cert, tls_key: as ``DistGraph``.
        The other arguments (``batch_size``, ``shuffle``, ``num_workers``, ``seed``,
        ``replace``, ``weighted``, ``drop_last``, ``prefetch``, ``transform``,
        ``feature_dtype``, ``default``) are ``DistNeighborLoader``'s.

    Each batch is the local heterogeneous link loader's ``HeteroData``: per node type ``n_id``
    (the distinct end points of each type first, sorted), ``x`` / ``y`` where served,
    ``num_sampled_nodes``; per edge type ``edge_index``, ``e_id``, ``num_sampled_edges``; on the
    supervision edge type ``input_id`` and (no negatives or binary) ``edge_label_index`` and
    ``edge_label``; triplet: ``src_index`` on the source type, ``dst_pos_index`` /
    ``dst_neg_index`` on the destination type.

    Raises:
        VolleyValueError / VolleyIndexError: an unknown or ambiguous edge type, an unknown end
            type, an id outside its type's range (naming the type, row, id and position), no
            index, labels of the wrong length or with triplet negatives, bad weights; the
            servers' errors as ``DistNeighborLoader``.
        VolleyNotImplementedError: temporal batches (``time_attr`` / ``edge_label_time``),
            ``topology="server-client"``, a ``subgraph_type`` other than ``"directional"``,
            and the options that need the whole graph (``neg_distribution="degree"``,
            ``reject_existing``, ``copy``).
    """

    def __init__(self, addresses: Any, num_neighbors: Any, edge_label_index: Any = None,
                 edge_label: Any = None, *, neg_sampling: Any = None,
                 neg_sampling_ratio: Optional[float] = None, batch_size: int = 1,
                 shuffle: bool = False, num_workers: Optional[int] = None,
                 seed: Optional[int] = None, topology: Optional[str] = None, local: Any = None,
                 token: Optional[str] = None, deadline: float = 30.0,
                 connect_timeout: float = 30.0, replace: bool = False, weighted: bool = False,
                 drop_last: bool = False, prefetch: Optional[int] = None, transform: Any = None,
                 feature_dtype: Optional[str] = None, default: Optional[List[int]] = None,
                 rank: Optional[int] = None, world_size: Optional[int] = None,
                 tls_ca: Any = None, tls_cert: Any = None, tls_key: Any = None,
                 time_attr: Optional[str] = None, edge_label_time: Any = None,
                 disjoint: bool = False, subgraph_type: Any = "directional",
                 **homogeneous_only: Any):
        _refuse(topology, time_attr, edge_label_time, subgraph_type, homogeneous_only)
        # HeteroLinkNeighborLoader checks the link inputs and draws the negatives; its
        # super().__init__ is DistHeteroNeighborLoader's (the MRO), which connects.
        HeteroLinkNeighborLoader.__init__(
            self, addresses, num_neighbors, edge_label_index, edge_label, replace=replace,
            neg_sampling=neg_sampling, neg_sampling_ratio=neg_sampling_ratio,
            transform=transform, batch_size=batch_size, shuffle=shuffle,
            num_workers=num_workers, seed=seed, topology="worker", local=local, token=token,
            deadline=deadline, connect_timeout=connect_timeout, weighted=weighted,
            drop_last=drop_last, prefetch=prefetch, feature_dtype=feature_dtype,
            default=default, rank=rank, world_size=world_size, tls_ca=tls_ca, tls_cert=tls_cert,
            tls_key=tls_key, disjoint=disjoint,
            exclude_edges=bool(homogeneous_only.pop("exclude_edges", False)),
            undirected=bool(homogeneous_only.pop("undirected", False)))

    def _label_index(self, index: Any) -> np.ndarray:
        if index is None:
            raise VolleyValueError(
                f"edge_label_index=({self.edge_type}, None): over heterogeneous partitions the "
                "supervision edges must be given ([2, M] in new ids)")
        return super()._label_index(index)

    def describe(self) -> str:
        """The loader's options in one line."""
        return (f"DistHeteroLinkNeighborLoader(topology='worker', servers={len(self.addresses)}, "
                f"edge_type={self.edge_type}, edges={self.edge_label_index.shape[1]}, "
                f"batch_size={self.batch_size}, neg_sampling={self.neg_sampling[:2]})")


def _refuse(topology: Optional[str], time_attr: Any, edge_label_time: Any, subgraph_type: Any,
            homogeneous_only: dict) -> None:
    """``VolleyNotImplementedError`` naming what heterogeneous link prediction over the service
    does not do; ``VolleyTypeError`` for an argument no distributed link loader takes."""
    unknown = sorted(set(homogeneous_only) - set(_HOMOGENEOUS_ONLY) - {
        "neg_degree_power", "max_draws", "exclude_edges", "undirected"})
    if unknown:
        raise VolleyTypeError(
            f"DistLinkNeighborLoader got an unexpected keyword argument '{unknown[0]}'")
    name = getattr(subgraph_type, "value", subgraph_type)
    refused = {
        f"topology={topology!r}": topology not in (None, "worker"),
        "temporal link sampling (time_attr / edge_label_time)": time_attr is not None
        or edge_label_time is not None,
        f"subgraph_type={name!r}": name != "directional",
    }
    refused.update({f"{key}={value!r}": value != _HOMOGENEOUS_ONLY[key]
                    for key, value in homogeneous_only.items() if key in _HOMOGENEOUS_ONLY})
    for what, asked in refused.items():
        if asked:
            raise VolleyNotImplementedError(
                f"{what} is not supported for link prediction over heterogeneous partitions yet")


__all__ = ["DistHeteroLinkNeighborLoader", "is_typed_edge_label_index"]
