"""volley.NeighborSampler: (n_id, batch_size, adjs) in PyG NeighborSampler / Quiver format."""

from __future__ import annotations

import numpy as np
import pytest

import volley

from conftest import as_numpy


def graph_and_edges(seed=0, n=300, m=2500):
    rng = np.random.default_rng(seed)
    edge_index = rng.integers(0, n, size=(2, m), dtype=np.int64)
    return volley.Graph.from_edge_index(edge_index, num_nodes=n), edge_index


def test_adjs_are_outermost_first_and_consistent(backend):
    graph, edge_index = graph_and_edges()
    sampler = volley.NeighborSampler(graph, [5, 4, 3], seed=2)
    seeds = np.array([3, 99, 7, 250], dtype=np.int64)
    n_id, batch_size, adjs = sampler.sample(seeds)
    n_id = as_numpy(n_id)
    assert batch_size == 4
    assert list(n_id[:4]) == list(seeds)
    assert len(adjs) == 3
    sizes = [adj.size for adj in adjs]
    # Targets of each layer are the sources of the next (outermost first).
    assert sizes[-1][1] == batch_size
    for outer, inner in zip(sizes, sizes[1:]):
        assert outer[1] == inner[0]
    assert sizes[0][0] == len(n_id)
    for adj in adjs:
        ei, e_id = as_numpy(adj.edge_index), as_numpy(adj.e_id)
        assert ei.shape == (2, len(e_id))
        assert (ei[0] < adj.size[0]).all() and (ei[1] < adj.size[1]).all()
        # Local ids map back to the original edges.
        np.testing.assert_array_equal(n_id[ei], edge_index[:, e_id])


def test_pure_function_of_seed_and_batch_index():
    graph, _ = graph_and_edges()
    a = volley.NeighborSampler(graph, [5, 5], seed=4).sample_subgraph([1, 2, 3], batch_index=9)
    b = volley.NeighborSampler(graph, [5, 5], seed=4).sample_subgraph([1, 2, 3], batch_index=9)
    c = volley.NeighborSampler(graph, [5, 5], seed=5).sample_subgraph([1, 2, 3], batch_index=9)
    np.testing.assert_array_equal(as_numpy(a.e_id), as_numpy(b.e_id))
    assert not np.array_equal(as_numpy(a.e_id), as_numpy(c.e_id))


def test_accepts_edge_index_and_weights():
    edge_index = np.array([[1, 2, 3, 0], [0, 0, 0, 1]], dtype=np.int64)
    weighted = volley.Graph.from_edge_index(edge_index, edge_weight=np.array([0, 1, 0, 1.0]))
    sampler = volley.NeighborSampler(weighted, [1], weighted=True, seed=0)
    for i in range(20):
        n_id, _, _ = sampler.sample([0], batch_index=i)
        assert as_numpy(n_id)[1] == 2  # the only positive-weight in-neighbor of 0
    plain = volley.NeighborSampler(edge_index, [-1])
    n_id, _, adjs = plain.sample([0])
    assert sorted(as_numpy(n_id)[1:].tolist()) == [1, 2, 3]


@pytest.mark.parametrize(
    "args, error, message",
    [
        (dict(sizes=[]), ValueError, "at least one hop"),
        (dict(sizes=[3, -2]), ValueError, "size -2 at hop 1"),
        (dict(sizes=[3], weighted=True), ValueError, "needs edge weights"),
    ],
)
def test_bad_arguments(args, error, message):
    graph, _ = graph_and_edges()
    with pytest.raises(error, match=message):
        volley.NeighborSampler(graph, **args)


def test_bad_seeds():
    graph, _ = graph_and_edges()
    sampler = volley.NeighborSampler(graph, [2])
    with pytest.raises(IndexError, match="seed id 300 at position 1"):
        sampler.sample([0, 300])
    with pytest.raises(ValueError, match="duplicate seed id 5"):
        sampler.sample([5, 5])
    n_id, batch_size, adjs = sampler.sample(np.array([], dtype=np.int64))
    assert batch_size == 0 and len(as_numpy(n_id)) == 0
