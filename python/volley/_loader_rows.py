"""The features a ``NeighborLoader`` reads from a dataset: through the dataset's native stores
(the disk tier past half the RAM, the row cache of ``cache_bytes`` / ``policy``), for both graph
kinds."""

from __future__ import annotations

from typing import Any, Dict, Optional

from . import _tensor
from ._volley import VolleyValueError
from ._volley import dataset_store as _dataset_store
from .feature import Feature, _check_policy


def loader_rows(native: Any, x: Any, mode: str, cache_bytes: Any, policy: Optional[str]) -> Any:
    """In CPU mode a ``volley.Dataset``'s features (``native``: its native dataset, None for
    other data) through its native store (the disk tier past half the RAM; ``cache_bytes`` /
    ``policy`` size its row cache), else ``x`` as given."""
    if mode == "CPU" and native is not None and native.features is not None:
        return dataset_rows(native, cache_bytes, policy)
    if cache_bytes is not None or policy is not None:
        raise VolleyValueError("cache_bytes/policy size the row cache of a volley.Dataset's "
                               "features in CPU mode (a volley.HeteroDataset's in any mode); "
                               "for other data pass x=volley.Feature(path, cache_bytes=...)")
    return x


def dataset_rows(native: Any, cache_bytes: Any, policy: Optional[str],
                 node_type: Optional[str] = None) -> Feature:
    """A dataset's features (``node_type``: that type's, of a typed dataset) through the native
    store, with ``cache_bytes`` / ``policy`` as ``volley.Feature(path, ...)`` takes them."""
    given = cache_bytes is not None
    options = dict(cache_bytes=_tensor.byte_size(cache_bytes, "cache_bytes") if given else -1,
                   policy=_check_policy(policy, given))
    typed = () if node_type is None else (node_type,)
    return Feature._from_store(_dataset_store(native, "features", *typed, **options))


def typed_loader_rows(dataset: Any, cache_bytes: Any, policy: Optional[str]) -> Dict[str, Feature]:
    """``loader_rows`` per node type of a ``volley.HeteroDataset`` (None: other data) that has
    features, in any mode (typed batches are built on the host); ``cache_bytes`` is shared among
    the types in proportion to their feature bytes."""
    if dataset is None:
        return loader_rows(None, {}, "CPU", cache_bytes, policy)  # (refuses a cache)
    sizes = {t: _tensor.to_numpy(x).nbytes for t, x in dataset.x_dict.items()}
    budget = cache_bytes and _tensor.byte_size(cache_bytes, "cache_bytes")
    total = sum(sizes.values()) or 1
    return {t: dataset_rows(dataset._native, budget and budget * n // total, policy, t)
            for t, n in sizes.items()}
