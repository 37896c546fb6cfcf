"""``PartitionBook``: which partition owns a new node id (shared by homogeneous and heterogeneous
partitioned datasets; ``volley.PartitionBook``)."""

from __future__ import annotations

from typing import Any, List, Sequence

import numpy as np

from . import _tensor
from ._volley import PartitionBook as _NativeBook


class PartitionBook:
    """Which partition owns a new node id: K + 1 offsets, not an array sized to the graph.

    Args:
        offsets: K + 1 non-decreasing integers starting at 0; partition ``p`` owns
            ``[offsets[p], offsets[p + 1])``.

    Raises:
        VolleyValueError: offsets that do not start at 0 or decrease.
    """

    def __init__(self, offsets: Sequence[int]):
        self._native = offsets if isinstance(offsets, _NativeBook) else _NativeBook(list(offsets))

    @property
    def num_parts(self) -> int:
        """Number of partitions K."""
        return self._native.num_parts

    @property
    def num_nodes(self) -> int:
        """Number of nodes of the whole graph."""
        return self._native.num_nodes

    @property
    def offsets(self) -> List[int]:
        """The K + 1 offsets."""
        return list(self._native.offsets)

    def range(self, part: int) -> range:
        """The new ids owned by ``part``."""
        return range(self._native.begin(part), self._native.end(part))

    def owner_of(self, nodes: Any) -> Any:
        """The partition of a new id (an int) or of each id of an integer array.

        Args:
            nodes: an int, or an integer array / tensor / list of new ids.

        Returns:
            An int for an int; an int64 array (tensor when torch is importable) otherwise.

        Raises:
            VolleyIndexError: an id outside ``[0, num_nodes)`` (the message names it).
        """
        if isinstance(nodes, (int, np.integer)):
            return self._native.owner_of(int(nodes))
        values = _tensor.to_input(nodes)
        if isinstance(values, list):
            values = np.asarray(values, dtype=np.int64)
        return _tensor.to_output(self._native.owner_of_array(values))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, PartitionBook) and self.offsets == other.offsets

    def __repr__(self) -> str:
        return f"PartitionBook(offsets={self.offsets})"
