"""What both dataset kinds (``Dataset`` and ``HeteroDataset``) share: the native dataset behind
them, its name and graph, and the PyG class that ``to_pyg`` builds; and what every native view
(the datasets, a ``HeteroGraph``) shares: its memory with other processes."""

from __future__ import annotations

from typing import Any, Callable, Tuple

from . import _tensor
from ._volley import VolleyImportError


class NativeView:
    """A Python view of a native object (``_native``: a dataset of either kind, a typed graph)
    whose arrays other processes attach to."""

    _native: Any
    # The kind's native sharing functions (``_volley``): share, is shared, state, attach.
    _sharing: Tuple[Callable[[Any], Any], ...]

    def share_memory_(self) -> Any:
        """Moves the graph (every edge type's arrays) and, for a dataset, every array into shared
        memory, once, and returns self.

        Arrays already in shared memory are kept (idempotent); memory-mapped arrays are copied
        into shared memory too (one copy for all processes). Afterwards pickling the object
        sends handles and the receiving process attaches to the same memory — zero-copy;
        ``dataset.graph``, its arrays and the loaders built on it use the shared arrays.
        Pickling an unshared object shares it first. Views taken before the call keep the old
        memory. See ``volley._share`` for lifetime rules (nothing leaks, even after
        ``kill -9``).

        Returns:
            self.
        """
        share, is_shared = self._sharing[0], self._sharing[1]
        if not is_shared(self._native):
            self._native = share(self._native)
        return self

    @property
    def is_shared(self) -> bool:
        """Whether the graph (every edge type's arrays) and every array are in shared memory."""
        return bool(self._sharing[1](self._native))

    def __reduce__(self) -> tuple:
        self.share_memory_()  # pickling an unshared object shares it first
        return _attach_view, (type(self), self._sharing[2](self._native))

    @classmethod
    def _from_native(cls, native: Any) -> Any:
        view = cls.__new__(cls)
        view._native = native
        return view


class NativeDatasetView(NativeView):
    """A Python view of a native dataset (``_native``); ``_graph_class`` wraps its graph."""

    _graph_class: type

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


def _attach_view(cls: type, state: tuple) -> Any:
    """Unpickles a view of class ``cls`` (a dataset, a typed graph) by attaching to its shared
    arrays."""
    return cls._from_native(cls._sharing[3](state))
