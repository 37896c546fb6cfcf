"""Heterogeneous graphs: HeteroGraph / HeteroDataset (PyG round trips), their directory format,
and the heterogeneous neighbor sampler."""

from __future__ import annotations

import numpy as np
import pytest

import volley
from volley.hetero import read_hetero_edge_directory

from conftest import as_numpy, volley_cli as _cli

torch = pytest.importorskip("torch")
pyg_data = pytest.importorskip("torch_geometric.data")

WRITES = ("author", "writes", "paper")
CITES = ("paper", "cites", "paper")
REV = ("paper", "rev_writes", "author")


def toy_hetero(seed: int = 0, papers: int = 60, authors: int = 40):
    """A random HeteroData: paper x/y/masks, featureless authors, writes/cites/rev_writes."""
    rng = np.random.default_rng(seed)
    data = pyg_data.HeteroData()
    data["paper"].x = torch.from_numpy(rng.normal(size=(papers, 4)).astype(np.float32))
    data["paper"].y = torch.from_numpy(rng.integers(0, 3, papers))
    mask = torch.zeros(papers, dtype=torch.bool)
    mask[: papers // 2] = True
    data["paper"].train_mask = mask
    data["author"].num_nodes = authors
    writes = np.stack([rng.integers(0, authors, 300), rng.integers(0, papers, 300)])
    cites = np.stack([rng.integers(0, papers, 200), rng.integers(0, papers, 200)])
    data[WRITES].edge_index = torch.from_numpy(writes)
    data[CITES].edge_index = torch.from_numpy(cites)
    data[REV].edge_index = torch.from_numpy(writes[::-1].copy())
    return data


def test_from_pyg_save_load_to_pyg_round_trip(tmp_path):
    data = toy_hetero()
    dataset = volley.HeteroDataset.from_pyg(data, name="toy")
    # Features cross without a copy.
    assert as_numpy(dataset.x_dict["paper"]).ctypes.data == data["paper"].x.data_ptr()
    dataset.save(tmp_path / "toy")
    assert volley.verify_dataset(tmp_path / "toy") == []
    loaded = volley.load_dataset(tmp_path / "toy")
    assert isinstance(loaded, volley.HeteroDataset)
    assert loaded.name == "toy"
    assert loaded.node_types == ["paper", "author"]
    back = loaded.to_pyg()
    assert set(back.edge_types) == set(data.edge_types)
    for edge_type in data.edge_types:
        assert torch.equal(back[edge_type].edge_index, data[edge_type].edge_index), edge_type
    assert torch.equal(back["paper"].x, data["paper"].x)
    assert torch.equal(back["paper"].y, data["paper"].y)
    assert torch.equal(back["paper"].train_mask, data["paper"].train_mask)
    assert back["author"].num_nodes == 40
    assert "x" not in back["author"]


def test_from_edge_index_dict_counts_and_errors():
    graph = volley.HeteroGraph.from_edge_index_dict(
        {WRITES: torch.tensor([[0, 4], [1, 2]]), "paper__cites__paper": [[1], [0]]},
        {"paper": 3})
    assert graph.num_nodes_dict == {"paper": 3, "author": 5}
    assert graph.edge_types == [WRITES, CITES]
    csr = graph.graph(WRITES)
    assert list(as_numpy(csr.indptr)) == [0, 0, 1, 2]  # rows: papers
    with pytest.raises(volley.VolleyIndexError, match="author__writes__paper: dst.*3"):
        volley.HeteroGraph.from_edge_index_dict({WRITES: [[0], [3]]}, {"paper": 3})
    with pytest.raises(volley.VolleyValueError, match="unknown node type 'venue'"):
        graph.num_nodes("venue")
    with pytest.raises(volley.VolleyValueError, match="unknown edge type paper__writes__author"):
        graph.graph(("paper", "writes", "author"))
    with pytest.raises(volley.VolleyValueError, match="not an edge type name"):
        graph.graph("paper__author")
    with pytest.raises(volley.VolleyTypeError, match="HeteroData"):
        volley.HeteroGraph.from_pyg(object())
    with pytest.raises(volley.VolleyValueError, match="'venue' is not a node type"):
        volley.HeteroDataset(graph, {"venue": np.zeros((2, 2))})


def test_hetero_labels_checked_by_type(tmp_path):
    data = toy_hetero()
    data["paper"].y = data["paper"].y[:10]
    with pytest.raises(volley.VolleyValueError, match="node type paper: labels: shape"):
        volley.HeteroDataset.from_pyg(data).save(tmp_path / "bad")


def check_batch(graph, batch, fanouts):
    for edge_type in graph.edge_types:
        src, _, dst = edge_type
        csr = graph.graph(edge_type)
        indptr = as_numpy(csr.indptr)
        indices = as_numpy(csr.indices)
        eids = as_numpy(csr.edge_ids)
        rows, cols = as_numpy(batch["row"][edge_type]), as_numpy(batch["col"][edge_type])
        edges = as_numpy(batch["edge"][edge_type])
        dst_nodes, src_nodes = as_numpy(batch["node"][dst]), as_numpy(batch["node"][src])
        for r, c, e in zip(rows, cols, edges):
            v, u = dst_nodes[r], src_nodes[c]
            row = range(indptr[v], indptr[v + 1])
            assert any(indices[k] == u and eids[k] == e for k in row), (edge_type, u, v, e)
        # Per hop, each target gets min(fanout, degree) neighbors (without replacement).
        start = 0
        key = "__".join(edge_type) if "__".join(edge_type) in fanouts else edge_type
        for hop, count in enumerate(batch["num_sampled_edges"][edge_type]):
            targets = rows[start:start + count]
            start += count
            fanout = fanouts[key][hop]
            for local in np.unique(targets):
                degree = indptr[dst_nodes[local] + 1] - indptr[dst_nodes[local]]
                assert np.sum(targets == local) == min(fanout, degree), (edge_type, hop)
        assert start == len(rows)
    for node_type, nodes in batch["node"].items():
        values = as_numpy(nodes)
        assert len(np.unique(values)) == len(values), node_type
        assert sum(batch["num_sampled_nodes"][node_type]) == len(values)


def test_sampler_edges_exist_fanouts_per_type_and_deterministic():
    dataset = volley.HeteroDataset.from_pyg(toy_hetero())
    fanouts = {WRITES: [3, 2], CITES: [0, 4], "paper__rev_writes__author": [2, 2]}
    sampler = volley.HeteroNeighborSampler(dataset, fanouts, seed=5)
    batch = sampler.sample({"paper": [0, 5, 9]}, batch_index=2)
    assert list(as_numpy(batch["node"]["paper"])[:3]) == [0, 5, 9]
    assert batch["batch_size"] == {"paper": 3}
    assert batch["num_sampled_edges"][CITES][0] == 0
    per_hop = batch["num_sampled_edges"][WRITES]
    assert per_hop[0] <= 9 and len(per_hop) == 2
    check_batch(dataset.graph, batch, fanouts)
    edge_index = as_numpy(batch["edge_index"][WRITES])
    assert np.array_equal(edge_index[0], as_numpy(batch["col"][WRITES]))
    again = volley.HeteroNeighborSampler(dataset, fanouts, seed=5).sample(("paper", [0, 5, 9]), 2)
    for edge_type in dataset.edge_types:
        assert np.array_equal(as_numpy(again["edge"][edge_type]), as_numpy(batch["edge"][edge_type]))
    every = volley.HeteroNeighborSampler(dataset, [-1], seed=0).sample({"paper": [1]})
    degree = np.diff(as_numpy(dataset.graph.graph(WRITES).indptr))[1]
    assert len(as_numpy(every["row"][WRITES])) == degree


def test_sampler_errors_name_the_type():
    dataset = volley.HeteroDataset.from_pyg(toy_hetero())
    with pytest.raises(volley.VolleyValueError, match="no fanouts for edge type paper__cites"):
        volley.HeteroNeighborSampler(dataset, {WRITES: [2], REV: [2]})
    with pytest.raises(volley.VolleyValueError, match="which the graph does not have"):
        volley.HeteroNeighborSampler(dataset, {("paper", "x", "paper"): [2]}, default=[1])
    sampler = volley.HeteroNeighborSampler(dataset, [2, 2])
    with pytest.raises(volley.VolleyIndexError, match="of node type 'paper' at position 1"):
        sampler.sample({"paper": [0, 60]})
    with pytest.raises(volley.VolleyValueError, match="unknown node type 'venue'"):
        sampler.sample({"venue": [0]})
    with pytest.raises(volley.VolleyTypeError, match="seeds"):
        sampler.sample([0, 1])
    with pytest.raises(volley.VolleyTypeError):
        volley.HeteroNeighborSampler(volley.Graph.from_edge_index([[0], [1]]), [2])


def test_edge_directory_reader(tmp_path):
    np.save(tmp_path / "author__writes__paper.npy", np.array([[0, 1, 2], [0, 0, 3]]))
    np.save(tmp_path / "paper.features.npy", np.ones((5, 2), np.float32))
    (tmp_path / "paper__cites__paper.txt").write_text("1 0\n2 1\n")
    dataset = read_hetero_edge_directory(tmp_path)
    assert dataset.graph.num_nodes_dict == {"author": 3, "paper": 5}
    assert dataset.edge_types == [WRITES, CITES]


def test_generated_mag_labels_need_the_graph(tmp_path):
    """`volley generate --model hetero`: a linear model on paper features alone is far below
    one that also sees the mean features of co-authored, co-topic and cited papers."""
    import subprocess

    cli = _cli()
    if cli is None:
        pytest.skip("no volley CLI (set VOLLEY_CLI)")
    subprocess.run([cli, "-q", "generate", str(tmp_path / "mag"), "--model", "hetero", "--nodes",
                    "8000", "--feature-dim", "32", "--classes", "6", "--reverse"], check=True,
                   capture_output=True)
    data = volley.load_dataset(tmp_path / "mag").to_pyg()
    x, y = data["paper"].x.numpy(), data["paper"].y.numpy()
    counts = {t: data[t].num_nodes for t in data.node_types}

    def mean_over(edge_type, source):
        edge_index = data[edge_type].edge_index.numpy()
        count = counts[edge_type[2]]
        total, degree = np.zeros((count, source.shape[1])), np.zeros(count)
        np.add.at(total, edge_index[1], source[edge_index[0]])
        np.add.at(degree, edge_index[1], 1)
        return total / np.maximum(degree, 1)[:, None]

    authors = mean_over(("paper", "rev_writes", "author"), x)
    topics = mean_over(("paper", "has_topic", "field_of_study"), x)
    graph_x = np.hstack([x, mean_over(("author", "writes", "paper"), authors),
                         mean_over(("field_of_study", "rev_has_topic", "paper"), topics),
                         mean_over(("paper", "cites", "paper"), x)])
    train = data["paper"].train_mask.numpy()
    test = data["paper"].test_mask.numpy()

    def accuracy(features):
        z = np.hstack([features, np.ones((len(features), 1))])
        weights = np.linalg.lstsq(z[train], np.eye(6)[y[train]], rcond=None)[0]
        return float((np.argmax(z[test] @ weights, axis=1) == y[test]).mean())

    assert accuracy(graph_x) > accuracy(x) + 0.2


def test_save_dataset_takes_heterodata(tmp_path):
    data = toy_hetero(seed=3)
    volley.save_dataset(data, tmp_path / "h")
    loaded = volley.load_dataset(tmp_path / "h")
    assert loaded.name == "h"
    assert torch.equal(loaded.to_pyg()[CITES].edge_index, data[CITES].edge_index)
    with pytest.raises(volley.VolleyValueError, match="HeteroDataset.from_pyg"):
        volley.Dataset.from_pyg(data)


def test_pickle_round_trip():
    import pickle

    dataset = volley.HeteroDataset.from_pyg(toy_hetero(seed=4), name="p")
    copy = pickle.loads(pickle.dumps(dataset))
    assert copy.name == "p"
    assert copy.num_classes_dict == dataset.num_classes_dict
    for edge_type in dataset.edge_types:
        assert torch.equal(copy.graph.edge_index(edge_type), dataset.graph.edge_index(edge_type))
    assert torch.equal(copy.x_dict["paper"], dataset.x_dict["paper"])
    graph = pickle.loads(pickle.dumps(dataset.graph))
    assert graph.num_edges_dict == dataset.graph.num_edges_dict
