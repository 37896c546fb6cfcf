"""Temporal sampling: time_attr / input_time / temporal_strategy through the loader,
Graph times and sorting, the dataset files, and the errors."""

import pickle

import numpy as np
import pytest

import volley

torch = pytest.importorskip("torch")
Data = pytest.importorskip("torch_geometric.data").Data
HeteroData = pytest.importorskip("torch_geometric.data").HeteroData
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


def _timed_graph(seed=3):
    """A random graph with node times and edge times (the latter in input order, as e_id)."""
    rng = np.random.default_rng(seed)
    edge_index = rng.integers(0, 150, (2, 2500))
    edge_time = rng.integers(0, 100, 2500)
    graph = volley.Graph.from_edge_index(
        edge_index, num_nodes=150, node_time=rng.integers(0, 100, 150), edge_time=edge_time
    )
    return graph, edge_time


@pytest.mark.parametrize("time_attr", ["edge_time", "node_time"])
@pytest.mark.parametrize("strategy", ["uniform", "last"])
def test_neighbor_sampler_seed_time_is_the_temporal_kernel(time_attr, strategy):
    """volley.NeighborSampler(time_attr=...).sample_subgraph(seeds, seed_time=) equals the native
    temporal kernel on the time-sorted graph, nothing later than the seed's time is sampled, and a
    pickled sampler repeats it."""
    graph, edge_time = _timed_graph()
    sampler = volley.NeighborSampler(graph, [4, 3], seed=7, time_attr=time_attr, temporal_strategy=strategy)
    kind = time_attr[:4]
    assert sampler.graph.is_sorted_by_time(kind)
    seeds, times = np.array([3, 3, 40, 99]), np.array([10, 95, 50, 70])
    sub = sampler.sample_subgraph(seeds, 2, seed_time=times)
    options = volley._volley.NeighborSamplerOptions(
        [4, 3], seed=7, disjoint=True, time_source=kind, temporal_strategy=strategy
    )
    want = volley._volley.sample_neighbors_temporal(sampler.graph._csr, seeds, times, options, 2)
    for field in ("n_id", "row", "col", "e_id", "batch"):
        assert np.array_equal(np.asarray(getattr(sub, field)), np.asarray(want[field])), field
    tree = np.asarray(sub.batch)
    limit = times[tree[np.asarray(sub.row)]]
    if kind == "edge":
        assert (edge_time[np.asarray(sub.e_id)] <= limit).all()
    else:
        node_time = np.asarray(sampler.graph.node_time)
        assert (node_time[np.asarray(sub.n_id)[np.asarray(sub.col)]] <= limit).all()
    assert len(np.asarray(sub.e_id)) > 0
    n_id, batch_size, adjs = sampler.sample(seeds, 2, seed_time=times)
    assert batch_size == 4 and np.array_equal(np.asarray(n_id), np.asarray(sub.n_id)) and len(adjs) == 2
    copy = pickle.loads(pickle.dumps(sampler))
    again = copy.sample_subgraph(seeds, 2, seed_time=times)
    assert np.array_equal(np.asarray(again.n_id), np.asarray(sub.n_id))


def test_neighbor_sampler_node_time_defaults_to_the_seeds_own():
    graph, _ = _timed_graph()
    sampler = volley.NeighborSampler(graph, [5], seed=1, time_attr="time")  # node time present
    seeds = np.array([1, 2, 3])
    own = np.asarray(sampler.graph.node_time)[seeds]
    a = sampler.sample_subgraph(seeds, 0)
    b = sampler.sample_subgraph(seeds, 0, seed_time=own)
    assert np.array_equal(np.asarray(a.n_id), np.asarray(b.n_id))
    assert np.array_equal(np.asarray(a.batch), np.asarray(b.batch))
    assert volley.NeighborSampler(graph, [5]).sample_subgraph(seeds, 0).batch is None


@pytest.mark.parametrize(
    "make, call, message",
    [
        (dict(time_attr="stamp"), None, "time_attr='stamp': a graph's times are"),
        (dict(time_attr="edge_time", temporal_strategy="newest"), None, "temporal_strategy must be"),
        (dict(time_attr="edge_time"), dict(), "sampling by edge time needs seed_time"),
        (dict(time_attr="edge_time"), dict(seed_time=[1, 2]), r"one entry per seed \(3\), got shape \[2\]"),
        (dict(time_attr="edge_time"), dict(seed_time=[1.5, 2.0, 3.0]), "integer timestamps"),
        (dict(), dict(seed_time=[1, 2, 3]), "seed_time was given, but the sampler has no time_attr"),
    ],
)
def test_neighbor_sampler_bad_time_inputs_are_named(make, call, message):
    graph, _ = _timed_graph()
    with pytest.raises(volley.VolleyValueError, match=message):
        sampler = volley.NeighborSampler(graph, [3], **make)
        sampler.sample_subgraph([1, 2, 3], 0, **call)
    untimed = volley.Graph.from_edge_index(np.array([[0, 1], [1, 0]]))
    with pytest.raises(volley.VolleyValueError, match="needs the dataset's edge_time|has none"):
        volley.NeighborSampler(untimed, [3], time_attr="edge_time")


def test_uint64_times_past_int64_are_refused_naming_the_value():
    """One rule for every time input: a uint64 time of 2**64 - 1 used to wrap to -1 (an empty
    batch); now each is refused with the value and its position, and in-range uint64 is taken."""
    too_late = np.zeros(10, dtype=np.uint64)
    too_late[7] = np.uint64(2**64 - 1)
    message = r"input_time holds 18446744073709551615 at position 7: timestamps must fit in int64"
    with pytest.raises(volley.VolleyValueError, match=message):
        NeighborLoader(temporal_data(), [2], input_nodes=torch.arange(10), time_attr="time",
                       input_time=too_late)
    fine = NeighborLoader(temporal_data(), [2], input_nodes=torch.arange(10), time_attr="time",
                          input_time=np.full(10, 500, dtype=np.uint64), batch_size=10)
    assert next(iter(fine)).batch is not None
    graph = volley.Graph.from_edge_index([[0, 1, 2], [1, 2, 0]])
    with pytest.raises(volley.VolleyValueError, match=r"edge_time holds 9223372036854775808 at position 2"):
        graph.with_times(edge_time=np.array([1, 2, 2**63], dtype=np.uint64))
    sampler = volley.NeighborSampler(graph.with_times(edge_time=[5, 1, 3]), [1], time_attr="edge_time")
    with pytest.raises(volley.VolleyValueError, match=r"seed_time holds 18446744073709551615 at position 0"):
        sampler.sample(np.array([1]), seed_time=np.array([2**64 - 1], dtype=np.uint64))
    data = temporal_data()
    with pytest.raises(volley.VolleyValueError, match=r"edge_label_time holds 18446744073709551615"):
        volley.loader.LinkNeighborLoader(
            data, [2], edge_label_index=data.edge_index[:, :4], time_attr="time",
            edge_label_time=np.array([0, 1, 2**64 - 1, 3], dtype=np.uint64))
    hetero = HeteroData()
    hetero["a"].num_nodes = 4
    hetero["a"].time = torch.arange(4)
    hetero["a", "to", "a"].edge_index = torch.tensor([[0, 1, 2], [1, 2, 3]])
    with pytest.raises(volley.VolleyValueError, match=r"holds 18446744073709551615 at position 1"):
        NeighborLoader(hetero, [2], input_nodes=("a", torch.arange(2)), time_attr="time",
                       input_time=np.array([0, 2**64 - 1], dtype=np.uint64))
