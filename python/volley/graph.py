"""The graph: compressed sparse rows with optional edge ids and weights.

Row ``v`` lists ``v``'s neighbors. With the default orientation ``"in"`` they are the *sources*
of the edges into ``v`` — what PyG's message passing aggregates; ``"out"`` lists the targets of
``v``'s out-edges.

Example:
    >>> import volley
    >>> g = volley.Graph.from_edge_index([[0, 1, 2], [1, 2, 0]])
    >>> g.num_nodes, g.num_edges, g.orientation
    (3, 3, 'in')
    >>> g.indices                  # row v: the sources of v's in-edges
    tensor([2, 0, 1], dtype=torch.int32)
"""

from __future__ import annotations

from typing import Any, Optional

import numpy as np

from . import _share, _tensor
from ._volley import Csr, VolleyTypeError, VolleyValueError, build_csr

_INDEX_DTYPES = ("int32", "int64")


class Graph:
    """An immutable graph in CSR form, built and stored by Volley's native core.

    Array properties are zero-copy views of the graph's memory (torch tensors when torch is
    importable, numpy arrays otherwise) and keep that memory alive on their own. Graphs loaded
    from a memory-mapped dataset are read-only: see ``volley._tensor`` for what that means for
    torch tensors.

    Build one with ``Graph.from_edge_index`` or ``Graph.from_csr``; ``Dataset.graph`` holds one.
    """

    def __init__(self, csr: Csr):
        """Wraps a native ``_volley.Csr`` (use the ``from_*`` constructors instead)."""
        if not isinstance(csr, Csr):
            raise VolleyTypeError(f"Graph wraps a volley._volley.Csr, got {type(csr).__name__}")
        self._csr = csr

    @classmethod
    def from_edge_index(
        cls,
        edge_index: Any,
        num_nodes: Optional[int] = None,
        *,
        undirected: bool = False,
        drop_self_loops: bool = False,
        drop_duplicates: bool = False,
        orientation: str = "in",
        edge_weight: Any = None,
        node_time: Any = None,
        edge_time: Any = None,
    ) -> "Graph":
        """Builds a graph from a COO edge list in PyG's layout.

        Edge ``i`` goes from ``edge_index[0, i]`` to ``edge_index[1, i]``. Each row's neighbors
        come out sorted; edge ids record each edge's position ``i`` so edge features stay
        addressable. The build is parallel and runs without the GIL.

        Args:
            edge_index: int32 or int64 array of shape [2, E] (torch tensor on any device, numpy
                array, or nested lists). Contiguous CPU rows are read without copying.
            num_nodes: number of nodes; default ``edge_index.max() + 1`` (0 without edges).
            undirected: also add every edge reversed (the reverse keeps its edge's id).
            drop_self_loops: leave out edges ``v -> v``.
            drop_duplicates: keep one edge per (row, neighbor), the one with the smallest id.
            orientation: ``"in"`` (row v = sources of edges into v, PyG's convention) or
                ``"out"`` (row v = targets of edges out of v).
            edge_weight: optional float array of shape [E], finite and >= 0; cast to float32.
            node_time: optional int64 [N] timestamp per node (temporal sampling).
            edge_time: optional int64 [E] timestamp per input edge, in ``edge_index`` order; it
                follows its edge into CSR order (a reversed edge keeps its edge's time).

        Returns:
            The new ``Graph``.

        Raises:
            VolleyValueError: ``edge_index`` is not [2, E] of int32/int64, ``edge_weight`` has
                the wrong length or a negative/non-finite value, or a bad ``orientation``.
            VolleyIndexError: an id is negative or >= ``num_nodes`` (the message names the edge
                position and the id).
        """
        if isinstance(edge_index, (list, tuple)) and all(
            isinstance(row, (list, tuple)) and len(row) == 0 for row in edge_index
        ):
            edge_index = np.zeros((len(edge_index), 0), dtype=np.int64)  # [[], []]: no edges
        edge_index = _tensor.to_input(edge_index)
        shape = _tensor.shape_of(edge_index)
        if len(shape) != 2 or shape[0] != 2:
            raise VolleyValueError(f"edge_index must have shape [2, E], got {list(shape)}")
        dtype = _tensor.dtype_name(edge_index)
        if dtype not in _INDEX_DTYPES:
            raise VolleyValueError(f"edge_index must hold int32 or int64 node ids, got {dtype}")
        if num_nodes is not None:
            num_nodes = _tensor.check_int(num_nodes, "num_nodes", 0, 2**62)
        _tensor.check_choice(orientation, "orientation", ("in", "out"))
        weights = None
        if edge_weight is not None:
            weights = _as_float32(_tensor.to_input(edge_weight))
        try:
            csr = build_csr(
                edge_index[0],
                edge_index[1],
                weights,
                num_nodes=num_nodes,
                orientation=orientation,
                symmetrize=undirected,
                drop_self_loops=drop_self_loops,
                drop_duplicates=drop_duplicates,
            )
        except MemoryError as error:
            raise VolleyValueError(
                f"num_nodes={num_nodes}: the graph's arrays (indptr alone is "
                f"{8 * ((num_nodes or 0) + 1)} bytes) cannot be allocated: out of memory"
            ) from error
        graph = cls(csr)
        if node_time is not None or edge_time is not None:
            if edge_time is not None:
                edge_time = _int64_times(edge_time, "edge_time", shape[1])
                ids = csr.edge_ids
                edge_time = edge_time if ids is None else edge_time[ids]
            graph = graph.with_times(node_time=node_time, edge_time=edge_time)
        return graph

    @classmethod
    def from_csr(
        cls,
        indptr: Any,
        indices: Any,
        edge_ids: Any = None,
        weights: Any = None,
        orientation: str = "in",
    ) -> "Graph":
        """Wraps existing CSR arrays without copying them, after validating them.

        Args:
            indptr: int64 [N + 1], ``indptr[0] == 0``, non-decreasing, ``indptr[N] == E``.
            indices: int32 or int64 [E], each in [0, N); row v's neighbors are
                ``indices[indptr[v]:indptr[v + 1]]``.
            edge_ids: optional int64 [E], the id of the edge at each CSR position.
            weights: optional float32 [E], finite and >= 0.
            orientation: ``"in"`` or ``"out"`` (see the module docstring).

        Returns:
            A ``Graph`` viewing the given arrays (they are kept alive by the graph and treated as
            read-only: do not modify them afterwards).

        Raises:
            VolleyValueError: a wrong dtype or length, a non-monotone ``indptr``, a bad weight.
            VolleyIndexError: a neighbor id outside [0, N) (position and value in the message).
        """
        csr = Csr.from_arrays(
            _tensor.to_input(indptr),
            _tensor.to_input(indices),
            _tensor.to_input(edge_ids),
            _tensor.to_input(weights),
            orientation=orientation,
            validate=True,
        )
        return cls(csr)

    @property
    def num_nodes(self) -> int:
        """Number of nodes N."""
        return self._csr.num_nodes

    @property
    def num_edges(self) -> int:
        """Number of edges E (stored CSR entries)."""
        return self._csr.num_edges

    @property
    def orientation(self) -> str:
        """``"in"`` (row v holds the sources of edges into v) or ``"out"``."""
        return self._csr.orientation

    @property
    def indptr(self) -> Any:
        """int64 [N + 1]: row v spans ``indices[indptr[v]:indptr[v + 1]]`` (zero-copy)."""
        return _tensor.to_output(self._csr.indptr)

    @property
    def indices(self) -> Any:
        """int32 (N < 2^31) or int64 [E]: neighbor ids, sorted within each row (zero-copy)."""
        return _tensor.to_output(self._csr.indices)

    @property
    def edge_ids(self) -> Any:
        """int64 [E] input-edge position of each CSR entry, or None (identity) (zero-copy)."""
        return _tensor.to_output(self._csr.edge_ids)

    @property
    def weights(self) -> Any:
        """float32 [E] edge weights in CSR order, or None (zero-copy)."""
        return _tensor.to_output(self._csr.weights)

    @property
    def node_time(self) -> Any:
        """int64 [N] timestamp of each node, or None (zero-copy)."""
        return _tensor.to_output(self._csr.node_time)

    @property
    def edge_time(self) -> Any:
        """int64 [E] timestamp of each edge in CSR order, or None (zero-copy)."""
        return _tensor.to_output(self._csr.edge_time)

    def is_sorted_by_time(self, kind: str = "edge") -> bool:
        """Whether every row lists its neighbors in non-decreasing ``"edge"`` time (or the
        neighbors' ``"node"`` time); False when the graph has no such times."""
        _tensor.check_choice(kind, "kind", ("edge", "node"))
        present = self._csr.edge_time if kind == "edge" else self._csr.node_time
        unsorted = getattr(self._csr, f"first_row_unsorted_by_{kind}_time")
        return present is not None and unsorted < 0

    def with_times(self, node_time: Any = None, edge_time: Any = None) -> "Graph":
        """This graph (arrays shared) with timestamps for temporal sampling attached.

        Args:
            node_time: int64 [N] per node, or None.
            edge_time: int64 [E] per edge **in CSR order** (``from_edge_index(edge_time=...)``
                takes input order), or None.

        Raises:
            VolleyValueError: a length other than N / E, or a non-integer dtype.
        """
        node = None if node_time is None else _int64_times(node_time, "node_time", self.num_nodes)
        edge = None if edge_time is None else _int64_times(edge_time, "edge_time", self.num_edges)
        return Graph(self._csr.with_times(node, edge))

    def sort_by_time(self, kind: str = "auto") -> "Graph":
        """The same graph with each row stably sorted by time, so that temporal sampling finds
        the admissible neighbors by binary search and ``temporal_strategy="last"`` can run.

        Args:
            kind: ``"edge"`` (edge time), ``"node"`` (the neighbors' node time) or ``"auto"``
                (edge time when the graph has it).

        Returns:
            A new ``Graph``; edge ids, weights and edge times follow their edges (edge ids are
            then stored). Runs without the GIL.

        Raises:
            VolleyValueError: an unknown ``kind``, or no times of that kind.
        """
        _tensor.check_choice(kind, "kind", ("auto", "edge", "node"))
        if kind == "auto":
            kind = "edge" if self._csr.edge_time is not None else "node"
        return Graph(self._csr.sort_rows_by_time(kind))

    def degree(self) -> Any:
        """Number of neighbors of each node (in-degree for ``"in"`` graphs).

        Returns:
            int64 [N] (a new array).
        """
        return _tensor.to_output(np.diff(self._csr.indptr))

    def transposed(self) -> "Graph":
        """The same edges in the other orientation (a new graph; edge ids and weights follow
        their edges; each row's neighbors sorted). Runs without the GIL."""
        return Graph(self._csr.transposed())

    def to_edge_index(self) -> Any:
        """The edges as a COO ``edge_index`` in PyG's layout, in CSR order.

        Column k is the edge at CSR position k: for an ``"in"`` graph it is
        ``[indices[k], row(k)]`` (source, target), for ``"out"`` ``[row(k), indices[k]]``.
        ``edge_ids`` maps each column back to the input edge.

        Returns:
            int64 [2, E] (a new array).
        """
        indptr = self._csr.indptr
        rows = np.repeat(np.arange(self.num_nodes, dtype=np.int64), np.diff(indptr))
        neighbors = self._csr.indices.astype(np.int64, copy=False)
        pair = (neighbors, rows) if self.orientation == "in" else (rows, neighbors)
        return _tensor.to_output(np.stack(pair))

    def share_memory_(self) -> "Graph":
        """Moves the graph's arrays into shared memory, once, and returns self.

        Arrays already in shared memory are kept (idempotent). Afterwards pickling the graph
        (``torch.multiprocessing.spawn`` arguments, queues, ``broadcast_object_list``) sends
        handles, and the receiving process attaches to the same memory instead of copying it.
        Pickling an unshared graph shares it first. See ``volley._share`` for lifetime rules:
        the memory is freed when the last process lets go, even after ``kill -9``.

        Returns:
            self.
        """
        times = self._csr.node_time, self._csr.edge_time
        self._csr = _share.share_csr(self._csr)
        if any(t is not None for t in times):  # times travel by value (pickled), not through shared memory
            self._csr = self._csr.with_times(*times)
        return self

    @property
    def is_shared(self) -> bool:
        """Whether every array of the graph is in shared memory."""
        from ._volley import csr_is_shared

        return csr_is_shared(self._csr)

    def __reduce__(self) -> tuple:
        self.share_memory_()  # pickling an unshared graph shares it first
        return _rebuild_graph, (_share.csr_state(self._csr), self._csr.node_time, self._csr.edge_time)

    def __copy__(self) -> "Graph":
        return self  # immutable: copies may share (and deepcopy must not move it to shm)

    def __deepcopy__(self, memo: dict) -> "Graph":
        return self

    def __repr__(self) -> str:
        return (
            f"Graph(num_nodes={self.num_nodes}, num_edges={self.num_edges}, "
            f"orientation={self.orientation!r}, index_dtype={self._csr.index_dtype}, "
            f"edge_ids={self._csr.edge_ids is not None}, weights={self._csr.weights is not None})"
        )


def _rebuild_graph(state: tuple, node_time: Any = None, edge_time: Any = None) -> Graph:
    """Unpickles a ``Graph`` by attaching to its shared arrays (times come by value)."""
    csr = _share.attach_csr(state)
    if node_time is not None or edge_time is not None:
        csr = csr.with_times(node_time, edge_time)
    return Graph(csr)


def _int64_times(values: Any, name: str, length: int) -> np.ndarray:
    """``values`` (tensor, array or list of integers) as a 1-d int64 numpy array of ``length``."""
    array = _tensor.to_numpy(values)
    if array.ndim != 1 or array.shape[0] != length:
        raise VolleyValueError(f"{name} must have shape [{length}], got {list(array.shape)}")
    return _tensor.int64_times(array, name)


def _as_float32(values: Any) -> Any:
    """``values`` as float32 (no copy when it already is)."""
    torch = _tensor.torch_module()
    if torch is not None and isinstance(values, torch.Tensor):
        return values if values.dtype == torch.float32 else values.float()
    return np.asarray(values, dtype=np.float32)
