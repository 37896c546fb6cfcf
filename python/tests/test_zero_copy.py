"""Arrays cross between Python and Volley without copies, and their owners stay alive."""

from __future__ import annotations

import gc
import os
import subprocess
import sys
import warnings
import weakref

import numpy as np
import pytest

import volley
from volley import _tensor, _volley
from conftest import as_numpy, data_pointer, torch_or_none

torch = torch_or_none()
needs_torch = pytest.mark.skipif(torch is None, reason="torch is not importable")


def path_graph_arrays(num_nodes: int = 5):
    """indptr/indices of the path 0 - 1 - ... - (n-1), in-neighbors, as numpy arrays."""
    indptr = np.zeros(num_nodes + 1, dtype=np.int64)
    indices = []
    for v in range(num_nodes):
        neighbors = [u for u in (v - 1, v + 1) if 0 <= u < num_nodes]
        indices.extend(neighbors)
        indptr[v + 1] = len(indices)
    return indptr, np.array(indices, dtype=np.int32)


def test_numpy_round_trip_shares_memory():
    source = np.arange(12, dtype=np.int64).reshape(3, 4)
    back = _volley._array_round_trip(source)
    assert isinstance(back, np.ndarray)
    assert data_pointer(back) == data_pointer(source)
    assert back.shape == (3, 4) and back.dtype == np.int64
    source[1, 2] = -7  # the same bytes, seen through the returned view
    assert back[1, 2] == -7


def test_borrowed_memory_comes_back_read_only():
    # Volley never writes memory it borrowed, and says so to numpy.
    back = _volley._array_round_trip(np.arange(4.0))
    assert not back.flags.writeable
    with pytest.raises(ValueError):
        back[0] = 1.0


def test_volley_owned_memory_is_writable():
    owned = _volley._arange(6)
    assert owned.flags.writeable
    owned[0] = 42
    assert owned.tolist() == [42, 1, 2, 3, 4, 5]


def test_input_kept_alive_while_graph_holds_it():
    indptr, indices = path_graph_arrays()
    expected = indices.copy()
    alive = weakref.ref(indices)
    graph = volley.Graph.from_csr(indptr, indices)
    del indices
    gc.collect()
    assert alive() is not None, "the graph must keep the borrowed array alive"
    np.testing.assert_array_equal(as_numpy(graph.indices), expected)
    del graph
    gc.collect()
    assert alive() is None, "dropping the graph must release the borrowed array"


def test_output_keeps_graph_memory_alive(backend):
    edge_index = np.array([[0, 1, 2, 3], [1, 2, 3, 0]], dtype=np.int64)
    graph = volley.Graph.from_edge_index(edge_index)
    indptr = graph.indptr
    indices = graph.indices
    expected = (as_numpy(indptr).copy(), as_numpy(indices).copy())
    del graph
    gc.collect()
    # The arrays' owner (a capsule holding the native Buffer) outlives the graph.
    np.testing.assert_array_equal(as_numpy(indptr), expected[0])
    np.testing.assert_array_equal(as_numpy(indices), expected[1])


def test_numpy_inputs_are_not_copied(numpy_only):
    indptr, indices = path_graph_arrays()
    graph = volley.Graph.from_csr(indptr, indices)
    assert isinstance(graph.indptr, np.ndarray)
    assert data_pointer(graph.indptr) == data_pointer(indptr)
    assert data_pointer(graph.indices) == data_pointer(indices)


@needs_torch
def test_torch_inputs_and_outputs_are_not_copied():
    indptr, indices = (torch.from_numpy(a) for a in path_graph_arrays())
    graph = volley.Graph.from_csr(indptr, indices)
    assert isinstance(graph.indptr, torch.Tensor)
    assert graph.indptr.data_ptr() == indptr.data_ptr()
    assert graph.indices.data_ptr() == indices.data_ptr()
    assert graph.indices.dtype == torch.int32


@needs_torch
def test_torch_output_views_native_memory():
    graph = volley.Graph.from_edge_index(torch.tensor([[0, 1, 2], [1, 2, 0]]))
    native = graph._csr.indices  # the numpy view the native module hands out
    tensor = graph.indices
    assert tensor.data_ptr() == data_pointer(native)
    # Every access views the same bytes.
    assert graph.indices.data_ptr() == tensor.data_ptr()


@needs_torch
def test_torch_input_memory_kept_alive():
    # DLPack keeps the tensor's storage alive (not the Python wrapper object).
    indptr, indices = (torch.from_numpy(a.copy()) for a in path_graph_arrays(200))
    expected = indices.clone()
    pointer = indices.data_ptr()
    graph = volley.Graph.from_csr(indptr, indices)
    del indptr, indices
    gc.collect()
    scratch = [torch.full_like(expected, -1) for _ in range(64)]  # would reuse freed memory
    assert graph.indices.data_ptr() == pointer
    assert torch.equal(graph.indices, expected)
    del scratch


@needs_torch
def test_read_only_memory_reaches_torch_without_warning():
    read_only = np.arange(5, dtype=np.float32)
    read_only.flags.writeable = False
    native = _volley._array_round_trip(read_only)
    assert not native.flags.writeable
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        tensor = _tensor.to_output(native)
    assert tensor.data_ptr() == data_pointer(read_only)


@needs_torch
def test_bfloat16_crosses_by_dlpack():
    source = torch.arange(6, dtype=torch.float32).to(torch.bfloat16)
    native = _volley._array_round_trip(source)
    assert not isinstance(native, np.ndarray)  # numpy has no bfloat16
    tensor = _tensor.to_output(native)
    assert tensor.dtype == torch.bfloat16
    assert tensor.data_ptr() == source.data_ptr()
    assert torch.equal(tensor, source)


def test_bfloat16_without_torch_is_a_clear_error(numpy_only):
    if torch is None:
        pytest.skip("needs torch to make a bfloat16 array")
    native = _volley._array_round_trip(torch.zeros(3, dtype=torch.bfloat16))
    with pytest.raises(TypeError, match="install torch"):
        _tensor.to_output(native)


def test_non_contiguous_input_is_copied_correctly():
    base = np.arange(20, dtype=np.int64).reshape(2, 10)
    strided = base[:, ::2]
    back = _volley._array_round_trip(strided)
    np.testing.assert_array_equal(back, strided)


def test_empty_arrays_cross():
    back = _volley._array_round_trip(np.zeros(0, dtype=np.int64))
    assert back.shape == (0,)
    graph = volley.Graph.from_edge_index(np.zeros((2, 0), dtype=np.int64), num_nodes=3)
    assert graph.num_edges == 0
    assert as_numpy(graph.indices).shape == (0,)
    assert as_numpy(graph.indptr).tolist() == [0, 0, 0, 0]


def test_works_when_torch_cannot_be_imported():
    # A fresh interpreter where `import torch` fails: volley must import and hand out numpy.
    script = (
        "import sys; sys.modules['torch'] = None\n"
        "import numpy as np, volley\n"
        "g = volley.Graph.from_edge_index(np.array([[0, 1], [1, 2]]))\n"
        "assert isinstance(g.indptr, np.ndarray), type(g.indptr)\n"
        "assert not volley._tensor.using_torch()\n"
        "print(g.indptr.tolist())\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[0, 0, 1, 2]"
