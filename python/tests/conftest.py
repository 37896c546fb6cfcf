"""Shared fixtures of the Python tests.

Run from a development checkout with ``PYTHONPATH=python``, or against an installed volley.
"""

from __future__ import annotations

import numpy as np
import pytest

import volley
import volley._tensor


def torch_or_none():
    """The torch module, or None when it is not importable."""
    try:
        import torch
    except ImportError:
        return None
    return torch


@pytest.fixture
def numpy_only(monkeypatch):
    """Makes volley behave as if torch were not installed: outputs are numpy arrays."""
    monkeypatch.setattr(volley._tensor, "_torch", None)
    assert not volley._tensor.using_torch()


@pytest.fixture(params=["torch", "numpy"])
def backend(request, monkeypatch):
    """Runs a test once with torch outputs (when torch is importable) and once with numpy."""
    if request.param == "numpy":
        monkeypatch.setattr(volley._tensor, "_torch", None)
    elif torch_or_none() is None:
        pytest.skip("torch is not importable")
    return request.param


def as_numpy(array):
    """A numpy view of a volley output (torch tensor or numpy array)."""
    if array is None:
        return None
    if isinstance(array, np.ndarray):
        return array
    return array.detach().cpu().numpy()


def data_pointer(array) -> int:
    """Address of the first element of a numpy array or torch tensor."""
    if isinstance(array, np.ndarray):
        return array.__array_interface__["data"][0]
    return array.data_ptr()


@pytest.fixture(scope="session")
def cora_dir():
    """The bundled Cora dataset directory."""
    return volley.datasets.bundled_dir("cora")


def volley_cli():
    """The `volley` CLI of the build under test: $VOLLEY_CLI, or the one installed beside this
    Python (pip puts both into one bin/); None when neither exists."""
    import os
    import shutil
    import sys

    candidates = [os.environ.get("VOLLEY_CLI")]
    if os.path.realpath(volley.__file__).startswith(os.path.realpath(sys.prefix)):
        candidates.append(os.path.join(sys.prefix, "bin", "volley"))
    for path in candidates:
        if path and shutil.which(path):
            return path
    return None


# Tests that train a model for several epochs in a subprocess: they check the examples' accuracy,
# not memory safety (the loaders they drive are exercised by the other tests), so the ASan leg
# (scripts/dev.sh sanitize) skips them; both ordinary legs run them.
trains_a_model = pytest.mark.skipif(
    __import__("os").environ.get("VOLLEY_TEST_SANITIZED") == "1",
    reason="trains a model; runs in both ordinary legs, skipped under ASan for CI time",
)

# Tests whose subject is another process (Python with torch and the module imported again,
# seconds under ASan, or the release build's CLI, which ASan does not instrument) rather than
# memory safety in this one: the ASan leg skips them, both ordinary legs
# run them. The C++ paths they drive have sanitized tests of their own (NodeState.* forks a writer
# that dies mid-row).
runs_other_interpreters = pytest.mark.skipif(
    __import__("os").environ.get("VOLLEY_TEST_SANITIZED") == "1",
    reason="starts other Python processes; runs in both ordinary legs, skipped under ASan for "
           "CI time",
)

# Tests whose subject does not change with torch's, PyG's or numpy's version: the native service
# under load or faults, process lifecycle, the CLI's checks. The second leg (the newest torch /
# PyG / numpy, scripts/dev.sh latest) and the wheel's check in a torch-less venv
# (scripts/wheel_check.py: the same binaries with their libraries bundled) skip them; the first
# leg runs them.
same_in_every_torch = pytest.mark.skipif(
    __import__("os").environ.get("VOLLEY_TEST_LEG") in ("latest", "wheel"),
    reason="does not depend on torch / PyG / numpy versions; runs in the first leg, skipped in "
           "the second and in the wheel's check for CI time",
)


def free_port() -> int:
    """A TCP port on the loopback that nothing listens on now."""
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def gloo_env(**extra: str) -> dict:
    """The environment for gloo ranks on this host: one OpenMP thread, the loopback interface."""
    import os

    return dict(os.environ, OMP_NUM_THREADS="1", GLOO_SOCKET_IFNAME="lo", **extra)


# Gloo's full-mesh connect between ranks on one host fails now and then with "Connection closed
# by peer", inside init_process_group and before any Volley code runs (a race PyTorch's own gloo
# tests show too). A group that failed that way, and only that way, is started again.
GLOO_CONNECT_RACE = "connectFullMesh failed"


def run_gloo_group(start, attempts: int = 3):
    """Calls ``start()`` -> (returncode, output) until it succeeds, fails for another reason than
    gloo's connect race, or has failed ``attempts`` times; its last (returncode, output)."""
    for _ in range(attempts):
        returncode, output = start()
        if returncode == 0 or GLOO_CONNECT_RACE not in output:
            break
    return returncode, output
