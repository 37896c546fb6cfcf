"""Whole-graph passes: one aggregation over every node, and layer-wise inference.

    u = volley.aggregate(graph, x, op="gcn")       # U = Â X, every node at once (float32)
    out = volley.layerwise_inference([conv1, conv2], x, data, batch_size=4096,
                                     activation=torch.relu)

``aggregate`` runs in C++ over the CSR (``src/volley/feature/aggregate.h``): N(v) is node v's
in-neighbors (PyG's ``source_to_target`` flow), and

* ``"sum"``:  ``out[v] = Σ_{u ∈ N(v)} w_uv x[u]``
* ``"mean"``: the sum over ``|N(v)|`` (0 for a node without neighbors)
* ``"gcn"``:  PyG's ``GCNConv`` propagation (``gcn_norm`` with self-loops of weight 1) without its
  linear map: ``Σ w_uv x[u] / sqrt(d(u) d(v)) + x[v] / d(v)``, ``d(v) = 1 + Σ_{u ∈ N(v)} w_uv``

with ``w_uv`` the edge weight (``weighted=True``) or 1. Every row is summed by one thread in edge
order: the result is the same, bit for bit, on any number of threads.

``layerwise_inference`` is PyG's ``model.inference(x_all, subgraph_loader)`` pattern as one
call: each layer runs over every node, in batches of target nodes with their full
in-neighborhoods (a one-hop ``volley.loader.NeighborLoader`` with fanout -1), before the next
layer starts; the result equals the model run on the whole graph at once. PyG's ``SAGEConv``
(mean) and ``GCNConv`` (its own normalisation) run over every node at once through
``aggregate`` instead (``_WholeGraph``), when the rows are a float32 tensor in host memory.
"""

from __future__ import annotations

import os
from typing import Any, Callable, Optional, Sequence

import numpy as np

from . import _tensor, _volley
from ._volley import VolleyTypeError, VolleyValueError

__all__ = ["aggregate", "layerwise_inference"]

OPS = ("sum", "mean", "gcn")


def graph_of(graph: Any) -> Any:
    """A ``volley.Graph`` as it is, or the in-CSR ``volley.Graph`` of a PyG ``Data``."""
    from .graph import Graph

    if isinstance(graph, Graph):
        return graph
    edge_index = getattr(graph, "edge_index", None)
    if edge_index is not None:
        return Graph.from_edge_index(edge_index, num_nodes=graph.num_nodes,
                                     edge_weight=getattr(graph, "edge_weight", None))
    raise VolleyTypeError(f"graph must be a volley.Graph or a PyG Data with edge_index, got "
                          f"{type(graph).__name__}")


def aggregate(graph: Any, x: Any, op: str = "mean", *, weighted: bool = False,
              self_loops: bool = True) -> Any:
    """Every node's row from its neighbors' rows of ``x`` (see the module docstring).

    Args:
        graph: a ``volley.Graph`` (its CSR rows are the targets) or a PyG ``Data``.
        x: float32 ``[num_nodes, dim]`` rows: a tensor or array in host memory (aggregated by
            the CPU's threads), or a CUDA tensor (aggregated on its device by the GPU kernel,
            which gives the CPU's result bit for bit; the result stays on the device).
        op: ``"sum"``, ``"mean"`` or ``"gcn"``.
        weighted: multiply by the graph's edge weights.
        self_loops: ``"gcn"`` only: include PyG's self-loops (its default).

    Returns:
        float32 ``[num_nodes, dim]`` (a tensor when torch is importable).

    Raises:
        VolleyValueError: another dtype or shape, an unknown op, ``weighted`` without weights.
        VolleyIndexError: a neighbor id outside ``x``'s rows.
    """
    op = _tensor.check_choice(op, "op", OPS)
    torch = _tensor.torch_module()
    if torch is not None and isinstance(x, torch.Tensor) and x.is_cuda:
        # On the tensor's device (the GPU kernel; the result is a tensor there).
        if x.dim() != 2 or x.dtype != torch.float32:
            raise VolleyValueError(f"x must be float32 [num_nodes, dim], got {x.dtype} "
                                   f"{tuple(x.shape)}")
        return _tensor.to_output(_volley.aggregate(graph_of(graph)._csr, x.contiguous(), op,
                                                   bool(weighted), bool(self_loops)))
    rows = _tensor.to_numpy(x) if not isinstance(x, np.ndarray) else x
    if rows.ndim != 2 or rows.dtype != np.float32:
        raise VolleyValueError(f"x must be float32 [num_nodes, dim], got {rows.dtype} "
                               f"{tuple(rows.shape)}")
    return _tensor.to_output(_volley.aggregate(graph_of(graph)._csr, np.ascontiguousarray(rows),
                                               op, bool(weighted), bool(self_loops)))


def layerwise_inference(layers: Sequence[Callable], x: Any, data: Any, *, batch_size: int = 4096,
                        activation: Optional[Callable] = None, edge_weight: Any = None,
                        num_workers: int = 0, device: Any = None, store: Any = None,
                        names: Optional[Sequence[str]] = None) -> Any:
    """Every node's output of a GNN, one layer at a time over full neighborhoods.

    Args:
        layers: the layers in order, each called as ``layer(x_block, edge_index)`` on a
            bipartite block whose first ``batch_size`` rows are the targets (PyG's convolutions,
            or any callable of that form); the target rows of its output are kept.
        x: the input rows of every node: a ``[num_nodes, dim]`` tensor, a ``volley.Feature``
            (any tier, a disk tier included: the loader's workers gather each block's rows a
            few blocks ahead), or the name of a table of ``store`` (rows are then pulled per
            block, never all at once).
        data: the graph: a PyG ``Data`` (its ``edge_index``) or a ``volley.Graph``.
        batch_size: target nodes per block.
        activation: applied to every layer's output but the last (e.g. ``torch.relu``).
        edge_weight: one weight per edge of ``data`` (default: ``data.edge_weight`` when it has
            one): each block's edges' weights are passed as ``layer(x, edge_index,
            edge_weight)``. Layers that normalise by degree (``GCNConv``) must see the whole
            graph's degrees, not a block's: normalise once on the whole graph and turn the
            layers' own normalisation off::

                edge_index, norm = gcn_norm(data.edge_index, None, n, add_self_loops=True)
                for conv in layers: conv.normalize = False
                out = layerwise_inference(layers, x, Data(edge_index=edge_index, num_nodes=n),
                                          edge_weight=norm, activation=torch.relu)
        num_workers: the loader's sampling threads (0: in the calling thread).
        device: where the layers run (blocks are moved there; outputs come back to the CPU).
        store, names: write layer i's output, block by block, to table ``names[i]`` of this
            ``volley.NodeStore`` (created, float32; any placement: local, shared, the servers)
            and read the next layer's input from it; default names ``layer0``, ``layer1``, ...
            ``store`` may instead be a directory: layer i's output is then written block by
            block to ``<directory>/<names[i]>.npy`` and read back by id through a
            ``volley.Feature`` (the disk tier when the file is over half the RAM), for outputs
            larger than memory.

    Layers whose message passing is one of ``aggregate``'s ops (PyG's ``SAGEConv`` with mean
    aggregation, ``GCNConv`` with its own normalisation on a graph without self-loops) run over
    every node at once, without blocks, when ``x`` is a float32 tensor in host memory and no
    ``store``, ``device`` or edge weights are given.

    Returns:
        The last layer's output for every node, ``[num_nodes, out_dim]`` on the CPU, equal to
        running the layers on the whole graph at once (float rounding aside); with ``store``,
        the name of the table that holds it.

    Raises:
        VolleyValueError: no layers, ``x`` with a row count other than the graph's nodes,
            ``names`` not one per layer, a table name that exists; the store's errors.
    """
    torch = _tensor.torch_module()
    if torch is None:
        from ._volley import VolleyImportError

        raise VolleyImportError("layerwise_inference needs torch")
    from .feature import Feature
    from .graph import Graph
    from .loader import NeighborLoader

    layers = list(layers)
    if not layers:
        raise VolleyValueError("layerwise_inference needs at least one layer")
    num_nodes = data.num_nodes if isinstance(data, Graph) else int(data.num_nodes)
    if isinstance(store, (str, os.PathLike)):
        store = _DirectoryStore(os.fspath(store))
    rows_of = _row_reader(x, store, num_nodes)
    if store is not None:
        names = list(names) if names is not None else [f"layer{i}" for i in range(len(layers))]
        if len(names) != len(layers):
            raise VolleyValueError(f"names lists {len(names)} tables for {len(layers)} layers")
    if edge_weight is None:
        edge_weight = getattr(data, "edge_weight", None)
    whole = None if store is not None or device is not None or edge_weight is not None \
        else _WholeGraph(data)
    loader = None
    current = x
    for index, layer in enumerate(layers):
        with torch.no_grad():
            out = whole.layer(layer, current) if whole is not None else None
        if out is not None:  # the layer over every node at once (see _WholeGraph)
            current = activation(out) if activation is not None and index < len(layers) - 1 \
                else out
            rows_of = current.__getitem__
            continue
        # A volley.Feature's rows (a disk tier, say) are gathered by the loader's workers, a
        # few blocks ahead of the layer; other rows are read by id here.
        reading = index == 0 and isinstance(x, Feature)
        if loader is None or reading:
            source = _block_source(data, num_nodes, edge_weight)
            if reading:
                source.x = x
            loader = NeighborLoader(source, num_neighbors=[-1], batch_size=batch_size,
                                    shuffle=False,
                                    num_workers=max(1, num_workers) if reading else num_workers)
        outputs = []
        with torch.no_grad():
            for batch in loader:
                arguments = [batch.x if reading else rows_of(batch.n_id), batch.edge_index]
                if edge_weight is not None:
                    arguments.append(batch.edge_weight)
                if device is not None:
                    arguments = [a.to(device) for a in arguments]
                out = layer(*arguments)[:batch.batch_size]
                if activation is not None and index < len(layers) - 1:
                    out = activation(out)
                out = out.cpu()
                if store is None:
                    outputs.append(out)
                    continue
                if not outputs:  # the first block fixes the table's width
                    store.init(names[index], num_nodes, int(out.shape[1]))
                    outputs.append(True)
                store.push(names[index], batch.n_id[:batch.batch_size], out.float())
        if reading:
            loader = None  # the next layers' blocks carry no rows
        if store is None:
            current = torch.cat(outputs, dim=0)
            rows_of = current.__getitem__
        else:
            rows_of = _row_reader(names[index], store, num_nodes)
    return current if store is None else names[-1]


class _WholeGraph:
    """Layers whose message passing is one of ``aggregate``'s ops, run over every node at once
    instead of over blocks: PyG's ``SAGEConv`` with mean aggregation (``lin_l(mean_j x_j) +
    lin_r(x_i)``) and ``GCNConv`` with its own normalisation (``Â (x W) + b``), on float32
    rows in host memory, or on a ``volley.Feature``'s rows (any tier, a disk tier included)
    when the layer's maps come first. No block is sampled and no row is gathered twice; as the
    linear maps commute with the aggregation, the narrower side is aggregated (``mean(x) W =
    mean(x W)``), and a Feature's rows are read once, in order, a chunk at a time, through the
    maps. The result equals the layer on the whole graph (float rounding aside)."""

    CHUNK_BYTES = 64 << 20  # a Feature's rows read at once

    def __init__(self, data: Any):
        self.data, self.graph, self.loops = data, None, None

    def _graph(self) -> Any:
        if self.graph is None:
            self.graph = graph_of(self.data)
        return self.graph

    def _has_self_loops(self) -> bool:
        if self.loops is None:
            source, target = _tensor.to_numpy(self._graph().to_edge_index())
            self.loops = bool((source == target).any())
        return self.loops

    def layer(self, layer: Any, x: Any) -> Any:
        """``layer(x, edge_index)`` for every node, or None when the layer is not one of these
        (or x is neither float32 rows in host memory nor a Feature whose rows the layer maps
        before aggregating)."""
        from .feature import Feature

        torch = _tensor.torch_module()
        streamed = isinstance(x, Feature)
        if not streamed and not (isinstance(x, torch.Tensor) and not x.is_cuda
                                 and x.dtype == torch.float32):
            return None
        try:
            from torch_geometric.nn import GCNConv, SAGEConv
        except Exception:  # PyG absent: blocks
            return None
        if type(layer) is SAGEConv and layer.aggr == "mean" and not layer.project:
            out = self._sage(layer, x, streamed)
            if out is not None and layer.normalize:
                out = torch.nn.functional.normalize(out, p=2.0, dim=-1)
            return out
        if (type(layer) is GCNConv and layer.normalize and layer.add_self_loops
                and not layer.improved and not self._has_self_loops()):
            out = aggregate(self._graph(), self._mapped(x, layer.lin.weight), "gcn")
            return out if layer.bias is None else out + layer.bias
        return None

    def _sage(self, layer: Any, x: Any, streamed: bool) -> Any:
        lin_l, lin_r = layer.lin_l, layer.lin_r if layer.root_weight else None
        width = int(lin_l.weight.shape[0])
        if width < int(lin_l.weight.shape[1]):  # narrower after the map: aggregate its output
            weights = [lin_l.weight] + ([lin_r.weight] if lin_r is not None else [])
            mapped = self._mapped(x, _tensor.torch_module().cat(weights))
            out = aggregate(self._graph(), mapped[:, :width].contiguous(), "mean")
            if lin_l.bias is not None:
                out = out + lin_l.bias
            return out if lin_r is None else out + mapped[:, width:]
        if streamed:  # the aggregation would need every row in memory: blocks
            return None
        out = lin_l(aggregate(self._graph(), x.contiguous(), "mean"))
        return out if lin_r is None else out + lin_r(x)

    def _mapped(self, x: Any, weight: Any) -> Any:
        """``x @ weight.T`` (contiguous): at once for a tensor, a chunk of rows at a time, in
        order, for a Feature."""
        torch = _tensor.torch_module()
        if isinstance(x, torch.Tensor):
            return (x @ weight.t()).contiguous()
        rows, dim = int(x.shape[0]), int(x.shape[1])
        out = torch.empty(rows, int(weight.shape[0]), dtype=torch.float32)
        chunk = max(1, self.CHUNK_BYTES // max(1, dim * 4))
        for begin in range(0, rows, chunk):
            end = min(rows, begin + chunk)
            out[begin:end] = x[torch.arange(begin, end)].float() @ weight.t()
        return out


class _DirectoryStore:
    """The NodeStore calls layerwise_inference makes, over ``.npy`` files in a directory: a
    table written block by block through a memory map, read back by id through a
    ``volley.Feature`` once written."""

    def __init__(self, directory: str):
        os.makedirs(directory, exist_ok=True)
        self.directory, self.writing, self.reading = directory, {}, {}

    def _path(self, name: str) -> str:
        return os.path.join(self.directory, f"{name}.npy")

    def init(self, name: str, rows: int, dim: int) -> None:
        path = self._path(name)
        if os.path.exists(path):
            raise VolleyValueError(f"{path} exists: remove it or name another table (names=)")
        self.writing[name] = np.lib.format.open_memmap(path, mode="w+", dtype=np.float32,
                                                       shape=(rows, dim))

    def push(self, name: str, ids: Any, values: Any) -> None:
        self.writing[name][_tensor.to_numpy(ids)] = _tensor.to_numpy(values)

    def _feature(self, name: str) -> Any:
        from .feature import Feature

        if name in self.writing:  # written: flushed and read from the file from now on
            self.writing.pop(name).flush()
        if name not in self.reading:
            path = self._path(name)
            if not os.path.exists(path):
                raise VolleyValueError(f"no table {name!r}: {path} does not exist")
            self.reading[name] = Feature(path)
        return self.reading[name]

    def size(self, name: str) -> tuple:
        return tuple(int(n) for n in self._feature(name).shape)

    def pull(self, name: str, ids: Any) -> Any:
        return self._feature(name)[ids]


def _row_reader(x: Any, store: Any, num_nodes: int) -> Callable:
    """ids -> rows: of a tensor, or of a store's table (checked against the node count)."""
    if isinstance(x, str):
        if store is None:
            raise VolleyValueError(f"x names table {x!r}: pass the store= that holds it")
        rows = store.size(x)[0]
        if rows != num_nodes:
            raise VolleyValueError(f"x has {rows} rows, the graph {num_nodes} nodes")
        return lambda ids: store.pull(x, ids)
    if int(x.shape[0]) != num_nodes:
        raise VolleyValueError(f"x has {int(x.shape[0])} rows, the graph {num_nodes} nodes")
    return x.__getitem__


def _block_source(data: Any, num_nodes: int, edge_weight: Any) -> Any:
    """What the one-hop loader samples: the graph's structure (and ``edge_weight``, which the
    loader carries into each block); node rows come from the caller, by ``n_id``."""
    from torch_geometric.data import Data

    from .graph import Graph

    if isinstance(data, Graph):
        indptr = _tensor.to_numpy(data.indptr).astype(np.int64)
        dst = np.repeat(np.arange(len(indptr) - 1), np.diff(indptr))
        src = _tensor.to_numpy(data.indices).astype(np.int64)
        torch = _tensor.torch_module()
        edge_index = torch.from_numpy(np.stack([src, dst]))
        if edge_weight is not None and data.edge_ids is not None:  # CSR order, by edge id
            eids = _tensor.to_numpy(data.edge_ids).astype(np.int64)
            edge_weight = _tensor.to_output(np.asarray(_tensor.to_numpy(edge_weight))[eids])
    else:
        edge_index = data.edge_index
    source = Data(edge_index=edge_index, num_nodes=num_nodes)
    if edge_weight is not None:
        source.edge_weight = edge_weight
    return source
