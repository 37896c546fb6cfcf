"""PyTorch Lightning data modules whose loaders are Volley's.

``volley.lightning.LightningNodeData`` / ``LightningLinkData`` are PyG's
(``torch_geometric.data.lightning``) with the same arguments and behaviour; only the loaders they
hand to the trainer differ: Volley's ``NeighborLoader`` / ``LinkNeighborLoader`` (``Data`` and
``HeteroData`` alike), built through ``volley.loader.NodeLoader`` / ``LinkLoader`` from a
``volley.generic_loader.NeighborSampler``::

    from volley.lightning import LightningNodeData     # was: torch_geometric.data.lightning
    datamodule = LightningNodeData(data, num_neighbors=[10, 5], batch_size=128)
    trainer.fit(model, datamodule)

``loader="neighbor"`` (the default) and ``"link_neighbor"`` build Volley's sampler from the
sampler arguments among the keywords (``num_neighbors``, ``replace``, ``time_attr``, ...), as PyG
builds its own. A ``node_sampler`` / ``link_sampler`` passed in is used when it is Volley's or
PyG's ``NeighborSampler``; any other sampler object, and ``loader="full"``, get PyG's own loaders,
as in PyG. Needs ``torch_geometric`` and ``pytorch_lightning`` (or ``lightning``).
"""

from __future__ import annotations

from typing import Any, Dict, Optional

from ._volley import VolleyImportError
from .generic_loader import (
    LinkLoader,
    NeighborSampler,
    NodeLoader,
    _is_pyg_neighbor_sampler,
    sampler_arguments,
)

try:
    from torch_geometric.data import lightning as _pyg_lightning
except ImportError as error:  # pragma: no cover (both test legs have PyG)
    raise VolleyImportError(
        f"volley.lightning needs torch_geometric (pip install torch_geometric): {error}"
    ) from error

__all__ = ["LightningLinkData", "LightningNodeData", "NeighborSampler"]


def _volley_sampler(data: Any, loader: str, sampler: Any, kwargs: Dict[str, Any]) -> Any:
    """The sampler a data module runs: the one given, else (``loader`` 'neighbor' /
    'link_neighbor') Volley's, built from (and taking out of) the sampler keywords in ``kwargs``,
    as PyG's data modules build PyG's."""
    if sampler is not None or loader not in ("neighbor", "link_neighbor"):
        return sampler
    names = sampler_arguments()
    options = {key: kwargs.pop(key) for key in list(kwargs) if key in names}
    return NeighborSampler(data, **options)


def _runs_in_volley(sampler: Any) -> bool:
    return isinstance(sampler, NeighborSampler) or _is_pyg_neighbor_sampler(sampler)


class LightningNodeData(_pyg_lightning.LightningNodeData):
    """PyG's ``LightningNodeData`` (same arguments) whose loaders are Volley's ``NodeLoader``.

    Raises:
        As PyG's (ModuleNotFoundError without pytorch_lightning), and as
        ``volley.loader.NeighborLoader`` for the sampling arguments.
    """

    def __init__(self, data: Any, *args: Any, loader: str = "neighbor",
                 node_sampler: Any = None, **kwargs: Any):
        built = node_sampler is None
        node_sampler = _volley_sampler(data, loader, node_sampler, kwargs)
        super().__init__(data, *args, loader=loader, node_sampler=node_sampler, **kwargs)
        if built and loader != "full":
            self.loader = loader  # PyG calls a sampler passed in "custom"; this one is its own

    def dataloader(self, input_nodes: Any, input_time: Any = None, input_id: Any = None,
                   node_sampler: Optional[Any] = None, **kwargs: Any) -> Any:
        """Volley's loader over ``node_sampler``; PyG's for ``loader="full"`` or another sampler."""
        if self.loader == "full" or not _runs_in_volley(node_sampler):
            return super().dataloader(input_nodes, input_time, input_id,
                                      node_sampler=node_sampler, **kwargs)
        return NodeLoader(self.data, node_sampler=node_sampler, input_nodes=input_nodes,
                          input_time=input_time, input_id=input_id, **kwargs)


class LightningLinkData(_pyg_lightning.LightningLinkData):
    """PyG's ``LightningLinkData`` (same arguments) whose loaders are Volley's ``LinkLoader``.

    Raises:
        As ``LightningNodeData``, and as ``volley.loader.LinkNeighborLoader``.
    """

    def __init__(self, data: Any, *args: Any, loader: str = "neighbor",
                 link_sampler: Any = None, **kwargs: Any):
        built = link_sampler is None
        link_sampler = _volley_sampler(data, loader, link_sampler, kwargs)
        super().__init__(data, *args, loader=loader, link_sampler=link_sampler, **kwargs)
        if built and loader != "full":
            self.loader = loader  # PyG calls a sampler passed in "custom"; this one is its own

    def dataloader(self, input_edges: Any, input_labels: Any = None, input_time: Any = None,
                   input_id: Any = None, link_sampler: Optional[Any] = None,
                   **kwargs: Any) -> Any:
        """Volley's loader over ``link_sampler``; PyG's for ``loader="full"`` or another sampler."""
        if self.loader == "full" or not _runs_in_volley(link_sampler):
            return super().dataloader(input_edges, input_labels, input_time, input_id,
                                      link_sampler=link_sampler, **kwargs)
        return LinkLoader(self.data, link_sampler=link_sampler, edge_label_index=input_edges,
                          edge_label=input_labels, edge_label_time=input_time,
                          input_id=input_id, **kwargs)
