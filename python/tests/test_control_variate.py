"""volley.ControlVariate (VR-GCN's estimator) on random graphs: with every neighbor sampled it
is exact whatever the history; with the history equal to the activations it is exact whatever
the sample; without history it is plain sampling's unbiased estimate (the mean over many
samples converges); the full-neighborhood history term equals volley.aggregate; a history in a
NodeStore (read by a callable) gives the same; deeper blocks; errors."""

from __future__ import annotations

import numpy as np
import pytest

import volley
from volley.loader import NeighborLoader

torch = pytest.importorskip("torch")
Data = pytest.importorskip("torch_geometric.data").Data

OPS = ["gcn", "mean", "sum"]


def _graph(seed: int, n: int = 300, e: int = 2400):
    rng = np.random.default_rng(seed)
    edge_index = rng.integers(0, n, (2, e))
    edge_index = edge_index[:, edge_index[0] != edge_index[1]]
    return Data(edge_index=torch.from_numpy(edge_index), num_nodes=n)


def _batches(data, cv, fanouts, seeds, seed=0, batch_size=32):
    return list(NeighborLoader(data, num_neighbors=fanouts, batch_size=batch_size,
                               input_nodes=torch.as_tensor(seeds), transform=cv, seed=seed))


@pytest.mark.parametrize("op", OPS)
def test_every_neighbor_sampled_is_exact_whatever_the_history(op):
    data = _graph(1)
    cv = volley.ControlVariate(data, op)
    h, history = torch.randn(data.num_nodes, 8), torch.randn(data.num_nodes, 8)
    exact = volley.aggregate(data, h, op)
    for batch in _batches(data, cv, [-1], torch.arange(0, data.num_nodes, 3)):
        seeds = batch.n_id[:batch.batch_size]
        full = cv.history_aggregate(history, seeds)
        out = cv.estimate(batch, h[batch.n_id], history[batch.n_id], full)
        assert torch.allclose(out, exact[seeds], atol=1e-5)
        assert torch.allclose(cv.estimate(batch, h[batch.n_id]), exact[seeds], atol=1e-5)


@pytest.mark.parametrize("op", OPS)
def test_a_history_equal_to_the_activations_is_exact_with_one_neighbor(op):
    data = _graph(2)
    cv = volley.ControlVariate(data, op)
    h = torch.randn(data.num_nodes, 5)
    exact = volley.aggregate(data, h, op)
    for batch in _batches(data, cv, [1], torch.arange(data.num_nodes)):
        seeds = batch.n_id[:batch.batch_size]
        out = cv.estimate(batch, h[batch.n_id], h[batch.n_id], cv.history_aggregate(h, seeds))
        assert torch.allclose(out, exact[seeds], atol=1e-5)


def test_history_aggregate_equals_the_whole_graph_aggregation_and_reads_a_store():
    data = _graph(3)
    history = torch.randn(data.num_nodes, 6)
    ids = torch.tensor([5, 0, 299, 5, 17])
    store = volley.NodeStore()
    store.init("h", data.num_nodes, 6)
    store.push("h", torch.arange(data.num_nodes), history)
    calls = []

    def pull(rows):
        calls.append(rows)
        return store.pull("h", rows)

    for op in OPS:
        cv = volley.ControlVariate(data, op)
        expected = volley.aggregate(data, history, op)[ids]
        assert torch.allclose(cv.history_aggregate(history, ids), expected, atol=1e-5)
        assert torch.equal(cv.history_aggregate(pull, ids), cv.history_aggregate(history, ids))
    assert all(bool((rows[1:] > rows[:-1]).all()) for rows in calls)  # sorted, unique


def test_without_history_the_sampled_estimate_is_unbiased():
    data = _graph(4, n=60, e=900)
    cv = volley.ControlVariate(data, "gcn")
    h = torch.randn(data.num_nodes, 3)
    seeds = torch.arange(10)
    exact = volley.aggregate(data, h, "gcn")[seeds]
    total = torch.zeros(10, 3, dtype=torch.float64)
    draws = 400
    for seed in range(draws):
        (batch,) = _batches(data, cv, [2], seeds, seed=seed, batch_size=10)
        order = torch.argsort(batch.n_id[:10])
        total += cv.estimate(batch, h[batch.n_id])[order].double()
    one = _batches(data, cv, [2], seeds, batch_size=10)[0]
    spread = (cv.estimate(one, h[one.n_id])[torch.argsort(one.n_id[:10])] - exact).abs().max()
    error = (total / draws - exact.double()).abs().max()
    assert error < 0.2 * spread  # the mean of 400 draws is far closer than one draw


def test_deeper_blocks_estimate_each_layer_with_its_targets():
    data = _graph(5)
    cv = volley.ControlVariate(data, "mean")
    x = torch.randn(data.num_nodes, 4)
    layer1 = volley.aggregate(data, x, "mean")
    layer2 = volley.aggregate(data, layer1, "mean")
    (batch,) = _batches(data, cv, [-1, -1], torch.arange(20), batch_size=20)
    first = batch.num_sampled_nodes[0] + batch.num_sampled_nodes[1]
    h1 = cv.estimate(batch, x[batch.n_id], targets=first)
    assert torch.allclose(h1, layer1[batch.n_id[:first]], atol=1e-5)
    assert torch.allclose(cv.estimate(batch, h1), layer2[batch.n_id[:20]], atol=1e-5)


def test_errors_name_the_problem():
    data = _graph(6)
    cv = volley.ControlVariate(data)
    with pytest.raises(volley.VolleyValueError, match="op"):
        volley.ControlVariate(data, "max")
    with pytest.raises(volley.VolleyTypeError, match="volley.Graph or a PyG Data"):
        volley.ControlVariate(object())
    with pytest.raises(volley.VolleyIndexError, match=r"ids\[1\] = 300 is outside the graph's 300"):
        cv.history_aggregate(torch.zeros(300, 2), [0, 300])
    (plain,) = list(NeighborLoader(data, num_neighbors=[2], batch_size=8,
                                   input_nodes=torch.arange(8)))
    with pytest.raises(volley.VolleyValueError, match="transform="):
        cv.estimate(plain, torch.zeros(data.num_nodes, 2))
    (batch,) = _batches(data, cv, [2], torch.arange(8), batch_size=8)
    with pytest.raises(volley.VolleyValueError, match="pass both or neither"):
        cv.estimate(batch, torch.zeros(len(batch.n_id), 2), torch.zeros(len(batch.n_id), 2))
    with pytest.raises(volley.VolleyValueError, match="h has 3 rows"):
        cv.estimate(batch, torch.zeros(3, 2))
    with pytest.raises(volley.VolleyTypeError, match="n_id"):
        cv(Data(edge_index=data.edge_index))
