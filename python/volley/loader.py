"""``volley.loader.NeighborLoader``: PyG's ``NeighborLoader`` interface on Volley's C++ pipeline.

Change one import::

    # from torch_geometric.loader import NeighborLoader
    from volley.loader import NeighborLoader

    loader = NeighborLoader(data, num_neighbors=[10, 10], batch_size=64,
                            input_nodes=data.train_mask, shuffle=True)
    for batch in loader:
        out = model(batch.x, batch.edge_index)[: batch.batch_size]

Worker *threads* in C++ sample and gather whole batches ahead of the training loop (no worker
processes, no pickling); the GIL is released while they work.

Under DistributedDataParallel each rank's loader takes a disjoint, equally sized share of the
input nodes every epoch (``rank`` / ``world_size``, read from ``torch.distributed`` when it is
initialised), like ``torch.utils.data.DistributedSampler``.

On a GPU (``device="cuda"``, ``mode="GPU"`` or ``"UVA"``) a C++ thread samples and gathers the
next ``prefetch`` batches on a CUDA stream of its own while the model trains on the current one;
batches arrive as CUDA tensors with the same content as the CPU loader's, ready on torch's
current stream (see ``volley._cuda``).
"""

from __future__ import annotations

import inspect
import os
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence, Tuple

import numpy as np

from . import _cuda, _loader_rows, _policy, _pyg_compat, _rows, _temporal, _tensor
from . import _volley
from ._volley import NeighborLoader as _NativeLoader
from ._batch import Batch
from ._data_loader import LoaderBase
from ._epoch import EpochIterator
from .dataset import Dataset
from .graph import Graph


def _pyg_data_class() -> Optional[type]:
    try:
        from torch_geometric.data import Data
    except Exception:  # PyG absent or broken: fall back to volley.Batch
        return None
    return Data


# The typed loaders, subclasses that register themselves when ``import volley`` loads them: "node"
# (hetero_loader.py), "link" (hetero_link_loader.py), "dist-node", "dist-link" (_dist_hetero*.py).
TYPED_LOADERS: Dict[str, type] = {}


class NeighborLoader(LoaderBase):
    """Mini-batches of sampled subgraphs around seed nodes, with every attribute gathered.

    PyG's ``torch_geometric.loader.NeighborLoader`` (signature, positional order and defaults
    of PyG 2.5 to 2.8; checked by PyG's own tests, ``scripts/pyg_tests.sh``): batches carry every
    node-level attribute of ``data`` indexed by ``n_id`` and every edge-level one by ``e_id``
    (gathered in C++ in their stored dtype and shape), the graph-level ones copied, and
    ``edge_index`` as an ``EdgeIndex`` sorted by column where the installed PyG has that class.

    Args:
        data: a PyG ``Data`` (``edge_index`` plus any attributes; ``x`` and ``y`` may be
            ``volley.Feature`` stores) or a ``volley.Dataset``.
        num_neighbors: fanout per hop, innermost first; ``-1`` takes all neighbors.
        input_nodes: seed ids (tensor/array/list), a boolean mask over nodes, or None for all.
        time_attr, input_time: temporal sampling (``volley._temporal``): ``data[time_attr]`` is
            node time (one per node) or edge time (one per edge); a Dataset names "node_time",
            "edge_time" or "time". ``input_time``: int64 per input node (default with node time:
            the seeds' own). Neighbors later than their seed's time are never sampled; sampling
            is disjoint (``batch``); rows are sorted by time first unless they are. The same on a
            GPU (``device``).
        replace: sample with replacement.
        subgraph_type: ``"directional"`` (the sampled edges), ``"bidirectional"`` (and their
            reverses, coalesced) or ``"induced"`` (every edge between sampled nodes); a
            ``torch_geometric.sampler.base.SubgraphType`` works too. CPU sampler only.
        disjoint: every seed gets a subgraph of its own; batches carry ``batch`` (the seed
            position of each node). CPU sampler only.
        temporal_strategy: ``"uniform"`` or ``"last"`` (the most recent admissible neighbors).
        weight_attr: name of an edge attribute of ``data`` to sample proportionally to.
        transform: callable applied to each batch.
        transform_sampler_output: callable applied to each batch's
            ``torch_geometric.sampler.SamplerOutput`` before the batch is built from it.
        is_sorted, filter_per_worker: hints to PyG's sorting and worker processes; no effect.
        neighbor_sampler: only None (PyG's default). directed: ``False`` means ``"induced"``.
        default: for a ``HeteroData`` with a dict ``num_neighbors``, the fanouts of the edge types
            it leaves out (see ``HeteroNeighborLoader``); refused for a ``Data``.
        batch_size, shuffle, drop_last: as in ``torch.utils.data.DataLoader``.
        num_workers: C++ worker threads (not processes); 0 (the default): all cores.
        pin_memory: batch tensors copied to pinned host memory when CUDA is available.
        generator: a ``torch.Generator``; when ``seed`` is None the base seed is drawn from it.
        kwargs: the ``DataLoader`` arguments that only tune PyG's worker processes
            (``persistent_workers``, ``timeout``, ``worker_init_fn``, ``prefetch_factor``,
            ``multiprocessing_context``, ``pin_memory_device``, ``in_order``): no effect.

    Other Parameters:
        seed: base random seed. None draws one from ``generator``, else ``torch.initial_seed()``
            (so ``torch.manual_seed`` makes runs repeatable), or numpy when torch is absent.
        weighted: sample proportionally to ``data.edge_weight`` (``weight_attr="edge_weight"``).
        prefetch: batches prepared ahead of the consumer; default 2 × workers.
        copy: hand out copies instead of views of the pipeline's batch memory (views are safe).
        feature_dtype: dtype of ``batch.x``. None (default): ``x`` as stored for a ``Data``
            tensor, float32 for a ``volley.Feature`` or ``volley.Dataset``; a dtype name
            converts while gathering (e.g. uint8/float16 stores to float32).
        device: None or ``"cpu"`` (batches in host memory), or a CUDA device (``"cuda"``,
            ``"cuda:N"``, an ordinal, a ``torch.device``): batches arrive as CUDA tensors.
        mode: with a CUDA device, ``"GPU"`` (graph and features in device memory), ``"UVA"``
            (graph in pinned host memory read by the GPU; features as ``x`` places them: a
            ``volley.Feature(device=..., cache_bytes=...)`` keeps its device/pinned split, other
            ``x`` go to device memory) or ``"CPU"`` (the CPU pipeline above, each batch then
            copied to the device). Default ``"UVA"`` (Quiver's). In GPU and UVA modes a C++
            thread samples and gathers the next ``prefetch`` batches (default 2) on its own CUDA
            stream while the model trains; each batch is the CPU loader's batch (same seeds,
            same sampling, same rows), ready on torch's current stream when ``next`` returns
            it (the stream waits on an event; the host does not), its memory freed in that
            stream's order once no tensor refers to it. ``num_workers`` is unused there;
            ``x`` is gathered in its stored dtype and converted to ``feature_dtype`` on the GPU,
            by the CPU loader's rules. Attributes besides ``x`` and ``y`` are indexed on the
            device by torch; ``subgraph_type`` other than directional is refused there
            (VolleyValueError).
        cache_bytes, policy: the row cache of a ``volley.Dataset``'s features, as
            ``volley.Feature(path, cache_bytes=..., policy=...)`` (CPU mode; features larger
            than half the RAM are read through the disk tier by themselves); of a
            ``volley.HeteroDataset``'s, per node type, ``cache_bytes`` shared by feature bytes.
        lookahead: with ``policy="lookahead"``, how many batches past the one being built the
            loader samples to tell the cache which rows come (default 8; 0: none). Each batch
            is still sampled once (the samples ahead are kept): the batches do not change.
        rank, world_size: this process's share of the input nodes in data-parallel training.
            Default: ``torch.distributed``'s rank and world size when a process group is
            initialised, else a single process (0, 1). With ``world_size > 1`` every epoch
            takes the single-process epoch order of the whole input list (shuffled by the
            loader's Philox generator with the epoch's seed, the same on every rank; unshuffled
            with ``shuffle=False``), pads it by repeating its
            first nodes to a multiple of ``world_size`` (``DistributedSampler``'s default; with
            ``drop_last`` the tail is dropped instead) and gives rank r the positions r,
            r + world_size, ... — so ranks are disjoint up to the at most ``world_size - 1``
            padded nodes, all have the same number of batches (DDP never waits for a missing
            batch), and together cover every input node each epoch. Sampling randomness differs
            per rank and per epoch and is reproducible from ``seed``. ``input_id`` still
            indexes the full ``input_nodes``.

    Each batch is a PyG ``Data`` when PyG is importable, else a ``volley.loader.Batch`` (``x``,
    ``y``, ``edge_index``, ``n_id``, ``e_id``, ``input_id``, ``batch_size``, ``num_sampled_nodes``,
    ``num_sampled_edges``; ``batch`` when disjoint; no per-hop counts when bidirectional or
    induced, as in PyG). ``loader(seeds)`` returns the batch of a list of seeds.

    Raises:
        VolleyValueError / VolleyIndexError: inconsistent arguments (bad fanout, seed out of
        range, unknown subgraph_type, ...). VolleyTypeError: an unknown keyword argument, or a
        DataLoader argument PyG's loader sets itself (collate_fn, sampler, batch_sampler).
        VolleyNotImplementedError: a custom ``neighbor_sampler``.
    """

    #: A typed graph's loader (``HeteroData``): __init__ hands its arguments to _init_typed.
    _typed = False

    # Defaults for subclasses that call _setup without __init__ (volley.dist).
    subgraph_type, disjoint, transform_sampler_output, pin_memory = "directional", False, None, False

    def __new__(cls, data: Any = None, *args: Any, **kwargs: Any) -> Any:
        """HeteroData / volley.HeteroDataset (or a typed remote backend): an instance of the typed
        loader (hetero_loader.py), a subclass, which Python then initialises with the same
        arguments."""
        if cls is NeighborLoader and _pyg_compat.is_typed_input(data):
            return super().__new__(TYPED_LOADERS["node"])
        return super().__new__(cls)

    def __init__(
        self,
        data: Any,
        num_neighbors: Sequence[int],
        input_nodes: Any = None,
        input_time: Any = None,
        replace: bool = False,
        subgraph_type: Any = "directional",
        disjoint: bool = False,
        temporal_strategy: str = "uniform",
        time_attr: Optional[str] = None,
        weight_attr: Optional[str] = None,
        transform: Optional[Callable[[Any], Any]] = None,
        transform_sampler_output: Optional[Callable[[Any], Any]] = None,
        is_sorted: bool = False,
        filter_per_worker: Optional[bool] = None,
        neighbor_sampler: Any = None,
        directed: bool = True,
        *,
        batch_size: int = 1,
        shuffle: bool = False,
        num_workers: int = 0,
        drop_last: bool = False,
        pin_memory: bool = False,
        generator: Any = None,
        seed: Optional[int] = None,
        weighted: bool = False,
        prefetch: Optional[int] = None,
        copy: bool = False,
        feature_dtype: Optional[str] = None,
        rank: Optional[int] = None,
        world_size: Optional[int] = None,
        device: Any = None,
        mode: Optional[str] = None,
        cache_bytes: Any = None,
        policy: Optional[str] = None,
        lookahead: Optional[int] = None,
        _on_batch_start: Optional[Callable[[int], None]] = None,
        default: Optional[List[int]] = None,
        **kwargs: Any,
    ):
        if default is not None and not self._typed:  # one fanout list: refused as any argument
            kwargs["default"] = default  # PyG does not take
        data, seed = _pyg_compat.read_loader_arguments(
            self, data, kwargs, temporal_strategy=temporal_strategy, neighbor_sampler=neighbor_sampler,
            subgraph_type=subgraph_type, directed=directed, is_sorted=is_sorted,
            filter_per_worker=filter_per_worker, pin_memory=pin_memory, seed=seed,
            transform_sampler_output=transform_sampler_output, generator=generator)
        if self._typed:  # a HeteroData: the same signature, the typed loader's body
            self._init_typed(**{k: v for k, v in locals().items() if k not in ("self", "__class__")})
            return
        kind, self.disjoint = self.subgraph_type, bool(disjoint)
        graph, x, y = self._unpack(data, weighted, weight_attr)
        graph, time_source = _temporal.attach(graph, data, time_attr, isinstance(data, Dataset))
        self.disjoint = self.disjoint or time_source != "none"  # PyG: temporal means disjoint
        self.data = data
        self.graph = graph
        self.device, self.mode = _cuda.resolve(device, mode)
        self._row_settings = (feature_dtype, cache_bytes, policy)
        self._bind_rows(x, y)
        self._setup(
            graph.num_nodes,
            num_neighbors,
            batch_size=batch_size,
            input_nodes=input_nodes,
            shuffle=shuffle,
            num_workers=num_workers if num_workers else (os.cpu_count() or 1),
            seed=seed,
            drop_last=drop_last,
            copy=copy,
            transform=transform,
            rank=rank,
            world_size=world_size,
            prefetch=prefetch,
            replace=replace,
            weighted=weighted or weight_attr is not None,
            feature_dtype=self._feature_dtype,
            on_batch_start=_on_batch_start,
            subgraph_type=kind,
            disjoint=self.disjoint,
            temporal=(time_source, temporal_strategy, input_time, graph),
            lookahead=lookahead,
        )

    #: Attributes of ``data`` that are inputs of the loader, not batch attributes (the link
    #: loader's supervision edges and labels).
    _reserved_keys: Tuple[str, ...] = ()

    def _bind_rows(self, x: Any, y: Any) -> None:
        """Which attributes of ``self.data`` batches carry, and how (``_split_attributes``): the
        tables and the features / labels the native loader is built over (the disk tier and row
        cache of ``self._row_settings``). Read again when the attributes change
        (``_refresh_attributes``)."""
        feature_dtype, cache_bytes, policy = self._row_settings
        x, y = self._split_attributes(self.data, x, y, feature_dtype)
        if self._reserved_keys:
            reserved = self._reserved_keys
            self._node_tables = [t for t in self._node_tables if t.name not in reserved]
            self._edge_tables = [t for t in self._edge_tables if t.name not in reserved]
            self._graph_attrs = {k: v for k, v in self._graph_attrs.items() if k not in reserved}
        native = self.data._native if isinstance(self.data, Dataset) else None
        x = _loader_rows.loader_rows(native, x, self.mode, cache_bytes, policy)  # disk, cache
        if self.mode == "CPU":
            self._rows = (self.graph._csr, _rows.rows_input(x), _rows.rows_input(y))
        else:
            placed = _cuda.place_graph(self.graph, self.mode, self.device)
            features = _rows.device_rows(x, self.device, "features")
            self._cuda_rows = (placed, features, _rows.device_rows(y, self.device, "labels"))
        self._attribute_key = _pyg_compat.attribute_key(self.data)

    def _reread_attributes(self) -> None:
        """``LoaderBase._refresh_attributes`` for either graph kind: the attributes read again
        (``_read_attributes``) and the native loader rebuilt over them."""
        self._read_attributes()
        self._native = self._create_native(self.input_nodes)

    def _read_attributes(self) -> None:
        """A ``Data``'s attributes: the rows bound again (``_bind_rows``)."""
        self._bind_rows(getattr(self.data, "x", None), getattr(self.data, "y", None))

    def _split_attributes(self, data: Any, x: Any, y: Any, feature_dtype: Optional[str]) -> Tuple[Any, Any]:
        """Sorts ``data``'s attributes (``_pyg_compat.split_loader_attributes``); returns the
        (x, y) left for the features / labels path."""
        return _pyg_compat.split_loader_attributes(self, data, x, y, feature_dtype)

    def _setup(
        self,
        num_nodes: int,
        num_neighbors: Sequence[int],
        *,
        batch_size: int,
        input_nodes: Any,
        shuffle: bool,
        num_workers: int,
        seed: Optional[int],
        drop_last: bool,
        copy: bool,
        transform: Optional[Callable[[Any], Any]],
        rank: Optional[int],
        world_size: Optional[int],
        prefetch: Optional[int],
        replace: bool,
        weighted: bool,
        feature_dtype: str,
        on_batch_start: Optional[Callable[[int], None]] = None,
        subgraph_type: str = "directional",
        disjoint: bool = False,
        temporal: tuple = ("none", "uniform", None, None),
        lookahead: Optional[int] = None,
    ) -> None:
        """What every loader shares, whatever serves its batches: the arguments translated into
        one typed ``LoaderOptions`` (checked once, in C++, when the native loader is built) and
        the batch construction. Subclasses call it from ``__init__`` and override
        ``_create_native`` (the native loader: anything with ``num_batches`` and
        ``start_epoch(epoch)`` returning a stream with ``next()`` / ``stop()``). The native
        loader serves every epoch: the epoch order, the split over ranks and ``input_id`` are
        its business."""
        self._num_nodes = int(num_nodes)
        self.num_neighbors = _policy.check_fanouts(num_neighbors)[0]
        self.copy = bool(copy)
        self.transform = transform
        self.input_nodes = _policy.input_nodes(input_nodes, self._num_nodes)
        self._epoch = 0
        self._data_class = _pyg_data_class()
        self._edge_index_class = _pyg_compat.edge_index_type() if self._data_class else None
        sampler = _volley.NeighborSamplerOptions(
            self.num_neighbors, replace=bool(replace), weighted=bool(weighted),
            subgraph_type=subgraph_type, disjoint=bool(disjoint), time_source=temporal[0],
            temporal_strategy=temporal[1])
        self._set_options(
            sampler, self._num_nodes if self.input_nodes is None else len(self.input_nodes),
            batch_size=batch_size, shuffle=shuffle, drop_last=drop_last, num_workers=num_workers,
            prefetch=prefetch, seed=seed, rank=rank, world_size=world_size,
            feature_dtype=feature_dtype, on_batch_start=on_batch_start, lookahead=lookahead,
            input_time=self._input_times(temporal))
        self._native = self._create_native(self.input_nodes)

    def _set_options(self, sampler: Any, num_inputs: int, *, lookahead: Optional[int] = None,
                     input_time: Optional[np.ndarray] = None, **options: Any) -> None:
        """``self._options``, the native ``LoaderOptions`` of either graph kind
        (``_policy.loader_options``: checked once, in C++; the epoch order, rank split and epoch
        seeds; ``sampler`` None for a typed loader, whose sampler holds its own), with
        ``lookahead`` and ``input_time``; their checked values as the loader's attributes."""
        self._options = _policy.loader_options(sampler, num_inputs=num_inputs, **options)
        if lookahead is not None:
            self._options.lookahead = _tensor.check_int(lookahead, "lookahead", 0, 65536)
        self._options.input_time = input_time
        options = self._options
        self.batch_size, self.shuffle, self.drop_last = (options.batch_size, options.shuffle,
                                                         options.drop_last)
        self.num_workers, self.seed = options.num_threads, options.seed
        self.rank, self.world_size = options.rank, options.world_size
        self.prefetch = options.prefetch or 2 * self.num_workers

    def _input_times(self, temporal: tuple) -> Optional[np.ndarray]:
        """The native options' input_time: one time per input node (temporal sampling)."""
        return _temporal.graph_input_times(temporal[2], temporal[0], temporal[3], self.input_nodes)

    def _create_native(self, input_nodes: Optional[np.ndarray]) -> Any:
        """The native loader over ``input_nodes`` (None: all nodes) with this loader's options."""
        cuda_rows = getattr(self, "_cuda_rows", None)
        if cuda_rows is not None:  # one native loader: it builds batches where the graph lives
            return _NativeLoader(*cuda_rows, input_nodes, self._options)
        tables = getattr(self, "_node_tables", []), getattr(self, "_edge_tables", [])
        return _NativeLoader(
            *self._rows,
            input_nodes,
            self._options,
            [(t.name, t.rows) for t in tables[0]],
            [(t.name, t.rows) for t in tables[1]],
        )

    def rank_positions(self, epoch: int) -> np.ndarray:
        """Positions in ``input_nodes`` that this rank takes in ``epoch`` (int64, in batch order):
        the ``input_id`` of the epoch's batches, concatenated (computed by the native loader's
        policy; a single process gets the epoch's order of all input nodes). A link loader's
        are positions in ``edge_label_index``.

        The same on every rank for a given ``seed`` and epoch up to the rank: the ranks' position
        lists are disjoint except for padding, equally long, and cover every input node.
        """
        return _volley.epoch_positions(self._num_inputs(), self._options,
                                       _policy.check_epoch(epoch))

    @staticmethod
    def _unpack(data: Any, weighted: bool, weight_attr: Optional[str] = None):
        if isinstance(data, Dataset):
            if weight_attr is not None:
                raise _volley.VolleyValueError(
                    f"weight_attr={weight_attr!r} needs a PyG Data; a volley.Dataset samples "
                    "by its graph's weights (weighted=True)"
                )
            return data.graph, data.x, data.y
        edge_index = getattr(data, "edge_index", None)
        if edge_index is None and type(data).__name__ == "Data" and data.num_nodes is not None:
            edge_index = np.zeros((2, 0), dtype=np.int64)  # PyG: a Data of nodes only samples none
        if edge_index is None:
            raise _volley.VolleyTypeError(
                f"data must be a torch_geometric.data.Data with edge_index or a volley.Dataset, "
                f"got {type(data).__name__}"
            )
        attr = weight_attr if weight_attr is not None else ("edge_weight" if weighted else None)
        weight = getattr(data, attr, None) if attr is not None else None
        if attr is not None and weight is None:
            raise _volley.VolleyValueError(
                f"weighted sampling needs data.{attr}, but data has no attribute {attr!r}"
            )
        cached = getattr(data, "_volley_graph", None)
        key = (id(edge_index), attr, id(weight))
        if cached is None or cached[1] != key:
            graph = Graph.from_edge_index(
                edge_index, num_nodes=getattr(data, "num_nodes", None), edge_weight=weight
            )
            try:  # cache on the Data object so several loaders share one graph
                object.__setattr__(data, "_volley_graph", (graph, key))
            except Exception:
                pass
        else:
            graph = cached[0]
        return graph, getattr(data, "x", None), getattr(data, "y", None)

    def __len__(self) -> int:
        """Batches per epoch of this rank (the native policy's count)."""
        custom = self._custom_len()
        return _volley.num_batches(self._num_inputs(), self._options) if custom is None else custom

    def set_epoch(self, epoch: int) -> None:
        """Sets the epoch the next iteration runs (``DistributedSampler.set_epoch``); iterating
        also advances it by one, so calling this is optional."""
        self._epoch = _policy.check_epoch(epoch)

    def __iter__(self) -> Iterator[Any]:
        custom = self._custom_epoch()
        if custom is not None:
            return custom
        self._refresh_attributes()
        epoch = self._start_native(self._epoch, self._begin_epoch())
        self._epoch += 1
        return EpochIterator(self, epoch)

    def _consumer_stream(self) -> int:
        """The stream device batches are handed to: torch's current stream on the loader's
        device (0 on the CPU, where the stream is ignored)."""
        device = getattr(self, "device", None)
        return _cuda.current_stream(device) if device is not None else 0

    def __call__(self, index: Any) -> Any:
        """The batch of the input nodes at positions ``index`` (a list, tensor or array), as
        PyG's ``loader(index)`` (its ``collate_fn``): without ``input_nodes`` the positions are
        node ids. VolleyIndexError for a position outside the input nodes."""
        return self.collate_fn(index)

    _call_argument = "index"  # loader(index): the name its errors give the argument

    def collate_fn(self, index: Any) -> Any:  # pylint: disable=method-hidden
        """The batch of the input positions ``index`` (PyG's ``collate_fn``): their input nodes
        as seeds (with their ``input_time``), ``input_id`` = ``index``; batch index 0 of the
        current epoch's seed."""
        positions = _policy.input_positions(index, self._num_inputs(), self._call_argument)
        if len(positions) == 0:
            raise _volley.VolleyValueError(
                f"{self._call_argument} is empty: there is no batch of zero seeds")
        seeds = positions if self.input_nodes is None else self.input_nodes[positions]
        times = self._options.input_time
        self._refresh_attributes()
        raw = _pyg_compat.sample_seeds(self, seeds, None if times is None else times[positions])
        raw["input_id"] = positions
        return self._to_batch(raw)

    def _sampler_native(self, order: np.ndarray) -> Any:
        """The native loader over the input nodes at ``order`` (``_pyg_compat.reordered_native``);
        None on a CUDA device."""
        return None if getattr(self, "device", None) is not None else \
            _pyg_compat.reordered_native(self, order)

    @property
    def node_sampler(self) -> Any:
        """The sampler behind the batches (PyG's ``node_sampler``): a ``volley.NeighborSampler``
        over the loader's graph with its fanouts, ``replace``, weights and seed (a typed loader's
        ``HeteroNeighborSampler``; None where a service samples)."""
        if "_node_sampler" not in self.__dict__:
            from .sampler import NeighborSampler

            options, graph = self._options.sampler, getattr(self, "graph", None)
            self.__dict__["_node_sampler"] = NeighborSampler(
                graph, self.num_neighbors, replace=options.replace, weighted=options.weighted,
                seed=self.seed) if isinstance(graph, Graph) else None
        return self.__dict__["_node_sampler"]

    @node_sampler.setter
    def node_sampler(self, sampler: Any) -> None:
        self.__dict__["_node_sampler"] = sampler

    def _to_batch(self, raw: dict) -> Any:
        out = _tensor.to_output_copy if self.copy else _tensor.to_output
        fields = dict(
            x=out(raw["x"]),
            y=out(raw["y"]),
            edge_index=out(raw["edge_index"]),
            n_id=out(raw["n_id"]),
            e_id=out(raw["e_id"]),
            input_id=out(raw["input_id"]),
            batch_size=int(raw["batch_size"]),
            num_sampled_nodes=list(raw["num_sampled_nodes"]),
            num_sampled_edges=list(raw["num_sampled_edges"]),
        )
        if self.disjoint:
            batch = raw.get("batch")
            fields["batch"] = out(batch) if batch is not None else fields["n_id"][:0]
        if self.subgraph_type != "directional":  # PyG gives no per-hop counts for these
            fields["num_sampled_nodes"] = fields["num_sampled_edges"] = None
        for table in getattr(self, "_node_tables", []):
            fields[table.name] = _pyg_compat.restore(table, out(raw["node_attrs"][table.name]))
        for table in getattr(self, "_edge_tables", []):
            fields[table.name] = _pyg_compat.restore(table, out(raw["edge_attrs"][table.name]))
        if getattr(self, "device", None) is not None:
            fields = self._on_device(fields)
        if self.transform_sampler_output is not None:
            sampled = self.transform_sampler_output(_pyg_compat.sampler_output(fields))
            _pyg_compat.apply_sampler_output(fields, sampled, self.data, self._attribute_names())
        for key in getattr(self, "_python_attrs", []):
            value = self.data[key]
            index = fields["n_id"] if self.data.is_node_attr(key) else fields["e_id"]
            fields[key] = value[index.to(value.device)]
        for key, value in getattr(self, "_graph_attrs", {}).items():
            fields.setdefault(key, value)
        fields = {k: v for k, v in fields.items() if v is not None or k not in ("x", "y")}
        self._add_fields(fields, raw, out)
        if self.pin_memory:
            fields = _pyg_compat.pin(fields)
        edge_index_class = getattr(self, "_edge_index_class", None)
        if self._data_class is not None and _tensor.using_torch():
            fields["edge_index"] = _pyg_compat.wrap_edge_index(
                fields["edge_index"], int(fields["n_id"].shape[0]), edge_index_class
            )
            batch = self._data_class(**fields)
        else:
            batch = Batch(**fields)
        return self.transform(batch) if self.transform is not None else batch

    def _add_fields(self, fields: dict, raw: dict, out: Callable[[Any], Any]) -> None:
        """Subclasses' own batch fields (the link loader's), set last; nothing here."""

    def _attribute_names(self) -> List[str]:
        return [t.name for t in self._node_tables + self._edge_tables] + list(self._python_attrs)

    def _on_device(self, fields: dict) -> dict:
        """Batch fields on the loader's CUDA device: copied there in CPU mode (GPU and UVA
        batches are there already, ``x`` converted to ``feature_dtype`` in C++)."""
        torch = _tensor.torch_module()
        target = _cuda.torch_device(self.device)
        for key, value in fields.items():
            if isinstance(value, torch.Tensor) and value.device != target:
                fields[key] = value.to(target, non_blocking=True)  # CPU mode
        return fields

    def __repr__(self) -> str:
        return f"{self.__class__.__name__}()"  # as PyG's loaders print; options: describe()

    def describe(self) -> str:
        """The loader's options in one line (what ``repr`` showed before PyG's ``NeighborLoader()``)."""
        extras = [f"subgraph_type={self.subgraph_type}" if self.subgraph_type != "directional" else "",
                  "disjoint=True" if self.disjoint else "",
                  f"rank={self.rank}/{self.world_size}" if self.world_size > 1 else "",
                  f"device=cuda:{self.device}, mode={self.mode}"
                  if getattr(self, "device", None) is not None else ""]
        return (f"NeighborLoader(num_neighbors={self.num_neighbors}, batch_size={self.batch_size}, "
                f"batches={len(self)}, shuffle={self.shuffle}, num_workers={self.num_workers}"
                + "".join(f", {extra}" for extra in extras if extra) + ")")

# inspect.signature(NeighborLoader) reads __init__ (not the dispatching __new__), as PyG's tools expect.
NeighborLoader.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
    list(inspect.signature(NeighborLoader.__init__).parameters.values())[1:])
