"""Quiver / PyG ``NeighborSampler``-style sampling: ``(n_id, batch_size, adjs)``.

    sampler = volley.NeighborSampler(graph, [15, 10], seed=0)
    n_id, batch_size, adjs = sampler.sample(seeds)
    for i, (edge_index, e_id, size) in enumerate(adjs):   # outermost hop first
        x_target = x[: size[1]]
        x = convs[i]((x, x_target), edge_index)

Sampling is a pure function of (graph, seeds, fanouts, seed, batch index): the same call gives the
same result on any thread count and on the GPU (``device="cuda"``, ``mode="GPU"`` or ``"UVA"``:
the CUDA sampler returns exactly what the CPU sampler returns, as CUDA tensors).
"""

from __future__ import annotations

from typing import Any, List, NamedTuple, Optional, Sequence, Tuple

import numpy as np

from . import _cuda, _temporal, _tensor
from . import _volley
from ._volley import VolleyValueError
from .graph import Graph


class Adj(NamedTuple):
    """One layer's bipartite adjacency, as PyG's ``NeighborSampler`` yields it.

    Attributes:
        edge_index: int64 [2, E] local ids; row 0 indexes the layer's sources (the first
            ``size[0]`` nodes of ``n_id``), row 1 its targets (the first ``size[1]`` nodes).
        e_id: int64 [E] ids of the sampled edges in the graph (position in the input COO).
        size: ``(num_sources, num_targets)``.
    """

    edge_index: Any
    e_id: Any
    size: Tuple[int, int]


class SampledSubgraph(NamedTuple):
    """One batch as the native sampler returns it (see ``NeighborSampler.sample_subgraph``)."""

    n_id: Any
    row: Any
    col: Any
    e_id: Any
    num_sampled_nodes: List[int]
    num_sampled_edges: List[int]
    batch: Any = None  # temporal sampling: the seed position of each node's tree (PyG batch)


class NeighborSampler:
    """Multi-hop neighbor sampler over a ``volley.Graph`` (CPU).

    A drop-in for PyG's old ``torch_geometric.loader.NeighborSampler`` and Quiver's
    ``GraphSageSampler`` outputs: ``sample(seeds)`` returns ``(n_id, batch_size, adjs)``.

    Semantics differ from PyG's old sampler in one way, the one PyG's own ``NeighborLoader`` has:
    each node is expanded once, at the hop where it is first reached, and layer ``h``'s adjacency
    is the union of the edges sampled in hops ``0..h``.

    Args:
        graph: a ``volley.Graph``, or an ``edge_index`` [2, E] tensor/array (built into a graph
            with in-neighbor rows).
        sizes: fanout per hop, innermost first (``[15, 10]``: 15 neighbors of each seed, then 10
            of each of those); ``-1`` takes all neighbors.
        replace: sample with replacement.
        weighted: sample proportionally to edge weights (the graph must have weights).
        seed: random seed; with ``batch_index`` it fixes the result.
        device: None or ``"cpu"`` (sample on the CPU), or a CUDA device (``"cuda"``,
            ``"cuda:N"``, an ordinal, a ``torch.device``): sample on that GPU and return CUDA
            tensors, bit-identical to the CPU sampler's. Quiver's ``GraphSageSampler(csr_topo,
            sizes, device, mode)`` order works positionally.
        time_attr: temporal sampling (PyG's ``time_attr``): ``"node_time"`` or ``"edge_time"``
            (the graph's times), or ``"time"`` (node time when the graph has it, else edge time).
            A neighbor joins a seed's subgraph only when its time is at or before the seed's
            time (``seed_time=`` of ``sample`` / ``sample_subgraph``), which travels down the
            seed's tree; sampling is then disjoint (each seed its own tree, ``batch`` set, seeds
            may repeat) and rows are sorted by the time (``Graph.sort_by_time``; ``self.graph``
            is the sorted graph, edge ids following their edges). See docs/guide/sampling.md.
        temporal_strategy: ``"uniform"`` (uniform among the admissible neighbors) or ``"last"``
            (the most recent ones).
        mode: ``"GPU"`` (graph copied to device memory), ``"UVA"`` (graph in pinned host memory
            read by the GPU: larger graphs, host-link bandwidth) or ``"CPU"``. Default: ``"UVA"``
            with a CUDA device (Quiver's default), ``"CPU"`` without. The results are ready on
            torch's current stream at the time of the ``sample`` call (it waits on an event; the
            host does not) and their memory is freed in that stream's order.

    Raises:
        VolleyValueError: empty ``sizes``, a size below -1, ``weighted`` without weights, a bad
            ``device`` or ``mode``, an unknown ``time_attr`` or one the graph has no times for, an
            unknown ``temporal_strategy``, ``weighted`` with ``time_attr``.
        VolleyRuntimeError: a CUDA device asked of a build without CUDA, or of a machine
            without that device.
    """

    _time_source = "none"  # "node" / "edge" with time_attr (subclasses sample without time)
    #: The ``time_attr`` the sampler samples by (None: no time).
    time_attr: Optional[str] = None
    #: ``"uniform"`` or ``"last"`` (temporal sampling).
    temporal_strategy = "uniform"

    def __init__(
        self,
        graph: Any,
        sizes: Sequence[int],
        device: Any = None,
        mode: Optional[str] = None,
        *,
        replace: bool = False,
        weighted: bool = False,
        seed: int = 0,
        time_attr: Optional[str] = None,
        temporal_strategy: str = "uniform",
    ):
        if not isinstance(graph, Graph):
            graph = Graph.from_edge_index(graph)
        self.temporal_strategy = _temporal.check_strategy(temporal_strategy)
        self.time_attr = time_attr
        graph, self._time_source = _graph_times(graph, time_attr)
        self.graph = graph
        self._configure(sizes, replace, weighted, seed, has_weights=graph.weights is not None)
        self.device, self.mode = _cuda.resolve(device, mode)
        # One native sampler: where the graph lives (host, or placed for the GPU) picks the kernel.
        self._use_graph(graph._csr if self.mode == "CPU" else _cuda.place_graph(graph, self.mode, self.device))

    def _use_graph(self, native_graph: Any) -> None:
        """Builds the one native sampler over ``native_graph`` (the host ``Csr``, or the graph
        placed for ``self.device``: a native ``CudaGraph``, kept as ``self._placed``)."""
        self._placed = None if self.mode == "CPU" else native_graph
        self._native_sampler = _volley.NeighborSampler(
            native_graph,
            self.sizes,
            self.replace,
            self.weighted,
            self.seed,
            time_source=self._time_source,
            temporal_strategy=self.temporal_strategy,
        )

    def _configure(
        self, sizes: Sequence[int], replace: bool, weighted: bool, seed: int, *, has_weights: bool
    ) -> None:
        """Checks and stores the options (shared with ``volley.dist.DistSampler``)."""
        self.sizes = [_tensor.check_int(size, "sizes[]", -(2**31), 2**31 - 1) for size in sizes]
        if not self.sizes:
            raise VolleyValueError("sizes must list at least one hop, e.g. [15, 10]")
        for hop, size in enumerate(self.sizes):
            if size < -1:
                raise VolleyValueError(
                    f"size {size} at hop {hop} is invalid: use >= 0, or -1 for all"
                )
        if weighted and not has_weights:
            raise VolleyValueError("weighted sampling needs edge weights, but the graph has none")
        self.replace = bool(replace)
        self.weighted = bool(weighted)
        self.seed = _tensor.check_int(seed, "seed", 0, 2**64 - 1)
        self._calls = 0
        self.device: Optional[int] = None
        self.mode = "CPU"
        self._native_sampler: Any = None
        self._placed: Any = None  # the graph placed for the GPU (a native CudaGraph)

    def _sample_raw(self, seeds: np.ndarray, batch_index: int) -> dict:
        """The native sampler's dict for int64 ``seeds`` (overridden by ``DistSampler``)."""
        stream = _cuda.current_stream(self.device) if self.device is not None else 0
        return self._native_sampler.sample(seeds, batch_index, stream)

    def sample_subgraph(
        self, seeds: Any, batch_index: Optional[int] = None, seed_time: Any = None
    ) -> SampledSubgraph:
        """Samples one batch and returns the raw result (zero-copy arrays).

        Args:
            seeds: int64 node ids (tensor, array or list), distinct (may repeat when temporal).
            batch_index: counter mixed into the randomness; defaults to the number of earlier
                calls, so repeated calls differ but a fresh sampler repeats them.
            seed_time: temporal sampling (``time_attr`` set): one integer time per seed (PyG's
                ``NodeSamplerInput.time``); with node time it defaults to each seed's own time.

        Returns:
            ``SampledSubgraph``: ``n_id`` (seeds first, then new nodes in order of first
            appearance), ``row``/``col`` (local target/source of each edge), ``e_id``, and per-hop
            counts.

        Raises:
            VolleyIndexError: a seed out of range. VolleyValueError: a duplicate seed (untimed);
            ``seed_time`` without ``time_attr``, missing with edge time, of the wrong length or
            dtype.
        """
        if batch_index is None:
            batch_index = self._calls
        batch_index = _tensor.check_int(batch_index, "batch_index", 0, 2**63 - 1)
        self._calls += 1
        ids = _tensor.as_ids(seeds, "seeds")
        if self._time_source == "none" and seed_time is None:
            out = self._sample_raw(ids, batch_index)
        else:
            times = _seed_times(seed_time, self._time_source, self.graph, ids)
            stream = _cuda.current_stream(self.device) if self.device is not None else 0
            out = self._native_sampler.sample(ids, batch_index, stream, seed_times=times)
        return SampledSubgraph(
            _tensor.to_output(out["n_id"]),
            _tensor.to_output(out["row"]),
            _tensor.to_output(out["col"]),
            _tensor.to_output(out["e_id"]),
            list(out["num_sampled_nodes"]),
            list(out["num_sampled_edges"]),
            _tensor.to_output(out["batch"]) if out.get("batch") is not None else None,
        )

    def sample(
        self, seeds: Any, batch_index: Optional[int] = None, seed_time: Any = None
    ) -> Tuple[Any, int, List[Adj]]:
        """Samples one batch in PyG ``NeighborSampler`` format (``seed_time`` as in
        ``sample_subgraph``; the tree of each node is then ``sample_subgraph``'s ``batch``).

        Returns:
            ``(n_id, batch_size, adjs)``: ``adjs`` lists one ``Adj`` per hop from the outermost
            hop in (the order GraphSAGE layers consume them).
        """
        sub = self.sample_subgraph(seeds, batch_index, seed_time)
        node_counts = np.cumsum(sub.num_sampled_nodes)
        edge_counts = np.cumsum(sub.num_sampled_edges)
        stack = _stack
        edge_index = stack(sub.col, sub.row)
        adjs = []
        for hop in range(len(self.sizes)):
            end = int(edge_counts[hop])
            adjs.append(
                Adj(
                    edge_index[:, :end],
                    sub.e_id[:end],
                    (int(node_counts[hop + 1]), int(node_counts[hop])),
                )
            )
        return sub.n_id, int(sub.num_sampled_nodes[0]), adjs[::-1]

    def share_memory_(self) -> "NeighborSampler":
        """Moves the graph into shared memory (``Graph.share_memory_``; a
        ``HeteroNeighborSampler``'s every edge type, ``HeteroGraph.share_memory_``) and returns
        self.

        Pickling the sampler sends its graph by handle plus its options (and its call count, so
        the copy continues the same sequence of default batch indices); a child process then
        samples exactly what this one would, from the same memory. Pickling shares the graph
        first when it is not shared yet.

        A GPU sampler (``mode`` GPU or UVA) also moves its placed graph, once, to memory other
        processes open by handle (CUDA IPC for device memory; pinned memory registered in each
        process): the unpickled sampler opens the same placed graph, with no second copy on
        the device (docs/guide/gpu.md, "Sharing placed objects between processes").
        """
        self.graph.share_memory_()
        if self._placed is not None and not self._placed.shareable:
            self._placed.share_memory_()  # in place: one copy, the old arrays freed
            self._use_placed(self._placed)
        return self

    def _use_placed(self, placed: Any) -> None:
        """Samples with the CUDA kernels over ``placed`` (a native ``CudaGraph``: placed here, or
        opened by handle in another process)."""
        self.device, self.mode = placed.device, placed.mode
        self._use_graph(placed)

    def _pickled_options(self) -> dict:
        """The options a copy is built with on the CPU (``_rebuild_sampler``)."""
        return dict(sizes=list(self.sizes), replace=self.replace, weighted=self.weighted,
                    seed=self.seed, calls=self._calls, time_attr=self.time_attr,
                    temporal_strategy=self.temporal_strategy)

    def __reduce__(self) -> tuple:
        """Pickled as its graph (by handle) and its options: the copy gives the same batches. On
        a CUDA device also the placed graph, by handle (``share_memory_`` first): the copy opens
        this process's placement instead of placing the graph again (either graph kind)."""
        placed = None
        if self._placed is not None:
            self.share_memory_()
            placed = self._placed
        return _rebuild_sampler, (type(self), self.graph, self._pickled_options(), placed)

    def __repr__(self) -> str:
        return (
            f"NeighborSampler(sizes={self.sizes}, replace={self.replace}, "
            f"weighted={self.weighted}, seed={self.seed}, "
            + (f"device=cuda:{self.device}, mode={self.mode}, " if self.mode != "CPU" else "")
            + f"graph={self.graph!r})"
        )


def _rebuild_sampler(cls: type, graph: Any, options: dict, placed: Any = None) -> Any:
    """Unpickles a sampler of class ``cls`` (either graph kind): its graph (attached by handle)
    plus its options, and on a CUDA device the placed graph, opened by handle (no second device
    copy)."""
    calls = options.pop("calls", None)
    sampler = cls(graph, **options)
    if placed is not None:
        sampler._use_placed(placed)
    if calls is not None:
        sampler._calls = calls
    return sampler


def _graph_times(graph: Graph, time_attr: Optional[str]) -> Tuple[Graph, str]:
    """The graph to sample by ``time_attr`` (rows sorted by that time) and the time source."""
    if time_attr is None:
        return graph, "none"
    if time_attr not in ("node_time", "edge_time", "time"):
        raise VolleyValueError(
            f"time_attr={time_attr!r}: a graph's times are 'node_time', 'edge_time' or 'time' "
            "(node time when present, else edge time)"
        )
    return _temporal.attach(graph, None, time_attr, is_dataset=True)


def _seed_times(seed_time: Any, time_source: str, graph: Graph, seeds: np.ndarray) -> np.ndarray:
    """The int64 time of each seed (``_temporal.input_times``' rules, named for the sampler)."""
    if time_source == "none":
        raise VolleyValueError("seed_time was given, but the sampler has no time_attr")
    if seed_time is None and time_source == "edge":
        raise VolleyValueError("sampling by edge time needs seed_time (one time per seed)")
    if seed_time is not None:
        times = _tensor.to_numpy(seed_time)
        if times.ndim != 1 or times.shape[0] != len(seeds):
            raise VolleyValueError(
                f"seed_time must have one entry per seed ({len(seeds)}), got shape {list(times.shape)}"
            )
    return _temporal.graph_input_times(seed_time, time_source, graph, seeds, "seed_time")


def _stack(first: Any, second: Any) -> Any:
    torch = _tensor.torch_module()
    if torch is not None and isinstance(first, torch.Tensor):
        return torch.stack([first, second])
    return np.stack([first, second])
