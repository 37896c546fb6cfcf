"""User mistakes raise Volley's exception classes, with the offending values in the message."""

from __future__ import annotations

import numpy as np
import pytest

import volley
from conftest import torch_or_none

torch = torch_or_none()


def test_error_classes_derive_from_builtins():
    pairs = [
        (volley.VolleyValueError, ValueError),
        (volley.VolleyIndexError, IndexError),
        (volley.VolleyOSError, OSError),
        (volley.VolleyRuntimeError, RuntimeError),
        (volley.VolleyInternalError, RuntimeError),
    ]
    for volley_class, builtin in pairs:
        assert issubclass(volley_class, builtin)
        assert issubclass(volley_class, volley.VolleyError)
        assert volley_class.__module__ == "volley"
        assert volley_class.__doc__


def test_out_of_range_id_is_an_index_error_naming_the_id():
    edge_index = np.array([[0, 1, 2], [1, 2, 7012]], dtype=np.int64)
    with pytest.raises(volley.VolleyIndexError, match=r"7012") as caught:
        volley.Graph.from_edge_index(edge_index, num_nodes=2708)
    assert isinstance(caught.value, IndexError)
    assert "2708" in str(caught.value)


def test_negative_id_is_an_index_error():
    with pytest.raises(IndexError, match="-3"):
        volley.Graph.from_edge_index(np.array([[0, -3], [1, 1]]), num_nodes=4)


def test_from_csr_neighbor_out_of_range():
    indptr = np.array([0, 1, 2], dtype=np.int64)
    indices = np.array([1, 5], dtype=np.int32)
    with pytest.raises(volley.VolleyIndexError, match=r"indices\[1\] = 5"):
        volley.Graph.from_csr(indptr, indices)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.bool_])
def test_bad_edge_index_dtype_is_a_value_error(dtype):
    edge_index = np.zeros((2, 3), dtype=dtype)
    with pytest.raises(volley.VolleyValueError, match="int32 or int64") as caught:
        volley.Graph.from_edge_index(edge_index)
    assert isinstance(caught.value, ValueError)


def test_bad_edge_index_shape_is_a_value_error():
    with pytest.raises(ValueError, match=r"\[2, E\].*\[3, 2\]"):
        volley.Graph.from_edge_index(np.zeros((3, 2), dtype=np.int64))


def test_unsupported_dtype_is_a_value_error():
    with pytest.raises(volley.VolleyValueError, match="uint32"):
        volley.Graph.from_csr(np.array([0, 1], dtype=np.int64), np.array([0], dtype=np.uint32))


def test_bad_csr_dtype_and_values():
    with pytest.raises(volley.VolleyValueError, match="indptr must be a 1-d int64"):
        volley.Graph.from_csr(np.array([0, 1], dtype=np.int32), np.array([0], dtype=np.int32))
    with pytest.raises(volley.VolleyValueError, match="non-decreasing"):
        volley.Graph.from_csr(np.array([0, 2, 1, 2]), np.array([0, 1], dtype=np.int32))


def test_bad_weights_are_value_errors():
    edge_index = np.array([[0, 1], [1, 0]])
    with pytest.raises(volley.VolleyValueError, match="entries, expected 2"):
        volley.Graph.from_edge_index(edge_index, edge_weight=np.ones(3))
    with pytest.raises(volley.VolleyValueError, match="finite and >= 0"):
        volley.Graph.from_edge_index(edge_index, edge_weight=np.array([1.0, -1.0]))


def test_bad_orientation_and_thread_count():
    with pytest.raises(volley.VolleyValueError, match='"sideways"'):
        volley.Graph.from_edge_index(np.array([[0], [1]]), orientation="sideways")
    with pytest.raises(volley.VolleyValueError, match="got 0"):
        volley.set_num_threads(0)


def test_missing_dataset_is_an_os_error(tmp_path):
    missing = tmp_path / "no-such-dataset"
    with pytest.raises(volley.VolleyOSError, match="no-such-dataset") as caught:
        volley.load_dataset(missing)
    assert isinstance(caught.value, OSError)


def test_corrupt_dataset_is_reported(tmp_path):
    graph = volley.Graph.from_edge_index(np.array([[0, 1, 2], [1, 2, 0]]))
    volley.Dataset(graph, x=np.ones((3, 4), dtype=np.float32), name="tiny").save(tmp_path)
    assert volley.verify_dataset(tmp_path) == []
    features = tmp_path / "features.npy"
    raw = bytearray(features.read_bytes())
    raw[-1] ^= 0xFF  # flip bits of the last feature value
    features.write_bytes(bytes(raw))
    problems = volley.verify_dataset(tmp_path)
    assert problems and any("features" in problem for problem in problems)
    with pytest.raises(volley.VolleyOSError, match="features"):
        volley.load_dataset(tmp_path, verify=True)
    features.write_bytes(bytes(raw[:-8]))  # truncated
    with pytest.raises(volley.VolleyOSError, match="features"):
        volley.load_dataset(tmp_path)


def test_missing_bundled_dataset_lists_where_it_looked(monkeypatch, tmp_path):
    monkeypatch.setattr(
        volley.datasets, "candidate_dirs", lambda name: [tmp_path / "a" / name, tmp_path / name]
    )
    with pytest.raises(volley.VolleyOSError) as caught:
        volley.datasets.cora()
    message = str(caught.value)
    assert str(tmp_path / "a" / "cora") in message and str(tmp_path / "cora") in message
    with pytest.raises(ValueError, match="bundled are"):
        volley.datasets.bundled_dir("imagenet")


def _assert_volley_and_builtin(call, volley_class, builtin, match):
    with pytest.raises(volley_class, match=match) as caught:
        call()
    assert isinstance(caught.value, builtin) and isinstance(caught.value, volley.VolleyError)


def test_python_side_type_errors_are_volley_type_errors(tmp_path):
    assert issubclass(volley.VolleyTypeError, TypeError)
    _assert_volley_and_builtin(lambda: volley.Graph("not a csr"), volley.VolleyTypeError,
                               TypeError, "got str")
    _assert_volley_and_builtin(lambda: volley.save_dataset(42, tmp_path / "d"),
                               volley.VolleyTypeError, TypeError, "got int")
    feature = volley.Feature(np.ones((4, 2), dtype=np.float32))
    _assert_volley_and_builtin(lambda: feature[np.array([0.5, 1.0])], volley.VolleyTypeError,
                               TypeError, "ids must be integers, got float64")


def test_python_side_value_errors_are_volley_value_errors(tmp_path):
    graph = volley.Graph.from_edge_index(np.array([[0, 1], [1, 0]]), num_nodes=2)
    _assert_volley_and_builtin(lambda: volley.NeighborSampler(graph, [3, -2]),
                               volley.VolleyValueError, ValueError, "size -2 at hop 1")
    _assert_volley_and_builtin(lambda: volley.NeighborSampler(graph, [3], device="tpu"),
                               volley.VolleyValueError, ValueError, "'tpu'")
    _assert_volley_and_builtin(lambda: volley.datasets.bundled_dir("imagenet"),
                               volley.VolleyValueError, ValueError, "'imagenet'")
    _assert_volley_and_builtin(
        lambda: volley.Feature(np.ones((4, 2), dtype=np.float32), cache_bytes="lots"),
        volley.VolleyValueError, ValueError, "'lots'")
    empty = tmp_path / "token"
    empty.write_text("\n")
    _assert_volley_and_builtin(lambda: volley.dist.read_token(empty), volley.VolleyValueError,
                               ValueError, "token")
    _assert_volley_and_builtin(lambda: volley.dist.read_token(tmp_path / "missing"),
                               volley.VolleyOSError, OSError, "missing")


def test_loader_input_errors_are_volley_value_errors():
    graph = volley.Graph.from_edge_index(np.array([[0, 1], [1, 0]]), num_nodes=2)
    dataset = volley.Dataset(graph, np.ones((2, 3), dtype=np.float32), np.zeros(2, np.int64))
    _assert_volley_and_builtin(
        lambda: volley.loader.NeighborLoader(dataset, [2], input_nodes=np.array([0.5])),
        volley.VolleyTypeError, TypeError, "float64")
