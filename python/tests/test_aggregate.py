"""Whole-graph passes: volley.aggregate against a sparse-matrix reference (torch.sparse.mm with
PyG's gcn_norm) on random graphs, every op, weighted or not, the same bits on 1 and 2 threads;
volley.layerwise_inference of 2-layer GraphSAGE and GCN against the full-batch PyG model on Cora;
errors that name the value."""

from __future__ import annotations

import numpy as np
import pytest

import volley

torch = pytest.importorskip("torch")
pytest.importorskip("torch_geometric")


def _random_graph(seed: int, n: int = 400, e: int = 3000):
    """A random directed graph without self-loops, with edge weights."""
    rng = np.random.default_rng(seed)
    edge_index = rng.integers(0, n, (2, e))
    edge_index = edge_index[:, edge_index[0] != edge_index[1]]
    weights = torch.from_numpy(rng.uniform(0.1, 2.0, edge_index.shape[1]).astype(np.float32))
    return torch.from_numpy(edge_index), weights, n


def _reference(edge_index, weights, n, x, op, weighted):
    from torch_geometric.nn.conv.gcn_conv import gcn_norm

    w = weights if weighted else torch.ones(edge_index.shape[1])
    if op == "gcn":
        edge_index, w = gcn_norm(edge_index, w, n, add_self_loops=True)
    matrix = torch.sparse_coo_tensor(torch.stack([edge_index[1], edge_index[0]]), w, (n, n))
    out = torch.sparse.mm(matrix.coalesce(), x)
    if op == "mean":
        count = torch.zeros(n).index_add_(0, edge_index[1], torch.ones(edge_index.shape[1]))
        out = out / count.clamp(min=1)[:, None]
    return out


@pytest.mark.parametrize("op", ["sum", "mean", "gcn"])
@pytest.mark.parametrize("weighted", [False, True])
def test_aggregate_equals_a_sparse_matrix_product_on_any_thread_count(op, weighted):
    edge_index, weights, n = _random_graph(seed=len(op) + weighted)
    x = torch.randn(n, 24)
    graph = volley.Graph.from_edge_index(edge_index, n, edge_weight=weights)
    before = volley.get_num_threads()
    try:
        volley.set_num_threads(1)
        one = volley.aggregate(graph, x, op, weighted=weighted)
        volley.set_num_threads(2)
        two = volley.aggregate(graph, x, op, weighted=weighted)
    finally:
        volley.set_num_threads(before)
    assert torch.equal(one, two)  # one summation order whatever the threads
    assert torch.allclose(one, _reference(edge_index, weights, n, x, op, weighted), atol=1e-5)
    from torch_geometric.data import Data

    data = Data(edge_index=edge_index, edge_weight=weights, num_nodes=n)
    assert torch.equal(volley.aggregate(data, x, op, weighted=weighted), one)


def test_aggregate_without_self_loops_and_isolated_nodes():
    edge_index = torch.tensor([[1, 2], [0, 0]])  # node 0 has two in-neighbors, 1 and 2 none
    x = torch.tensor([[1.0], [2.0], [4.0]])
    graph = volley.Graph.from_edge_index(edge_index, 3)
    assert volley.aggregate(graph, x, "sum").flatten().tolist() == [6.0, 0.0, 0.0]
    assert volley.aggregate(graph, x, "mean").flatten().tolist() == [3.0, 0.0, 0.0]
    # Without self-loops a node without in-neighbors has d = 0 and sends nothing (as PyG's
    # gcn_norm: its infinite 1 / sqrt(0) is masked to 0).
    plain = volley.aggregate(graph, x, "gcn", self_loops=False).flatten().tolist()
    assert plain == [0.0, 0.0, 0.0]
    looped = volley.aggregate(graph, x, "gcn").flatten().tolist()  # d = 3, 1, 1
    assert looped == pytest.approx([(2 + 4) / np.sqrt(3) + 1 / 3, 2.0, 4.0])


def test_aggregate_errors_name_the_value():
    graph = volley.Graph.from_edge_index(torch.tensor([[0, 5], [1, 0]]), 6)
    with pytest.raises(volley.VolleyValueError, match="float32 .* got float64"):
        volley.aggregate(graph, np.zeros((6, 2)), "sum")
    with pytest.raises(volley.VolleyValueError, match="op must be one of"):
        volley.aggregate(graph, np.zeros((6, 2), np.float32), "max")
    with pytest.raises(volley.VolleyValueError, match="no edge weights"):
        volley.aggregate(graph, np.zeros((6, 2), np.float32), "sum", weighted=True)
    with pytest.raises(volley.VolleyIndexError, match="neighbor 5, outside x's 4 rows"):
        volley.aggregate(graph, np.zeros((4, 2), np.float32), "sum")
    with pytest.raises(volley.VolleyTypeError, match="volley.Graph or a PyG Data"):
        volley.aggregate([[0, 1]], np.zeros((2, 2), np.float32))


@pytest.mark.parametrize("kind", ["sage", "gcn"])
def test_layerwise_inference_equals_the_full_batch_model(kind, cora_dir):
    from torch_geometric.data import Data
    from torch_geometric.nn import GCNConv, SAGEConv

    dataset = volley.load_dataset(cora_dir)
    data = dataset.to_pyg()
    data = Data(x=data.x.float(), edge_index=data.edge_index, num_nodes=data.num_nodes)
    torch.manual_seed(0)
    conv = SAGEConv if kind == "sage" else GCNConv
    layers = torch.nn.ModuleList([conv(data.x.shape[1], 32), conv(32, 7)]).eval()
    with torch.no_grad():
        full = layers[1](torch.relu(layers[0](data.x, data.edge_index)), data.edge_index)
    graph, edge_weight = data, None
    if kind == "gcn":  # the whole graph's normalisation, the layers' own turned off
        from torch_geometric.nn.conv.gcn_conv import gcn_norm

        edge_index, edge_weight = gcn_norm(data.edge_index, None, data.num_nodes,
                                           add_self_loops=True)
        graph = Data(edge_index=edge_index, num_nodes=data.num_nodes)
        for layer in layers:
            layer.normalize = False
    out = volley.layerwise_inference(layers, data.x, graph, batch_size=500,
                                     activation=torch.relu, edge_weight=edge_weight)
    assert out.shape == full.shape
    assert torch.allclose(out, full, atol=1e-5)
    if kind == "sage":  # the graph as a volley.Graph gives the same blocks
        again = volley.layerwise_inference(layers, data.x, dataset.graph, batch_size=700,
                                           activation=torch.relu)
        assert torch.allclose(again, full, atol=1e-5)
    if kind == "sage":  # layer outputs written to a store, block by block, and read from it
        store = volley.NodeStore()
        store.init("x", data.num_nodes, data.x.shape[1])
        store.push("x", range(data.num_nodes), data.x)
        name = volley.layerwise_inference(layers, "x", data, batch_size=600, store=store,
                                          names=["hidden", "out"], activation=torch.relu)
        assert name == "out" and store.size("hidden") == (data.num_nodes, 32)
        assert torch.allclose(store.pull("out", range(data.num_nodes)), full, atol=1e-5)
        with pytest.raises(volley.VolleyValueError, match="names lists 1 tables for 2 layers"):
            volley.layerwise_inference(layers, "x", data, store=store, names=["one"])
        with pytest.raises(volley.VolleyValueError, match="pass the store= that holds it"):
            volley.layerwise_inference(layers, "x", data)
    with pytest.raises(volley.VolleyValueError, match="x has 10 rows, the graph 2708 nodes"):
        volley.layerwise_inference(layers, data.x[:10], data)
    with pytest.raises(volley.VolleyValueError, match="at least one layer"):
        volley.layerwise_inference([], data.x, data)


def test_known_layers_run_over_the_whole_graph_as_over_blocks(cora_dir):
    """SAGEConv (mean; root weight, normalisation, each map direction) and GCNConv with its own
    normalisation run over every node at once, equal to the layers on the whole graph; the same
    callables wrapped (unknown to Volley) run over blocks: the same for SAGEConv, block-normalised
    (so different) for GCNConv."""
    from torch_geometric.data import Data
    from torch_geometric.nn import GCNConv, SAGEConv

    dataset = volley.load_dataset(cora_dir)
    data = dataset.to_pyg()
    x, data = data.x.float(), Data(edge_index=data.edge_index, num_nodes=data.num_nodes)
    torch.manual_seed(1)
    stacks = [[SAGEConv(1433, 16), SAGEConv(16, 40, normalize=True)],
              [SAGEConv(1433, 8, root_weight=False), SAGEConv(8, 7)],
              [GCNConv(1433, 16), GCNConv(16, 7)], [GCNConv(1433, 16), SAGEConv(16, 7)]]
    for stack in stacks:
        layers = torch.nn.ModuleList(stack).eval()
        with torch.no_grad():
            full = layers[1](torch.relu(layers[0](x, data.edge_index)), data.edge_index)
        fast = volley.layerwise_inference(layers, x, data, activation=torch.relu)
        wrapped = [lambda h, e, layer=layer: layer(h, e) for layer in layers]
        blocks = volley.layerwise_inference(wrapped, x, data, batch_size=900,
                                            activation=torch.relu)
        assert torch.allclose(fast, full, atol=1e-5), stack
        if not any(isinstance(layer, GCNConv) for layer in stack):
            assert torch.allclose(blocks, full, atol=1e-5), stack
        else:  # over blocks GCNConv would normalise by a block's degrees, not the graph's
            assert not torch.allclose(blocks, full, atol=1e-3), stack


@pytest.mark.parametrize("disk", [False, True])
def test_layerwise_inference_reads_a_feature_of_any_tier(cora_dir, tmp_path, disk):
    """x as a volley.Feature (memory-mapped, or the disk tier with a tiny cache): read once in
    order through a known layer's maps, or gathered per block by the loader for any other
    layer; the output equals the one from a tensor either way."""
    from torch_geometric.data import Data
    from torch_geometric.nn import SAGEConv

    dataset = volley.load_dataset(cora_dir)
    data = dataset.to_pyg()
    x = data.x.float()
    path = tmp_path / "x.npy"
    np.save(path, x.numpy())
    feature = volley.Feature(str(path), disk=disk, cache_bytes="64K" if disk else None)
    graph = Data(edge_index=data.edge_index, num_nodes=data.num_nodes)
    torch.manual_seed(2)
    layers = torch.nn.ModuleList([SAGEConv(1433, 16), SAGEConv(16, 7)]).eval()
    want = volley.layerwise_inference(layers, x, graph, activation=torch.relu)
    got = volley.layerwise_inference(layers, feature, graph, batch_size=512,
                                     activation=torch.relu)  # the rows read once, in order
    assert torch.allclose(got, want, atol=1e-5)
    wrapped = [lambda h, e, layer=layer: layer(h, e) for layer in layers]  # over blocks
    got = volley.layerwise_inference(wrapped, feature, graph, batch_size=512,
                                     activation=torch.relu)
    assert torch.allclose(got, want, atol=1e-5)
    if disk:
        assert feature.disk_stats[1] > 0  # rows came from the disk


def test_layer_outputs_go_to_files_in_a_directory(cora_dir, tmp_path):
    """store= a directory: each layer's output is written block by block to <name>.npy and the
    next layer reads it back by id; the last file holds the model's output."""
    from torch_geometric.data import Data
    from torch_geometric.nn import SAGEConv

    data = volley.load_dataset(cora_dir).to_pyg()
    x, graph = data.x.float(), Data(edge_index=data.edge_index, num_nodes=data.num_nodes)
    torch.manual_seed(3)
    layers = torch.nn.ModuleList([SAGEConv(1433, 16), SAGEConv(16, 7)]).eval()
    want = volley.layerwise_inference(layers, x, graph, activation=torch.relu)
    name = volley.layerwise_inference(layers, x, graph, batch_size=700, store=tmp_path / "out",
                                      activation=torch.relu)
    assert name == "layer1"
    assert np.load(tmp_path / "out" / "layer0.npy").shape == (2708, 16)
    assert torch.allclose(torch.from_numpy(np.load(tmp_path / "out" / "layer1.npy")), want,
                          atol=1e-5)
    with pytest.raises(volley.VolleyValueError, match="layer0.npy exists"):
        volley.layerwise_inference(layers, x, graph, store=tmp_path / "out")


@pytest.mark.parametrize("shared", [False, True])
def test_store_aggregates_one_table_into_another(shared):
    edge_index, weights, n = _random_graph(seed=7, n=300, e=2000)
    graph = volley.Graph.from_edge_index(edge_index, n)
    store = volley.NodeStore(shared=shared)
    store.init("x", n, 8, init="normal", seed=1)
    store.aggregate(graph, "x", "u", op="gcn")
    x = store.pull("x", range(n))
    assert torch.equal(store.pull("u", range(n)), volley.aggregate(graph, x, "gcn"))
    store.aggregate(graph, "u", "u2", op="gcn")  # U2 = Â² X, the next hop of the same pass
    assert torch.allclose(store.pull("u2", range(n)),
                          _reference(edge_index, weights, n,
                                     _reference(edge_index, weights, n, x, "gcn", False),
                                     "gcn", False), atol=1e-5)
    store.init("small", 10, 8)
    with pytest.raises(volley.VolleyValueError, match=r"'small' is \[10, 8\], the aggregation"):
        store.aggregate(graph, "x", "small")
    with pytest.raises(volley.VolleyValueError, match="no node data 'missing'"):
        store.aggregate(graph, "missing", "u")
