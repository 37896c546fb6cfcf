"""Temporal sampling of heterogeneous graphs: PyG's ``time_attr`` / ``input_time`` over a
``HeteroData``.

``time_attr`` names a node-level attribute (``data[node_type][time_attr]``, one time per node of
the types that have it) or an edge-level one (``data[edge_type][time_attr]``, one per edge), as
PyG reads it with ``data.collect(time_attr)``. Types without it are sampled without a time
constraint, as pyg-lib does. The rules are in src/volley/sampling/hetero_sampler.h.
"""

from __future__ import annotations

from typing import Any, Dict, Optional, Tuple

import numpy as np

from . import _tensor
from ._volley import VolleyValueError


def as_times(value: Any, what: str) -> np.ndarray:
    """``value`` as a contiguous 1-d int64 numpy array; VolleyValueError naming ``what`` for
    another shape or a non-integer dtype."""
    times = _tensor.to_numpy(value)
    if times.ndim != 1:
        raise VolleyValueError(f"{what} must be 1-d, got shape {list(times.shape)}")
    return _tensor.int64_times(times, what)


def collect(data: Any, time_attr: str) -> Tuple[str, Dict[Any, np.ndarray]]:
    """``("node", {node_type: times})`` or ``("edge", {edge_type: times})`` from a PyG
    ``HeteroData``: where ``time_attr`` is, checked (VolleyValueError: on neither node nor edge
    types, on both, not 1-d integers — naming the type)."""
    nodes = {t: data[t][time_attr] for t in data.node_types if time_attr in data[t]}
    edges = {t: data[t][time_attr] for t in data.edge_types if time_attr in data[t]}
    if nodes and edges:
        raise VolleyValueError(
            f"time_attr={time_attr!r} is both a node attribute (of {', '.join(nodes)}) and an "
            f"edge attribute (of {', '.join('__'.join(t) for t in edges)}): name one kind")
    if not nodes and not edges:
        raise VolleyValueError(
            f"time_attr={time_attr!r} is neither a node nor an edge attribute of any type")
    if nodes:
        return "node", {t: as_times(v, f"data['{t}'].{time_attr}") for t, v in nodes.items()}
    return "edge", {t: as_times(v, f"data[{t!r}].{time_attr}") for t, v in edges.items()}


def input_times(input_time: Any, source: str, input_type: str, count: int,
                node_times: Dict[Any, np.ndarray]) -> Optional[np.ndarray]:
    """The int64 time of each of the ``count`` input nodes of ``input_type``: ``input_time``
    checked, or None where the sampler defaults to the seeds' own node times. VolleyValueError
    when ``input_time`` comes without ``time_attr``, is missing (edge time, or an input type
    without node time), or has the wrong length or dtype."""
    if source == "none":
        if input_time is not None:
            raise VolleyValueError(
                "input_time was given without time_attr: name the node or edge time to sample by")
        return None
    if input_time is None:
        if source == "edge":
            raise VolleyValueError(
                "temporal sampling by edge time needs input_time (one time per input node of "
                f"type '{input_type}')")
        if input_type not in node_times:
            raise VolleyValueError(
                f"temporal sampling needs input_time: the input node type '{input_type}' has no "
                "node time to default to")
        return None
    times = as_times(input_time, "input_time")
    if times.shape[0] != count:
        raise VolleyValueError(
            f"input_time must have one entry per input node of type '{input_type}' ({count}), "
            f"got {times.shape[0]}")
    return times


__all__ = ["as_times", "collect", "input_times"]
