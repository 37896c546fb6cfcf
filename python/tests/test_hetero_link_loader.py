"""The heterogeneous LinkNeighborLoader: supervision edges of one edge type, binary and triplet
negatives over the end types, batches that map back to the input edges, errors that name the
type."""

from __future__ import annotations

import pytest

import volley
from volley.loader import LinkNeighborLoader

from test_hetero import CITES, REV, WRITES, toy_hetero

torch = pytest.importorskip("torch")
pyg_data = pytest.importorskip("torch_geometric.data")


def test_binary_batches_map_back_to_their_edges():
    data = toy_hetero(seed=1)
    index = data[WRITES].edge_index[:, :100]
    loader = LinkNeighborLoader(data, [2, 2], edge_label_index=(WRITES, index), batch_size=16,
                                neg_sampling_ratio=2.0, shuffle=True, seed=4, num_workers=1)
    assert isinstance(loader, volley.hetero_link_loader.HeteroLinkNeighborLoader)
    assert repr(loader) == "LinkNeighborLoader()" and len(loader) == 7
    seen = []
    for batch in loader:
        store = batch[WRITES]
        size = store.input_id.numel()
        authors, papers = batch["author"].n_id, batch["paper"].n_id
        label_index = store.edge_label_index
        assert label_index.shape == (2, 3 * size)
        # Positives are the input edges, in order; negatives follow with label 0.
        assert torch.equal(authors[label_index[0, :size]], index[0, store.input_id])
        assert torch.equal(papers[label_index[1, :size]], index[1, store.input_id])
        assert store.edge_label.tolist() == [1.0] * size + [0.0] * (2 * size)
        # Every end point is a seed: the first nodes of its type, sorted.
        ends = torch.unique(authors[label_index[0]])
        assert torch.equal(authors[: ends.numel()], ends)
        # Sampled message-passing edges are real edges of their type.
        for edge_type in data.edge_types:
            src, dst = batch[edge_type[0]].n_id, batch[edge_type[2]].n_id
            edge_index = batch[edge_type].edge_index
            full = data[edge_type].edge_index
            assert torch.equal(torch.stack([src[edge_index[0]], dst[edge_index[1]]]),
                               full[:, batch[edge_type].e_id])
        seen.append(store.input_id)
    assert sorted(torch.cat(seen).tolist()) == list(range(100))
    # The same seed gives the same batches with any number of threads.
    again = LinkNeighborLoader(data, [2, 2], edge_label_index=(WRITES, index), batch_size=16,
                               neg_sampling_ratio=2.0, shuffle=True, seed=4, num_workers=3)
    first = LinkNeighborLoader(data, [2, 2], edge_label_index=(WRITES, index), batch_size=16,
                               neg_sampling_ratio=2.0, shuffle=True, seed=4, num_workers=1)
    for a, b in zip(first, again):
        assert torch.equal(a[WRITES].edge_label_index, b[WRITES].edge_label_index)
        assert torch.equal(a["paper"].n_id, b["paper"].n_id)


def test_triplet_indices_and_weighted_negatives():
    data = toy_hetero(seed=2)
    weight = torch.zeros(60)
    weight[[3, 7, 11]] = 1.0  # only these papers may be drawn as negatives
    loader = LinkNeighborLoader(data, [2], edge_label_index=("author", "paper"), batch_size=10,
                                neg_sampling=dict(mode="triplet", amount=3, weight=weight), seed=0)
    assert loader.edge_type == WRITES
    for batch in loader:
        input_id = batch[WRITES].input_id
        authors, papers = batch["author"].n_id, batch["paper"].n_id
        full = data[WRITES].edge_index
        assert torch.equal(authors[batch["author"].src_index], full[0, input_id])
        assert torch.equal(papers[batch["paper"].dst_pos_index], full[1, input_id])
        negatives = batch["paper"].dst_neg_index
        assert negatives.shape == (input_id.numel(), 3)
        assert set(papers[negatives].flatten().tolist()) <= {3, 7, 11}
        assert "edge_label_index" not in batch[WRITES]


def test_labels_shift_and_zero_hops_without_message_passing_edges():
    data = toy_hetero(seed=3)
    labels = torch.randint(0, 2, (data[CITES].edge_index.shape[1],))
    loader = LinkNeighborLoader(data, [1], edge_label_index=(CITES, None), edge_label=labels,
                                batch_size=50, neg_sampling="binary", seed=1)
    batch = next(iter(loader))
    size = batch[CITES].input_id.numel()
    assert torch.equal(batch[CITES].edge_label[:size], labels[batch[CITES].input_id] + 1)
    assert batch[CITES].edge_label[size:].tolist() == [0] * size
    # An edge type without message-passing edges, and no hops: the end points alone.
    lonely = pyg_data.HeteroData()
    lonely["paper"].num_nodes = 30
    pairs = torch.randint(0, 30, (2, 40))
    loader = LinkNeighborLoader(lonely, [], edge_label_index=(("paper", "paper"), pairs), batch_size=8)
    for batch in loader:
        label_index = batch["paper", "to", "paper"].edge_label_index
        assert batch["paper"].num_nodes == label_index.unique().numel()
        assert torch.equal(batch["paper"].n_id[label_index], pairs[:, batch["paper", "to", "paper"].input_id])


def test_errors_name_the_edge_type():
    data = toy_hetero()
    with pytest.raises(volley.VolleyIndexError, match="edge_label_index\\[1, 1\\] = 60 is out of range for node type 'paper'"):
        LinkNeighborLoader(data, [2], edge_label_index=(WRITES, torch.tensor([[0, 1], [0, 60]])))
    data["author", "likes", "paper"].edge_index = data[WRITES].edge_index
    with pytest.raises(volley.VolleyValueError, match="2 edge types go from 'author' to 'paper'"):
        LinkNeighborLoader(data, [2], edge_label_index=("author", "paper"))
    with pytest.raises(volley.VolleyValueError, match="one label per supervision edge \\(300\\), got shape \\[3\\]"):
        LinkNeighborLoader(data, [2], edge_label_index=(REV, None), edge_label=torch.ones(3))
    with pytest.raises(volley.VolleyValueError, match="triplet"):
        LinkNeighborLoader(data, [2], edge_label_index=(REV, None),
                           edge_label=torch.ones(data[REV].edge_index.shape[1]), neg_sampling="triplet")
    with pytest.raises(volley.VolleyValueError, match="time_attr='time': data has no attribute 'time'"):
        LinkNeighborLoader(data, [2], edge_label_index=(REV, None), time_attr="time")
    timed = toy_hetero()
    timed["paper"].time = torch.arange(timed["paper"].num_nodes)
    with pytest.raises(volley.VolleyValueError, match="time_attr, node time\\) needs edge_label_time"):
        LinkNeighborLoader(timed, [2], edge_label_index=(WRITES, None), time_attr="time")
    with pytest.raises(volley.VolleyValueError, match="names an edge type"):
        LinkNeighborLoader(pyg_data.Data(edge_index=torch.tensor([[0], [1]]), num_nodes=2), [2],
                           edge_label_index=(("a", "to", "b"), None))
    with pytest.raises(volley.VolleyValueError, match="weight must be 60"):
        LinkNeighborLoader(data, [2], edge_label_index=(WRITES, None),
                           neg_sampling=dict(mode="triplet", weight=torch.ones(5)))


def test_src_and_dst_weights_of_pyg_2_8():
    data = toy_hetero(seed=4)
    src_weight, dst_weight = torch.zeros(40), torch.zeros(60)
    src_weight[5], dst_weight[[1, 2]] = 1.0, 1.0
    loader = LinkNeighborLoader(data, [1], edge_label_index=(WRITES, None), batch_size=20,
                                neg_sampling=dict(mode="binary", amount=1, src_weight=src_weight,
                                                  dst_weight=dst_weight), seed=3)
    batch = next(iter(loader))
    label_index = batch[WRITES].edge_label_index[:, 20:]
    assert set(batch["author"].n_id[label_index[0]].tolist()) == {5}
    assert set(batch["paper"].n_id[label_index[1]].tolist()) <= {1, 2}
    with pytest.raises(volley.VolleyValueError, match="not both"):
        LinkNeighborLoader(data, [1], edge_label_index=(WRITES, None),
                           neg_sampling=dict(mode="binary", weight=dst_weight, dst_weight=dst_weight))
    homogeneous = pyg_data.Data(edge_index=torch.randint(0, 60, (2, 100)), num_nodes=60)
    with pytest.raises(volley.VolleyNotImplementedError, match="different src_weight and dst_weight"):
        LinkNeighborLoader(homogeneous, [1], neg_sampling=dict(mode="binary", src_weight=dst_weight,
                                                               dst_weight=torch.ones(60)))


def _edges(data, edge_type):
    return set(map(tuple, data[edge_type].edge_index.t().tolist()))


def test_reject_existing_and_degree_negatives_as_the_homogeneous_loader():
    data = toy_hetero(seed=5)
    writes = _edges(data, WRITES)
    index = data[WRITES].edge_index

    def negatives(**options):
        loader = LinkNeighborLoader(data, [1], edge_label_index=(WRITES, index), batch_size=100,
                                    neg_sampling_ratio=3.0, seed=2, **options)
        pairs = []
        for batch in loader:
            size = batch[WRITES].input_id.numel()
            label_index = batch[WRITES].edge_label_index[:, size:]
            pairs += zip(batch["author"].n_id[label_index[0]].tolist(),
                         batch["paper"].n_id[label_index[1]].tolist())
        return pairs

    assert any(pair in writes for pair in negatives())  # the checks below can fail
    assert not any(pair in writes for pair in negatives(reject_existing=True, max_draws=64))
    # Degree-based: only authors who write and papers that are written are drawn.
    lonely_author, lonely_paper = 40, 60
    grown = toy_hetero(seed=5, papers=61, authors=41)
    grown[WRITES].edge_index = index  # author 40 and paper 60 have no writes edge
    loader = LinkNeighborLoader(grown, [1], edge_label_index=(WRITES, index), batch_size=100,
                                neg_sampling_ratio=3.0, seed=2, neg_distribution="degree",
                                neg_degree_power=1.0)
    for batch in loader:
        size = batch[WRITES].input_id.numel()
        label_index = batch[WRITES].edge_label_index[:, size:]
        assert lonely_author not in batch["author"].n_id[label_index[0]].tolist()
        assert lonely_paper not in batch["paper"].n_id[label_index[1]].tolist()
    with pytest.raises(volley.VolleyValueError, match="max_draws must be"):
        LinkNeighborLoader(data, [1], edge_label_index=(WRITES, None), reject_existing=True,
                           max_draws=0)
    with pytest.raises(volley.VolleyValueError, match="neg_distribution must be one of 'uniform', 'degree', got \"zipf\""):
        LinkNeighborLoader(data, [1], edge_label_index=(WRITES, None), neg_distribution="zipf")


def test_exclude_edges_removes_the_batch_positives_and_with_undirected_their_reverses():
    data = toy_hetero(seed=6)
    index = data[WRITES].edge_index[:, :60]

    def leaks(**options):
        loader = LinkNeighborLoader(data, [-1, -1], edge_label_index=(WRITES, index),
                                    batch_size=20, neg_sampling="binary", seed=1, **options)
        found = {WRITES: 0, REV: 0}
        for batch in loader:
            positives = set(zip(index[0, batch[WRITES].input_id].tolist(),
                                index[1, batch[WRITES].input_id].tolist()))
            for edge_type, flip in ((WRITES, False), (REV, True)):
                store = batch[edge_type]
                src = batch[edge_type[0]].n_id[store.edge_index[0]].tolist()
                dst = batch[edge_type[2]].n_id[store.edge_index[1]].tolist()
                pairs = zip(dst, src) if flip else zip(src, dst)
                found[edge_type] += sum(pair in positives for pair in pairs)
                # e_id and the per-hop counts follow the kept edges.
                assert store.e_id.numel() == store.edge_index.shape[1]
                assert sum(store.num_sampled_edges) == store.edge_index.shape[1]
                full = data[edge_type].edge_index[:, store.e_id]
                assert torch.equal(torch.stack([torch.tensor(src, dtype=torch.long),
                                                torch.tensor(dst, dtype=torch.long)]), full)
        return found

    assert all(leaks().values())  # all neighbors: every positive is sampled, both ways
    assert leaks(exclude_edges=True) == {WRITES: 0, REV: leaks()[REV]}
    assert leaks(exclude_edges=True, undirected=True) == {WRITES: 0, REV: 0}


def test_loader_call_builds_the_batch_of_those_edges():
    """PyG's loader(index): a one-batch native link loader over the supervision edges at those
    positions (their labels and, temporal, their times), as the homogeneous loader builds it."""
    import golden_batches
    import torch

    data = golden_batches.generated_hetero_data()
    cites = ("paper", "cites", "paper")
    index = data[cites].edge_index[:, ::3]
    times = data["paper"].time[index[1]] + 5
    labels = torch.arange(index.shape[1]) % 3
    loader = LinkNeighborLoader(data, [3, 2], edge_label_index=(cites, index), time_attr="time",
                                edge_label_time=times, edge_label=labels, neg_sampling="binary",
                                batch_size=8)
    positions = [7, 4, 5]  # labels 1, 1, 2: none is 0
    batch = loader(positions)
    store = batch[cites]
    assert store.input_id.tolist() == positions
    assert store.edge_label_index.shape == (2, 6)  # the positives, then one negative each
    # Labels start at 0, so positives move up by one (over all labels, as at construction).
    assert store.edge_label.tolist() == (labels[positions] + 1).tolist() + [0, 0, 0]
    assert store.edge_label_time.tolist() == times[positions].tolist() * 2
    n_id = batch["paper"].n_id
    src, dst = store.edge_label_index[:, :3]
    assert n_id[src].tolist() == index[0, positions].tolist()
    assert n_id[dst].tolist() == index[1, positions].tolist()
    with pytest.raises(volley.VolleyIndexError, match="is not a position"):
        loader([index.shape[1]])
