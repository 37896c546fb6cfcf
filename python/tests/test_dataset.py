"""Datasets: the bundled Cora, save/load round trips, and the PyG conversion."""

from __future__ import annotations

import numpy as np
import pytest

import volley
from conftest import as_numpy, torch_or_none

torch = torch_or_none()


def small_dataset(with_weights: bool = False) -> volley.Dataset:
    rng = np.random.default_rng(5)
    num_nodes = 50
    edge_index = rng.integers(0, num_nodes, size=(2, 300), dtype=np.int64)
    weights = rng.random(300, dtype=np.float32) if with_weights else None
    graph = volley.Graph.from_edge_index(edge_index, num_nodes, edge_weight=weights)
    return volley.Dataset(
        graph,
        x=rng.random((num_nodes, 8), dtype=np.float32),
        y=rng.integers(0, 3, size=num_nodes),
        train_idx=np.arange(0, 10),
        val_idx=np.arange(10, 20),
        test_idx=np.arange(20, 50),
        name="small",
    )


def test_cora_counts(backend):
    cora = volley.datasets.cora()
    assert cora.name == "cora"
    assert cora.num_nodes == 2708 and cora.graph.num_nodes == 2708
    assert cora.num_features == 1433
    assert cora.num_classes == 7
    assert tuple(cora.x.shape) == (2708, 1433)
    y = as_numpy(cora.y)
    assert y.shape == (2708,) and y.dtype == np.int64
    assert y.min() >= 0 and y.max() == 6
    for ids in (cora.train_idx, cora.val_idx, cora.test_idx):
        ids = as_numpy(ids)
        assert ids.dtype == np.int64 and ids.size > 0
        assert 0 <= ids.min() and ids.max() < 2708
    assert "cora" in repr(cora) and "2708" in repr(cora)


def test_memory_mapped_arrays_are_read_only(numpy_only):
    mapped = volley.datasets.cora()
    assert not mapped.x.flags.writeable
    assert not mapped.graph.indices.flags.writeable
    in_memory = volley.datasets.cora(mmap=False)
    assert in_memory.x.flags.writeable
    np.testing.assert_array_equal(in_memory.x, mapped.x)


def test_cora_checksums_verify(cora_dir):
    assert volley.verify_dataset(cora_dir) == []
    volley.load_dataset(cora_dir, verify=True)


@pytest.mark.parametrize("with_weights", [False, True])
def test_save_load_round_trip(tmp_path, backend, with_weights):
    original = small_dataset(with_weights)
    original.save(tmp_path / "small")
    loaded = volley.load_dataset(tmp_path / "small", verify=True)
    assert loaded.name == "small"
    assert loaded.num_classes == original.num_classes
    for field in ("x", "y", "train_idx", "val_idx", "test_idx"):
        np.testing.assert_array_equal(as_numpy(getattr(loaded, field)),
                                      as_numpy(getattr(original, field)))
    for field in ("indptr", "indices", "edge_ids", "weights"):
        np.testing.assert_array_equal(as_numpy(getattr(loaded.graph, field)),
                                      as_numpy(getattr(original.graph, field)))


def test_cora_round_trip(tmp_path):
    cora = volley.datasets.cora()
    volley.save_dataset(cora, tmp_path / "cora")
    copy = volley.load_dataset(tmp_path / "cora")
    assert volley.verify_dataset(tmp_path / "cora") == []
    np.testing.assert_array_equal(as_numpy(copy.x), as_numpy(cora.x))
    np.testing.assert_array_equal(as_numpy(copy.graph.indices), as_numpy(cora.graph.indices))


def test_masks_and_defaults(backend):
    dataset = small_dataset()
    mask = as_numpy(dataset.train_mask)
    assert mask.dtype == np.bool_ and mask.shape == (50,)
    assert np.flatnonzero(mask).tolist() == list(range(10))
    assert dataset.num_classes == int(as_numpy(dataset.y).max()) + 1
    bare = volley.Dataset(dataset.graph)
    assert bare.x is None and bare.y is None and bare.train_mask is None
    assert bare.num_classes == 0 and bare.num_features == 0


def test_dataset_arrays_are_zero_copy():
    x = np.ones((50, 8), dtype=np.float32)
    dataset = volley.Dataset(small_dataset().graph, x=x)
    assert volley._tensor.to_numpy(dataset.x).__array_interface__["data"][0] == \
        x.__array_interface__["data"][0]


def test_bad_dataset_arguments():
    graph = small_dataset().graph
    with pytest.raises(TypeError, match="volley.Graph"):
        volley.Dataset("not a graph")
    with pytest.raises(volley.VolleyValueError, match="integer"):
        volley.Dataset(graph, y=np.zeros(50, dtype=np.float32))
    bad_rows = volley.Dataset(graph, x=np.ones((7, 2), dtype=np.float32))
    with pytest.raises(volley.VolleyValueError):
        bad_rows.save("/tmp/never-written-volley-test")


def test_to_pyg_fields():
    pytest.importorskip("torch_geometric")
    cora = volley.datasets.cora()
    data = cora.to_pyg()
    assert data.num_nodes == 2708
    assert data.x.dtype == torch.float32 and tuple(data.x.shape) == (2708, 1433)
    assert data.y.dtype == torch.int64 and torch.equal(data.y, cora.y)
    assert data.edge_index.dtype == torch.int64
    assert tuple(data.edge_index.shape) == (2, cora.num_edges)
    # Row v of the in-CSR lists the sources of edges into v: edge_index = [neighbor, v].
    indptr = cora.graph.indptr
    v = int(torch.argmax(indptr[1:] - indptr[:-1]))
    sources = data.edge_index[0][data.edge_index[1] == v]
    assert torch.equal(sources.sort().values,
                       cora.graph.indices[indptr[v]:indptr[v + 1]].long().sort().values)
    for split in ("train", "val", "test"):
        mask = getattr(data, f"{split}_mask")
        assert mask.dtype == torch.bool
        assert int(mask.sum()) == len(getattr(cora, f"{split}_idx"))
    assert data.validate(raise_on_error=True)


def test_to_pyg_weighted_and_converted_features():
    pytest.importorskip("torch_geometric")
    dataset = small_dataset(with_weights=True)
    converted = volley.Dataset(dataset.graph, x=np.ones((50, 3), dtype=np.uint8))
    data = converted.to_pyg()
    assert data.x.dtype == torch.float32
    assert data.edge_weight.dtype == torch.float32 and data.edge_weight.numel() == 300


def test_to_pyg_needs_torch(numpy_only):
    with pytest.raises(ImportError, match="torch"):
        small_dataset().to_pyg()


def test_citeseer_counts():
    citeseer = volley.datasets.citeseer()
    assert citeseer.num_nodes == 3312
    assert citeseer.num_features == 3703
    assert citeseer.num_classes == 6
