"""PyG's generic loaders over a sampler object, run by Volley's C++ pipeline.

PyG splits a loader in two: a sampler (``torch_geometric.sampler.NeighborSampler``, holding the
sampling options) and a generic loader that runs it (``torch_geometric.loader.NodeLoader`` /
``LinkLoader``). Frameworks build loaders that way (PyG's Lightning data modules do). The same
three names here build Volley's loaders::

    sampler = volley.generic_loader.NeighborSampler(data, num_neighbors=[10, 5])
    loader = volley.loader.NodeLoader(data, node_sampler=sampler, input_nodes=data.train_mask,
                                      batch_size=128, shuffle=True)
    # the same as volley.loader.NeighborLoader(data, [10, 5], input_nodes=..., ...)

Volley's ``NeighborSampler`` is the description of the sampling, not a per-batch sampler: the
loader it is given to runs whole epochs in C++ (``NeighborLoader`` / ``LinkNeighborLoader``, for
``Data`` and ``HeteroData`` alike). PyG's own ``NeighborSampler`` is read the same way, except for
its temporal and weighted options, which it keeps only as tensors (pass Volley's, with
``time_attr`` / ``weight_attr``). Any other sampler is refused (use PyG's loaders for it).
"""

from __future__ import annotations

import inspect
from typing import Any, Callable, Dict, Optional

from ._volley import VolleyNotImplementedError, VolleyTypeError

__all__ = ["LinkLoader", "NeighborSampler", "NodeLoader", "sampler_options"]


def _base_sampler() -> type:
    """PyG's ``BaseSampler`` (so that ``isinstance(s, BaseSampler)`` holds), else ``object``."""
    try:
        from torch_geometric.sampler import BaseSampler
    except ImportError:
        return object
    return BaseSampler


def _num_neighbors(value: Any) -> Any:
    """PyG's ``NumNeighbors`` for a list, a dict per edge type or a ``NumNeighbors``."""
    try:
        from torch_geometric.sampler.base import NumNeighbors
    except ImportError:
        return value
    return value if isinstance(value, NumNeighbors) else NumNeighbors(value)


class NeighborSampler(_base_sampler()):  # type: ignore[misc]
    """The options of neighbor sampling, as ``torch_geometric.sampler.NeighborSampler`` takes them.

    Args:
        data: the graph (``Data``, ``HeteroData``, or a ``(FeatureStore, GraphStore)`` pair); kept
            by reference, not copied (Volley's loader converts it once, when it is built).
        num_neighbors: neighbors per hop (a list, or a dict per edge type). ``subgraph_type``,
            ``replace``, ``disjoint``, ``temporal_strategy``, ``time_attr``, ``weight_attr``,
            ``is_sorted`` and ``directed`` are PyG's too (``NeighborLoader``'s arguments).
        share_memory: accepted, no effect (Volley's graph is shared by its C++ threads; a
            pickled loader shares it by handle).
        sample_direction: ``"forward"`` only.

    Attributes keep PyG's names; ``num_neighbors`` reads as PyG's ``NumNeighbors`` and may be set
    (Lightning's ``eval_loader_kwargs`` sets it on a copy). ``sample_from_nodes`` /
    ``sample_from_edges`` (PyG's per-batch interface) raise VolleyNotImplementedError: give the
    sampler to ``NodeLoader`` / ``LinkLoader`` here.

    Raises:
        VolleyValueError: an unknown ``subgraph_type`` or ``temporal_strategy``.
        VolleyNotImplementedError: ``sample_direction='backward'``.
    """

    def __init__(self, data: Any, num_neighbors: Any, subgraph_type: Any = "directional",
                 replace: bool = False, disjoint: bool = False, temporal_strategy: str = "uniform",
                 time_attr: Optional[str] = None, weight_attr: Optional[str] = None,
                 is_sorted: bool = False, share_memory: bool = False, directed: bool = True,
                 sample_direction: str = "forward"):
        from . import _pyg_compat, _temporal

        if sample_direction != "forward":
            raise VolleyNotImplementedError(
                f"sample_direction={sample_direction!r}: Volley samples forward only")
        _temporal.check_strategy(temporal_strategy)
        self.data = data
        self.num_neighbors = num_neighbors
        self.subgraph_type = _pyg_compat.subgraph_type_name(subgraph_type, directed)
        self.replace, self.disjoint = bool(replace), bool(disjoint)
        self.temporal_strategy = temporal_strategy
        self.time_attr, self.weight_attr = time_attr, weight_attr
        self.is_sorted, self.share_memory = bool(is_sorted), bool(share_memory)
        self.sample_direction = sample_direction

    @property
    def num_neighbors(self) -> Any:
        """Neighbors per hop (a list, or a dict per edge type), as PyG's ``NumNeighbors``."""
        return self._num_neighbors

    @num_neighbors.setter
    def num_neighbors(self, value: Any) -> None:
        self._num_neighbors = _num_neighbors(value)

    @property
    def is_hetero(self) -> bool:
        """Whether the graph is typed (``HeteroData`` or a typed store pair)."""
        from . import _pyg_compat

        return _pyg_compat.is_typed_input(self.data)

    @property
    def is_temporal(self) -> bool:
        """Whether sampling follows time (``time_attr`` is set)."""
        return self.time_attr is not None

    def sample_from_nodes(self, *args: Any, **kwargs: Any) -> Any:
        raise VolleyNotImplementedError(
            "volley's NeighborSampler is run by volley.loader.NodeLoader (whole epochs in C++), "
            "not per batch; torch_geometric.loader.NodeLoader needs PyG's NeighborSampler")

    def sample_from_edges(self, *args: Any, **kwargs: Any) -> Any:
        raise VolleyNotImplementedError(
            "volley's NeighborSampler is run by volley.loader.LinkLoader (whole epochs in C++), "
            "not per batch; torch_geometric.loader.LinkLoader needs PyG's NeighborSampler")

    def __repr__(self) -> str:
        values = getattr(self.num_neighbors, "values", self.num_neighbors)
        return f"{type(self).__name__}(num_neighbors={values}, subgraph_type={self.subgraph_type!r})"


def sampler_options(sampler: Any) -> Dict[str, Any]:
    """The ``NeighborLoader`` arguments a sampler stands for: Volley's ``NeighborSampler``, or
    PyG's ``torch_geometric.sampler.NeighborSampler`` without temporal or weighted options.

    Raises:
        VolleyNotImplementedError: PyG's sampler with times or weights (it keeps them only as
            tensors), or sampling backward.
        VolleyTypeError: any other sampler (named in the message).
    """
    if isinstance(sampler, NeighborSampler):
        return dict(num_neighbors=sampler.num_neighbors.values
                    if hasattr(sampler.num_neighbors, "values") else sampler.num_neighbors,
                    subgraph_type=sampler.subgraph_type, replace=sampler.replace,
                    disjoint=sampler.disjoint, temporal_strategy=sampler.temporal_strategy,
                    time_attr=sampler.time_attr, weight_attr=sampler.weight_attr,
                    is_sorted=sampler.is_sorted)
    if not _is_pyg_neighbor_sampler(sampler):
        raise VolleyTypeError(
            f"a {type(sampler).__name__} sampler: Volley's loaders run neighbor sampling "
            "(volley.generic_loader.NeighborSampler or PyG's NeighborSampler); use PyG's "
            "NodeLoader / LinkLoader for another sampler")
    for what in ("node_time", "edge_time", "edge_weight"):
        if getattr(sampler, what, None) is not None:
            raise VolleyNotImplementedError(
                f"PyG's NeighborSampler with {what} set: pass volley.generic_loader."
                "NeighborSampler(data, ..., time_attr= / weight_attr=) instead (PyG's keeps "
                "the tensor, not the attribute name)")
    if getattr(sampler, "sample_direction", "forward") != "forward":
        raise VolleyNotImplementedError("PyG's NeighborSampler samples backward: forward only")
    return dict(num_neighbors=sampler.num_neighbors.values,
                subgraph_type=getattr(sampler.subgraph_type, "value", sampler.subgraph_type),
                replace=bool(sampler.replace), disjoint=bool(sampler.disjoint),
                temporal_strategy=getattr(sampler, "temporal_strategy", "uniform"))


def _is_pyg_neighbor_sampler(sampler: Any) -> bool:
    try:
        from torch_geometric.sampler import NeighborSampler as PygNeighborSampler
    except ImportError:
        return False
    return isinstance(sampler, PygNeighborSampler)


def _refuse(custom_cls: Any, input_id: Any) -> None:
    if custom_cls is not None:
        raise VolleyNotImplementedError(
            f"custom_cls={type(custom_cls).__name__}: Volley's loaders build Data / HeteroData")
    if input_id is not None:
        raise VolleyNotImplementedError(
            "input_id: Volley's batches carry the positions of their seeds in the input "
            "(batch.input_id); pass input_id=None")


class _LoaderKind(type):
    """``isinstance(x, NodeLoader)`` / ``isinstance(x, LinkLoader)`` for Volley's loaders, as
    PyG's ``NeighborLoader`` is a ``NodeLoader`` and its ``LinkNeighborLoader`` a ``LinkLoader``."""

    def __instancecheck__(cls, instance: Any) -> bool:
        from .link_loader import LinkNeighborLoader
        from .loader import TYPED_LOADERS, NeighborLoader

        links = (LinkNeighborLoader, TYPED_LOADERS["link"])
        if cls.__name__ == "LinkLoader":
            return isinstance(instance, links)
        return isinstance(instance, NeighborLoader) and not isinstance(instance, links)


class NodeLoader(metaclass=_LoaderKind):
    """``torch_geometric.loader.NodeLoader``: a node loader over ``node_sampler``'s options.

    Returns Volley's ``NeighborLoader`` (``HeteroNeighborLoader`` for typed input) with the
    sampler's options and the other arguments as they are; ``isinstance(x, NodeLoader)`` holds for
    every Volley node loader.

    Raises:
        VolleyTypeError: a sampler that is not a neighbor sampler (see ``sampler_options``).
        VolleyNotImplementedError: ``custom_cls`` or ``input_id``.
    """

    def __new__(cls, data: Any, node_sampler: Any, input_nodes: Any = None, input_time: Any = None,
                transform: Optional[Callable] = None,
                transform_sampler_output: Optional[Callable] = None,
                filter_per_worker: Optional[bool] = None, custom_cls: Any = None,
                input_id: Any = None, **kwargs: Any) -> Any:
        from .loader import NeighborLoader

        _refuse(custom_cls, input_id)
        return NeighborLoader(data, input_nodes=input_nodes, input_time=input_time,
                              transform=transform,
                              transform_sampler_output=transform_sampler_output,
                              filter_per_worker=filter_per_worker,
                              **sampler_options(node_sampler), **kwargs)


class LinkLoader(metaclass=_LoaderKind):
    """``torch_geometric.loader.LinkLoader``: a link loader over ``link_sampler``'s options.

    Returns Volley's ``LinkNeighborLoader`` (the typed one for typed input) with the sampler's
    options and the other arguments (``edge_label_index``, ``neg_sampling``, ...) as they are;
    ``isinstance(x, LinkLoader)`` holds for every Volley link loader.

    Raises:
        As ``NodeLoader``.
    """

    def __new__(cls, data: Any, link_sampler: Any, edge_label_index: Any = None,
                edge_label: Any = None, edge_label_time: Any = None, neg_sampling: Any = None,
                neg_sampling_ratio: Any = None, transform: Optional[Callable] = None,
                transform_sampler_output: Optional[Callable] = None,
                filter_per_worker: Optional[bool] = None, custom_cls: Any = None,
                input_id: Any = None, **kwargs: Any) -> Any:
        from .link_loader import LinkNeighborLoader

        _refuse(custom_cls, input_id)
        return LinkNeighborLoader(data, edge_label_index=edge_label_index, edge_label=edge_label,
                                  edge_label_time=edge_label_time, neg_sampling=neg_sampling,
                                  neg_sampling_ratio=neg_sampling_ratio, transform=transform,
                                  transform_sampler_output=transform_sampler_output,
                                  filter_per_worker=filter_per_worker,
                                  **sampler_options(link_sampler), **kwargs)


def sampler_arguments() -> frozenset:
    """The names ``NeighborSampler`` takes besides ``data`` (to split a loader's keywords)."""
    return frozenset(inspect.signature(NeighborSampler.__init__).parameters) - {"self", "data"}

