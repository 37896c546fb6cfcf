"""One version: project(volley VERSION x.y.z) in CMakeLists.txt feeds the Python package."""

import importlib.metadata
import os
import pathlib
import re

import pytest

import volley


def _project_version():
    # The checkout's root; VOLLEY_SOURCE_DIR when the tests run from a copy outside it (the
    # wheel check runs them from a scratch directory).
    root = pathlib.Path(os.environ.get("VOLLEY_SOURCE_DIR") or pathlib.Path(__file__).resolve().parents[2])
    text = (root / "CMakeLists.txt").read_text()
    match = re.search(r"project\(volley VERSION ([0-9]+\.[0-9]+\.[0-9]+)", text)
    assert match, "CMakeLists.txt has no project(volley VERSION x.y.z)"
    return match.group(1)


def test_version_is_the_project_version():
    assert volley.__version__ == _project_version()
    assert volley._volley.__version__ == volley.__version__


def test_installed_metadata_has_the_project_version():
    # Where the package is installed (`pip install .`, as scripts/dev.sh does): the wheel's
    # metadata version comes from CMakeLists.txt through pyproject.toml's regex provider.
    try:
        installed = importlib.metadata.version("volley")
    except importlib.metadata.PackageNotFoundError:
        pytest.skip("volley is not pip-installed here (developer build)")
    assert installed == _project_version() == volley.__version__
