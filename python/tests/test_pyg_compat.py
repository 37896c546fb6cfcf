"""volley.loader.NeighborLoader as a drop-in for PyG's NeighborLoader: signature,
subgraph types, disjoint sampling, weight_attr, every attribute carried, PyG's batch types."""

import inspect

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pyg = pytest.importorskip("torch_geometric")
from torch_geometric.data import Data  # noqa: E402

import volley  # noqa: E402
from volley.loader import NeighborLoader  # noqa: E402


def graph_data(num_nodes=60, num_edges=400, seed=0):
    rng = np.random.default_rng(seed)
    edge_index = torch.from_numpy(rng.integers(0, num_nodes, (2, num_edges)))
    return Data(edge_index=edge_index, num_nodes=num_nodes)


def edge_pairs(batch):
    n_id = batch.n_id.numpy()
    ei = batch.edge_index.as_subclass(torch.Tensor).numpy()
    return n_id[ei[0]], n_id[ei[1]]


def test_signature_matches_the_installed_pyg():
    from torch_geometric.loader import NeighborLoader as PyGLoader

    ours = inspect.signature(NeighborLoader).parameters
    theirs = inspect.signature(PyGLoader).parameters
    positional = [n for n, p in theirs.items() if p.kind == p.POSITIONAL_OR_KEYWORD]
    assert [n for n, p in ours.items() if p.kind == p.POSITIONAL_OR_KEYWORD] == positional
    for name in positional:
        assert ours[name].default == theirs[name].default or (
            getattr(theirs[name].default, "value", None) == ours[name].default  # SubgraphType
        ), name
    dataloader_args = dict(batch_size=2, shuffle=False, num_workers=2, drop_last=False,
                           pin_memory=False, persistent_workers=False, generator=None,
                           prefetch_factor=2, timeout=0)
    for name, value in dataloader_args.items():
        assert len(NeighborLoader(graph_data(), [2], **{name: value})) > 0, name


def test_third_positional_argument_is_input_nodes():
    data = graph_data()
    loader = NeighborLoader(data, [3, 3], torch.tensor([4, 9, 7]), batch_size=2)
    batches = list(loader)
    assert len(batches) == 2
    assert batches[0].n_id[:2].tolist() == [4, 9] and batches[1].n_id[:1].tolist() == [7]
    assert str(loader) == "NeighborLoader()"


@pytest.mark.parametrize("kwargs, error, message", [
    (dict(input_time=torch.zeros(60)), volley.VolleyValueError, "input_time was given without time_attr"),
    (dict(time_attr="time"), volley.VolleyValueError, "data has no attribute 'time'"),
    (dict(neighbor_sampler=object()), volley.VolleyNotImplementedError, "neighbor_sampler"),
    (dict(collate_fn=lambda b: b), volley.VolleyTypeError, "collate_fn"),
    (dict(bogus=1), volley.VolleyTypeError, "bogus"),
    (dict(subgraph_type="sideways"), volley.VolleyValueError, "sideways"),
    (dict(temporal_strategy="random"), volley.VolleyValueError, "random"),
    (dict(disjoint=True, subgraph_type="induced"), volley.VolleyValueError, "induced"),
    (dict(weight_attr="missing"), volley.VolleyValueError, "missing"),
])
def test_refusals_name_the_argument(kwargs, error, message):
    with pytest.raises(error, match=message):
        NeighborLoader(graph_data(), [2], **kwargs)
    assert issubclass(volley.VolleyNotImplementedError, NotImplementedError)


def test_worker_only_arguments_are_accepted_without_effect():
    data = graph_data()
    plain = list(NeighborLoader(data, [3], batch_size=8, seed=1))
    tuned = list(NeighborLoader(data, [3], batch_size=8, seed=1, filter_per_worker=True,
                                persistent_workers=True, is_sorted=True, pin_memory=True,
                                prefetch_factor=4, timeout=5, temporal_strategy="last"))
    assert len(plain) == len(tuned)
    for a, b in zip(plain, tuned):
        assert torch.equal(a.n_id, b.n_id) and torch.equal(a.e_id, b.e_id)


def test_directional_edges_point_at_targets_in_column_order():
    data = graph_data()
    for batch in NeighborLoader(data, [4, 3], batch_size=10, seed=0):
        col = batch.edge_index[1]
        assert bool((col[1:] >= col[:-1]).all())
        src, dst = edge_pairs(batch)
        graph_pairs = set(zip(*data.edge_index.numpy()))
        assert set(zip(src, dst)) <= graph_pairs
        assert batch.num_sampled_nodes[0] == batch.batch_size


def test_bidirectional_holds_each_sampled_edge_both_ways_once():
    data = graph_data()
    directional = NeighborLoader(data, [4, 3], batch_size=10, seed=0)
    bidirectional = NeighborLoader(data, [4, 3], batch_size=10, seed=0,
                                   subgraph_type="bidirectional")
    for a, b in zip(directional, bidirectional):
        assert torch.equal(a.n_id, b.n_id)
        ea = a.edge_index.as_subclass(torch.Tensor)
        eb = b.edge_index.as_subclass(torch.Tensor)
        expected = {(int(s), int(t)) for s, t in ea.t().tolist()}
        expected |= {(t, s) for s, t in expected}
        pairs = [tuple(e) for e in eb.t().tolist()]
        assert len(pairs) == len(set(pairs)) and set(pairs) == expected
        assert pairs == sorted(pairs, key=lambda p: (p[1], p[0]))
        assert getattr(b, "num_sampled_nodes", None) is None  # as PyG: no per-hop counts
        assert getattr(b, "num_sampled_edges", None) is None


def test_induced_holds_every_graph_edge_between_sampled_nodes():
    data = graph_data()
    loader = NeighborLoader(data, [3, 2], batch_size=7, seed=2, subgraph_type="induced")
    for batch in loader:
        nodes = set(batch.n_id.tolist())
        ei = data.edge_index.numpy()
        inside = [s in nodes and t in nodes for s, t in ei.T]
        expected = sorted(int(e) for e in np.nonzero(inside)[0])
        assert sorted(batch.e_id.tolist()) == expected
        src, dst = edge_pairs(batch)
        e_id = batch.e_id.numpy()
        assert (src == ei[0, e_id]).all() and (dst == ei[1, e_id]).all()
    assert NeighborLoader(data, [2], directed=False).subgraph_type == "induced"


def test_disjoint_gives_every_seed_its_own_tree():
    # A star: every seed reaches node 0, so node 0 appears once per tree.
    edge_index = torch.tensor([[0, 0, 0, 0, 5], [1, 2, 3, 4, 1]])
    data = Data(edge_index=edge_index, num_nodes=6, x=torch.arange(6))
    batch = NeighborLoader(data, [-1, -1], batch_size=4, disjoint=True)(torch.tensor([1, 2, 3, 4]))
    assert batch.batch.tolist()[:4] == [0, 1, 2, 3]
    assert batch.n_id.tolist().count(0) == 4
    assert torch.equal(batch.x, batch.n_id)
    ei = batch.edge_index.as_subclass(torch.Tensor)
    assert torch.equal(batch.batch[ei[0]], batch.batch[ei[1]])  # no edge between trees


def test_weight_attr_never_samples_zero_weight_edges():
    data = graph_data(num_edges=600)
    weight = torch.ones(600)
    weight[::2] = 0.0
    data.w = weight
    for batch in NeighborLoader(data, [3, 3], batch_size=10, weight_attr="w", seed=4):
        assert bool((batch.w > 0).all())
        assert bool((batch.e_id % 2 == 1).all())


def test_every_attribute_reaches_the_batch_with_its_dtype_and_shape():
    data = graph_data()
    n, e = data.num_nodes, data.edge_index.size(1)
    data.x = torch.arange(n)  # int64, 1-d
    data.y = torch.arange(n, dtype=torch.float32) / 2
    data.pos = torch.randn(n, 3, 2)
    data.train_mask = torch.arange(n) % 3 == 0
    data.edge_attr = torch.randn(e, 16)
    data.edge_type = torch.arange(e, dtype=torch.int32)
    data.name = "toy"
    loader = NeighborLoader(data, [3, 3], batch_size=16, seed=0)
    for batch in loader:
        assert batch.x.dtype == torch.int64 and torch.equal(batch.x, batch.n_id)
        assert batch.y.dtype == torch.float32 and torch.equal(batch.y, data.y[batch.n_id])
        assert torch.equal(batch.pos, data.pos[batch.n_id])
        assert batch.train_mask.dtype == torch.bool
        assert torch.equal(batch.train_mask, data.train_mask[batch.n_id])
        assert torch.equal(batch.edge_attr, data.edge_attr[batch.e_id])
        assert batch.edge_type.dtype == torch.int32
        assert torch.equal(batch.edge_type, data.edge_type[batch.e_id])
        assert batch.name == "toy"


def test_feature_dtype_still_converts_x():
    data = graph_data()
    data.x = torch.randn(data.num_nodes, 4)
    batch = next(iter(NeighborLoader(data, [2], batch_size=4, feature_dtype="float16")))
    assert batch.x.dtype == torch.float16


def test_edge_index_type_follows_the_installed_pyg():
    batch = next(iter(NeighborLoader(graph_data(), [3, 3], batch_size=5)))
    cls = getattr(pyg, "EdgeIndex", None)
    if pyg.__version__.startswith("2.5."):  # PyG 2.5's loaders return an EdgeIndex
        assert isinstance(batch.edge_index, cls)
        assert batch.edge_index.sort_order == "col"
        assert batch.edge_index.sparse_size() == (batch.num_nodes, batch.num_nodes)
        batch.edge_index.validate()
    else:  # later PyG returns a plain tensor again
        assert cls is None or not isinstance(batch.edge_index, cls)
        assert type(batch.edge_index) is torch.Tensor


def test_loader_is_callable_on_seeds_and_runs_both_transforms():
    data = graph_data()
    data.x = torch.arange(data.num_nodes)
    seen = []

    def drop_edges(out):
        seen.append(out)
        out.row, out.col, out.edge = out.row[:0], out.col[:0], out.edge[:0]
        return out

    loader = NeighborLoader(data, [3], transform_sampler_output=drop_edges,
                            transform=lambda b: setattr(b, "tag", 1) or b)
    batch = loader([0, 5])
    assert batch.n_id[:2].tolist() == [0, 5] and batch.input_id.tolist() == [0, 5]  # as PyG
    assert len(seen) == 1 and batch.edge_index.size(1) == 0 and batch.tag == 1


def test_a_feature_store_and_graph_store_pair_samples_as_the_data_does():
    from torch_geometric.testing import MyFeatureStore, MyGraphStore

    data = graph_data()
    data.x = torch.arange(60, dtype=torch.float32).unsqueeze(1) * 2
    data.y = torch.arange(60)
    feature_store, graph_store = MyFeatureStore(), MyGraphStore()
    feature_store.put_tensor(data.x, group_name=None, attr_name="x", index=None)
    feature_store.put_tensor(data.y, group_name=None, attr_name="y", index=None)
    graph_store.put_edge_index((data.edge_index[0], data.edge_index[1]), edge_type=None,
                               layout="coo", size=(60, 60))
    kwargs = dict(batch_size=16, input_nodes=torch.arange(40), shuffle=True, seed=5)
    expected = list(NeighborLoader(data, [3, 2], **kwargs))
    got = list(NeighborLoader((feature_store, graph_store), [3, 2], **kwargs))
    assert len(got) == len(expected) == 3
    for a, b in zip(got, expected):
        assert torch.equal(a.n_id, b.n_id) and torch.equal(a.e_id, b.e_id)
        assert torch.equal(a.x, b.x) and torch.equal(a.y, b.y)
    # A heterogeneous graph store with untyped tensors: the error names the tensor.
    hetero = MyGraphStore()
    for edge_type in [("a", "to", "b"), ("b", "to", "a")]:
        hetero.put_edge_index((data.edge_index[0], data.edge_index[1]), edge_type=edge_type,
                              layout="coo", size=(60, 60))
    with pytest.raises(volley.VolleyValueError, match="tensor 'x' has no group"):
        NeighborLoader((feature_store, hetero), [3], batch_size=4, input_nodes="a")


@pytest.mark.parametrize("subgraph_type", ["directional", "bidirectional", "induced"])
def test_no_hops_gives_the_seeds_alone(subgraph_type):
    data = graph_data()
    data.x = torch.arange(60, dtype=torch.float32).unsqueeze(1)
    (batch,) = list(NeighborLoader(data, [], input_nodes=torch.tensor([4, 9, 1]), batch_size=3,
                                   subgraph_type=subgraph_type))
    assert torch.equal(batch.n_id, torch.tensor([4, 9, 1]))
    assert torch.equal(batch.x[:, 0].long(), batch.n_id)
    src, dst = edge_pairs(batch)
    if subgraph_type == "induced":  # the edges among the seeds
        pairs = set(zip(data.edge_index[0].tolist(), data.edge_index[1].tolist()))
        among = {(s, d) for s, d in pairs if s in (4, 9, 1) and d in (4, 9, 1)}
        assert set(zip(src.tolist(), dst.tolist())) == among
    else:
        assert src.size == 0
