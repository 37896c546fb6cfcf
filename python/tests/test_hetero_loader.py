"""The heterogeneous NeighborLoader: HeteroData batches with PyG's fields, from a HeteroData or a
volley.HeteroDataset; every sampled edge exists, fanouts hold per edge type, epochs cover every
input node once, thread counts do not change batches, errors name the type; a to_hetero model
trains on the batches."""

from __future__ import annotations

import numpy as np
import pytest

import volley
from volley.loader import NeighborLoader

from conftest import as_numpy, trains_a_model
from test_hetero import CITES, REV, WRITES, toy_hetero

torch = pytest.importorskip("torch")
pyg_data = pytest.importorskip("torch_geometric.data")

FANOUTS = {WRITES: [3, 2], CITES: [2, 0], REV: [2, 1]}


def _with_edge_attr(data):
    data[WRITES].edge_attr = torch.arange(data[WRITES].edge_index.shape[1], dtype=torch.float32)
    data.meta = "graph-level"
    return data


def test_batches_carry_pyg_fields_and_real_edges():
    data = _with_edge_attr(toy_hetero(seed=1))
    loader = NeighborLoader(data, FANOUTS, batch_size=7, input_nodes=("paper", data["paper"].train_mask),
                            seed=3, num_workers=1)
    assert isinstance(loader, volley.hetero_loader.HeteroNeighborLoader)
    assert len(loader) == 5  # 30 training papers
    graph = volley.HeteroGraph.from_pyg(data)
    for batch in loader:
        assert isinstance(batch, pyg_data.HeteroData)
        assert set(batch.node_types) == {"paper", "author"}
        assert set(batch.edge_types) == set(data.edge_types)
        paper = batch["paper"]
        size = paper.batch_size
        # A mask as input: input_id are node ids (as in PyG).
        assert torch.equal(paper.n_id[:size], paper.input_id)
        assert torch.equal(paper.x, data["paper"].x[paper.n_id])
        assert torch.equal(paper.y, data["paper"].y[paper.n_id])
        assert torch.equal(paper.train_mask, data["paper"].train_mask[paper.n_id])
        assert paper.num_sampled_nodes[0] == size and sum(paper.num_sampled_nodes) == paper.num_nodes
        assert batch["author"].num_sampled_nodes[0] == 0
        assert batch.meta == "graph-level"
        for edge_type in data.edge_types:
            store = batch[edge_type]
            src, _, dst = edge_type
            edge_index = data[edge_type].edge_index
            # Each sampled edge is edge e_id of its type, between the right global nodes.
            assert torch.equal(batch[src].n_id[store.edge_index[0]], edge_index[0, store.e_id])
            assert torch.equal(batch[dst].n_id[store.edge_index[1]], edge_index[1, store.e_id])
            assert sum(store.num_sampled_edges) == store.edge_index.shape[1]
            assert len(store.num_sampled_edges) == 2
        assert torch.equal(batch[WRITES].edge_attr, data[WRITES].edge_attr[batch[WRITES].e_id])
        _check_fanouts(graph, batch)


def _check_fanouts(graph, batch):
    """Per hop and edge type, each target gets min(fanout, degree) neighbors."""
    for edge_type, fanouts in FANOUTS.items():
        indptr = as_numpy(graph.graph(edge_type).indptr)
        store = batch[edge_type]
        targets = store.edge_index[1].numpy()
        dst_nodes = batch[edge_type[2]].n_id.numpy()
        start = 0
        for hop, count in enumerate(store.num_sampled_edges):
            hop_targets = targets[start:start + count]
            start += count
            for local in np.unique(hop_targets):
                degree = indptr[dst_nodes[local] + 1] - indptr[dst_nodes[local]]
                assert np.sum(hop_targets == local) == min(fanouts[hop], degree), (edge_type, hop)


def test_epochs_visit_every_input_node_once_and_threads_do_not_matter():
    data = toy_hetero(seed=2, papers=90)
    common = dict(batch_size=8, input_nodes=("paper", torch.arange(10, 90)), shuffle=True, seed=11)
    one = NeighborLoader(data, [2, 2], num_workers=1, **common)
    many = NeighborLoader(data, [2, 2], num_workers=3, prefetch=2, **common)
    for epoch in range(2):
        seen = []
        for a, b in zip(one, many):
            for node_type in a.node_types:
                assert torch.equal(a[node_type].n_id, b[node_type].n_id), (epoch, node_type)
            for edge_type in a.edge_types:
                assert torch.equal(a[edge_type].edge_index, b[edge_type].edge_index)
            seen.append(a["paper"].n_id[: a["paper"].batch_size])
        seen = torch.cat(seen)
        assert sorted(seen.tolist()) == list(range(10, 90)), epoch
    # Epochs differ (order and sampling), and rerunning an epoch repeats it.
    first = [b["paper"].input_id for b in NeighborLoader(data, [2, 2], num_workers=1, **common)]
    again = NeighborLoader(data, [2, 2], num_workers=1, **common)
    assert all(torch.equal(x, b["paper"].input_id) for x, b in zip(first, again))
    second = [b["paper"].input_id for b in again]
    assert not all(torch.equal(x, y) for x, y in zip(first, second))


def test_dataset_input_node_type_name_drop_last_and_call():
    dataset = volley.HeteroDataset.from_pyg(toy_hetero(seed=4))
    loader = NeighborLoader(dataset, [1], batch_size=16, input_nodes="paper", drop_last=True)
    assert len(loader) == 3  # 60 papers, last 12 dropped
    batches = list(loader)
    assert len(batches) == 3 and all(b["paper"].batch_size == 16 for b in batches)
    assert torch.equal(batches[0]["paper"].x, dataset.x_dict["paper"][batches[0]["paper"].n_id])
    assert "x" not in batches[0]["author"]
    batch = loader([5, 1])
    assert batch["paper"].n_id[:2].tolist() == [5, 1]


def test_errors_name_the_type():
    data = toy_hetero()
    with pytest.raises(volley.VolleyValueError, match="unknown node type 'venue'"):
        NeighborLoader(data, [2], input_nodes=("venue", [0]))
    with pytest.raises(volley.VolleyIndexError, match="node type 'paper': id 60 at position 1"):
        NeighborLoader(data, [2], input_nodes=("paper", [0, 60]))
    with pytest.raises(volley.VolleyValueError, match="no fanouts for edge type paper__cites"):
        NeighborLoader(data, {WRITES: [2], REV: [2]}, input_nodes="paper")
    with pytest.raises(volley.VolleyValueError, match="which the graph does not have"):
        NeighborLoader(data, {("paper", "x", "paper"): [2], **FANOUTS}, input_nodes="paper")
    with pytest.raises(volley.VolleyValueError, match=r"input_nodes=\(node_type"):
        NeighborLoader(data, [2], input_nodes=[0, 1])
    with pytest.raises(volley.VolleyValueError, match="disjoint sampling does not support subgraph_type="):
        NeighborLoader(data, [2], input_nodes="paper", disjoint=True, subgraph_type="induced")
    with pytest.raises(volley.VolleyValueError, match="time_attr='time': data has no attribute 'time'"):
        NeighborLoader(data, [2], input_nodes="paper", time_attr="time")
    with pytest.raises(volley.VolleyValueError, match="names a node type"):
        NeighborLoader(_homogeneous(), [2], input_nodes=("paper", [0]))


def _homogeneous():
    return pyg_data.Data(edge_index=torch.tensor([[0, 1], [1, 0]]), num_nodes=2)


def test_an_error_in_a_batch_surfaces_at_that_batch():
    data = toy_hetero()

    def transform(batch):  # fails for the third batch only, whichever thread builds it
        if int(batch["paper"].input_id[0]) == 20:
            raise RuntimeError("boom at batch 3")
        return batch

    loader = NeighborLoader(data, [2], input_nodes="paper", batch_size=10, num_workers=2, transform=transform)
    for _ in range(5):  # the same on every run, with two threads racing
        iterator = iter(loader)
        next(iterator), next(iterator)
        with pytest.raises(RuntimeError, match="boom at batch 3"):
            next(iterator)


def test_to_hetero_sage_trains_on_the_batches():
    nn = pytest.importorskip("torch_geometric.nn")
    torch.manual_seed(0)
    data = toy_hetero(seed=5, papers=200, authors=100)
    data["author"].x = torch.randn(100, 4)
    loader = NeighborLoader(data, [4, 3], batch_size=32, input_nodes=("paper", data["paper"].train_mask),
                            shuffle=True, seed=0)

    class Sage(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = nn.SAGEConv((-1, -1), 16)
            self.conv2 = nn.SAGEConv((-1, -1), 3)

        def forward(self, x, edge_index):
            return self.conv2(self.conv1(x, edge_index).relu(), edge_index)

    model = nn.to_hetero(Sage(), data.metadata(), aggr="sum")
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
    losses = []
    for _ in range(3):
        for batch in loader:
            optimizer.zero_grad()
            out = model(batch.x_dict, batch.edge_index_dict)["paper"][: batch["paper"].batch_size]
            loss = torch.nn.functional.cross_entropy(out, batch["paper"].y[: batch["paper"].batch_size])
            loss.backward()
            optimizer.step()
            losses.append(float(loss))
    assert np.isfinite(losses).all() and len(losses) == 12


@trains_a_model
def test_train_hetero_example_beats_a_features_only_mlp():
    """examples/train_hetero.py at a CI size: the heterogeneous GraphSAGE trained on the loader's
    batches beats the features-only MLP by at least 10 points of test accuracy."""
    import os
    import subprocess
    import sys

    from test_hetero import _cli

    cli = _cli()
    if cli is None:
        pytest.skip("no volley CLI (set VOLLEY_CLI)")
    root = os.path.join(os.path.dirname(__file__), "..", "..")
    result = subprocess.run(
        [sys.executable, os.path.join(root, "examples", "train_hetero.py"), "--nodes", "6000",
         "--epochs", "8", "--fanouts", "5", "3", "--min-gain", "0.10"],
        capture_output=True, text=True, env=dict(os.environ, VOLLEY_CLI=cli), timeout=600)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "features-only MLP" in result.stdout and "epoch   8" in result.stdout


def test_a_heterogeneous_store_pair_samples_as_the_heterodata_does():
    """PyG's remote backend with typed groups and edge types (COO and CSR layouts) gives the
    batches of the HeteroData it stores."""
    testing = pytest.importorskip("torch_geometric.testing")
    data = toy_hetero(seed=6)
    data["author"].x = torch.randn(40, 3)
    feature_store, graph_store = testing.MyFeatureStore(), testing.MyGraphStore()
    for node_type in ("paper", "author"):
        feature_store.put_tensor(data[node_type].x, group_name=node_type, attr_name="x", index=None)
    counts = {"paper": 60, "author": 40}
    for edge_type in data.edge_types:
        edge_index = data[edge_type].edge_index
        size = (counts[edge_type[0]], counts[edge_type[2]])
        graph_store.put_edge_index((edge_index[0], edge_index[1]), edge_type=edge_type,
                                   layout="coo", size=size)
    kwargs = dict(batch_size=16, input_nodes=("paper", torch.arange(40)), shuffle=True, seed=2)
    expected = list(NeighborLoader(data, [3, 2], **kwargs))
    got = list(NeighborLoader((feature_store, graph_store), [3, 2], **kwargs))
    assert len(got) == len(expected) == 3
    for a, b in zip(got, expected):
        for node_type in ("paper", "author"):
            assert torch.equal(a[node_type].n_id, b[node_type].n_id)
            assert torch.equal(a[node_type].x, b[node_type].x)
        for edge_type in data.edge_types:
            assert torch.equal(a[edge_type].e_id, b[edge_type].e_id)


@pytest.mark.parametrize("subgraph_type", ["bidirectional", "induced"])
def test_bidirectional_and_induced_subgraphs(subgraph_type):
    data = toy_hetero(seed=7)
    loader = NeighborLoader(data, [2, 2], input_nodes="paper", batch_size=10,
                            subgraph_type=subgraph_type, seed=1)
    directional = NeighborLoader(data, [2, 2], input_nodes="paper", batch_size=10, seed=1)
    for batch, plain in zip(loader, directional):
        for node_type in data.node_types:
            assert torch.equal(batch[node_type].n_id, plain[node_type].n_id)
            assert "num_sampled_nodes" not in batch[node_type]
        for edge_type in data.edge_types:
            src, dst = batch[edge_type[0]].n_id, batch[edge_type[2]].n_id
            edge_index = batch[edge_type].edge_index
            pairs = set(zip(src[edge_index[0]].tolist(), dst[edge_index[1]].tolist()))
            sampled = set(zip(src[plain[edge_type].edge_index[0]].tolist(),
                              dst[plain[edge_type].edge_index[1]].tolist()))
            assert sampled <= pairs, edge_type  # every sampled edge stays
            every = data[edge_type].edge_index
            present = set(zip(every[0].tolist(), every[1].tolist()))
            if subgraph_type == "induced":
                # Exactly the stored edges among the batch's nodes, with their ids, by target.
                inside = {(u, v) for u, v in present if u in set(src.tolist()) and v in set(dst.tolist())}
                assert pairs == inside, edge_type
                assert torch.equal(every[:, batch[edge_type].e_id],
                                   torch.stack([src[edge_index[0]], dst[edge_index[1]]]))
                assert bool((edge_index[1][1:] >= edge_index[1][:-1]).all())
            else:
                assert "e_id" not in batch[edge_type]
        if subgraph_type == "bidirectional":  # writes and rev_writes are each other's flip
            a = batch[WRITES].edge_index
            b = batch[REV].edge_index
            assert set(zip(a[0].tolist(), a[1].tolist())) == set(zip(b[1].tolist(), b[0].tolist()))


def test_typed_batches_come_from_the_cpp_pipeline():
    """Every typed batch comes from the C++ pipeline (its epochs, workers and gathers; induced
    and bidirectional edges recomputed from its nodes), batches without hops and link batches
    included: there is no second, Python assembly. The golden checksums (recorded from the
    Python assembly this replaced) check every documented option set bit for bit."""
    import golden_batches
    import torch

    from volley.loader import LinkNeighborLoader

    data = golden_batches.generated_hetero_data()
    for options in (dict(num_neighbors=[3, 2]), dict(num_neighbors=[], disjoint=True),
                    dict(num_neighbors=[2], subgraph_type="induced")):
        loader = NeighborLoader(data, batch_size=50, input_nodes="paper", **options)
        assert isinstance(loader._native, volley._volley.NeighborLoader), options
    link = LinkNeighborLoader(data, [], edge_label_index=("author", "writes", "paper"),
                              subgraph_type="bidirectional", batch_size=8)
    assert isinstance(link._native, volley._volley.LinkLoader)
    seeds = [4, 2, 9]
    batch = next(iter(NeighborLoader(data, [], batch_size=5, input_nodes=("paper", seeds))))
    assert batch["paper"].n_id.tolist() == seeds  # no hops: the seeds alone
    assert torch.equal(batch["paper"].x, data["paper"].x[seeds])
    assert batch["paper"].num_sampled_nodes == [3]
    assert all(batch[t].n_id.numel() == 0 for t in batch.node_types if t != "paper")
    assert all(batch[t].edge_index.shape == (2, 0) for t in batch.edge_types)


def test_typed_loaders_are_the_loader_classes():
    """One class per PyG class: the typed loaders are NeighborLoader / LinkNeighborLoader."""
    import inspect

    from volley.loader import LinkNeighborLoader

    data = toy_hetero()
    node = NeighborLoader(data, [2], input_nodes="paper", batch_size=4)
    link = LinkNeighborLoader(data, [2], edge_label_index=WRITES, batch_size=4)
    assert isinstance(node, NeighborLoader) and type(node) is not NeighborLoader
    assert isinstance(link, LinkNeighborLoader) and isinstance(link, NeighborLoader)
    assert "default" in inspect.signature(type(node)).parameters  # its own signature


def test_one_signature_serves_both_graph_kinds():
    """PyG's signature is written once (NeighborLoader's): the typed loader inherits it, refuses
    the options of a homogeneous graph by name, and a Data refuses the typed `default`."""
    import inspect

    from volley.hetero_loader import HeteroNeighborLoader

    assert HeteroNeighborLoader.__init__ is NeighborLoader.__init__
    assert inspect.signature(HeteroNeighborLoader) == inspect.signature(NeighborLoader)
    data = toy_hetero()
    with pytest.raises(volley.VolleyTypeError, match="unexpected keyword argument 'sizes'"):
        NeighborLoader(data, [2], input_nodes="paper", batch_size=4, sizes=[2])
    # The row cache of a dataset's features: refused for a HeteroData as for a Data.
    with pytest.raises(volley.VolleyValueError, match="row cache of a volley.Dataset's features"):
        NeighborLoader(data, [2], input_nodes="paper", batch_size=4, cache_bytes=1 << 20)
    assert NeighborLoader(data, [2], input_nodes="paper", batch_size=4,
                          lookahead=4)._options.lookahead == 4
    torch_geometric = pytest.importorskip("torch_geometric")
    import torch

    homogeneous = torch_geometric.data.Data(edge_index=torch.tensor([[0, 1], [1, 0]]),
                                            num_nodes=2)
    with pytest.raises(volley.VolleyTypeError, match="unexpected keyword argument 'default'"):
        NeighborLoader(homogeneous, [2], default=[1])
    # The typed loader's default still fills the edge types a dict leaves out.
    loader = NeighborLoader(data, {WRITES: [2]}, default=[1], input_nodes="paper", batch_size=4)
    assert len(next(iter(loader))["paper"].n_id) >= 1


def test_one_link_signature_serves_both_graph_kinds():
    """LinkNeighborLoader's signature is written once too: the typed link loader inherits it
    (default included), and the homogeneous-only options are refused by name."""
    import inspect

    from volley.hetero_link_loader import HeteroLinkNeighborLoader
    from volley.link_loader import LinkNeighborLoader

    assert HeteroLinkNeighborLoader.__init__ is LinkNeighborLoader.__init__
    assert inspect.signature(HeteroLinkNeighborLoader) == inspect.signature(LinkNeighborLoader)
    assert "default" in inspect.signature(LinkNeighborLoader).parameters
    data = toy_hetero()
    plain = next(iter(LinkNeighborLoader(data, [2], edge_label_index=WRITES, batch_size=4)))
    converted = next(iter(LinkNeighborLoader(data, [2], edge_label_index=WRITES, batch_size=4,
                                             copy=True, feature_dtype="float16")))
    assert torch.equal(converted["paper"].x, plain["paper"].x.half())
    torch_geometric = pytest.importorskip("torch_geometric")

    homogeneous = torch_geometric.data.Data(edge_index=torch.tensor([[0, 1], [1, 0]]),
                                            num_nodes=2)
    with pytest.raises(volley.VolleyTypeError, match="unexpected keyword argument 'default'"):
        LinkNeighborLoader(homogeneous, [2], default=[1])
    loader = LinkNeighborLoader(data, {WRITES: [2]}, default=[1], edge_label_index=WRITES,
                                batch_size=4, neg_sampling="binary")
    batch = next(iter(loader))
    assert batch[WRITES].edge_label_index.shape == (2, 8)


def test_loader_call_refuses_positions_it_does_not_have():
    """loader(positions) names a position outside the input list, and refuses an empty one."""
    loader = NeighborLoader(toy_hetero(), [2], input_nodes=("paper", [0, 1, 2]), batch_size=2)
    for bad in ([3], [0, -1]):
        with pytest.raises(volley.VolleyIndexError, match="is not an input position"):
            loader(bad)
    with pytest.raises(volley.VolleyValueError, match="positions is empty"):
        loader([])
    assert loader([2, 0])["paper"].input_id.tolist() == [2, 0]


def test_weight_attr_names_the_edge_weights():
    """weight_attr='w' weighs the edge types that have 'w' (the others uniformly): the batches of
    weighted=True over the same weights stored as 'edge_weight'."""
    named, plain = toy_hetero(), toy_hetero()
    weights = torch.rand(named[WRITES].edge_index.shape[1]) + 0.1
    named[WRITES].w = weights
    plain[WRITES].edge_weight = weights
    seeds = ("paper", torch.arange(20))
    by_name = NeighborLoader(named, [3, 2], input_nodes=seeds, batch_size=10, weight_attr="w",
                             seed=4)
    by_default = NeighborLoader(plain, [3, 2], input_nodes=seeds, batch_size=10, weighted=True,
                                seed=4)
    for a, b in zip(by_name, by_default):
        for edge_type in a.edge_types:
            assert torch.equal(a[edge_type].e_id, b[edge_type].e_id)
        assert torch.equal(a["author"].n_id, b["author"].n_id)
    unweighted = next(iter(NeighborLoader(named, [3, 2], input_nodes=seeds, batch_size=10,
                                          seed=4)))
    assert not torch.equal(unweighted[WRITES].e_id, next(iter(by_name))[WRITES].e_id)


def test_transform_sampler_output_sees_and_edits_the_typed_sample():
    """transform_sampler_output gets a HeteroSamplerOutput; the identity changes nothing, and a
    transform that drops a type's edges (and keeps the first nodes of another) is what the batch
    holds, its attributes indexed anew."""
    from torch_geometric.sampler import HeteroSamplerOutput

    data = toy_hetero()
    data["author"].score = torch.arange(data["author"].num_nodes) * 10
    seen = []

    def identity(out):
        seen.append(out)
        return out

    def edit(out):
        node = dict(out.node, author=out.node["author"][:2])
        row, col, edge = dict(out.row), dict(out.col), dict(out.edge)
        for t in row:
            if t[0] == "author" or t[2] == "author":
                row[t] = col[t] = edge[t] = row[t][:0]
        return HeteroSamplerOutput(node=node, row=row, col=col, edge=edge,
                                   num_sampled_nodes=out.num_sampled_nodes,
                                   num_sampled_edges=out.num_sampled_edges)

    kw = dict(input_nodes=("paper", torch.arange(10)), batch_size=10, seed=2)
    plain = next(iter(NeighborLoader(data, [3, 2], **kw)))
    same = next(iter(NeighborLoader(data, [3, 2], transform_sampler_output=identity, **kw)))
    assert isinstance(seen[0], HeteroSamplerOutput)
    for t in plain.node_types:
        assert torch.equal(plain[t].n_id, same[t].n_id)
    edited = next(iter(NeighborLoader(data, [3, 2], transform_sampler_output=edit, **kw)))
    assert torch.equal(edited["author"].n_id, plain["author"].n_id[:2])
    assert torch.equal(edited["author"].score, plain["author"].n_id[:2] * 10)
    assert edited[WRITES].edge_index.shape[1] == 0
    assert torch.equal(edited["paper"].x, plain["paper"].x)


def test_copy_and_feature_dtype_are_taken_as_for_a_data():
    """copy=True hands out batches that own their memory; feature_dtype converts every node
    type's x (checked by the same native options as for a Data)."""
    data = toy_hetero()
    kw = dict(input_nodes=("paper", torch.arange(10)), batch_size=10, seed=2)
    plain = next(iter(NeighborLoader(data, [3, 2], **kw)))
    copied = next(iter(NeighborLoader(data, [3, 2], copy=True, **kw)))
    half = next(iter(NeighborLoader(data, [3, 2], feature_dtype="float16", **kw)))
    for t in plain.node_types:
        assert torch.equal(plain[t].n_id, copied[t].n_id)
        if "x" in plain[t]:
            assert torch.equal(plain[t].x, copied[t].x)
            assert half[t].x.dtype == torch.float16
            assert torch.equal(half[t].x, plain[t].x.half())
    with pytest.raises(volley.VolleyValueError, match="float128"):
        NeighborLoader(data, [3, 2], feature_dtype="float128", **kw)
