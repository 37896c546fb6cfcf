"""volley.NegativeSampler: seeded negatives for link prediction."""

import numpy as np
import pytest

import volley
from volley import _tensor


def ring_graph(n=50):
    src = np.arange(n)
    dst = (src + 1) % n
    return volley.Graph.from_edge_index(np.stack([src, dst]), num_nodes=n, undirected=True)


def as_numpy(x):
    return _tensor.to_numpy(x)


def test_pairs_are_seeded_and_thread_independent():
    graph = ring_graph()
    sampler = volley.NegativeSampler(graph, reject_existing=True, seed=3)
    before = volley.get_num_threads()
    try:
        volley.set_num_threads(1)
        one = [as_numpy(a) for a in sampler.sample_pairs(3000, batch_index=2)]
        volley.set_num_threads(2)
        two = [as_numpy(a) for a in sampler.sample_pairs(3000, batch_index=2)]
    finally:
        volley.set_num_threads(before)
    np.testing.assert_array_equal(one[0], two[0])
    np.testing.assert_array_equal(one[1], two[1])
    other = as_numpy(sampler.sample_pairs(3000, batch_index=3)[0])
    assert not np.array_equal(one[0], other)
    assert one[0].dtype == np.int64 and one[0].min() >= 0 and one[0].max() < 50


def test_rejection_against_an_independent_edge_set():
    graph = ring_graph()
    edges = {(i, (i + 1) % 50) for i in range(50)} | {((i + 1) % 50, i) for i in range(50)}
    plain = volley.NegativeSampler(graph, seed=1)
    src, dst = (as_numpy(a) for a in plain.sample_pairs(5000))
    assert any((int(s), int(d)) in edges for s, d in zip(src, dst))  # the check can fail
    clean = volley.NegativeSampler(graph, reject_existing=True, max_draws=64, seed=1)
    src, dst = (as_numpy(a) for a in clean.sample_pairs(5000))
    assert clean.kept_existing == 0
    assert not any((int(s), int(d)) in edges for s, d in zip(src, dst))
    assert clean.has_edge(0, 1) and clean.has_edge(1, 0) and not clean.has_edge(0, 2)


def test_destinations_per_source_and_weights():
    graph = ring_graph(10)
    weights = np.zeros(10)
    weights[[4, 6]] = 1.0
    sampler = volley.NegativeSampler(graph, weights, reject_existing=True, seed=0)
    dst = as_numpy(sampler.sample_destinations([5, 0, 1], 4, batch_index=1))
    assert dst.shape == (12,)
    # Source 5 is linked to 4 and 6, the only nodes with weight: every draw is an edge, so its
    # negatives are kept and counted; sources 0 and 1 get clean ones.
    assert set(dst[:4]) <= {4, 6} and sampler.kept_existing == 4
    assert set(dst[4:]) <= {4, 6}


def test_degree_distribution_skips_isolated_nodes():
    edge_index = np.array([[1, 2, 3], [0, 0, 0]])
    graph = volley.Graph.from_edge_index(edge_index, num_nodes=6)
    src, dst = (as_numpy(a) for a in volley.NegativeSampler(graph, "degree").sample_pairs(100))
    assert set(dst) == {0} and set(src) == {0}


def test_errors_name_the_value():
    graph = ring_graph(10)
    with pytest.raises(volley.VolleyValueError, match="'zipf'"):
        volley.NegativeSampler(graph, "zipf")
    with pytest.raises(volley.VolleyValueError, match="3 entries; the graph has 10 nodes"):
        volley.NegativeSampler(graph, np.ones(3))
    with pytest.raises(volley.VolleyValueError, match="max_draws must be at least 1, got 0"):
        volley.NegativeSampler(graph, max_draws=0)
    with pytest.raises(volley.VolleyTypeError, match="dict"):
        volley.NegativeSampler(graph, {"a": 1})
    sampler = volley.NegativeSampler(graph)
    with pytest.raises(volley.VolleyIndexError, match="source id 10 at position 1"):
        sampler.sample_destinations([1, 10], 2)
    with pytest.raises(volley.VolleyTypeError, match="float"):
        sampler.sample_destinations(np.array([1.5]), 2)
    with pytest.raises(volley.VolleyIndexError, match=r"\(0, 99\)"):
        sampler.has_edge(0, 99)
