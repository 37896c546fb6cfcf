"""Small datasets bundled with Volley: Cora and CiteSeer (Planetoid citation graphs).

They are stored as dataset directories and searched for, in order, in:

1. ``$VOLLEY_DATA_DIR/<name>`` when the ``VOLLEY_DATA_DIR`` environment variable is set;
2. ``<package>/data/<name>`` — where ``pip install`` puts them;
3. ``<repository>/data/<name>`` — a development checkout used with ``PYTHONPATH=python``.

Example:
    >>> cora = volley.datasets.cora()
    >>> cora.num_nodes, cora.num_features, cora.num_classes
    (2708, 1433, 7)
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import List

from ._volley import VolleyOSError, VolleyValueError, is_dataset_directory
from .dataset import Dataset, load_dataset

BUNDLED = ("cora", "citeseer")


def candidate_dirs(name: str) -> List[Path]:
    """The directories searched for bundled dataset ``name``, in search order."""
    package_dir = Path(__file__).resolve().parent
    candidates = []
    override = os.environ.get("VOLLEY_DATA_DIR")
    if override:
        candidates.append(Path(override) / name)
    candidates.append(package_dir / "data" / name)
    if package_dir.parent.name == "python":  # a development checkout: <repo>/python/volley
        candidates.append(package_dir.parent.parent / "data" / name)
    return candidates


def bundled_dir(name: str) -> Path:
    """The directory holding bundled dataset ``name``.

    Args:
        name: one of ``BUNDLED`` ("cora", "citeseer").

    Returns:
        The first candidate directory (see the module docstring) that holds a ``volley.json``.

    Raises:
        VolleyValueError: ``name`` is not a bundled dataset.
        VolleyOSError: none of the candidate directories holds it (all are listed).
    """
    if name not in BUNDLED:
        raise VolleyValueError(f"no bundled dataset {name!r}; bundled are {', '.join(BUNDLED)}")
    candidates = candidate_dirs(name)
    for directory in candidates:
        if is_dataset_directory(str(directory)):
            return directory
    looked = "\n  ".join(str(directory) for directory in candidates)
    raise VolleyOSError(
        f"bundled dataset {name!r} not found; looked for a volley.json in:\n  {looked}\n"
        "(set VOLLEY_DATA_DIR to a directory holding it, or reinstall volley)"
    )


def load_bundled(name: str, *, mmap: bool = True, verify: bool = False) -> Dataset:
    """Loads bundled dataset ``name`` (see ``load_dataset`` for the arguments and errors)."""
    return load_dataset(bundled_dir(name), mmap=mmap, verify=verify)


def cora(*, mmap: bool = True, verify: bool = False) -> Dataset:
    """Cora: 2,708 papers, 1,433 bag-of-words features, 7 classes, a Planetoid-style split.

    Args:
        mmap: map the arrays read-only (default) instead of reading them into memory.
        verify: also check every array's checksum.

    Returns:
        The ``Dataset``.

    Raises:
        VolleyOSError: the bundled files are missing or damaged.
    """
    return load_bundled("cora", mmap=mmap, verify=verify)


def citeseer(*, mmap: bool = True, verify: bool = False) -> Dataset:
    """CiteSeer: 3,312 papers, 3,703 bag-of-words features, 6 classes, a Planetoid-style split.

    This is the gnn-benchmark version of the graph (PyG's Planetoid CiteSeer has 15 more,
    isolated, nodes).

    Args:
        mmap: map the arrays read-only (default) instead of reading them into memory.
        verify: also check every array's checksum.

    Returns:
        The ``Dataset``.

    Raises:
        VolleyOSError: the bundled files are missing or damaged.
    """
    return load_bundled("citeseer", mmap=mmap, verify=verify)
