"""What both dataset kinds (``Dataset`` and ``HeteroDataset``) share: the native dataset behind
them, its name and graph, and the PyG class that ``to_pyg`` builds."""

from __future__ import annotations

from typing import Any, Tuple

from . import _tensor
from ._volley import VolleyImportError


class NativeDatasetView:
    """A Python view of a native dataset (``_native``); ``_graph_class`` wraps its graph."""

    _graph_class: type
    _native: Any

    @classmethod
    def _from_native(cls, native: Any) -> Any:
        dataset = cls.__new__(cls)
        dataset._native = native
        return dataset

    @property
    def name(self) -> str:
        """The dataset's name."""
        return self._native.name

    @property
    def graph(self) -> Any:
        """The graph: a ``Graph``, or a ``HeteroGraph`` for a typed dataset."""
        return self._graph_class(self._native.graph)

    def _pyg_class(self, class_name: str) -> Tuple[Any, type]:
        """torch and ``torch_geometric.data.<class_name>``, for ``to_pyg``.

        Raises:
            VolleyImportError: torch or torch_geometric is not importable (naming the method).
        """
        what = f"{type(self).__name__}.to_pyg()"
        torch = _tensor.torch_module()
        if torch is None:
            raise VolleyImportError(f"{what} needs torch (and torch_geometric)")
        try:
            from torch_geometric import data as pyg_data
        except ImportError as error:
            raise VolleyImportError(
                f"{what} needs torch_geometric (pip install torch_geometric)") from error
        return torch, getattr(pyg_data, class_name)
