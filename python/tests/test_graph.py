"""Graph construction, accessors and conversions, checked against a plain-numpy reference."""

from __future__ import annotations

import numpy as np
import pytest

import volley
from conftest import as_numpy, torch_or_none

torch = torch_or_none()


def reference_csr(
    edge_index,
    num_nodes,
    *,
    undirected=False,
    drop_self_loops=False,
    drop_duplicates=False,
    orientation="in",
    weights=None,
):
    """The CSR build_csr must produce, computed the obvious way (lexicographic sort)."""
    src, dst = (np.asarray(row, dtype=np.int64) for row in edge_index)
    eids = np.arange(src.size, dtype=np.int64)
    w = None if weights is None else np.asarray(weights, dtype=np.float32)
    if undirected:  # each edge also reversed; a self-loop is not doubled
        loop = src == dst
        src, dst = np.concatenate([src, dst[~loop]]), np.concatenate([dst, src[~loop]])
        eids = np.concatenate([eids, eids[~loop]])
        w = None if w is None else np.concatenate([w, w[~loop]])
    rows, cols = (dst, src) if orientation == "in" else (src, dst)
    keep = rows != cols if drop_self_loops else np.ones(rows.size, dtype=bool)
    rows, cols, eids = rows[keep], cols[keep], eids[keep]
    w = None if w is None else w[keep]
    order = np.lexsort((eids, cols, rows))  # by row, then neighbor, then edge id
    rows, cols, eids = rows[order], cols[order], eids[order]
    w = None if w is None else w[order]
    if drop_duplicates and rows.size:
        first = np.ones(rows.size, dtype=bool)
        first[1:] = (rows[1:] != rows[:-1]) | (cols[1:] != cols[:-1])
        rows, cols, eids = rows[first], cols[first], eids[first]
        w = None if w is None else w[first]
    indptr = np.zeros(num_nodes + 1, dtype=np.int64)
    np.cumsum(np.bincount(rows, minlength=num_nodes), out=indptr[1:])
    return indptr, cols, eids, w


def random_edge_index(rng, num_nodes, num_edges):
    return rng.integers(0, num_nodes, size=(2, num_edges), dtype=np.int64)


OPTION_SETS = [
    {},
    {"undirected": True},
    {"drop_self_loops": True},
    {"drop_duplicates": True},
    {"undirected": True, "drop_self_loops": True, "drop_duplicates": True},
    {"orientation": "out"},
    {"orientation": "out", "undirected": True, "drop_duplicates": True},
]


@pytest.mark.parametrize("options", OPTION_SETS, ids=lambda o: ",".join(o) or "default")
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_from_edge_index_matches_reference(options, seed):
    rng = np.random.default_rng(seed)
    num_nodes = int(rng.integers(1, 60))
    edge_index = random_edge_index(rng, num_nodes, int(rng.integers(0, 400)))
    weights = rng.random(edge_index.shape[1], dtype=np.float32)
    graph = volley.Graph.from_edge_index(
        edge_index, num_nodes, edge_weight=weights, **options
    )
    indptr, indices, eids, w = reference_csr(edge_index, num_nodes, weights=weights, **options)
    assert graph.num_nodes == num_nodes
    assert graph.num_edges == indices.size
    np.testing.assert_array_equal(as_numpy(graph.indptr), indptr)
    np.testing.assert_array_equal(as_numpy(graph.indices), indices)
    np.testing.assert_array_equal(as_numpy(graph.edge_ids), eids)
    np.testing.assert_array_equal(as_numpy(graph.weights), w)


@pytest.mark.parametrize("dtype", [np.int32, np.int64])
def test_input_kinds_agree(dtype):
    rng = np.random.default_rng(7)
    edge_index = random_edge_index(rng, 30, 200).astype(dtype)
    expected = as_numpy(volley.Graph.from_edge_index(edge_index, 30).indices).copy()
    from_list = volley.Graph.from_edge_index(edge_index.tolist(), 30)
    np.testing.assert_array_equal(as_numpy(from_list.indices), expected)
    if torch is not None:
        from_torch = volley.Graph.from_edge_index(torch.from_numpy(edge_index), 30)
        np.testing.assert_array_equal(as_numpy(from_torch.indices), expected)
        transposed_view = torch.from_numpy(edge_index.T.copy()).t()  # non-contiguous [2, E]
        from_view = volley.Graph.from_edge_index(transposed_view, 30)
        np.testing.assert_array_equal(as_numpy(from_view.indices), expected)


def test_num_nodes_defaults_to_max_id_plus_one():
    graph = volley.Graph.from_edge_index(np.array([[0, 4], [2, 1]]))
    assert graph.num_nodes == 5
    assert volley.Graph.from_edge_index(np.zeros((2, 0), dtype=np.int64)).num_nodes == 0


def test_result_does_not_depend_on_thread_count():
    rng = np.random.default_rng(3)
    edge_index = random_edge_index(rng, 5000, 200_000)
    previous = volley.get_num_threads()
    try:
        volley.set_num_threads(1)
        assert volley.get_num_threads() == 1
        serial = volley.Graph.from_edge_index(edge_index, undirected=True, drop_duplicates=True)
        volley.set_num_threads(4)
        parallel = volley.Graph.from_edge_index(edge_index, undirected=True, drop_duplicates=True)
    finally:
        volley.set_num_threads(previous)
    for name in ("indptr", "indices", "edge_ids"):
        np.testing.assert_array_equal(
            as_numpy(getattr(serial, name)), as_numpy(getattr(parallel, name))
        )


def test_accessors_and_conversions(backend):
    edge_index = np.array([[0, 0, 1, 2, 3], [1, 2, 2, 0, 2]], dtype=np.int64)
    graph = volley.Graph.from_edge_index(edge_index, 4)
    kind = np.ndarray if backend == "numpy" else torch.Tensor
    assert isinstance(graph.indptr, kind) and isinstance(graph.degree(), kind)
    assert graph.orientation == "in"
    assert as_numpy(graph.degree()).tolist() == [1, 1, 3, 0]  # in-degrees
    assert graph.weights is None

    # to_edge_index gives back the input edges (in CSR order; edge_ids says which).
    coo = as_numpy(graph.to_edge_index())
    assert coo.dtype == np.int64 and coo.shape == (2, 5)
    np.testing.assert_array_equal(coo, edge_index[:, as_numpy(graph.edge_ids)])

    out = graph.transposed()
    assert out.orientation == "out"
    assert as_numpy(out.degree()).tolist() == [2, 1, 1, 1]  # out-degrees
    np.testing.assert_array_equal(
        as_numpy(out.indices),
        as_numpy(volley.Graph.from_edge_index(edge_index, 4, orientation="out").indices),
    )
    assert out.transposed().orientation == "in"
    np.testing.assert_array_equal(as_numpy(out.transposed().indices), as_numpy(graph.indices))
    assert repr(graph) == (
        "Graph(num_nodes=4, num_edges=5, orientation='in', index_dtype=int32, "
        "edge_ids=True, weights=False)"
    )


def test_from_csr_round_trip(backend):
    rng = np.random.default_rng(11)
    built = volley.Graph.from_edge_index(random_edge_index(rng, 40, 300), 40)
    copy = volley.Graph.from_csr(
        as_numpy(built.indptr), as_numpy(built.indices), as_numpy(built.edge_ids)
    )
    assert copy.num_nodes == 40 and copy.num_edges == 300
    np.testing.assert_array_equal(as_numpy(copy.edge_ids), as_numpy(built.edge_ids))
    rebuilt = volley.Graph.from_edge_index(built.to_edge_index(), 40)
    np.testing.assert_array_equal(as_numpy(rebuilt.indices), as_numpy(built.indices))


def test_outputs_are_numpy_without_torch(numpy_only):
    graph = volley.Graph.from_edge_index(np.array([[0, 1], [1, 0]]))
    for value in (graph.indptr, graph.indices, graph.edge_ids, graph.degree(),
                  graph.to_edge_index()):
        assert isinstance(value, np.ndarray)


def test_random_split_is_seeded_and_disjoint(backend):
    split = volley.random_split(100, train_fraction=0.5, val_fraction=0.2, seed=3)
    train, val, test = (as_numpy(ids) for ids in split)
    assert (train.size, val.size, test.size) == (50, 20, 30)
    assert np.union1d(np.union1d(train, val), test).tolist() == list(range(100))
    again = volley.random_split(100, train_fraction=0.5, val_fraction=0.2, seed=3)
    np.testing.assert_array_equal(as_numpy(again.train), train)


def test_planetoid_split_takes_per_class_nodes():
    labels = np.repeat(np.arange(4), 50)  # 4 classes of 50 nodes
    split = volley.planetoid_split(labels, per_class=5, num_val=30, num_test=60, seed=1)
    train = as_numpy(split.train)
    assert np.bincount(labels[train], minlength=4).tolist() == [5, 5, 5, 5]
    assert as_numpy(split.val).size == 30 and as_numpy(split.test).size == 60
    assert np.intersect1d(train, as_numpy(split.test)).size == 0


def test_building_releases_the_gil():
    import threading
    import time

    edge_index = np.random.default_rng(0).integers(0, 200_000, size=(2, 1_000_000))
    span = {}
    ticks = []

    def build():
        span["start"] = time.perf_counter()
        volley.Graph.from_edge_index(edge_index, undirected=True, drop_duplicates=True)
        span["end"] = time.perf_counter()

    thread = threading.Thread(target=build)
    thread.start()
    while thread.is_alive():
        ticks.append(time.perf_counter())
        time.sleep(0.0005)
    thread.join()
    # Python code kept running on this thread while the native build ran on the other.
    assert any(span["start"] < tick < span["end"] for tick in ticks)
