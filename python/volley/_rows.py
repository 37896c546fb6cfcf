"""The rows a native loader is built over (internal): features and labels as the native loader
takes them, on the host or in a GPU feature store."""

from __future__ import annotations

from typing import Any

import numpy as np

from . import _tensor, _volley
from .feature import Feature


def rows_input(rows: Any) -> Any:
    """Features or labels for the native loader: a ``volley.Feature``'s store as it is (tiered,
    shared or mapped), any other array zero-copy."""
    if rows is None:
        return None
    if isinstance(rows, Feature):
        return rows._native()
    return _tensor.to_input(rows)


def device_rows(rows: Any, device: int, what: str) -> Any:
    """Features or labels for the CUDA loader: a native FeatureStore in GPU tiers on ``device``
    (a ``volley.Feature`` made with that ``device`` as it is; anything else copied to the device,
    every row in device memory; labels as int64)."""
    if rows is None:
        return None
    if isinstance(rows, Feature):
        if rows._device is not None:
            if rows._device != device:
                raise _volley.VolleyValueError(
                    f"{what} live on cuda:{rows._device}, the loader on cuda:{device}"
                )
            return rows._native()
        rows = rows.gather(slice(None))  # a CPU store (tiered, mapped): its rows on the host
    matrix = _tensor.to_input(rows)
    if what == "labels":
        matrix = np.ascontiguousarray(_tensor.to_numpy(matrix), dtype=np.int64).reshape(-1)
    return _volley.FeatureStore.build(matrix, [("cuda", -1)], None, device)
