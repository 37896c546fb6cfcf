"""What ``volley.loader.NeighborLoader`` needs to behave as PyG's ``NeighborLoader`` does
(internal): PyG's arguments checked and translated, the attributes of a ``Data`` split into the
node- and edge-level tables the C++ loader gathers, and the batch built with PyG's types."""

from __future__ import annotations

import math
from typing import Any, Dict, List, Optional, Tuple

import numpy as np

from . import _tensor
from . import _volley

#: ``torch.utils.data.DataLoader`` arguments that only tune PyG's Python worker processes:
#: accepted, no effect (Volley's workers are C++ threads; see ``NeighborLoader``).
WORKER_ONLY = (
    "persistent_workers",
    "timeout",
    "worker_init_fn",
    "multiprocessing_context",
    "prefetch_factor",
    "pin_memory_device",
    "in_order",
)
#: DataLoader arguments a NeighborLoader cannot take (PyG's NeighborLoader sets them itself).
REFUSED = ("collate_fn", "dataset")

SUBGRAPH_TYPES = ("directional", "bidirectional", "induced")


def read_loader_arguments(loader: Any, data: Any, kwargs: Dict[str, Any], *,
                          temporal_strategy: str, neighbor_sampler: Any, subgraph_type: Any,
                          directed: bool, is_sorted: bool, filter_per_worker: Optional[bool],
                          pin_memory: bool, transform_sampler_output: Any, seed: Optional[int],
                          generator: Any) -> Tuple[Any, int]:
    """PyG's loader arguments, checked and kept on ``loader`` alike by every local loader of
    either graph kind (node or link): unknown keywords, ``temporal_strategy``, a custom
    ``neighbor_sampler`` (refused), the subgraph type and the hints. Returns ``data`` (a remote
    backend's, as Volley reads it) and the base seed (drawn from ``generator`` when None)."""
    from ._temporal import check_strategy

    check_loader_kwargs(kwargs)
    data = from_remote_backend(data)
    check_strategy(temporal_strategy)
    if neighbor_sampler is not None:
        raise _volley.VolleyNotImplementedError(
            f"neighbor_sampler={type(neighbor_sampler).__name__}: a custom PyG sampler cannot "
            "drive Volley's C++ pipeline; pass None")
    loader.subgraph_type = subgraph_type_name(subgraph_type, directed)
    loader.filter_per_worker, loader.is_sorted = filter_per_worker, bool(is_sorted)
    loader.transform_sampler_output = transform_sampler_output
    loader.pin_memory = bool(pin_memory)
    return data, (seed_from_generator(generator) if seed is None else seed)


def check_loader_kwargs(kwargs: Dict[str, Any]) -> None:
    """Refuses a DataLoader argument PyG's NeighborLoader cannot take, or an unknown one."""
    for key in kwargs:
        if key in REFUSED:
            raise _volley.VolleyTypeError(
                f"NeighborLoader sets {key} itself (as PyG's does); got {key}={kwargs[key]!r}"
            )
        if key not in WORKER_ONLY and key not in ("sampler", "batch_sampler"):
            raise _volley.VolleyTypeError(f"NeighborLoader got an unexpected keyword argument '{key}'")


def subgraph_type_name(subgraph_type: Any, directed: bool) -> str:
    """PyG's ``subgraph_type`` (a string or ``SubgraphType``) as a name; ``directed=False`` is
    PyG's deprecated spelling of ``"induced"``."""
    name = getattr(subgraph_type, "value", subgraph_type)
    if not directed:
        name = "induced"
    if name not in SUBGRAPH_TYPES:
        raise _volley.VolleyValueError(
            f"subgraph_type must be one of {', '.join(SUBGRAPH_TYPES)}, got {subgraph_type!r}"
        )
    return str(name)


def seed_from_generator(generator: Any) -> Optional[int]:
    """A base seed drawn from a ``torch.Generator`` (PyG shuffles with it), or None."""
    if generator is None:
        return None
    torch = _tensor.torch_module()
    if torch is None or not isinstance(generator, torch.Generator):
        raise _volley.VolleyTypeError(f"generator must be a torch.Generator, got {type(generator).__name__}")
    return int(torch.randint(0, 2**62, (), generator=generator))


class Table:
    """One attribute the C++ loader gathers: ``rows`` [N] or [N, D] (zero-copy when the value is
    contiguous), ``shape`` the trailing shape to restore."""

    def __init__(self, name: str, value: Any):
        self.name = name
        self.bool = False
        if isinstance(value, _volley.FeatureStore):  # a volley.Feature's store, as it is
            self.rows, self.tail = value, ()
            return
        array = _tensor.to_input(value)
        if hasattr(array, "contiguous"):
            array = array.contiguous()
            torch = _tensor.torch_module()
            if array.dtype == torch.bool:  # DLPack of older torch has no bool: bytes, viewed back
                array, self.bool = array.view(torch.uint8), True
        shape = tuple(array.shape)
        self.tail = shape[1:]
        if len(shape) > 2:
            array = array.reshape(shape[0], -1)
        self.rows = array


def split_attributes(data: Any, special: Tuple[str, ...]
                     ) -> Tuple[List[Table], List[Table], Dict[str, Any], List[str]]:
    """The attributes of a PyG ``Data`` besides ``edge_index`` and ``special``: node-level and
    edge-level tensors (PyG's ``is_node_attr`` / ``is_edge_attr``, concatenated on dim 0) as
    tables when C++ can gather them (``gatherable``), by name when torch indexes them on their
    device (a CUDA or meta tensor, a dtype Volley does not know); everything else (graph-level)
    as it is."""
    node: List[Table] = []
    edge: List[Table] = []
    graph: Dict[str, Any] = {}
    indexed: List[str] = []
    if not hasattr(data, "is_node_attr"):
        return node, edge, graph, indexed
    torch = _tensor.torch_module()
    for key in _keys(data):
        if key in ("edge_index", "num_nodes", "adj_t", "_volley_graph") or key in special:
            continue
        value = data[key]
        tensor = torch is not None and isinstance(value, torch.Tensor)
        level = None
        if tensor or isinstance(value, np.ndarray):
            if data.is_node_attr(key):
                level = "node"
            elif data.is_edge_attr(key):
                level = "edge"
            if level is not None and data.__cat_dim__(key, value) != 0:
                level = None
        if level is None:
            graph[key] = value
            continue
        if tensor and value.dim() == 0:
            graph[key] = value  # a scalar: copied as a graph-level value
        elif tensor and not gatherable(value):
            indexed.append(key)  # torch indexes it where it lives
        else:
            (node if level == "node" else edge).append(Table(key, value))
    return node, edge, graph, indexed


def is_hetero(data: Any) -> bool:
    """Whether ``data`` is a ``volley.HeteroDataset`` or a PyG ``HeteroData``."""
    from .hetero import HeteroDataset

    if isinstance(data, HeteroDataset):
        return True
    try:
        from torch_geometric.data import HeteroData
    except Exception:  # PyG absent or broken
        return False
    return isinstance(data, HeteroData)


def is_typed_input(data: Any) -> bool:
    """Whether a loader's ``data`` is a typed graph: ``is_hetero``, or PyG's remote backend with
    typed groups and edge types."""
    return remote_backend_kind(data) == "heterogeneous" or is_hetero(data)


def gatherable(value: Any) -> bool:
    """Whether C++ can gather ``value`` as a ``Table``: a host numpy array or torch tensor of at
    least one dimension, of a dtype Volley knows."""
    if isinstance(value, np.ndarray):
        return value.ndim > 0 and value.dtype != object and value.dtype.kind in "biuf"
    torch = _tensor.torch_module()
    return (torch is not None and isinstance(value, torch.Tensor)
            and value.device.type == "cpu" and value.dtype in _DTYPES and value.dim() > 0)


def _keys(data: Any) -> List[str]:
    keys = data.keys
    return list(keys() if callable(keys) else keys)


def _dtypes() -> tuple:
    torch = _tensor.torch_module()
    if torch is None:
        return ()
    return (torch.bool, torch.int8, torch.uint8, torch.int16, torch.int32, torch.int64,
            torch.float16, torch.bfloat16, torch.float32, torch.float64)


_DTYPES = _dtypes()


def restore(table: Table, value: Any) -> Any:
    """A gathered table with its dtype (bool) and trailing shape back."""
    if table.bool:
        value = value.view(_tensor.torch_module().bool)
    if len(table.tail) > 1:
        return value.reshape((value.shape[0],) + table.tail)
    return value


def edge_index_type() -> Any:
    """PyG's ``EdgeIndex`` class when the installed PyG's loaders return one (PyG 2.5; from 2.6
    on they return a plain tensor again), else None."""
    try:
        import torch_geometric
        from torch_geometric import EdgeIndex
    except Exception:
        return None
    try:
        major, minor = (int(part) for part in torch_geometric.__version__.split(".")[:2])
    except ValueError:
        return None
    return EdgeIndex if (major, minor) == (2, 5) else None


def wrap_edge_index(edge_index: Any, num_nodes: int, cls: Any) -> Any:
    """``edge_index`` as PyG's loaders return it: an ``EdgeIndex`` sorted by column (every
    subgraph type's edges are grouped by target in node order) with its sparse size."""
    if cls is None or edge_index is None:
        return edge_index
    return cls(edge_index, sparse_size=(num_nodes, num_nodes), sort_order="col")


def sampler_output(fields: Dict[str, Any]) -> Any:
    """The batch's sampling result as PyG's ``SamplerOutput`` (for ``transform_sampler_output``)."""
    from torch_geometric.sampler import SamplerOutput

    edge_index = fields["edge_index"]
    return SamplerOutput(
        node=fields["n_id"],
        row=edge_index[0],
        col=edge_index[1],
        edge=fields.get("e_id"),
        batch=fields.get("batch"),
        num_sampled_nodes=fields.get("num_sampled_nodes"),
        num_sampled_edges=fields.get("num_sampled_edges"),
        metadata=(fields["input_id"], None),
    )


def apply_sampler_output(fields: Dict[str, Any], out: Any, data: Any, attributes: List[str]) -> None:
    """Rebuilds the batch fields from a transformed ``SamplerOutput``: ids and edges from ``out``,
    the attributes indexed anew (in Python) when its nodes or edges changed."""
    torch = _tensor.torch_module()
    nodes_changed = out.node is not fields["n_id"]
    edges_changed = out.edge is not fields.get("e_id")
    fields["n_id"] = out.node
    fields["edge_index"] = torch.stack([out.row, out.col], dim=0)
    fields["e_id"] = out.edge
    fields["batch"] = out.batch
    fields["num_sampled_nodes"] = out.num_sampled_nodes
    fields["num_sampled_edges"] = out.num_sampled_edges
    for key in attributes:
        value = data[key]
        if data.is_node_attr(key) and nodes_changed:
            fields[key] = value[out.node.to(value.device)]
        elif data.is_edge_attr(key) and edges_changed:
            fields[key] = value[out.edge.to(value.device)] if out.edge is not None else None


def split_loader_attributes(loader: Any, data: Any, x: Any, y: Any, feature_dtype: Optional[str]) -> Tuple[Any, Any]:
    """``NeighborLoader._split_attributes``: ``x`` and ``y`` for the features / labels path (a
    ``volley.Feature``, a ``Dataset``'s, or ``x`` converted to an explicit ``feature_dtype``);
    the other node and edge tensors (``x`` / ``y`` too when kept as stored) as tables gathered
    in C++ (``loader._node_tables`` / ``_edge_tables``), indexed by torch on a CUDA loader
    (``loader._python_attrs``); the rest graph-level (``loader._graph_attrs``). Returns the
    (x, y) left for the features / labels path."""
    from .dataset import Dataset
    from .feature import Feature

    loader._node_tables, loader._edge_tables = [], []
    loader._graph_attrs, loader._python_attrs = {}, []
    loader._feature_dtype = feature_dtype or "float32"
    if isinstance(data, Dataset) or not hasattr(data, "is_node_attr") or not _tensor.using_torch():
        return x, y
    special = []
    host_x = not hasattr(x, "device") or getattr(x.device, "type", "cpu") == "cpu"
    if isinstance(x, Feature) or (feature_dtype is not None and host_x):
        special.append("x")
    if isinstance(y, Feature):
        special.append("y")
    nodes, edges, loader._graph_attrs, indexed = split_attributes(data, tuple(special))
    if loader.mode != "CPU":  # the CUDA loaders carry x and y; torch indexes the rest
        loader._python_attrs = [n for n in [t.name for t in nodes + edges] + indexed
                                if n not in ("x", "y")]
        return x, y
    loader._node_tables, loader._edge_tables = nodes, edges
    loader._python_attrs = indexed  # on another device: indexed there, no host round trip
    names = {t.name for t in nodes} | set(indexed)
    return (x if "x" in special or "x" not in names else None,
            y if "y" in special or "y" not in names else None)


def attribute_key(data: Any) -> Optional[tuple]:
    """What the loaders compare to see a PyG ``Data`` / ``HeteroData``'s attributes change
    (added, deleted or replaced): each store's keys and values' identities; None for other
    inputs (a ``volley.Dataset`` does not change)."""
    stores = getattr(data, "stores", None)
    if stores is None or not (hasattr(data, "is_node_attr") or hasattr(data, "node_types")):
        return None
    return tuple((getattr(store, "_key", None), key, id(value))
                 for store in stores for key, value in store.items())


def sample_seeds(loader: Any, index: Any, times: Optional[np.ndarray] = None) -> dict:
    """``NeighborLoader.__call__``: the raw batch of the seeds ``index``, built by a one-batch
    native loader with the loader's options (with the seed times ``times``; under temporal
    sampling by default each seed's own node time)."""
    seeds = np.ascontiguousarray(_tensor.to_numpy(index), dtype=np.int64).reshape(-1)
    options = _volley.LoaderOptions(
        loader._options.sampler,
        batch_size=max(1, len(seeds)),
        num_threads=1,
        seed=loader._options.seed,
        feature_dtype=loader._options.feature_dtype,
    )
    if times is not None:  # (a typed loader's sampler holds its time options itself)
        options.input_time = times
    elif loader._options.sampler.time_source != "none":
        from ._temporal import call_times

        options.input_time = call_times(loader, seeds)
    native = _native_with(loader, options, seeds)
    stream = native.start_epoch(loader._epoch)
    try:
        return stream.next(loader._consumer_stream())
    finally:
        stream.stop()


def reordered_native(loader: Any, order: np.ndarray) -> Any:
    """``NeighborLoader._sampler_native``: a native loader over the input nodes at positions
    ``order``, in that order, unshuffled and for one rank (a framework sampler's epoch: the
    sampler has split and shuffled the inputs itself), with the loader's other options."""
    current = loader._options
    options = _volley.LoaderOptions(
        current.sampler, batch_size=current.batch_size, drop_last=current.drop_last,
        num_threads=current.num_threads, prefetch=current.prefetch, seed=current.seed,
        feature_dtype=current.feature_dtype)
    if current.input_time is not None:
        options.input_time = np.ascontiguousarray(current.input_time[order])
    return _native_with(loader, options, order if loader.input_nodes is None
                        else loader.input_nodes[order])


def _native_with(loader: Any, options: Any, inputs: np.ndarray) -> Any:
    """``loader``'s native loader over ``inputs`` with ``options`` in place of its own."""
    saved = loader._options
    loader._options = options
    try:
        return loader._create_native(inputs)
    finally:
        loader._options = saved


def pin(fields: dict) -> dict:
    """Tensors of a batch in pinned host memory when a CUDA device is present (``pin_memory``)."""
    torch = _tensor.torch_module()
    if torch is None or not torch.cuda.is_available():
        return fields
    return {
        key: value.pin_memory() if isinstance(value, torch.Tensor) and not value.is_cuda else value
        for key, value in fields.items()
    }


def remote_backend_kind(data: Any) -> Optional[str]:
    """``"homogeneous"`` or ``"heterogeneous"`` for PyG's remote backend, a ``(FeatureStore,
    GraphStore)`` pair (heterogeneous: several or named edge types, or named groups), else None."""
    if not (isinstance(data, tuple) and len(data) == 2):
        return None
    try:
        from torch_geometric.data import FeatureStore, GraphStore
    except ImportError:
        return None
    feature_store, graph_store = data
    if not (isinstance(feature_store, FeatureStore) and isinstance(graph_store, GraphStore)):
        return None
    edge_types = {attr.edge_type for attr in graph_store.get_all_edge_attrs()}
    groups = {attr.group_name for attr in feature_store.get_all_tensor_attrs()}
    hetero = len(edge_types) > 1 or (edge_types - {None}) or (groups - {None})
    return "heterogeneous" if hetero else "homogeneous"


def from_remote_backend(data: Any) -> Any:
    """PyG's remote backend, a ``(FeatureStore, GraphStore)`` pair, read into a ``Data`` or, for
    a heterogeneous pair, a ``HeteroData`` (the loaders sample from memory): the graph store's
    edges as ``edge_index`` (COO, converted from CSR / CSC as the store does) per edge type,
    every tensor of the feature store by its ``attr_name`` (in its group's node type), and
    ``num_nodes`` the larger of the stored graph sizes and the tensors' rows. Anything else is
    returned as it is."""
    kind = remote_backend_kind(data)
    if kind is None:
        return data
    from torch_geometric.data import Data

    feature_store, graph_store = data
    edge_attrs = graph_store.get_all_edge_attrs()
    tensor_attrs = feature_store.get_all_tensor_attrs()
    if kind == "heterogeneous":
        return _hetero_from_remote_backend(feature_store, graph_store, edge_attrs, tensor_attrs)
    out = Data()
    num_nodes = 0
    if edge_attrs:
        rows, cols, _ = graph_store.coo()  # tensors, or dicts by edge type (PyG's versions)
        if isinstance(rows, dict):
            rows, cols = next(iter(rows.values())), next(iter(cols.values()))
        out.edge_index = _tensor.torch_module().stack([rows, cols])
        size = edge_attrs[0].size
        num_nodes = max(size) if size is not None else int(out.edge_index.max()) + 1
    for attr in tensor_attrs:
        value = feature_store.get_tensor(group_name=attr.group_name, attr_name=attr.attr_name,
                                         index=None)
        setattr(out, attr.attr_name, value)
        num_nodes = max(num_nodes, int(value.shape[0]) if value.dim() else 0)
    out.num_nodes = num_nodes
    return out


def _hetero_from_remote_backend(feature_store: Any, graph_store: Any, edge_attrs: list,
                                tensor_attrs: list) -> Any:
    from torch_geometric.data import HeteroData

    torch = _tensor.torch_module()
    out, num_nodes = HeteroData(), {}
    rows, cols, _ = graph_store.coo()  # dicts by edge type
    for attr in edge_attrs:
        edge_type = attr.edge_type
        edge_index = torch.stack([rows[edge_type], cols[edge_type]])
        out[edge_type].edge_index = edge_index
        size = attr.size or (int(edge_index[0].max()) + 1 if edge_index.numel() else 0,
                             int(edge_index[1].max()) + 1 if edge_index.numel() else 0)
        for node_type, count in ((edge_type[0], size[0]), (edge_type[2], size[1])):
            num_nodes[node_type] = max(num_nodes.get(node_type, 0), int(count))
    for attr in tensor_attrs:
        if attr.group_name is None:
            raise _volley.VolleyValueError(
                f"the feature store's tensor '{attr.attr_name}' has no group (node type), but the "
                "graph store has typed edges: put each tensor under its node type's group_name")
        value = feature_store.get_tensor(group_name=attr.group_name, attr_name=attr.attr_name,
                                         index=None)
        out[attr.group_name][attr.attr_name] = value
        rows_of = int(value.shape[0]) if value.dim() else 0
        num_nodes[attr.group_name] = max(num_nodes.get(attr.group_name, 0), rows_of)
    for node_type, count in num_nodes.items():
        out[node_type].num_nodes = count
    return out


def negative_sampling(neg_sampling: Any, neg_sampling_ratio: Any) -> Tuple[str, float, Any, Any]:
    """(mode, amount, src_weight, dst_weight) of PyG's ``neg_sampling`` (a ``NegativeSampling``,
    its string form or a dict of its arguments) or the deprecated ``neg_sampling_ratio``
    (binary). PyG 2.5's ``weight`` weighs both end points; 2.8's ``src_weight`` / ``dst_weight``
    each its own. ``amount`` is a number in (0, 2**31 - 1]."""
    if neg_sampling_ratio is not None and neg_sampling_ratio != 0.0:
        neg_sampling = {"mode": "binary", "amount": neg_sampling_ratio}
    if neg_sampling is None:
        return "none", 1.0, None, None
    if isinstance(neg_sampling, str):
        neg_sampling = {"mode": neg_sampling}
    names = ("mode", "amount", "weight", "src_weight", "dst_weight")
    if isinstance(neg_sampling, dict):
        unknown = set(neg_sampling) - set(names)
        if unknown:
            raise _volley.VolleyValueError(
                f"neg_sampling takes {', '.join(names)}, got {sorted(unknown)}"
            )
        fields = {name: neg_sampling.get(name) for name in names}
    elif hasattr(neg_sampling, "mode") and hasattr(neg_sampling, "amount"):
        fields = {name: getattr(neg_sampling, name, None) for name in names}
    else:
        raise _volley.VolleyTypeError(
            "neg_sampling must be a torch_geometric NegativeSampling, 'binary', 'triplet' or a "
            f"dict, got {type(neg_sampling).__name__}"
        )
    mode = fields["mode"]
    amount = fields["amount"] if fields["amount"] is not None else 1
    weight = fields["weight"]
    if weight is not None and (fields["src_weight"] is not None or fields["dst_weight"] is not None):
        raise _volley.VolleyValueError("neg_sampling: give weight or src_weight / dst_weight, not both")
    src_weight = weight if weight is not None else fields["src_weight"]
    dst_weight = weight if weight is not None else fields["dst_weight"]
    mode = getattr(mode, "value", mode)
    if mode not in ("binary", "triplet"):
        raise _volley.VolleyValueError(f"neg_sampling mode must be 'binary' or 'triplet', got {mode!r}")
    if isinstance(amount, (str, bytes, bool)):  # float("3") and float(True) would pass
        raise _volley.VolleyTypeError(f"neg_sampling amount must be a number, got {amount!r}")
    try:
        amount = float(amount)
    except (TypeError, ValueError) as error:
        raise _volley.VolleyTypeError(f"neg_sampling amount must be a number, got {amount!r}") from error
    if not math.isfinite(amount) or amount <= 0:
        raise _volley.VolleyValueError(
            f"neg_sampling amount must be a positive finite number, got {amount}"
        )
    if amount > 2**31 - 1:  # negatives per positive; a batch's count must stay a 64-bit integer
        raise _volley.VolleyValueError(
            f"neg_sampling amount must be at most 2**31 - 1 (negatives per positive), got {amount}"
        )
    if mode == "triplet" and amount != math.ceil(amount):
        raise _volley.VolleyValueError(
            f"triplet neg_sampling needs a whole amount (negatives per positive), got {amount}"
        )
    return mode, amount, src_weight, dst_weight
