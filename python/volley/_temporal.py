"""Temporal sampling for the loaders of both graph kinds: PyG's ``time_attr`` / ``input_time`` /
``temporal_strategy``.

A neighbor is admissible when its time (the edge's, or the neighbor node's) is at or before the
time of the seed whose subgraph it joins; sampling is then disjoint, as PyG makes it. See
``src/volley/sampling/neighbor_sampler.h`` (and ``hetero_sampler.h``: types without times are
not constrained) for the rules.
"""

from __future__ import annotations

from typing import Any, Callable, Dict, Optional, Tuple

import numpy as np

from . import _tensor, _volley
from .graph import Graph

STRATEGIES = ("uniform", "last")


def check_strategy(temporal_strategy: Any) -> str:
    """``temporal_strategy`` if it is ``"uniform"`` or ``"last"``; VolleyValueError otherwise."""
    if temporal_strategy not in STRATEGIES:
        raise _volley.VolleyValueError(
            f"temporal_strategy must be 'uniform' or 'last', got {temporal_strategy!r}"
        )
    return temporal_strategy


def _time_kind(time_attr: str, has: dict, holder: str) -> str:
    """``"node"`` or ``"edge"``: what ``time_attr`` names in a `holder` with the times `has` says
    (``"time"``: node time when present, else edge time); VolleyValueError for another name."""
    wanted = {"node_time": "node", "edge_time": "edge"}.get(time_attr)
    if time_attr == "time":
        wanted = "node" if has["node"] else "edge"
    if wanted is None:
        raise _volley.VolleyValueError(
            f"time_attr={time_attr!r}: {holder} has 'node_time', 'edge_time' or 'time' "
            "(node time when present, else edge time)"
        )
    return wanted


def _dataset_times(graph: Graph, time_attr: str) -> str:
    """The time source a ``volley.Dataset`` names with ``time_attr``."""
    has = {"node": graph.node_time is not None, "edge": graph.edge_time is not None}
    wanted = _time_kind(time_attr, has, "a volley.Dataset")
    if not has[wanted]:
        raise _volley.VolleyValueError(
            f"time_attr={time_attr!r} needs the dataset's {wanted}_time (node_time.npy / "
            f"edge_time.npy), but it has none"
        )
    return wanted


def _data_times(graph: Graph, data: Any, time_attr: str) -> Tuple[Graph, str]:
    """``graph`` with ``data[time_attr]`` attached: node time when it has one entry per node,
    else edge time when it has one per edge of ``edge_index`` (PyG's order of checks)."""
    value = getattr(data, time_attr, None)
    if value is None:
        raise _volley.VolleyValueError(
            f"time_attr={time_attr!r}: data has no attribute {time_attr!r}"
        )
    times = _tensor.to_numpy(value)
    num_edges = _tensor.shape_of(data.edge_index)[1]
    if times.ndim != 1 or times.shape[0] not in (graph.num_nodes, num_edges):
        raise _volley.VolleyValueError(
            f"data.{time_attr} must have one entry per node ({graph.num_nodes}) or per edge "
            f"({num_edges}), got shape {list(times.shape)}"
        )
    times = _tensor.int64_times(times, f"data.{time_attr}")
    if times.shape[0] == graph.num_nodes:
        return graph.with_times(node_time=times), "node"
    ids = _tensor.to_numpy(graph.edge_ids) if graph.edge_ids is not None else None
    return graph.with_times(edge_time=times if ids is None else times[ids]), "edge"


def attach(graph: Graph, data: Any, time_attr: Optional[str], is_dataset: bool) -> Tuple[Graph, str]:
    """The graph to sample (with times attached and rows sorted by them, as PyG sorts its CSC
    for temporal sampling) and the time source (``"none"``, ``"node"`` or ``"edge"``)."""
    if time_attr is None:
        return graph, "none"
    if is_dataset:
        kind = _dataset_times(graph, time_attr)
    else:
        graph, kind = _data_times(graph, data, time_attr)
    if not graph.is_sorted_by_time(kind):
        graph = graph.sort_by_time(kind)
    return graph, kind


def as_times(value: Any, what: str) -> np.ndarray:
    """``value`` as a contiguous 1-d int64 numpy array; VolleyValueError naming ``what`` for
    another shape or a non-integer dtype."""
    times = _tensor.to_numpy(value)
    if times.ndim != 1:
        raise _volley.VolleyValueError(f"{what} must be 1-d, got shape {list(times.shape)}")
    return _tensor.int64_times(times, what)


def typed_times(data: Any, time_attr: str) -> Tuple[str, Dict[Any, np.ndarray]]:
    """``("node", {node_type: times})`` or ``("edge", {edge_type: times})``: where ``time_attr``
    is in a PyG ``HeteroData`` (as PyG's ``data.collect(time_attr)`` finds it; types without it
    are sampled without a time constraint, as pyg-lib does), checked. VolleyValueError: on
    neither node nor edge types, on both, not 1-d integers (naming the type)."""
    nodes = {t: data[t][time_attr] for t in data.node_types if time_attr in data[t]}
    edges = {t: data[t][time_attr] for t in data.edge_types if time_attr in data[t]}
    if nodes and edges:
        raise _volley.VolleyValueError(
            f"time_attr={time_attr!r} is both a node attribute (of {', '.join(nodes)}) and an "
            f"edge attribute (of {', '.join('__'.join(t) for t in edges)}): name one kind")
    if not nodes and not edges:
        raise _volley.VolleyValueError(
            f"time_attr={time_attr!r}: data has no attribute {time_attr!r} (on any node or edge "
            "type)")
    if nodes:
        return "node", {t: as_times(v, f"data['{t}'].{time_attr}") for t, v in nodes.items()}
    return "edge", {t: as_times(v, f"data[{t!r}].{time_attr}") for t, v in edges.items()}


def input_times(input_time: Any, time_source: str, count: int,
                own_times: Optional[Callable[[], Optional[np.ndarray]]], what: str = "input_time",
                of: str = "") -> Optional[np.ndarray]:
    """The int64 time of each of the ``count`` input nodes (``of``: their type, as
    `` of type 'paper'``, for a typed graph): ``input_time`` checked, or, by node time without
    it (as pyg-lib does), ``own_times()``: the seeds' own node times (None: the sampler reads them
    itself); ``own_times`` None: the input nodes have no node time. VolleyValueError when
    ``input_time`` comes without ``time_attr``, is missing (edge time, or no node time to default
    to), or has the wrong length or dtype."""
    if time_source == "none":
        if input_time is not None:
            raise _volley.VolleyValueError(
                "input_time was given without time_attr: name the node or edge time to sample by"
            )
        return None
    if input_time is None:
        if time_source == "edge":
            raise _volley.VolleyValueError(
                f"temporal sampling by edge time needs input_time (one time per input node{of})")
        if own_times is None:
            raise _volley.VolleyValueError(
                f"temporal sampling needs input_time: the input nodes{of} have no node time to "
                "default to")
        return own_times()
    times = _tensor.to_numpy(input_time)
    if times.ndim != 1 or times.shape[0] != count:
        raise _volley.VolleyValueError(
            f"{what} must have one entry per input node{of} ({count}), got shape "
            f"{list(times.shape)}")
    return _tensor.int64_times(times, what)


def graph_input_times(input_time: Any, time_source: str, graph: Graph,
                      input_nodes: Optional[np.ndarray], what: str = "input_time"
                      ) -> Optional[np.ndarray]:
    """``input_times`` of the input nodes of a homogeneous ``graph`` (None: every node), whose
    own times are ``graph.node_time``."""
    def own() -> np.ndarray:
        node_time = _tensor.to_numpy(graph.node_time)
        return node_time.copy() if input_nodes is None else node_time[input_nodes]
    count = graph.num_nodes if input_nodes is None else len(input_nodes)
    return input_times(input_time, time_source, count, own, what)


def call_times(loader: Any, seeds: np.ndarray) -> np.ndarray:
    """Seed times for ``loader(index)`` under temporal sampling: each seed's own node time (no
    ``input_time`` comes with an index); VolleyValueError with edge time."""
    if loader._options.sampler.time_source == "edge":
        raise _volley.VolleyValueError(
            "loader(index) cannot sample by edge time: it has no input_time for the seeds; "
            "iterate the loader (input_time given at construction)"
        )
    return np.ascontiguousarray(_tensor.to_numpy(loader.graph.node_time)[seeds], dtype=np.int64)


def service_time_source(info: Dict[str, Any], time_attr: Optional[str], input_time: Any,
                 temporal_strategy: str, has_node_times: Optional[bool]) -> str:
    """``"none"``, ``"node"`` or ``"edge"``: what ``time_attr`` names in the partitioned dataset
    (``info``: the service's), checked; VolleyValueError naming what is missing.
    ``has_node_times``: the trainer reads the node times (the default ``input_time``); None: the
    caller checks ``input_time`` itself."""
    check_strategy(temporal_strategy)
    if time_attr is None:
        if input_time is not None:
            raise _volley.VolleyValueError(
                "input_time was given without time_attr: name the node or edge time to sample by"
            )
        return "none"
    has = {"node": bool(info.get("has_node_time")), "edge": bool(info.get("has_edge_time"))}
    wanted = _time_kind(time_attr, has, "a partitioned dataset")
    if not has[wanted]:
        hint = info.get("time_hint") or f"partition a dataset with {wanted}_time.npy"
        raise _volley.VolleyValueError(
            f"time_attr={time_attr!r} needs {wanted} times, but the partitioned dataset "
            f"{info.get('dataset_name', '')!r} has none ({hint})"
        )
    if has_node_times is not None and input_time is None and not (
            wanted == "node" and has_node_times):
        raise _volley.VolleyValueError(
            "temporal sampling across partitions needs input_time (one int64 time per input "
            "node); with node time, topology='worker' and local=(directory, part), the seeds' "
            "own times are the default"
        )
    return wanted
