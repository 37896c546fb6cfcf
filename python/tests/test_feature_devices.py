"""``volley.Feature(..., devices=[...])``: a device cache sharded over several GPUs.

Argument checks run everywhere. The gathers run on emulated devices: a child process started
with ``VOLLEY_HOST_EXECUTOR=1``, four emulated devices and a peer-access matrix of two cliques
({0, 1} and {2, 3}), gathers on every device and compares with the CPU rows; it also runs with
no peer access at all (four cliques of one). Another child leaves the rows no clique caches in
the ``.npy`` file (``disk=True``) and compares with the CPU rows and the pinned placement.
Real GPUs: scripts/gpu_check.sh.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import volley
from volley import _volley

from conftest import runs_other_interpreters, same_in_every_torch

# The routing over devices is native; the subprocesses only import the package: once, on the
# first leg, is enough.
pytestmark = same_in_every_torch

torch = pytest.importorskip("torch")

X = np.arange(60 * 4, dtype=np.float32).reshape(60, 4)


@pytest.mark.parametrize(
    "devices, error, match",
    [
        ([], volley.VolleyValueError, r"devices must list at least one CUDA device, got \[\]"),
        ([0, 1, 1], volley.VolleyValueError, r"devices lists cuda:1 twice: \[0, 1, 1\]"),
        (["cuda:0", "cuda:0"], volley.VolleyValueError, r"devices lists cuda:0 twice"),
        ([0, -2], volley.VolleyValueError, r"CUDA device ordinal must be >= 0, got -2"),
        ([0, "cpu"], volley.VolleyValueError, r"devices must be CUDA devices, got 'cpu'"),
        ("cuda:0", volley.VolleyTypeError, r"devices must be a list of CUDA devices"),
        (3, volley.VolleyTypeError, r"devices must be a list of CUDA devices, got int 3"),
    ],
)
def test_bad_device_lists_name_the_offending_value(devices, error, match):
    with pytest.raises(error, match=match):
        volley.Feature(X, devices=devices, device_cache_size=64)


def test_unknown_ordinals_are_refused_before_any_allocation():
    count = int(_volley.cuda_device_count())
    if count == 0:
        with pytest.raises(volley.VolleyRuntimeError, match=r"devices=\[0, 1\]: no CUDA device is visible"):
            volley.Feature(X, devices=[0, 1])
        return
    with pytest.raises(volley.VolleyValueError, match=rf"devices lists cuda:{count}, but {count} CUDA"):
        volley.Feature(X, devices=[0, count])


CHILD = textwrap.dedent(
    """
    import numpy as np, torch, volley
    from volley import _volley
    assert _volley.cuda_emulated() and _volley.cuda_device_count() == 4
    x = torch.from_numpy(np.random.default_rng(1).standard_normal((300, 6)).astype(np.float32))
    ids = torch.from_numpy(np.random.default_rng(2).integers(0, 300, 900))
    order = torch.from_numpy(np.random.default_rng(3).permutation(300))
    row_bytes = 6 * 4
    for hot_order in (None, order):
        for device in range(4):
            feature = volley.Feature(x, devices=[0, 1, 2, 3], device=device,
                                     device_cache_size=20 * row_bytes, hot_order=hot_order)
            assert feature.devices[0] == device and sorted(feature.devices) == [0, 1, 2, 3]
            assert torch.equal(feature[ids], x[ids]), device
            tiers = feature.tiers
            cached = [t for t in tiers if t["location"] == "cuda"]
            assert sorted(t["device"] for t in cached) == [0, 1, 2, 3]
            assert all(t["rows"] == 20 for t in cached), tiers
            assert tiers[-1]["location"] == "pinned_host"
            assert tiers[-1]["rows"] == 300 - MIN_CLIQUE * 20, tiers
    first = volley.Feature(x, devices=["cuda:2", 3])
    assert first.devices == [2, 3] and torch.equal(first[ids], x[ids])
    try:
        volley.Feature(x, devices=[0, 4])
        raise SystemExit("no error for cuda:4")
    except volley.VolleyValueError as error:
        assert "devices lists cuda:4, but 4 CUDA device(s) are visible" in str(error), error
    try:
        volley.Feature(x, devices=[0, 1], device="cuda:2")
        raise SystemExit("no error for device cuda:2")
    except volley.VolleyValueError as error:
        assert "device cuda:2 is not one of devices [0, 1]" in str(error), error
    print("sharded gathers ok")
    """
)


def _can_emulate() -> bool:
    env = dict(os.environ, VOLLEY_HOST_EXECUTOR="1")
    probe = "from volley import _volley; print(_volley.cuda_emulated())"
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env, timeout=120)
    return result.returncode == 0 and result.stdout.strip() == "True"


def _run_on_four_devices(script: str, peers: str, *args: str) -> subprocess.CompletedProcess:
    """``script`` in a child process on four emulated devices with the peer matrix ``peers``."""
    if not _can_emulate():
        pytest.skip("this build has no host executor (the CUDA toolkit's CCCL headers were not found)")
    env = dict(
        os.environ,
        VOLLEY_HOST_EXECUTOR="1",
        VOLLEY_HOST_EXECUTOR_DEVICES="4",
        VOLLEY_HOST_EXECUTOR_PEERS=peers,
    )
    command = [sys.executable, "-c", script, *args]
    return subprocess.run(command, capture_output=True, text=True, env=env, timeout=300)


@runs_other_interpreters
@pytest.mark.parametrize("peers, min_clique", [("1100,1100,0011,0011", 2), ("none", 1)])
def test_sharded_gathers_equal_the_cpu_rows_on_emulated_devices(peers, min_clique):
    result = _run_on_four_devices(f"MIN_CLIQUE = {min_clique}\n" + CHILD, peers)
    assert result.returncode == 0 and "sharded gathers ok" in result.stdout, result.stdout + result.stderr[-4000:]


DISK_CHILD = textwrap.dedent(
    """
    import os, pickle, sys, numpy as np, torch, volley
    x = np.random.default_rng(1).standard_normal((300, 6)).astype(np.float32)
    path = os.path.join(sys.argv[1], "x.npy")
    np.save(path, x)
    ids = torch.from_numpy(np.random.default_rng(2).integers(0, 300, 900))
    order = torch.from_numpy(np.random.default_rng(3).permutation(300))
    expected = torch.from_numpy(x)[ids]
    for hot_order in (None, order):
        for device in range(4):
            kwargs = dict(devices=[0, 1, 2, 3], device=device, device_cache_size=20 * 6 * 4,
                          hot_order=hot_order)
            pinned = volley.Feature(path, **kwargs)  # a small file: pinned, as before
            disk = volley.Feature(path, disk=True, **kwargs)
            assert pinned.tiers[-1]["location"] == "pinned_host" and pinned.disk_io == ""
            assert disk.tiers[-1]["location"] == "mapped_file", disk.tiers
            assert disk.tiers[-1]["rows"] == 300 and disk.disk_io != ""
            assert "disk (300 rows" in repr(disk), repr(disk)
            assert torch.equal(disk[ids], expected), device
            assert torch.equal(pinned[ids], expected), device
            hits, misses = disk.disk_stats
            assert hits + misses == 900 and misses > 0, (hits, misses)
    for kwargs, message in [
        (dict(policy="static"), "not static"),
        (dict(policy="lookahead", device_cache_size=1 << 20), None),
    ]:
        try:
            feature = volley.Feature(path, devices=[0, 1], disk=True, **kwargs)
            assert message is None, kwargs
            assert torch.equal(feature[ids], expected) and feature.disk_io == ""  # all cached
        except volley.VolleyValueError as error:
            assert message is not None and message in str(error), error
    try:
        pickle.dumps(disk)
        raise SystemExit("a GPU feature over the disk was pickled")
    except volley.VolleyValueError as error:
        assert "reads its cold rows from the disk" in str(error), error
    assert torch.equal(disk[ids], expected)
    print("disk gathers ok")
    """
)


@runs_other_interpreters
def test_rows_left_on_the_disk_gather_the_cpu_rows_on_emulated_devices(tmp_path):
    result = _run_on_four_devices(DISK_CHILD, "1100,1100,0011,0011", str(tmp_path))
    assert result.returncode == 0 and "disk gathers ok" in result.stdout, result.stdout + result.stderr[-4000:]


def test_disk_for_an_array_on_a_device_names_the_option():
    with pytest.raises(volley.VolleyValueError, match=r"disk=True: the disk tier reads a mapped \.npy file"):
        volley.Feature(X, device=0, disk=True)


@runs_other_interpreters
def test_a_malformed_peer_matrix_is_a_clear_error():
    if not _can_emulate():
        pytest.skip("this build has no host executor")
    env = dict(os.environ, VOLLEY_HOST_EXECUTOR="1", VOLLEY_HOST_EXECUTOR_DEVICES="2", VOLLEY_HOST_EXECUTOR_PEERS="11,1")
    probe = "from volley import _volley; _volley.cuda_device_count()"
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env, timeout=120)
    assert result.returncode != 0
    assert "VOLLEY_HOST_EXECUTOR_PEERS for 2 device(s) must be" in result.stderr
    assert '"11,1"' in result.stderr
