"""Dataset.from_pyg and save_dataset on PyG Data objects (and plain objects with the same fields)."""

from __future__ import annotations

import types

import numpy as np
import pytest

import volley
from volley import VolleyIndexError, VolleyValueError

from conftest import as_numpy


def _graph_arrays(dataset):
    graph = dataset.graph
    return as_numpy(graph.indptr), as_numpy(graph.indices)


def _plain(**fields):
    """A stand-in for a PyG Data: an object with attributes (numpy arrays)."""
    return types.SimpleNamespace(**fields)


def test_from_pyg_reads_every_field_of_a_plain_object(numpy_only, tmp_path):
    edge_index = np.array([[0, 1, 2, 3, 3], [1, 2, 0, 0, 1]])
    x = np.arange(12, dtype=np.float32).reshape(4, 3)
    y = np.array([[1.0], [np.nan], [0.0], [2.0]])  # OGB's [N, 1] float layout with an unlabelled node
    data = _plain(
        edge_index=edge_index,
        num_nodes=5,
        x=np.vstack([x, np.zeros((1, 3), np.float32)]),
        y=np.vstack([y, [[1.0]]]),
        edge_weight=np.array([1.0, 2.0, 3.0, 4.0, 5.0]),
        train_mask=np.array([True, True, False, False, False]),
        val_mask=np.array([False, False, True, False, False]),
        test_idx=np.array([3, 4]),
    )
    dataset = volley.Dataset.from_pyg(data, name="plain")
    assert dataset.name == "plain"
    assert dataset.num_nodes == 5 and dataset.num_edges == 5
    indptr, indices = _graph_arrays(dataset)
    assert indptr.tolist() == [0, 2, 4, 5, 5, 5]  # in-neighbors: row v lists sources into v
    assert indices.tolist() == [2, 3, 0, 3, 1]
    assert as_numpy(dataset.graph.weights).tolist() == [3.0, 4.0, 1.0, 5.0, 2.0]
    assert as_numpy(dataset.y).tolist() == [1, -1, 0, 2, 1]
    assert dataset.num_classes == 3
    assert as_numpy(dataset.train_idx).tolist() == [0, 1]
    assert as_numpy(dataset.val_idx).tolist() == [2]
    assert as_numpy(dataset.test_idx).tolist() == [3, 4]
    np.testing.assert_array_equal(as_numpy(dataset.x)[:4], x)

    # save_dataset takes the object directly; the name defaults to the directory's.
    volley.save_dataset(data, tmp_path / "saved")
    loaded = volley.load_dataset(tmp_path / "saved", verify=True)
    assert loaded.name == "saved"
    assert [a.tolist() for a in _graph_arrays(loaded)] == [indptr.tolist(), indices.tolist()]
    assert as_numpy(loaded.y).tolist() == [1, -1, 0, 2, 1]
    assert volley.verify_dataset(tmp_path / "saved") == []


def test_from_pyg_undirected_keeps_one_edge_per_pair(numpy_only):
    data = _plain(edge_index=np.array([[0, 1, 1, 2], [1, 0, 2, 2]]), num_nodes=3)
    dataset = volley.Dataset.from_pyg(data, undirected=True)
    indptr, indices = _graph_arrays(dataset)
    assert indptr.tolist() == [0, 1, 3, 5]
    assert indices.tolist() == [1, 0, 2, 1, 2]


@pytest.mark.parametrize(
    "fields, error, message",
    [
        ({}, VolleyValueError, "has no edge_index"),
        ({"y": np.zeros((3, 2), np.int64)}, VolleyValueError, "multi-label"),
        ({"y": np.array([0.5, 1.0, 0.0])}, VolleyValueError, "fractional values"),
        ({"train_mask": np.zeros((3, 4), bool)}, VolleyValueError, "train_mask[:, 0]"),
        ({"num_nodes": 2}, VolleyIndexError, "out of range"),
    ],
)
def test_from_pyg_refuses_what_it_cannot_store(numpy_only, fields, error, message):
    base = {"edge_index": np.array([[0, 1], [1, 2]]), "num_nodes": 3}
    if not fields:
        base = {}
    base.update(fields)
    with pytest.raises(error, match=None) as raised:
        volley.Dataset.from_pyg(_plain(**base))
    assert message in str(raised.value)


def test_save_dataset_refuses_other_objects(tmp_path):
    with pytest.raises(TypeError, match="volley.Dataset or a torch_geometric Data"):
        volley.save_dataset(object(), tmp_path / "x")


def test_pyg_data_round_trip(tmp_path):
    pytest.importorskip("torch_geometric")
    cora = volley.datasets.cora()
    data = cora.to_pyg()
    back = volley.Dataset.from_pyg(data, name="cora")
    for before, after in zip(_graph_arrays(cora), _graph_arrays(back)):
        np.testing.assert_array_equal(before, after)
    np.testing.assert_array_equal(as_numpy(cora.x).astype(np.float32), as_numpy(back.x))
    np.testing.assert_array_equal(as_numpy(cora.y), as_numpy(back.y))
    for split in ("train_idx", "val_idx", "test_idx"):
        np.testing.assert_array_equal(as_numpy(getattr(cora, split)), as_numpy(getattr(back, split)))

    volley.save_dataset(data, tmp_path / "cora")
    loaded = volley.load_dataset(tmp_path / "cora")
    assert loaded.num_nodes == 2708 and loaded.num_edges == 10556 and loaded.num_classes == 7
    assert loaded.x.dtype == data.x.dtype


def test_from_pyg_refuses_heterodata():
    pyg_data = pytest.importorskip("torch_geometric.data")
    hetero = pyg_data.HeteroData()
    hetero["paper"].x = np.zeros((2, 1), np.float32)
    with pytest.raises(VolleyValueError, match="HeteroData"):
        volley.Dataset.from_pyg(hetero)
