"""Temporal sampling (issue 16): time_attr / input_time / temporal_strategy through the loader,
Graph times and sorting, the dataset files, and the errors."""

import numpy as np
import pytest

import volley

torch = pytest.importorskip("torch")
Data = pytest.importorskip("torch_geometric.data").Data
from volley.loader import NeighborLoader  # noqa: E402


def temporal_data(num_nodes=120, num_edges=3000, seed=0, kind="edge"):
    """A random temporal multigraph (repeated edges, hubs) with int64 times in [0, 1000)."""
    rng = np.random.default_rng(seed)
    src = rng.integers(0, num_nodes, num_edges)
    dst = (rng.integers(0, num_nodes, num_edges) * rng.integers(0, num_nodes, num_edges)) // num_nodes
    length = num_edges if kind == "edge" else num_nodes
    return Data(edge_index=torch.tensor(np.stack([src, dst])), num_nodes=num_nodes,
                time=torch.tensor(rng.integers(0, 1000, length)), x=torch.randn(num_nodes, 3))


def check_no_leak(data, batch, input_time, kind):
    """No sampled edge (node, for node time) later than the time of its seed's tree."""
    tree = batch.batch
    seed_time = torch.as_tensor(input_time)[batch.input_id]
    assert torch.equal(tree[batch.edge_index[0]], tree[batch.edge_index[1]])  # trees closed
    limit = seed_time[tree[batch.edge_index[1]]]
    if kind == "edge":
        assert bool((data.time[batch.e_id] <= limit).all())
    else:
        assert bool((data.time[batch.n_id[batch.batch_size:]] <= seed_time[tree[batch.batch_size:]]).all())
        assert bool((data.time[batch.n_id[batch.edge_index[0]]] <= limit).all())


@pytest.mark.parametrize("kind", ["edge", "node"])
@pytest.mark.parametrize("strategy", ["uniform", "last"])
@pytest.mark.parametrize("disjoint", [False, True])
def test_nothing_later_than_the_seed_time(kind, strategy, disjoint):
    data = temporal_data(kind=kind, seed=3)
    rng = np.random.default_rng(1)
    seeds = torch.tensor(rng.integers(0, 40, 90))  # repeats: the same node at other times
    input_time = torch.tensor(rng.integers(0, 1100, 90))
    loader = NeighborLoader(data, [6, -1, 2], input_nodes=seeds, input_time=input_time, time_attr="time",
                            temporal_strategy=strategy, disjoint=disjoint, batch_size=16, shuffle=True,
                            seed=4)
    assert loader.disjoint  # PyG: temporal sampling is disjoint
    edges = 0
    for batch in loader:
        check_no_leak(data, batch, input_time, kind)
        assert torch.equal(batch.n_id[: batch.batch_size], seeds[batch.input_id])
        edges += batch.edge_index.shape[1]
    assert edges > 0


def test_last_takes_the_latest_and_threads_do_not_matter():
    data = temporal_data(seed=5)
    input_time = torch.full((30,), 500)
    kwargs = dict(input_nodes=torch.arange(30), input_time=input_time, time_attr="time",
                  temporal_strategy="last", batch_size=30, seed=2)
    one = next(iter(NeighborLoader(data, [3], num_workers=1, **kwargs)))
    two = next(iter(NeighborLoader(data, [3], num_workers=2, **kwargs)))
    assert torch.equal(one.n_id, two.n_id) and torch.equal(one.e_id, two.e_id)
    dst, t = data.edge_index[1], data.time
    for seed in range(30):
        picked = one.e_id[one.edge_index[1] == seed]
        admissible = ((dst == seed) & (t <= 500)).nonzero().flatten()
        want = sorted(t[admissible].tolist())[-3:]
        assert sorted(t[picked].tolist()) == want, seed


def test_graph_times_sorting_and_dataset_round_trip(tmp_path):
    data = temporal_data(num_nodes=50, num_edges=400, seed=7)
    dataset = volley.Dataset.from_pyg(data)
    graph = dataset.graph
    assert graph.node_time is None and graph.edge_time is not None
    # edge_time follows its edge into CSR order
    assert np.array_equal(np.asarray(graph.edge_time), data.time.numpy()[np.asarray(graph.edge_ids)])
    assert not graph.is_sorted_by_time("edge")
    ordered = graph.sort_by_time()
    assert ordered.is_sorted_by_time("edge")
    assert np.array_equal(np.asarray(ordered.edge_time), data.time.numpy()[np.asarray(ordered.edge_ids)])
    dataset.save(str(tmp_path / "timed"))
    loaded = volley.load_dataset(str(tmp_path / "timed"))
    assert np.array_equal(np.asarray(loaded.graph.edge_time), np.asarray(graph.edge_time))
    node = volley.Dataset.from_pyg(temporal_data(num_nodes=50, num_edges=400, kind="node"))
    assert node.graph.node_time is not None and node.graph.edge_time is None
    # A Dataset names its times; the loader samples by them.
    loader = NeighborLoader(loaded, [4], input_nodes=torch.arange(5), input_time=torch.full((5,), 300),
                            time_attr="edge_time", batch_size=5)
    assert next(iter(loader)).batch is not None


@pytest.mark.parametrize("kwargs, message", [
    (dict(time_attr="time"), "needs input_time"),
    (dict(time_attr="time", input_time=torch.zeros(3, dtype=torch.long)), r"one entry per input node \(10\)"),
    (dict(time_attr="time", input_time=torch.zeros(10)), "integer timestamps"),
    (dict(time_attr="time", input_time=torch.zeros(10, dtype=torch.long), temporal_strategy="random"), "random"),
    (dict(input_time=torch.zeros(10, dtype=torch.long)), "without time_attr"),
    (dict(time_attr="when"), "no attribute 'when'"),
])
def test_bad_temporal_inputs_are_named(kwargs, message):
    with pytest.raises(volley.VolleyValueError, match=message):
        NeighborLoader(temporal_data(), [2], input_nodes=torch.arange(10), **kwargs)


def test_bad_times_on_graphs():
    graph = volley.Graph.from_edge_index([[0, 1, 2], [1, 2, 0]])
    with pytest.raises(volley.VolleyValueError, match=r"edge_time must have shape \[3\]"):
        graph.with_times(edge_time=[1, 2])
    with pytest.raises(volley.VolleyValueError, match="integer timestamps"):
        graph.with_times(node_time=[0.5, 1.0, 2.0])
    with pytest.raises(volley.VolleyValueError, match="needs node_time"):
        graph.sort_by_time("node")
    timed = graph.with_times(edge_time=[5, 1, 3])
    options = volley._volley.NeighborSamplerOptions([1], time_source="edge", temporal_strategy="last")
    unsorted = volley.Graph.from_edge_index([[0, 1], [2, 2]]).with_times(edge_time=[9, 1])
    with pytest.raises(volley.VolleyValueError, match="row 2 is not"):
        volley._volley.sample_neighbors_temporal(unsorted._csr, np.array([2]), np.array([5]), options)
    out = volley._volley.sample_neighbors_temporal(timed._csr, np.array([1]), np.array([0]), options)
    assert len(out["e_id"]) == 0  # the only in-edge of 1 (time 5) is later than 0
