"""volley.dist with temporal sampling: a temporal graph partitioned into 2 parts keeps
its times, and DistNeighborLoader(time_attr=, input_time=, temporal_strategy=) yields the local
temporal loader's batches over the whole renumbered graph (with its times), bit for bit, in the
worker and the server-client topology."""

from __future__ import annotations

import os

import numpy as np
import pytest

import volley
from volley.loader import NeighborLoader
from volley.partition import load_partition

from conftest import as_numpy

if not volley._volley._has_dist:
    pytest.skip("built without the distributed service (gRPC)", allow_module_level=True)

import volley.dist as vd  # noqa: E402

torch = pytest.importorskip("torch")


def _timed_dataset(kind, num_nodes=150, num_edges=2500, seed=0):
    """A random multigraph with int64 times in [0, 1000) of `kind` ("edge" or "node"), rows
    sorted by that time (so "last" works and partitions keep the order)."""
    rng = np.random.default_rng(seed)
    dst = np.sort(rng.integers(0, num_nodes, num_edges))
    src = rng.integers(0, num_nodes, num_edges)
    indptr = np.zeros(num_nodes + 1, dtype=np.int64)
    np.add.at(indptr, dst + 1, 1)
    graph = volley.Graph.from_csr(np.cumsum(indptr), src.astype(np.int64))
    times = rng.integers(0, 1000, num_edges if kind == "edge" else num_nodes).astype(np.int64)
    graph = graph.with_times(**{f"{kind}_time": times}).sort_by_time(kind)
    return volley.Dataset(graph, rng.standard_normal((num_nodes, 4)).astype(np.float32),
                          rng.integers(0, 3, num_nodes), name=f"timed-{kind}")


def _whole(parts_dir, kind):
    """The whole renumbered graph (the parts concatenated) with its times."""
    indptr, indices, edge_ids, edge_time, xs, ys = [np.zeros(1, dtype=np.int64)], [], [], [], [], []
    for p in range(2):
        ds = load_partition(parts_dir, p).dataset
        g = ds.graph
        indptr.append(as_numpy(g.indptr)[1:].astype(np.int64) + indptr[-1][-1])
        indices.append(as_numpy(g.indices).astype(np.int64))
        edge_ids.append(as_numpy(g.edge_ids).astype(np.int64))
        if kind == "edge":
            edge_time.append(as_numpy(g.edge_time))
        xs.append(as_numpy(ds.x))
        ys.append(as_numpy(ds.y))
    graph = volley.Graph.from_csr(np.concatenate(indptr), np.concatenate(indices),
                                  np.concatenate(edge_ids))
    if kind == "edge":
        graph = graph.with_times(edge_time=np.concatenate(edge_time))
    else:
        graph = graph.with_times(node_time=np.load(os.path.join(parts_dir, "node_time.npy")))
    assert graph.is_sorted_by_time(kind)  # the parts kept the source's order by time
    return volley.Dataset(graph, np.concatenate(xs), np.concatenate(ys), name="renumbered")


@pytest.fixture(scope="module", params=["edge", "node"])
def served(request, tmp_path_factory):
    kind = request.param
    root = tmp_path_factory.mktemp(f"timed-{kind}")
    _timed_dataset(kind).save(str(root / "source"))
    parts_dir = str(root / "parts")
    volley.partition(str(root / "source"), parts_dir, 2, method="random", seed=1)
    s1 = vd.serve(parts_dir, 1)
    s0 = vd.serve(parts_dir, 0, peers=["", s1.address])  # also streams epochs (server-client)
    yield kind, parts_dir, _whole(parts_dir, kind), [s0.address, s1.address], s0
    s0.shutdown()
    s1.shutdown()


def _inputs(num_nodes, count=60, seed=2):
    rng = np.random.default_rng(seed)
    return rng.integers(0, num_nodes, count), rng.integers(0, 1100, count)  # repeats allowed


@pytest.mark.timeout(120)
@pytest.mark.parametrize("strategy", ["uniform", "last"])
def test_dist_temporal_batches_equal_the_local_loader(served, strategy):
    kind, parts_dir, whole, addresses, s0 = served
    seeds, times = _inputs(whole.num_nodes)
    options = dict(batch_size=16, input_nodes=seeds, input_time=times, shuffle=True, seed=5,
                   time_attr=f"{kind}_time", temporal_strategy=strategy)
    for local in (s0, (parts_dir, 1)):
        expected = NeighborLoader(whole, [4, 3], num_workers=2, **options)  # from epoch 0
        actual = vd.DistNeighborLoader(addresses, [4, 3], num_workers=3, topology="worker",
                                       local=local, **options)
        assert actual.disjoint
        for _ in range(2):
            got, want = list(actual), list(expected)
            assert len(got) == len(want) == 4
            edges = 0
            for a, b in zip(got, want):
                for field in ("n_id", "e_id", "edge_index", "input_id", "batch", "x", "y"):
                    assert torch.equal(getattr(a, field), getattr(b, field)), field
                assert list(a.num_sampled_edges) == list(b.num_sampled_edges)
                edges += a.edge_index.shape[1]
            assert edges > 0


@pytest.mark.timeout(60)
def test_node_time_default_input_time_from_the_partitioned_directory(served):
    """With node time and local=(directory, part), input_time defaults to the seeds' own times
    (node_time.npy by new id), as the local loader's does."""
    kind, parts_dir, whole, addresses, s0 = served
    if kind != "node":
        pytest.skip("edge time has no per-node default")
    seeds, _ = _inputs(whole.num_nodes)
    options = dict(batch_size=16, input_nodes=seeds, seed=5, time_attr="node_time")
    expected = list(NeighborLoader(whole, [3, 2], num_workers=2, **options))
    actual = list(vd.DistNeighborLoader(addresses, [3, 2], topology="worker",
                                        local=(parts_dir, 1), **options))
    assert len(actual) == len(expected) > 0
    for a, b in zip(actual, expected):
        for field in ("n_id", "e_id", "edge_index", "batch"):
            assert torch.equal(getattr(a, field), getattr(b, field)), field


@pytest.mark.timeout(60)
def test_dist_disjoint_batches_equal_the_local_loader(served):
    kind, parts_dir, whole, addresses, s0 = served
    seeds = np.arange(0, whole.num_nodes, 3)
    options = dict(batch_size=10, input_nodes=seeds, seed=9, disjoint=True)
    expected = list(NeighborLoader(whole, [3, 2], **options))
    for where in (dict(topology="worker", local=s0),
                  dict(topology="server-client", server=addresses[0])):
        actual = list(vd.DistNeighborLoader(addresses, [3, 2], **where, **options))
        assert len(actual) == len(expected) > 0
        for a, b in zip(actual, expected):
            for field in ("n_id", "e_id", "edge_index", "batch"):
                assert torch.equal(getattr(a, field), getattr(b, field)), (where, field)


@pytest.mark.timeout(60)
def test_dist_temporal_errors_are_named(served):
    kind, parts_dir, whole, addresses, s0 = served
    other = "node" if kind == "edge" else "edge"
    seeds, times = _inputs(whole.num_nodes)
    make = lambda **kw: vd.DistNeighborLoader(addresses, [2], topology="worker", local=s0,  # noqa: E731
                                              input_nodes=seeds, **kw)
    with pytest.raises(volley.VolleyValueError, match=f"needs {other} times, but the partitioned"):
        make(time_attr=f"{other}_time", input_time=times)
    with pytest.raises(volley.VolleyValueError, match="needs input_time"):
        make(time_attr="time")
    with pytest.raises(volley.VolleyValueError, match=r"one entry per input node \(60\)"):
        make(time_attr="time", input_time=times[:5])
    with pytest.raises(volley.VolleyValueError, match="without time_attr"):
        make(input_time=times)
    with pytest.raises(volley.VolleyValueError, match="temporal_strategy must be"):
        make(time_attr="time", input_time=times, temporal_strategy="newest")
    with pytest.raises(volley.VolleyValueError, match="needs input_time"):
        vd.DistNeighborLoader(addresses, [2], topology="server-client", server=addresses[0],
                              input_nodes=seeds, time_attr="time")


@pytest.mark.timeout(120)
@pytest.mark.parametrize("strategy", ["uniform", "last"])
@pytest.mark.parametrize("world_size", [1, 2])
def test_server_client_temporal_batches_equal_the_local_loader(served, strategy, world_size):
    kind, parts_dir, whole, addresses, s0 = served
    seeds, times = _inputs(whole.num_nodes)
    options = dict(batch_size=16, input_nodes=seeds, input_time=times, shuffle=True, seed=5,
                   time_attr=f"{kind}_time", temporal_strategy=strategy, world_size=world_size)
    for rank in range(world_size):
        expected = list(NeighborLoader(whole, [4, 3], num_workers=2, rank=rank, **options))
        actual = list(vd.DistNeighborLoader(addresses, [4, 3], num_workers=3,
                                            topology="server-client", server=addresses[0],
                                            rank=rank, **options))
        assert len(actual) == len(expected) > 0
        for a, b in zip(actual, expected):
            for field in ("n_id", "e_id", "edge_index", "input_id", "batch", "x", "y"):
                assert torch.equal(getattr(a, field), getattr(b, field)), field
