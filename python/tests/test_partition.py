"""volley.partition / volley.load_partition / volley.PartitionBook.

(``volley.partition`` is the function; the module's other helpers are imported from
``volley.partition`` by name.)
"""

from __future__ import annotations

import numpy as np
import pytest

import volley
from volley.partition import (
    invert_node_map,
    load_node_map,
    read_partition_manifest,
    verify_partitioned_dataset,
)
from conftest import as_numpy

needs_metis = pytest.mark.skipif(
    not volley._volley.metis_available(), reason="built without METIS (libmetis-dev)"
)
METHODS = [
    "random",
    pytest.param("metis", marks=needs_metis),
    pytest.param("hotness", marks=needs_metis),
    "stream",
]


def _edges(indptr, indices, edge_ids, rows=None, neighbor_map=None):
    """Sorted (row, neighbor, edge id) triples of a CSR, optionally renumbered."""
    indptr, indices, edge_ids = (np.asarray(a, dtype=np.int64) for a in (indptr, indices, edge_ids))
    degree = np.diff(indptr)
    row = np.repeat(np.arange(len(degree)) if rows is None else rows, degree)
    neighbor = indices if neighbor_map is None else neighbor_map[indices]
    triples = np.stack([row, neighbor, edge_ids], axis=1)
    return triples[np.lexsort(triples.T[::-1])]


@pytest.fixture(scope="module")
def cora():
    return volley.load_dataset(volley.datasets.bundled_dir("cora"))


@pytest.mark.parametrize("method", METHODS)
def test_partitions_are_faithful(tmp_path, cora_dir, cora, method):
    out = tmp_path / method
    result = volley.partition(
        cora_dir, out, 3, method=method, fanouts=[5, 5], batch_size=64,
        cache_bytes=1433 * 20 if method == "hotness" else 0,
    )
    assert isinstance(result.book, volley.PartitionBook)
    assert result.book.num_parts == 3 and result.book.num_nodes == cora.num_nodes
    assert sum(result.part_nodes) == cora.num_nodes
    assert sum(result.part_edges) == cora.num_edges
    q = result.quality
    assert 0.0 < q["edge_cut_fraction"] < 1.0
    slack = 0.06 if method == "metis" else 0.05 + 1e-9  # METIS's ubvec is soft
    for key in ("node_balance", "edge_balance", "train_balance"):
        assert q[key] <= 1.0 + slack, (key, q[key])
    manifest = read_partition_manifest(out)
    assert manifest["method"] == method
    assert manifest["quality"]["cut_edges"] == q["cut_edges"]

    node_map = as_numpy(load_node_map(out, verify=True))
    old_of = as_numpy(invert_node_map(node_map))
    assert np.array_equal(old_of[node_map], np.arange(cora.num_nodes))  # round trip

    x = as_numpy(cora.x)
    y = as_numpy(cora.y)
    owned = np.zeros(cora.num_nodes, dtype=np.int64)
    parts_edges = []
    train = []
    for p in range(3):
        part = volley.load_partition(out, p, verify=True)
        assert part.part == p and part.book == result.book
        rows_old = old_of[as_numpy(part.node_ids)]
        owned[rows_old] += 1
        ds = part.dataset
        assert np.array_equal(as_numpy(ds.x), x[rows_old])  # features follow their nodes
        assert np.array_equal(as_numpy(ds.y), y[rows_old])  # and so do labels
        g = ds.graph
        parts_edges.append(
            _edges(g.indptr, g.indices, g.edge_ids, rows=rows_old, neighbor_map=old_of)
        )
        train.append(rows_old[as_numpy(ds.train_idx)])
        owners = as_numpy(part.book.owner_of(part.node_ids))
        assert (owners == p).all()
        if method == "hotness":
            ids = as_numpy(part.cache_ids)
            assert len(ids) == 20
            assert (as_numpy(part.book.owner_of(ids)) != p).all()
            assert np.array_equal(as_numpy(part.cache_features), x[old_of[ids]])
        else:
            assert part.cache_ids is None
    assert (owned == 1).all()  # every node owned by exactly one partition
    union = np.concatenate(parts_edges)
    union = union[np.lexsort(union.T[::-1])]
    g = cora.graph
    assert np.array_equal(union, _edges(g.indptr, g.indices, np.arange(cora.num_edges)))
    assert np.array_equal(np.sort(np.concatenate(train)), np.sort(as_numpy(cora.train_idx)))
    assert verify_partitioned_dataset(out) == []


@needs_metis
def test_hotness_reports_remote_reads_against_metis_and_random(tmp_path, cora_dir):
    result = volley.partition(cora_dir, tmp_path / "hot", 4, method="hotness", fanouts=[10, 5])
    q = result.quality
    assert q["remote_access_fraction"] < q["random_remote_access_fraction"]
    assert q["remote_access_fraction"] <= q["metis_remote_access_fraction"]
    plain = volley.partition(cora_dir, tmp_path / "metis", 4, method="metis")
    assert plain.quality["remote_access_fraction"] is None
    simulated = volley.partition(
        cora_dir, tmp_path / "metis-sim", 4, method="metis", simulate_epoch=True, fanouts=[10, 5]
    )
    assert simulated.quality["remote_access_fraction"] == pytest.approx(
        q["metis_remote_access_fraction"]
    )


@needs_metis
def test_in_memory_dataset(tmp_path):
    edge_index = np.array([[0, 1, 2, 3, 4, 5], [1, 2, 0, 4, 5, 3]])
    graph = volley.Graph.from_edge_index(edge_index, num_nodes=6, undirected=True)
    ds = volley.Dataset(graph, x=np.arange(12, dtype=np.float32).reshape(6, 2), name="two")
    result = volley.partition(ds, tmp_path / "two", 2, method="metis")
    assert result.quality["cut_edges"] == 0  # two triangles
    part = volley.load_partition(tmp_path / "two", 1)
    assert part.num_nodes == 3
    assert repr(part).startswith("Partition(part=1/2")


def test_partition_book():
    book = volley.PartitionBook([0, 3, 3, 10])
    assert book.num_parts == 3 and book.num_nodes == 10
    assert book.owner_of(0) == 0 and book.owner_of(3) == 2 and book.owner_of(9) == 2
    assert list(as_numpy(book.owner_of([0, 2, 3, 9]))) == [0, 0, 2, 2]
    assert book.range(2) == range(3, 10)
    with pytest.raises(volley.VolleyIndexError, match="node id 10 out of range"):
        book.owner_of(10)
    with pytest.raises(IndexError, match="position 1"):
        book.owner_of(np.array([1, -1]))
    with pytest.raises(volley.VolleyValueError):
        volley.PartitionBook([0, 5, 2])


def test_bad_arguments(tmp_path, cora_dir):
    with pytest.raises(ValueError, match="method must be one of"):
        volley.partition(cora_dir, tmp_path / "x", 2, method="kway")
    with pytest.raises(volley.VolleyValueError, match="num_parts"):
        volley.partition(cora_dir, tmp_path / "x", 0)
    with pytest.raises(volley.VolleyValueError, match="needs the hotness method"):
        volley.partition(cora_dir, tmp_path / "x", 2, method="random", cache_bytes=100)


@needs_metis
def test_corrupt_and_mismatched_partitions_are_refused(tmp_path, cora_dir):
    out = tmp_path / "p"
    other = tmp_path / "q"
    volley.partition(cora_dir, out, 2, method="random")
    volley.partition(cora_dir, other, 2, method="random", seed=5)
    features = out / "part-1" / "features.npy"
    data = bytearray(features.read_bytes())
    data[-3] ^= 0xFF
    features.write_bytes(bytes(data))
    with pytest.raises(volley.VolleyOSError, match=r"part-1/features.npy: crc32: expected"):
        volley.load_partition(out, 1, verify=True)
    assert verify_partitioned_dataset(out)
    volley.load_partition(out, 0, verify=True)  # the other part is intact

    (other / "part-0" / "volley.json").replace(out / "part-0" / "volley.json")
    with pytest.raises(OSError, match="does not belong to this partitioned dataset"):
        volley.load_partition(out, 0)
    with pytest.raises(IndexError, match="partition 2 out of range"):
        volley.load_partition(other, 2)
    with pytest.raises(OSError, match="not a partitioned dataset directory"):
        volley.load_partition(cora_dir, 0)
