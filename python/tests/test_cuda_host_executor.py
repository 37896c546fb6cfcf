"""The Python GPU paths in CI, without a GPU: test_cuda.py again, in a fresh process with
``VOLLEY_HOST_EXECUTOR=1``, where the host-executor device stands in for ``cuda:0`` (mode
selection, placed graphs, the GPU feature tiers, the CUDA loader's batch pipeline; kernels on host
threads, device arrays as CPU tensors). Its GPU tests must run there, not skip — except the two
that need real CUDA streams and device memory accounting.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

from volley import _volley

from conftest import runs_other_interpreters

pytest.importorskip("torch")

HERE = os.path.dirname(os.path.abspath(__file__))
# The device tests of test_cuda.py that must pass on the host-executor device, and those that
# need a real GPU (CUDA streams, device memory accounting) and must skip there.
DEVICE_TESTS = (
    "test_sampler_equals_cpu[GPU]",
    "test_sampler_equals_cpu[UVA]",
    "test_feature_gather_equals_cpu[None]",
    "test_feature_gather_equals_cpu[4K]",
    "test_feature_gather_equals_cpu[disk]",
    "test_loader_over_features_on_the_disk_equals_cpu",
    "test_loader_batches_equal_cpu[GPU]",
    "test_loader_batches_equal_cpu[UVA]",
    "test_loader_batches_equal_cpu[CPU]",
    "test_temporal_loader_batches_equal_cpu[uniform-GPU]",
    "test_temporal_loader_batches_equal_cpu[last-UVA]",
    "test_disjoint_loader_batches_equal_cpu[GPU]",
    "test_disjoint_loader_batches_equal_cpu[UVA]",
    "test_temporal_sampler_equals_cpu[GPU]",
    "test_temporal_sampler_equals_cpu[UVA]",
    "test_hetero_sampler_equals_cpu[GPU]",
    "test_hetero_sampler_equals_cpu[UVA]",
    "test_hetero_loader_batches_equal_cpu[GPU]",
    "test_hetero_loader_batches_equal_cpu[UVA]",
    "test_hetero_link_loader_batches_equal_cpu[GPU]",
    "test_hetero_link_loader_batches_equal_cpu[UVA]",
    "test_hetero_tree_loader_batches_equal_cpu[disjoint-GPU]",
    "test_hetero_tree_loader_batches_equal_cpu[node_time-UVA]",
    "test_hetero_tree_loader_batches_equal_cpu[edge_time-GPU]",
)
REAL_GPU_ONLY = ("test_sampler_results_on_a_side_stream", "test_loader_memory_does_not_grow_over_1000_batches")


def _can_emulate() -> bool:
    """Whether this build has the host executor (a child process asks with the variable set)."""
    env = dict(os.environ, VOLLEY_HOST_EXECUTOR="1")
    probe = "from volley import _volley; print(_volley.cuda_emulated())"
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env, timeout=120)
    return result.returncode == 0 and result.stdout.strip() == "True"


def test_the_host_executor_device_is_off_by_default():
    if os.environ.get("VOLLEY_HOST_EXECUTOR") == "1":
        pytest.skip("this process was started with VOLLEY_HOST_EXECUTOR=1")
    assert _volley.cuda_emulated() is False


@runs_other_interpreters
def test_gpu_paths_run_on_the_host_executor_device():
    if not _can_emulate():
        pytest.skip("this build has no host executor (the CUDA toolkit's CCCL headers were not found)")
    env = dict(os.environ, VOLLEY_HOST_EXECUTOR="1")
    command = [sys.executable, "-m", "pytest", os.path.join(HERE, "test_cuda.py"), "-v", "-p", "no:cacheprovider"]
    result = subprocess.run(command, capture_output=True, text=True, env=env, timeout=600)
    output = result.stdout + result.stderr
    assert result.returncode == 0, output[-6000:]
    outcomes = dict(re.findall(r"test_cuda\.py::(\S+) (PASSED|SKIPPED|FAILED|ERROR)", output))
    for name in DEVICE_TESTS:
        assert outcomes.get(name) == "PASSED", (name, outcomes.get(name), output[-3000:])
    for name in REAL_GPU_ONLY:
        assert outcomes.get(name) == "SKIPPED", (name, outcomes.get(name))
