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
untimed, as the homogeneous distributed link loader (the same signature and refusals); negatives
by degree or rejecting existing edges need the whole graph on the trainer. The rest is refused
by name.

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

import inspect
from typing import Any, Dict, Optional

import numpy as np

from ._dist_hetero import DistHeteroNeighborLoader
from .dist import DistNeighborLoader
from ._dist_link import DistLinkNeighborLoader, _refuse_unserved
from ._policy import is_typed_edge_label_index
from ._volley import VolleyNotImplementedError, VolleyValueError
from .hetero_link_loader import HeteroLinkNeighborLoader
from .loader import TYPED_LOADERS


class DistHeteroLinkNeighborLoader(HeteroLinkNeighborLoader, DistHeteroNeighborLoader,
                                   DistLinkNeighborLoader):
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
        The other arguments are ``DistLinkNeighborLoader``'s (its ``__init__``: one signature
        for both graph kinds).

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

    # DistLinkNeighborLoader's __init__ (its signature, written once), which hands a typed
    # loader's arguments to _init_typed_link.
    __init__ = DistLinkNeighborLoader.__init__

    def _init_typed_link(self, *, addresses: Any, topology: Optional[str], subgraph_type: Any,
                         time_attr: Optional[str], edge_label_time: Any, neg_distribution: str,
                         reject_existing: bool, copy: bool, **args: Any) -> None:
        """``DistLinkNeighborLoader.__init__``'s body over heterogeneous partitions: the local
        typed link loader's body (``HeteroLinkNeighborLoader._init_typed_link``), whose node
        loader is the service's (``_init_nodes``)."""
        _refuse_unserved(topology, subgraph_type, time_attr, edge_label_time)
        refused = {
            f"neg_distribution={neg_distribution!r}": neg_distribution != "uniform",
            "reject_existing=True": bool(reject_existing),
            "copy=True": bool(copy),
        }
        for what, asked in refused.items():
            if asked:
                raise VolleyNotImplementedError(
                    f"{what} is not supported for link prediction over heterogeneous partitions "
                    "yet")
        HeteroLinkNeighborLoader._init_typed_link(
            self, data=addresses, edge_label_time=None, subgraph_type="directional",
            time_attr=None, temporal_strategy="uniform", weight_attr=None,
            transform_sampler_output=None, is_sorted=False, filter_per_worker=None,
            neighbor_sampler=None, directed=True, neg_distribution="uniform",
            reject_existing=False, kwargs={}, topology="worker", **args)

    def _init_nodes(self, addresses: Any, num_neighbors: Any, args: Dict[str, Any]) -> None:
        """The node loader's part: ``DistNeighborLoader.__init__`` (the typed body of
        ``DistHeteroNeighborLoader``) with the arguments it takes."""
        taken = inspect.signature(DistNeighborLoader.__init__).parameters
        DistNeighborLoader.__init__(self, addresses, num_neighbors, input_nodes=None,
                                    **{k: v for k, v in args.items() if k in taken})

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


TYPED_LOADERS["dist-link"] = DistHeteroLinkNeighborLoader  # DistLinkNeighborLoader's typed subclass

__all__ = ["DistHeteroLinkNeighborLoader", "is_typed_edge_label_index"]
