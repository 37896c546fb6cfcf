"""Writable node data: named ``[num_nodes, dim]`` tables that trainers read and write.

    store = volley.NodeStore(shared=True)                # shared memory: every process sees it
    store.init("h", 2708, 64, init="normal", scale=0.1)   # a table per (node type, name)
    rows = store.pull("h", ids)                          # float32 [len(ids), 64]
    store.push("h", ids, new_rows)                       # assign (or op="add": accumulate)
    store.init("emb", 1000, 32, node_type="author", optimizer_slots=2)

Where the tables live is a parameter: in this process (the default), in shared memory
(``shared=True``), or on the servers of a partitioned dataset (``servers=``: each server holds
the rows of the nodes it owns, every call is split by owner)::

    store = volley.NodeStore(servers=["10.0.0.1:5000", "10.0.0.2:5000"], token=token)
    store.init("emb", num_authors, 64, node_type="author", init="normal", scale=0.1,
               optimizer_slots=2, exist_ok=True)    # every trainer may call it; ids are new ids

A homogeneous graph is the one-type case: ``node_type=None``. Tables hold float32, float16 or
bfloat16 rows, with room for up to two float32 optimizer-state rows beside each row
(``optimizer_slots``; ``volley.optim``'s sparse optimizers keep their state there). See
``volley.nn.Embedding`` for learnable embeddings on top of a table.

Semantics (the native ``NodeState``, ``src/volley/feature/node_state.h``):

- A reader never sees a row half written, whatever thread or process writes it; a writer
  killed mid-row (``kill -9``) leaves the row as it was. Writes to the same row are serialised;
  a call is not atomic as a whole (a reader may see some of its rows written, others not yet).
- Repeated ids in one call: pushes apply positions in order (``assign`` keeps the last
  position's value, ``add`` adds each in turn, as ``index_add_``); optimizer steps sum an id's
  gradients first (in position order) and apply the sum once. Results do not depend on the
  thread count, nor on the placement: a table on the servers holds, bit for bit, what a local
  one holds after the same calls.
- On the servers, a table lives in the servers' memory (a restarted server has lost it:
  checkpoint with ``state_dict``), ids are the partitioned (new) ids of the node type, and a
  call is split over the servers (each server's part of it as above).
- ``shared=True`` puts tables in anonymous shared memory: the store pickles by handle
  (``torch.multiprocessing`` spawn, DDP), and a write by one process is seen by all.
  ``share_memory_()`` moves a local store there (before other threads use it).
- ``state_dict()`` / ``load_state_dict()`` and ``save(path)`` / ``load(path)`` checkpoint
  every table bit for bit (values, optimizer state and step counts); take them when no writer
  runs (each row is consistent; the set of rows is not a snapshot of one instant otherwise).

The store is a ``torch_geometric.data.FeatureStore`` when PyG is importable: ``put_tensor``,
``get_tensor``, ``update_tensor`` (with ``index=``: those rows), ``remove_tensor``,
``get_tensor_size`` and ``get_all_tensor_attrs`` work on it, ``group_name`` being the node type.
"""

from __future__ import annotations

import os
from typing import Any, Dict, List, Optional, Tuple

import numpy as np

from . import _tensor, _volley
from ._volley import VolleyTypeError, VolleyValueError

__all__ = ["NodeStore"]

DTYPES = ("float32", "float16", "bfloat16")
INITS = ("zeros", "normal", "uniform")
Key = Tuple[Optional[str], str]


def _feature_store_base() -> type:
    try:
        from torch_geometric.data import FeatureStore
    except ImportError:
        return object
    return FeatureStore


def _dtype_name(dtype: Any) -> str:
    name = str(dtype).replace("torch.", "")
    if name not in DTYPES:
        raise VolleyValueError(f"dtype must be one of {', '.join(DTYPES)}, got {dtype!r}")
    return name


def _float_rows(values: Any, count: int, dim: int, what: str) -> np.ndarray:
    torch = _tensor.torch_module()
    if torch is not None and isinstance(values, torch.Tensor):
        values = values.detach().to("cpu", torch.float32).numpy()
    array = np.ascontiguousarray(np.asarray(values, dtype=np.float32))
    if array.shape == (count,) and dim == 1:
        array = array.reshape(count, 1)
    if array.shape != (count, dim):
        raise VolleyValueError(f"{what} of shape {tuple(array.shape)} do not fit {count} ids "
                               f"of dim {dim} (need ({count}, {dim}))")
    return array


class NodeStore(_feature_store_base()):  # type: ignore[misc]
    """Named, writable node tables: local, in shared memory, or on the partition servers.

    Args:
        shared: keep every table in anonymous shared memory (see the module docstring).
        servers: keep every table on the servers of a partitioned dataset: their addresses in
            part order (a list or a comma-separated string), or a ``volley.dist.DistGraph``
            (its addresses and options).
        token, deadline, connect_timeout, tls_ca, tls_cert, tls_key: how to reach the servers,
            as ``volley.dist.DistGraph`` takes them.

    Raises:
        VolleyValueError: ``shared=True`` with ``servers``.
        VolleyConnectionError, VolleyPermissionError: servers unreachable, a wrong token.
    """

    def __init__(self, shared: bool = False, *, servers: Any = None, token: Optional[str] = None,
                 deadline: float = 30.0, connect_timeout: float = 30.0,
                 tls_ca: Any = None, tls_cert: Any = None, tls_key: Any = None):
        if _feature_store_base() is not object:
            super().__init__()
        self._shared = bool(shared)
        self._tables: Dict[Key, Any] = {}
        self._service = None
        self._connect: Optional[Dict[str, Any]] = None
        if servers is not None:
            if self._shared:
                raise VolleyValueError("shared=True and servers= are two placements: pick one")
            self._connect = _connect_options(servers, token, deadline, connect_timeout, tls_ca,
                                             tls_cert, tls_key)
            self._service = _volley.NodeDataService.connect(**self._connect)

    # --- tables ---------------------------------------------------------------------------

    def init(self, name: str, num_nodes: int, dim: int, *, node_type: Optional[str] = None,
             dtype: Any = "float32", init: str = "zeros", scale: float = 1.0, seed: int = 0,
             optimizer_slots: int = 0, exist_ok: bool = False) -> None:
        """Creates table ``name`` (of ``node_type``): ``num_nodes`` rows of ``dim``.

        Args:
            init: ``"zeros"``, ``"normal"`` (mean 0, std ``scale``) or ``"uniform"``
                (``[-scale, scale)``), drawn from ``seed`` (the same table on every run).
            dtype: float32, float16 or bfloat16 (a name or a torch dtype).
            optimizer_slots: float32 state rows per row for ``volley.optim`` (0, 1 for
                SparseAdagrad, 2 for SparseAdam).
            exist_ok: an existing table of the same size, dtype and slots is kept as it is
                (every DDP rank may call init; the first one creates it).

        Raises:
            VolleyValueError: a name that already exists (without ``exist_ok``, or with another
                size, dtype or slots), a bad size, dtype, init or slots; on the servers, a
                ``num_nodes`` other than the node type's.
        """
        key = self._key(name, node_type)
        init = _tensor.check_choice(init, "init", INITS)
        num_nodes = _tensor.check_int(num_nodes, "num_nodes", 0, 2**62)
        dim = _tensor.check_int(dim, "dim", 1, 2**31)
        scale = _tensor.check_real(scale, "scale", 0.0)
        slots = _tensor.check_int(optimizer_slots, "optimizer_slots", 0, 2)
        seed = _tensor.check_int(seed, "seed", 0, 2**64 - 1)
        dtype = _dtype_name(dtype)
        if self._service is not None:
            total = self._service.num_nodes(node_type or "")
            if num_nodes != total:
                raise VolleyValueError(f"node data {self._describe(key)}: num_nodes {num_nodes} "
                                       f"is not the served node count {total}")
            self._tables[key] = _volley.RemoteNodeState.create(
                self._service, name, node_type or "", dim, dtype, slots, init, scale, seed,
                bool(exist_ok))
            return
        old = self._tables.get(key)
        if old is not None:
            if not exist_ok or (old.rows, old.dim, old.dtype, old.state_slots) != (
                    num_nodes, dim, dtype, slots):
                raise VolleyValueError(
                    f"node data {self._describe(key)} already exists as [{old.rows}, {old.dim}] "
                    f"{old.dtype} with {old.state_slots} slot(s) (remove it first, or push to it)")
            return
        table = _volley.NodeState.create(num_nodes, dim, dtype, slots, self._shared)
        if init != "zeros":
            table.initialize(init, scale, seed)
        self._tables[key] = table

    def table(self, name: str, node_type: Optional[str] = None) -> Any:
        """The native table (``_volley.NodeState``) behind ``name``. VolleyValueError if none."""
        key = self._key(name, node_type)
        table = self._tables.get(key)
        if table is None and self._service is not None:  # made by another trainer
            table = self._tables[key] = _volley.RemoteNodeState.open(
                self._service, name, node_type or "")
        if table is None:
            known = ", ".join(self._describe(k) for k in self._tables) or "none"
            raise VolleyValueError(f"no node data {self._describe(key)} (known: {known})")
        return table

    def attach_feature(self, name: str, feature: Any, *,
                       node_type: Optional[str] = None) -> None:
        """Makes a read-only feature table readable as node data ``name`` (of ``node_type``):
        a ``volley.Feature`` (host memory, shared memory, a memory-mapped file, a tiered cache),
        an ``.npy`` path (memory-mapped read-only) or a 2-d array / tensor. ``pull`` and PyG's
        ``get_tensor`` gather its rows; a push, optimizer step, ``update_tensor`` or
        ``load_state_dict`` raises ``VolleyValueError`` naming it (copy the rows into a table
        made with ``init`` to write them). Checkpoints and pickling leave it out.

        Raises:
            VolleyValueError: a name that already exists.
        """
        from .feature import Feature

        key = self._key(name, node_type)
        if key in self._tables:
            raise VolleyValueError(f"node data {self._describe(key)} already exists")
        if not isinstance(feature, Feature):
            feature = Feature().from_mmap(feature) if isinstance(feature, (str, os.PathLike)) \
                else Feature(feature)
        self._tables[key] = _FeatureTable(feature, self._describe(key))

    def remove(self, name: str, node_type: Optional[str] = None) -> None:
        """Drops a table (other processes that attached keep their mapping; on the servers,
        the table is gone for every trainer)."""
        table = self.table(name, node_type)
        if self._service is not None:
            table.remove()
        del self._tables[self._key(name, node_type)]

    def names(self) -> List[Key]:
        """``(node_type, name)`` of every table, in creation order."""
        return list(self._tables)

    # --- rows -----------------------------------------------------------------------------

    def pull(self, name: str, ids: Any, *, node_type: Optional[str] = None,
             dtype: Optional[Any] = None) -> Any:
        """Rows ``ids`` of a table: ``[len(ids), dim]``, float32 (or the table's dtype with
        ``dtype=``). VolleyIndexError names the first id out of range and its position."""
        table = self.table(name, node_type)
        out = "float32" if dtype is None else _dtype_name(dtype)
        return _tensor.to_output(table.pull(_tensor.as_ids(ids, "ids"), out))

    def push(self, name: str, ids: Any, values: Any, *, op: str = "assign",
             node_type: Optional[str] = None) -> None:
        """Writes ``values`` (``[len(ids), dim]``, converted to float32 then to the table's
        dtype) to rows ``ids``: ``op="assign"`` replaces them, ``"add"`` accumulates."""
        table = self.table(name, node_type)
        ids = _tensor.as_ids(ids, "ids")
        op = _tensor.check_choice(op, "op", ("assign", "add"))
        table.push(ids, _float_rows(values, len(ids), table.dim, "values"), op)

    def step(self, name: str, ids: Any, grads: Any, *, optimizer: str, lr: float,
             eps: float, betas: Tuple[float, float] = (0.9, 0.999),
             node_type: Optional[str] = None) -> None:
        """One sparse optimizer step on rows ``ids`` (``"adagrad"`` or ``"adam"``, as in
        ``volley.optim``) with float32 gradients ``[len(ids), dim]``; the table needs 1
        (Adagrad) or 2 (Adam) optimizer slots."""
        table = self.table(name, node_type)
        ids = _tensor.as_ids(ids, "ids")
        optimizer = _tensor.check_choice(optimizer, "optimizer", ("adagrad", "adam"))
        table.step(ids, _float_rows(grads, len(ids), table.dim, "gradients"), optimizer,
                   float(lr), float(eps), float(betas[0]), float(betas[1]))

    def aggregate(self, graph: Any, source: str, target: str, op: str = "mean", *,
                  weighted: bool = False, self_loops: bool = True,
                  node_type: Optional[str] = None) -> None:
        """Writes into table ``target`` every node's aggregation of its neighbors' rows of
        ``source`` over ``graph`` (``volley.aggregate``: ``"sum"``, ``"mean"`` or ``"gcn"``),
        e.g. the preprocessing pass ``U = Â X`` of control-variate training. ``target`` is
        created (float32, same width) when it does not exist.

        Where the graph lives decides where the aggregation runs. ``graph`` given (a
        ``volley.Graph`` or a PyG ``Data`` in the table's ids): in this process, the rows of
        tables on the servers travelling here and back. ``graph=None`` on a store with
        ``servers=``: the servers' own partitioned graph, each server aggregating the rows it
        owns with the other parts' rows fetched from its peers (start every server with
        ``peers=``), one server after the other; the same rows, bit for bit, as one
        aggregation of the whole partitioned graph. Homogeneous partitionings; weighted
        ``"gcn"`` is refused there.

        Raises:
            VolleyValueError: a missing ``source``, a ``target`` of another shape, a graph of
                another node count, ``graph=None`` without servers (or servers without peers,
                or ``target`` = ``source``), or the errors of ``volley.aggregate``.
        """
        from .aggregate import OPS, aggregate

        op = _tensor.check_choice(op, "op", OPS)
        table = self.table(source, node_type)
        if graph is None and self._service is None:
            raise VolleyValueError(f"graph=None aggregates over the servers' graph, but this "
                                   f"store's placement is {self.placement!r}: pass the graph")
        if graph is None:
            out = None
        else:
            rows = self.pull(source, np.arange(table.rows, dtype=np.int64), node_type=node_type)
            out = aggregate(graph, rows, op, weighted=weighted, self_loops=self_loops)
            if int(out.shape[0]) != table.rows:
                raise VolleyValueError(f"the graph has {int(out.shape[0])} nodes, node data "
                                       f"{self._describe(self._key(source, node_type))} "
                                       f"{table.rows} rows")
        if self._key(target, node_type) not in self._tables and (
                self._service is None or not self._exists_remotely(target, node_type)):
            self.init(target, table.rows, table.dim, node_type=node_type)
        if self.size(target, node_type) != (table.rows, table.dim):
            raise VolleyValueError(
                f"node data {self._describe(self._key(target, node_type))} is "
                f"{list(self.size(target, node_type))}, the aggregation of "
                f"{self._describe(self._key(source, node_type))} [{table.rows}, {table.dim}]")
        if out is None:
            self.table(target, node_type).aggregate_from(table, op, bool(weighted),
                                                         bool(self_loops))
        else:
            self.push(target, np.arange(table.rows, dtype=np.int64), out, node_type=node_type)

    def _exists_remotely(self, name: str, node_type: Optional[str]) -> bool:
        try:
            self.table(name, node_type)
            return True
        except VolleyValueError:
            return False

    def size(self, name: str, node_type: Optional[str] = None) -> Tuple[int, int]:
        table = self.table(name, node_type)
        return (table.rows, table.dim)

    # --- sharing and checkpoints ----------------------------------------------------------

    @property
    def shared(self) -> bool:
        return self._shared

    @property
    def placement(self) -> str:
        """``"local"``, ``"shared"`` or ``"servers"``."""
        return "servers" if self._service is not None else "shared" if self._shared else "local"

    def share_memory_(self) -> "NodeStore":
        """Moves every table to shared memory (copying it once); returns the store. Tables on
        the servers are reached from every process already: nothing moves."""
        if not self._shared and self._service is None:
            for key, table in self._writable():
                moved = _volley.NodeState.create(table.rows, table.dim, table.dtype,
                                                 table.state_slots, True)
                moved.restore(*table.snapshot())
                self._tables[key] = moved
            self._shared = True
        return self

    def __reduce__(self) -> tuple:
        if self._service is not None:  # the copy connects again and opens the same tables
            return (_connect_store, (self._connect, [key for key, _ in self._writable()]))
        self.share_memory_()
        handles = [(key, table.handle) for key, table in self._writable()]
        return (_attach_store, (handles,))

    def state_dict(self) -> Dict[str, Any]:
        """Every table's values, optimizer state and step count, as numpy arrays (bfloat16
        values as their uint16 bit patterns)."""
        out: Dict[str, Any] = {}
        for (node_type, name), table in self._writable():
            values, state, steps = table.snapshot()
            if table.dtype == "bfloat16":  # no numpy dtype: the bits, through torch
                torch = _tensor.torch_module()
                values = _tensor.to_output(values).view(torch.int16).numpy().view(np.uint16)
            prefix = f"{node_type or ''}/{name}"
            out[f"{prefix}/values"] = np.asarray(values)
            out[f"{prefix}/state"] = np.asarray(state)
            out[f"{prefix}/steps"] = np.asarray(steps, dtype=np.int64)
        return out

    def load_state_dict(self, state: Dict[str, Any]) -> None:
        """Restores tables saved by ``state_dict`` (created first with the same shape, dtype
        and slots). VolleyValueError names a missing entry or a table that does not fit."""
        for (node_type, name), table in self._writable():
            prefix = f"{node_type or ''}/{name}"
            missing = [p for p in ("values", "state", "steps") if f"{prefix}/{p}" not in state]
            if missing:
                raise VolleyValueError(f"the state has no {prefix}/{missing[0]}")
            values = np.ascontiguousarray(state[f"{prefix}/values"])
            if table.dtype == "bfloat16":
                torch = _tensor.torch_module()
                values = torch.from_numpy(values.view(np.int16)).view(torch.bfloat16)
            table.restore(values, np.ascontiguousarray(state[f"{prefix}/state"]),
                          int(state[f"{prefix}/steps"]))

    def save(self, path: str) -> None:
        """``state_dict()`` into one ``.npz`` file (bfloat16 rows as their 16-bit patterns)."""
        np.savez(path, **{key: value for key, value in self.state_dict().items()})

    def load(self, path: str) -> None:
        """Restores a ``save`` file into the tables (created first, as for load_state_dict)."""
        with np.load(path) as archive:
            self.load_state_dict({key: archive[key] for key in archive.files})

    # --- torch_geometric.data.FeatureStore ------------------------------------------------

    def _put_tensor(self, tensor: Any, attr: Any) -> bool:
        name, node_type, index = attr.attr_name, attr.group_name, attr.index
        if self._key(name, node_type) not in self._tables:
            if index is not None:
                raise VolleyValueError(f"put_tensor with index= needs node data "
                                       f"{self._describe(self._key(name, node_type))} to exist")
            shape = _tensor.shape_of(tensor)
            dim = 1 if len(shape) == 1 else int(np.prod(shape[1:]))
            self.init(name, shape[0], dim, node_type=node_type,
                      dtype=_tensor.dtype_name(tensor) if _tensor.dtype_name(tensor) in DTYPES
                      else "float32")
            index = np.arange(shape[0], dtype=np.int64)
        self.push(name, self._index(index, name, node_type), _rows_2d(tensor),
                  node_type=node_type)
        return True

    def _get_tensor(self, attr: Any) -> Any:
        name, node_type = attr.attr_name, attr.group_name
        if self._key(name, node_type) not in self._tables:
            return None
        return self.pull(name, self._index(attr.index, name, node_type), node_type=node_type)

    def _remove_tensor(self, attr: Any) -> bool:
        if self._key(attr.attr_name, attr.group_name) not in self._tables:
            return False
        self.remove(attr.attr_name, attr.group_name)
        return True

    def update_tensor(self, tensor: Any, *args: Any, **kwargs: Any) -> bool:
        """Writes rows in place (``index=``: those rows; None: every row)."""
        attr = self._tensor_attr_cls.cast(*args, **kwargs)
        return self._put_tensor(tensor, attr)

    def _get_tensor_size(self, attr: Any) -> Optional[Tuple[int, ...]]:
        if self._key(attr.attr_name, attr.group_name) not in self._tables:
            return None
        return self.size(attr.attr_name, attr.group_name)

    def get_all_tensor_attrs(self) -> List[Any]:
        from torch_geometric.data import TensorAttr

        return [TensorAttr(group_name=node_type, attr_name=name, index=None)
                for node_type, name in self._tables]

    # --- helpers --------------------------------------------------------------------------

    def _writable(self) -> List[Tuple[Key, Any]]:
        """The tables, without the read-only features (attach_feature)."""
        return [(key, t) for key, t in self._tables.items() if not isinstance(t, _FeatureTable)]

    def _index(self, index: Any, name: str, node_type: Optional[str]) -> np.ndarray:
        rows = self.table(name, node_type).rows
        if index is None:
            return np.arange(rows, dtype=np.int64)
        if isinstance(index, slice):
            return np.arange(rows, dtype=np.int64)[index]
        if isinstance(index, (int, np.integer)):
            return np.asarray([index], dtype=np.int64)
        return _tensor.as_ids(index, "index")

    @staticmethod
    def _key(name: Any, node_type: Any) -> Key:
        if not isinstance(name, str) or not name:
            raise VolleyTypeError(f"a node-data name is a non-empty string, got {name!r}")
        if node_type is not None and not isinstance(node_type, str):
            raise VolleyTypeError(f"node_type is a string or None, got {node_type!r}")
        return (node_type, name)

    @staticmethod
    def _describe(key: Key) -> str:
        return repr(key[1]) if key[0] is None else f"{key[1]!r} of {key[0]!r}"

    def __repr__(self) -> str:
        tables = ", ".join(f"{self._describe(k)}: [{t.rows}, {t.dim}] {t.dtype}"
                           for k, t in self._tables.items())
        return f"NodeStore({self.placement}; {tables or 'empty'})"


def _rows_2d(tensor: Any) -> Any:
    shape = _tensor.shape_of(tensor)
    if len(shape) <= 2:
        return tensor
    return _tensor.to_numpy(tensor).reshape(shape[0], -1)


def _attach_store(handles: List[Tuple[Key, str]]) -> NodeStore:
    store = NodeStore(shared=True)
    for key, handle in handles:
        store._tables[key] = _volley.NodeState.attach(handle)
    return store



def _connect_options(servers: Any, token: Optional[str], deadline: float, connect_timeout: float,
                     tls_ca: Any, tls_cert: Any, tls_key: Any) -> Dict[str, Any]:
    """NodeDataService.connect's arguments: from a DistGraph, or from addresses and options."""
    import os

    graph_options = getattr(servers, "_connect_options", None)
    if callable(graph_options):
        return graph_options()
    if isinstance(servers, str):
        servers = [a.strip() for a in servers.split(",")]
    addresses = [str(a) for a in servers]
    if not addresses:
        raise VolleyValueError("servers lists no address (one host:port per part)")
    return dict(addresses=addresses, token=token or "",
                deadline_seconds=_tensor.check_seconds(deadline, "deadline"),
                connect_seconds=_tensor.check_seconds(connect_timeout, "connect_timeout"),
                **{key: "" if value is None else os.fspath(value) for key, value in
                   (("tls_ca", tls_ca), ("tls_cert", tls_cert), ("tls_key", tls_key))})


def _connect_store(options: Dict[str, Any], keys: List[Key]) -> NodeStore:
    store = NodeStore.__new__(NodeStore)
    NodeStore.__init__(store)
    store._connect = options
    store._service = _volley.NodeDataService.connect(**options)
    for node_type, name in keys:
        store.table(name, node_type)
    return store


class _FeatureTable:
    """A read-only feature seen as node data: the rows of a native table, refusing writes."""

    state_slots = 0
    steps = 0

    def __init__(self, feature: Any, described: str):
        self.feature, self.described = feature, described
        self.rows, self.dim = int(feature.shape[0]), int(feature.shape[1])
        self.dtype = str(feature.dtype).replace("torch.", "")

    def pull(self, ids: Any, dtype: str) -> Any:
        return self.feature.gather(ids, dtype=dtype)

    def _refuse(self, *_: Any, **__: Any) -> None:
        raise VolleyValueError(f"node data {self.described} is a read-only feature "
                               f"({self.feature!r}): copy its rows into a table made with "
                               "init to write them")

    push = step = restore = _refuse
