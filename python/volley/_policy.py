"""What every loader checks and decides the same way, whatever kind of graph it serves.

The numbers a user passes (fanouts, ``batch_size``, ``num_workers``, ``prefetch``, ``seed``,
``rank`` / ``world_size``, the link loaders' negative options) are checked here once, for ``Data`` and ``HeteroData`` and for the
distributed loaders alike, so the same bad value gives the same error class and message. The
epoch policy itself (the epoch order, the split over data-parallel ranks, the sampler seed of
each epoch) is C++'s ``loader_internal`` (``src/volley/loader/neighbor_loader.h``), reached
through the ``LoaderOptions`` built here.
"""

from __future__ import annotations

from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np

from . import _tensor, _volley

_FANOUT_MAX = 2**31 - 1


def input_positions(value: Any, count: int, what: str) -> np.ndarray:
    """``value`` as int64 positions in the input list of ``count`` entries (VolleyIndexError
    naming the first one outside it)."""
    positions = _tensor.as_ids(value, what)
    bad = np.flatnonzero((positions < 0) | (positions >= count))
    if bad.size:
        raise _volley.VolleyIndexError(
            f"{what}[{bad[0]}] = {positions[bad[0]]} is not an input position (there are "
            f"{count} input nodes)")
    return positions


def check_fanout_list(values: Any, what: str = "num_neighbors") -> List[int]:
    """A list of hop fanouts: each an integer (not a bool, float or string) >= -1."""
    if isinstance(values, (str, bytes)) or not isinstance(values, Sequence):
        raise _volley.VolleyTypeError(
            f"{what} must be a list of integers (one fanout per hop), got "
            f"{type(values).__name__} {str(values)[:60]}")
    return [_tensor.check_int(k, f"{what}[{i}]", -1, _FANOUT_MAX) for i, k in enumerate(values)]


def set_num_threads(num_threads: Any) -> None:
    """Sets the number of threads (>= 1, the caller included) of Volley's thread pool.

    Raises:
        VolleyTypeError: not an integer. VolleyValueError: below 1 or past 2**31 - 1.
    """
    _volley.set_num_threads(_tensor.check_int(num_threads, "num_threads", 1, 2**31 - 1))


def check_epoch(epoch: Any) -> int:
    """An epoch number (``set_epoch``, ``rank_positions``): an integer >= 0."""
    return _tensor.check_int(epoch, "epoch", 0, 2**63 - 1)


def check_fanouts(num_neighbors: Any, default: Optional[Sequence[int]] = None,
                  typed: bool = False) -> Tuple[List[int], list]:
    """``(fanouts, [(edge_type, fanouts), ...])`` from a list, or (``typed``) a dict keyed by edge
    type, as the native samplers take them. A dict must name at least one edge type unless
    ``default`` gives the fanouts of every type (PyG refuses ``{}``)."""
    if not isinstance(num_neighbors, dict):
        return check_fanout_list(num_neighbors), []
    if not typed:
        raise _volley.VolleyTypeError(
            "num_neighbors: a dict of fanouts per edge type needs a heterogeneous graph; pass a "
            "list (one fanout per hop)")
    if not num_neighbors and default is None:
        raise _volley.VolleyValueError(
            "num_neighbors={} names no edge type: give fanouts per edge type, a list for every "
            "edge type, or default=")
    from .hetero import edge_type_of

    fanouts = [] if default is None else check_fanout_list(default, "default")
    by_type = [(edge_type_of(key), check_fanout_list(value, f"num_neighbors[{key!r}]"))
               for key, value in num_neighbors.items()]
    return fanouts, by_type


def loader_options(sampler: Any, *, num_inputs: int, batch_size: Any, shuffle: Any,
                   drop_last: Any, num_workers: Any, prefetch: Any, seed: Any, rank: Any,
                   world_size: Any, feature_dtype: str = "float32",
                   on_batch_start: Optional[Callable[[int], None]] = None) -> Any:
    """The native ``LoaderOptions`` of a loader over ``num_inputs`` seeds (checked now, by C++'s
    ``check_loader_options``). ``sampler``: its ``NeighborSamplerOptions`` (a heterogeneous loader
    passes None: its sampler carries its own options). ``num_workers`` 0: every core. ``seed``
    None: torch's initial seed; ``rank`` / ``world_size`` None: torch.distributed's."""
    import os

    workers = _tensor.check_int(num_workers, "num_workers", 0, 65536)
    rank, world_size = _tensor.rank_and_world_size(rank, world_size)
    options = _volley.LoaderOptions(
        sampler if sampler is not None else _volley.NeighborSamplerOptions([1]),
        batch_size=_tensor.check_int(batch_size, "batch_size", 1, 2**31 - 1),
        shuffle=bool(shuffle),
        drop_last=bool(drop_last),
        num_threads=workers if workers else (os.cpu_count() or 1),
        prefetch=_tensor.check_int(prefetch or 0, "prefetch", 0, 65536),
        seed=(_tensor.check_int(seed, "seed", 0, 2**64 - 1) if seed is not None
              else _tensor.default_seed()),
        rank=rank,
        world_size=world_size,
        feature_dtype=feature_dtype,
        on_batch_start=on_batch_start,
    )
    _volley.num_batches(int(num_inputs), options)  # the policy's checks, now
    return options


def negative_options(distribution: Any, degree_power: Any, max_draws: Any) -> Tuple[str, float, int]:
    """``(neg_distribution, neg_degree_power, max_draws)`` of a link loader, checked the same way
    for ``Data``, ``HeteroData`` and the distributed loaders: the distribution one of "uniform" /
    "degree", the power a finite real number, ``max_draws`` an integer >= 1."""
    distribution = _tensor.check_choice(distribution, "neg_distribution", ("uniform", "degree"))
    return (distribution, _tensor.check_real(degree_power, "neg_degree_power"),
            _tensor.check_int(max_draws, "max_draws", 1, 2**31 - 1))


def input_nodes(value: Any, num_nodes: int) -> Optional[np.ndarray]:
    """A homogeneous loader's ``input_nodes``: None (every node), integer ids or a bool mask of
    length ``num_nodes`` as int64 ids; an empty selection stays empty (no batches)."""
    if value is None:
        return None
    if isinstance(value, tuple):
        raise _volley.VolleyValueError(
            f"input_nodes=({value[0]!r}, ...) names a node type: that needs a HeteroData or "
            "volley.HeteroDataset, not a homogeneous graph")
    return _tensor.as_ids(value, "input_nodes", mask_length=num_nodes)


def typed_input_nodes(value: Any, counts: Dict[str, int]) -> Tuple[str, np.ndarray, bool]:
    """A typed loader's ``input_nodes`` (``counts``: nodes per type): ``(node_type, ids, by_id)``
    from a type name, or a ``(type, ids | mask | None)`` pair; ``by_id``: the batches'
    ``input_id`` are node ids (a mask or every node, as in PyG), not positions in the ids."""
    if isinstance(value, str):
        value = (value, None)
    if not (isinstance(value, tuple) and len(value) == 2 and isinstance(value[0], str)):
        raise _volley.VolleyValueError(
            "a heterogeneous NeighborLoader needs input_nodes=(node_type, ids or mask or None) or "
            f"a node type name, got {_tensor._describe(value)}")
    node_type, ids = value
    if node_type not in counts:
        raise _volley.VolleyValueError(
            f"input_nodes: unknown node type '{node_type}' (node types: {', '.join(counts)})")
    count = counts[node_type]
    if ids is None:
        return node_type, np.arange(count, dtype=np.int64), True
    is_mask = _tensor.to_numpy(ids).dtype == np.bool_ if hasattr(ids, "__len__") else False
    ids = _tensor.as_ids(ids, f"input_nodes of node type '{node_type}'", mask_length=count)
    bad = np.flatnonzero((ids < 0) | (ids >= count))
    if bad.size:
        raise _volley.VolleyIndexError(
            f"input_nodes of node type '{node_type}': id {int(ids[bad[0]])} at position "
            f"{int(bad[0])} is outside [0, {count})")
    return node_type, ids, is_mask


def is_hetero_input(input_nodes: Any) -> bool:
    """Whether ``input_nodes`` names a node type (``"paper"`` or ``("paper", ids)``)."""
    return isinstance(input_nodes, str) or (
        isinstance(input_nodes, tuple) and len(input_nodes) == 2 and isinstance(input_nodes[0], str))


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
