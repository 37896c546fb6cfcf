"""Temporal and disjoint sampling of heterogeneous graphs (issues 14 and 16): the sampler's rules
(src/volley/sampling/hetero_sampler.h) and the loader's PyG fields."""

import concurrent.futures

import numpy as np
import pytest

import volley
from volley.hetero import HeteroGraph

torch = pytest.importorskip("torch")
pyg_data = pytest.importorskip("torch_geometric.data")

NODES = {"paper": 60, "author": 40, "venue": 5}
EDGES = [("author", "writes", "paper"), ("paper", "rev_writes", "author"),
         ("paper", "cites", "paper"), ("venue", "hosts", "paper"), ("paper", "in", "venue")]


def _graph(seed=0):
    rng = np.random.default_rng(seed)
    edge_index = {}
    for src, rel, dst in EDGES:
        count = 4 * NODES[dst]
        edge_index[(src, rel, dst)] = np.stack([rng.integers(0, NODES[src], count),
                                                rng.integers(0, NODES[dst], count)])
    return HeteroGraph.from_edge_index_dict(edge_index, NODES), edge_index, rng


def _node_times(rng):
    # "venue" has no time: its nodes are never constrained (as in pyg-lib).
    return {"paper": rng.permutation(1000)[:NODES["paper"]].astype(np.int64),
            "author": rng.permutation(1000)[:NODES["author"]].astype(np.int64)}


def _arrays(batch, key, t):
    return np.asarray(batch[key][t])


def _check_trees(batch, graph, num_seeds):
    """Every edge joins two nodes of one tree; every tree holds its seed."""
    for src, rel, dst in graph.edge_types:
        edge_index = _arrays(batch, "edge_index", (src, rel, dst))
        assert (_arrays(batch, "batch", src)[edge_index[0]]
                == _arrays(batch, "batch", dst)[edge_index[1]]).all()
    assert list(_arrays(batch, "batch", "paper")[:num_seeds]) == list(range(num_seeds))


@pytest.mark.parametrize("strategy", ["uniform", "last"])
@pytest.mark.parametrize("replace", [False, True])
@pytest.mark.parametrize("disjoint", [False, True])
def test_no_node_later_than_its_seed(strategy, replace, disjoint):
    graph, _, rng = _graph()
    times = _node_times(rng)
    sampler = volley.HeteroNeighborSampler(graph, [3, 2, 2], seed=5, replace=replace,
                                           disjoint=disjoint, node_time=times,
                                           temporal_strategy=strategy)
    seeds = rng.integers(0, NODES["paper"], 12)  # repeats allowed: each seed its own tree
    seed_time = rng.integers(0, 1000, 12)
    batch = sampler.sample({"paper": seeds}, 3, seed_time={"paper": seed_time})
    _check_trees(batch, graph, len(seeds))
    sampled = 0
    for node_type, node_time in times.items():
        nodes, trees = _arrays(batch, "node", node_type), _arrays(batch, "batch", node_type)
        first = len(seeds) if node_type == "paper" else 0
        assert (node_time[nodes[first:]] <= seed_time[trees[first:]]).all(), node_type
        sampled += len(nodes) - first
    assert sampled > 0  # the check saw sampled nodes
    # untimed "venue" nodes are sampled whatever the time
    assert len(_arrays(batch, "node", "venue")) > 0


@pytest.mark.parametrize("strategy", ["uniform", "last"])
def test_no_edge_later_than_its_seed(strategy):
    graph, edge_index, rng = _graph(1)
    edge_time = {t: rng.integers(0, 100, v.shape[1]) for t, v in edge_index.items()}
    sampler = volley.HeteroNeighborSampler(graph, [-1, 4], seed=2, edge_time=edge_time,
                                           temporal_strategy=strategy)
    seeds, seed_time = np.arange(10), rng.integers(0, 100, 10)
    batch = sampler.sample({"paper": seeds}, 0, seed_time={"paper": seed_time})
    _check_trees(batch, graph, len(seeds))
    total = 0
    for edge_type in graph.edge_types:
        e_id = _arrays(batch, "edge", edge_type)
        trees = _arrays(batch, "batch", edge_type[2])[_arrays(batch, "row", edge_type)]
        assert (edge_time[edge_type][e_id] <= seed_time[trees]).all(), edge_type
        total += len(e_id)
    assert total > 0


def test_first_hop_is_exactly_the_admissible_edges():
    """fanout -1: every edge of a seed at or before its time, and no other; "last" with a
    fanout: the most recent admissible edges."""
    graph, edge_index, rng = _graph(2)
    cites = ("paper", "cites", "paper")
    edge_time = {cites: rng.permutation(edge_index[cites].shape[1]).astype(np.int64)}
    seeds, seed_time = np.arange(20), rng.integers(0, 240, 20)
    for fanout, strategy in ((-1, "uniform"), (2, "last")):
        sampler = volley.HeteroNeighborSampler(graph, {cites: [fanout]}, default=[0], seed=1,
                                               edge_time=edge_time, temporal_strategy=strategy)
        batch = sampler.sample({"paper": seeds}, 0, seed_time={"paper": seed_time})
        rows, e_id = _arrays(batch, "row", cites), _arrays(batch, "edge", cites)
        for i, seed in enumerate(seeds):
            mine = np.flatnonzero(edge_index[cites][1] == seed)
            mine = mine[edge_time[cites][mine] <= seed_time[i]]
            if fanout > 0:
                mine = mine[np.argsort(edge_time[cites][mine])][-fanout:]
            assert sorted(e_id[rows == i]) == sorted(mine), (seed, strategy)


@pytest.mark.parametrize("temporal", [False, True])
def test_each_tree_is_the_sample_of_its_seed_alone(temporal):
    graph, _, rng = _graph(3)
    times = _node_times(rng) if temporal else None
    sampler = volley.HeteroNeighborSampler(graph, [3, 2], seed=9, disjoint=True, node_time=times)
    seeds = np.array([4, 9, 4, 17])
    seed_time = {"paper": np.array([500, 900, 100, 700])} if temporal else None
    batch = sampler.sample({"paper": seeds}, 7, seed_time=seed_time)
    for tree, seed in enumerate(seeds):
        alone = sampler.sample({"paper": [seed]}, 7, seed_time=None if not temporal else
                               {"paper": seed_time["paper"][tree:tree + 1]})
        for node_type in NODES:
            in_tree = _arrays(batch, "node", node_type)[_arrays(batch, "batch", node_type) == tree]
            assert list(in_tree) == list(_arrays(alone, "node", node_type)), (tree, node_type)
        for edge_type in graph.edge_types:
            trees = _arrays(batch, "batch", edge_type[2])[_arrays(batch, "row", edge_type)]
            assert list(_arrays(batch, "edge", edge_type)[trees == tree]) == list(
                _arrays(alone, "edge", edge_type)), (tree, edge_type)


@pytest.mark.parametrize("kind", ["plain", "node_time", "edge_time"])
def test_a_pickled_sampler_gives_the_same_batches(kind):
    """The typed sampler pickles as the homogeneous one does (its graph and options): the copy
    samples the same batches, times and disjoint trees included."""
    import pickle

    graph, _, rng = _graph(5)
    times = {}
    if kind == "node_time":
        times = {"node_time": _node_times(rng)}
    elif kind == "edge_time":
        times = {"edge_time": {t: rng.integers(0, 1000, graph.num_edges_dict[t])
                               for t in graph.edge_types}}
    sampler = volley.HeteroNeighborSampler(graph, [3, 2], seed=11, disjoint=kind == "plain",
                                           **times)
    copy = pickle.loads(pickle.dumps(sampler))
    assert (copy.seed, copy.time_source, copy.disjoint) == (sampler.seed, sampler.time_source,
                                                            sampler.disjoint)
    seed_time = None if kind == "plain" else {"paper": np.array([500, 900, 100])}
    for index in (0, 4):
        want = sampler.sample({"paper": [4, 9, 17]}, index, seed_time=seed_time)
        got = copy.sample({"paper": [4, 9, 17]}, index, seed_time=seed_time)
        for node_type in NODES:
            assert list(_arrays(got, "node", node_type)) == list(_arrays(want, "node", node_type))
        for edge_type in graph.edge_types:
            for field in ("row", "col", "edge"):
                assert list(_arrays(got, field, edge_type)) == list(
                    _arrays(want, field, edge_type)), (index, edge_type, field)


def test_seeds_default_to_their_node_time():
    graph, _, rng = _graph(4)
    times = _node_times(rng)
    sampler = volley.HeteroNeighborSampler(graph, [2, 2], seed=3, node_time=times)
    seeds = np.arange(8)
    implicit = sampler.sample({"paper": seeds}, 1)
    explicit = sampler.sample({"paper": seeds}, 1, seed_time={"paper": times["paper"][seeds]})
    for key in ("node", "batch", "edge"):
        for t, value in implicit[key].items():
            assert np.array_equal(np.asarray(value), np.asarray(explicit[key][t])), (key, t)


def test_identical_for_any_thread_count():
    graph, _, rng = _graph(5)
    sampler = volley.HeteroNeighborSampler(graph, [4, 3], seed=11, node_time=_node_times(rng))
    jobs = [(rng.integers(0, 60, 16), rng.integers(0, 1000, 16), b) for b in range(24)]

    def run(job):
        seeds, seed_time, b = job
        out = sampler.sample({"paper": seeds}, b, seed_time={"paper": seed_time})
        return {k: {t: np.asarray(v).tolist() for t, v in out[k].items()}
                for k in ("node", "edge", "batch")}

    alone = [run(job) for job in jobs]
    with concurrent.futures.ThreadPoolExecutor(max_workers=6) as pool:
        assert list(pool.map(run, jobs)) == alone


def _pyg(edge_time=False):
    graph, edge_index, rng = _graph(6)
    data = pyg_data.HeteroData()
    for t, n in NODES.items():
        data[t].x = torch.arange(n).float().view(-1, 1)
    for t, v in edge_index.items():
        data[t].edge_index = torch.from_numpy(v)
        if edge_time:
            data[t].time = torch.from_numpy(rng.integers(0, 100, v.shape[1]))
    if not edge_time:
        for t, v in _node_times(rng).items():
            data[t].time = torch.from_numpy(v)
    return data


@pytest.mark.parametrize("workers", [1, 4])
def test_loader_fields_as_pyg(workers):
    data = _pyg()
    input_time = torch.arange(60) * 10
    loader = volley.loader.NeighborLoader(data, [3, 2], input_nodes="paper", time_attr="time",
                                          input_time=input_time, batch_size=16, seed=0,
                                          num_workers=workers)
    batches = list(loader)
    assert len(batches) == 4
    for b in batches:
        size = b["paper"].batch_size
        assert torch.equal(b["paper"].seed_time, input_time[b["paper"].input_id])
        for t in ("paper", "author"):
            assert b[t].batch.numel() == b[t].n_id.numel()
            assert (b[t].batch < size).all()
            first = size if t == "paper" else 0
            assert (b[t].time[first:] <= b["paper"].seed_time[b[t].batch[first:]]).all()
    again = list(volley.loader.NeighborLoader(data, [3, 2], input_nodes="paper", time_attr="time",
                                              input_time=input_time, batch_size=16, seed=0,
                                              num_workers=5 - workers))
    for a, b in zip(batches, again):
        for t in NODES:
            assert torch.equal(a[t].n_id, b[t].n_id) and torch.equal(a[t].batch, b[t].batch)


def test_loader_disjoint_without_time():
    loader = volley.loader.NeighborLoader(_pyg(), [2, 2], input_nodes=("paper", [3, 3, 8]),
                                          disjoint=True, batch_size=3)
    batch = next(iter(loader))
    assert batch["paper"].batch[:3].tolist() == [0, 1, 2]
    assert batch["paper"].n_id[:3].tolist() == [3, 3, 8]
    assert "seed_time" not in batch["paper"]


def test_loader_edge_time():
    data = _pyg(edge_time=True)
    loader = volley.loader.NeighborLoader(data, [-1, -1], input_nodes="paper", time_attr="time",
                                          input_time=torch.full((60,), 50), batch_size=10)
    seen = 0
    for batch in loader:
        for edge_type in data.edge_types:
            assert (batch[edge_type].time <= 50).all()
            seen += batch[edge_type].time.numel()
    assert seen > 0


def test_errors_name_the_type():
    graph, edge_index, rng = _graph()
    times = _node_times(rng)
    with pytest.raises(volley.VolleyValueError,
                       match=r"node type 'author' .* \(40\), got int64\[39\]"):
        volley.HeteroNeighborSampler(graph, [2], node_time={**times, "author": times["author"][1:]})
    with pytest.raises(volley.VolleyValueError, match="node type 'paper' must hold integer"):
        volley.HeteroNeighborSampler(graph, [2], node_time={"paper": times["paper"] * 0.5})
    with pytest.raises(volley.VolleyValueError, match="node type 'nope', which the graph"):
        volley.HeteroNeighborSampler(graph, [2], node_time={"nope": times["paper"]})
    cites = ("paper", "cites", "paper")
    with pytest.raises(volley.VolleyValueError, match=r"edge type paper__cites__paper .*\(240\)"):
        volley.HeteroNeighborSampler(graph, [2], edge_time={cites: np.arange(5)})
    with pytest.raises(volley.VolleyValueError, match="temporal_strategy must be"):
        volley.HeteroNeighborSampler(graph, [2], node_time=times, temporal_strategy="first")
    sampler = volley.HeteroNeighborSampler(graph, [2], node_time=times)
    with pytest.raises(volley.VolleyValueError, match=r"'paper': 2 times for 3 seeds"):
        sampler.sample({"paper": [0, 1, 2]}, seed_time={"paper": [1, 2]})
    with pytest.raises(volley.VolleyValueError, match="'venue' need a time each"):
        sampler.sample({"venue": [0]})
    untimed = volley.HeteroNeighborSampler(graph, [2])
    with pytest.raises(volley.VolleyValueError, match="no times"):
        untimed.sample({"paper": [0]}, seed_time={"paper": [1]})

    data, loader = _pyg(edge_time=True), volley.loader.NeighborLoader
    with pytest.raises(volley.VolleyValueError, match="edge time needs input_time .*'paper'"):
        loader(data, [2], input_nodes="paper", time_attr="time")
    with pytest.raises(volley.VolleyValueError, match=r"input node of type 'paper' \(60\), got shape \[3\]"):
        loader(data, [2], input_nodes="paper", time_attr="time", input_time=torch.arange(3))
    with pytest.raises(volley.VolleyValueError, match="input_time must hold integer"):
        loader(data, [2], input_nodes="paper", time_attr="time", input_time=torch.rand(60))
    data = _pyg()
    with pytest.raises(volley.VolleyValueError, match="of type 'venue' have no node time"):
        loader(data, [2], input_nodes="venue", time_attr="time")
    with pytest.raises(volley.VolleyValueError, match="without time_attr"):
        loader(data, [2], input_nodes="paper", input_time=torch.arange(60))
    data["paper", "cites", "paper"].time = torch.arange(240)
    with pytest.raises(volley.VolleyValueError, match="both a node attribute"):
        loader(data, [2], input_nodes="paper", time_attr="time")
    with pytest.raises(volley.VolleyValueError, match="does not support subgraph_type=.induced."):
        loader(_pyg(), [2], input_nodes="paper", time_attr="time", subgraph_type="induced")


@pytest.mark.parametrize("mode", ["binary", "triplet"])
def test_link_loader_by_time(mode):
    """Each supervision edge's subgraph (its end points and negatives, ``batch`` modulo the
    batch size) holds no node later than the edge's time; negatives are not later either."""
    data = _pyg()
    cites = ("paper", "cites", "paper")
    count = data[cites].edge_index.shape[1]
    label_time = torch.from_numpy(np.random.default_rng(0).integers(300, 1000, count))
    loader = volley.loader.LinkNeighborLoader(
        data, [3, 2], edge_label_index=(cites, None), edge_label_time=label_time,
        time_attr="time", neg_sampling=dict(mode=mode, amount=2), batch_size=16, seed=1)
    for batch in loader:
        size = batch[cites].input_id.numel()
        times = label_time[batch[cites].input_id]
        for t in ("paper", "author"):
            assert (batch[t].batch < size).all()
            later = batch[t].time > times[batch[t].batch]
            if t == "paper":  # the positive end points are seeds, never checked (as in PyG)
                dst_first = size if mode == "triplet" else 3 * size
                later[:size] = later[dst_first:dst_first + size] = False
            assert not later.any(), t
        if mode == "triplet":
            assert torch.equal(batch["paper"].seed_time, times)
            assert batch["paper"].dst_neg_index.shape == (size, 2)
            assert (batch["paper"].batch[batch["paper"].dst_neg_index]
                    == torch.arange(size).view(-1, 1)).all()
        else:
            label_index = batch[cites].edge_label_index
            assert torch.equal(label_index[0], torch.arange(3 * size))
            assert torch.equal(batch[cites].edge_label_time, times.repeat(3))


def test_link_loader_disjoint_without_time():
    data = _pyg()
    writes = ("author", "writes", "paper")
    loader = volley.loader.LinkNeighborLoader(data, [2], edge_label_index=(writes, None),
                                              disjoint=True, batch_size=8)
    batch = next(iter(loader))
    assert torch.equal(batch[writes].edge_label_index, torch.arange(8).repeat(2, 1))
    assert torch.equal(batch["author"].n_id[:8], data[writes].edge_index[0, :8])
    assert torch.equal(batch["paper"].n_id[:8], data[writes].edge_index[1, :8])
    assert batch["author"].batch[:8].tolist() == list(range(8))
