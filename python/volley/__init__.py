"""Volley: a fast data path for GNN training (graph storage, sampling, feature collection).

The native core is torch-independent; arrays cross into Python zero-copy and come out as torch
tensors when torch is importable, numpy arrays otherwise.

Example:
    >>> import volley
    >>> cora = volley.datasets.cora()
    >>> g = volley.Graph.from_edge_index(edge_index, num_nodes=100, undirected=True)

Every error Volley raises on purpose derives from ``VolleyError`` and from the matching builtin,
so ``except ValueError`` and ``except volley.VolleyError`` both catch it: ``VolleyValueError``
(ValueError), ``VolleyTypeError`` (TypeError), ``VolleyIndexError`` (IndexError),
``VolleyOSError`` (OSError), ``VolleyRuntimeError`` (RuntimeError), ``VolleyImportError``
(ImportError: torch or torch_geometric missing), ``VolleyNotImplementedError``
(NotImplementedError: an argument whose feature Volley does not have yet) and
``VolleyInternalError`` (a bug); the
distributed service (``volley.dist``) adds ``VolleyConnectionError`` (ConnectionError),
``VolleyTimeoutError`` (TimeoutError) and ``VolleyPermissionError`` (PermissionError).
"""

from ._volley import (
    VolleyConnectionError,
    VolleyError,
    VolleyImportError,
    VolleyIndexError,
    VolleyInternalError,
    VolleyNotImplementedError,
    VolleyOSError,
    VolleyPermissionError,
    VolleyRuntimeError,
    VolleyTimeoutError,
    VolleyTypeError,
    VolleyValueError,
    get_num_threads,
)
from ._policy import set_num_threads
from . import datasets
from .dataset import (
    Dataset,
    Split,
    load_dataset,
    planetoid_split,
    random_split,
    save_dataset,
    verify_dataset,
)
from .edge_split import split_edges
from .feature import Feature, disk_io_support, hotness_by_degree, hotness_by_sampling
from .graph import Graph
from .hetero import HeteroDataset, HeteroGraph
from .hetero_sampler import HeteroNeighborSampler
from .partition import PartitionBook, load_partition, partition
from .hetero_partition import HeteroPartition, HeteroPartitionResult
from .negative import NegativeSampler
from .node_store import NodeStore
from .aggregate import aggregate, layerwise_inference
from .control_variate import ControlVariate
from . import numa
from .sampler import Adj, NeighborSampler
from . import loader
from .link_loader import LinkNeighborLoader as _LinkNeighborLoader
from . import hetero_loader, hetero_link_loader  # the typed loaders register themselves

# volley.loader.LinkNeighborLoader, as PyG's torch_geometric.loader.LinkNeighborLoader: the class
# lives in link_loader.py (it builds on loader.NeighborLoader, so loader.py cannot import it).
loader.LinkNeighborLoader = _LinkNeighborLoader
# PyG's generic loaders over a sampler object (torch_geometric.loader.NodeLoader / LinkLoader).
from .generic_loader import LinkLoader as _LinkLoader, NodeLoader as _NodeLoader  # noqa: E402

loader.NodeLoader, loader.LinkLoader = _NodeLoader, _LinkLoader
from . import dist
from . import _dist_hetero, _dist_hetero_link  # DistNeighborLoader's typed subclasses register

from ._volley import __version__  # noqa: E402 (project(VERSION) in CMakeLists.txt)

__all__ = [
    "Adj",
    "ControlVariate",
    "Dataset",
    "Feature",
    "Graph",
    "HeteroDataset",
    "HeteroGraph",
    "HeteroNeighborSampler",
    "Split",
    "VolleyConnectionError",
    "VolleyError",
    "VolleyImportError",
    "VolleyIndexError",
    "VolleyInternalError",
    "VolleyNotImplementedError",
    "VolleyOSError",
    "VolleyPermissionError",
    "VolleyRuntimeError",
    "VolleyTimeoutError",
    "VolleyTypeError",
    "VolleyValueError",
    "aggregate",
    "datasets",
    "disk_io_support",
    "dist",
    "get_num_threads",
    "HeteroPartition",
    "HeteroPartitionResult",
    "hotness_by_degree",
    "hotness_by_sampling",
    "layerwise_inference",
    "load_dataset",
    "load_partition",
    "loader",
    "NegativeSampler",
    "NeighborSampler",
    "NodeStore",
    "partition",
    "PartitionBook",
    "planetoid_split",
    "random_split",
    "save_dataset",
    "set_num_threads",
    "split_edges",
    "verify_dataset",
]


# Submodules that import torch (or PyTorch Lightning) load on first use: `import volley` stays
# torch-free, and `volley.nn.Embedding` works after `import volley`.
_LAZY_SUBMODULES = ("lightning", "nn", "optim")

# VOLLEY_NUMA_BIND=1: each process (a torchrun rank, say) binds itself to a NUMA node on import.
if __import__("os").environ.get("VOLLEY_NUMA_BIND") == "1":
    numa.bind()


def __getattr__(name: str):
    if name in _LAZY_SUBMODULES:
        import importlib

        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
