"""volley.loader.LinkNeighborLoader: PyG's link batches from the C++ link loader."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import volley  # noqa: E402
from volley.loader import LinkNeighborLoader  # noqa: E402

pyg = pytest.importorskip("torch_geometric")
from torch_geometric.data import Data  # noqa: E402
from torch_geometric.sampler import NegativeSampling  # noqa: E402
from conftest import trains_a_model


def small_data(num_nodes=120, num_edges=900, seed=0):
    generator = torch.Generator().manual_seed(seed)
    edge_index = torch.randint(0, num_nodes, (2, num_edges), generator=generator)
    x = torch.arange(num_nodes, dtype=torch.float32).unsqueeze(1)  # row v holds v
    return Data(x=x, edge_index=edge_index, num_nodes=num_nodes)


def batches(loader):
    return list(iter(loader))


def test_binary_batches_map_back_to_the_supervision_edges():
    data = small_data()
    sup = data.edge_index[:, :300]
    loader = LinkNeighborLoader(data, [4, 2], edge_label_index=sup, neg_sampling="binary",
                                batch_size=64, shuffle=True, seed=3)
    for batch in batches(loader):
        count = batch.input_id.numel()
        assert batch.edge_label_index.shape == (2, 2 * count)
        ends = batch.n_id[batch.edge_label_index]
        assert torch.equal(ends[:, :count], sup[:, batch.input_id])
        assert torch.equal(batch.edge_label, torch.cat([torch.ones(count), torch.zeros(count)]))
        assert torch.equal(batch.x[:, 0].long(), batch.n_id)  # features of n_id
        seeds = torch.unique(ends)
        assert torch.equal(batch.n_id[: seeds.numel()], seeds)  # sorted distinct end points first
        assert not hasattr(batch, "batch_size") or batch.batch_size is None


def test_given_labels_follow_pyg_plus_one_and_keep_dtype():
    data = small_data()
    sup = data.edge_index[:, :200]
    labels = torch.arange(200) % 2  # minimum 0: PyG adds 1, keeping 0 for negatives
    loader = LinkNeighborLoader(data, [3], edge_label_index=sup, edge_label=labels,
                                neg_sampling=NegativeSampling("binary", 0.5), batch_size=50)
    for batch in batches(loader):
        count = batch.input_id.numel()
        assert batch.edge_label.dtype == torch.int64
        assert batch.edge_label.numel() == count + int(np.ceil(0.5 * count))
        assert torch.equal(batch.edge_label[:count], labels[batch.input_id] + 1)
        assert int(batch.edge_label[count:].abs().sum()) == 0
    plain = next(iter(LinkNeighborLoader(data, [3], edge_label_index=sup, edge_label=labels,
                                         batch_size=50)))
    assert torch.equal(plain.edge_label, labels[plain.input_id])  # no negatives: as given


@pytest.mark.parametrize("amount", [1, 3])
def test_triplet_batches_index_sources_and_destinations(amount):
    data = small_data()
    sup = data.edge_index[:, :128]
    loader = LinkNeighborLoader(data, [3], edge_label_index=sup,
                                neg_sampling=dict(mode="triplet", amount=amount), batch_size=40,
                                reject_existing=True, seed=1)
    edges = set(map(tuple, data.edge_index.t().tolist()))
    for batch in batches(loader):
        count = batch.input_id.numel()
        assert torch.equal(batch.n_id[batch.src_index], sup[0, batch.input_id])
        assert torch.equal(batch.n_id[batch.dst_pos_index], sup[1, batch.input_id])
        assert batch.dst_neg_index.shape == ((count,) if amount == 1 else (count, amount))
        negatives = batch.n_id[batch.dst_neg_index.view(count, -1)]
        for source, row in zip(sup[0, batch.input_id].tolist(), negatives.tolist()):
            assert all((source, d) not in edges for d in row)
        assert not hasattr(batch, "edge_label_index") or batch.edge_label_index is None


def test_every_edge_once_per_epoch_and_identical_for_any_worker_count():
    data = small_data()
    runs = []
    for workers in (1, 2, 4):
        loader = LinkNeighborLoader(data, [5, 5], neg_sampling_ratio=2.0, batch_size=100,
                                    shuffle=True, num_workers=workers, seed=11)
        runs.append(batches(loader))
    for other in runs[1:]:
        assert len(other) == len(runs[0])
        for a, b in zip(runs[0], other):
            assert torch.equal(a.n_id, b.n_id) and torch.equal(a.edge_index, b.edge_index)
            assert torch.equal(a.edge_label_index, b.edge_label_index)
    seen = torch.cat([b.input_id for b in runs[0]])
    assert torch.equal(seen.sort().values, torch.arange(900))


def test_exclude_edges_leaves_no_positive_among_message_passing_edges():
    data = small_data(60, 900)
    sup = data.edge_index[:, :300]

    def leaks(loader, undirected):
        total = 0
        for batch in batches(loader):
            positives = set(map(tuple, sup[:, batch.input_id].t().tolist()))
            if undirected:
                positives |= {(d, s) for s, d in positives}
            used = batch.n_id[batch.edge_index].t().tolist()
            total += sum(tuple(e) in positives for e in used)
        return total

    base = dict(edge_label_index=sup, batch_size=64, seed=2, neg_sampling="binary")
    assert leaks(LinkNeighborLoader(data, [-1], **base), False) > 0  # the check can fail
    for undirected in (False, True):
        loader = LinkNeighborLoader(data, [-1], exclude_edges=True, undirected=undirected, **base)
        assert leaks(loader, undirected) == 0


def test_degree_negatives_from_the_stated_distribution():
    # Node v has in-degree v + 1; with power 1 negatives are drawn with P(v) ∝ v + 1.
    src = torch.cat([torch.arange(v + 1) for v in range(20)])
    dst = torch.cat([torch.full((v + 1,), v) for v in range(20)])
    data = Data(edge_index=torch.stack([src, dst]), num_nodes=20)
    loader = LinkNeighborLoader(data, [1], neg_sampling=NegativeSampling("binary", 20),
                                batch_size=70, neg_distribution="degree", neg_degree_power=1.0,
                                seed=4)
    counts = torch.zeros(20)
    for batch in batches(loader):
        count = batch.input_id.numel()
        ends = batch.n_id[batch.edge_label_index[:, count:]].reshape(-1)
        counts += torch.bincount(ends, minlength=20).float()
    expected = counts.sum() * (torch.arange(20) + 1.0) / 210.0
    chi_square = float(((counts - expected) ** 2 / expected).sum())
    assert chi_square < 43.8  # 19 degrees of freedom, 0.1% critical value; fixed seed
    uniform = counts.sum() / 20
    assert float(((counts - uniform) ** 2 / uniform).sum()) > 200  # far from uniform


def test_empty_edge_label_index_is_an_empty_epoch():
    data = small_data()
    loader = LinkNeighborLoader(data, [3], edge_label_index=torch.empty(2, 0, dtype=torch.long),
                                neg_sampling="binary", batch_size=8)
    assert len(loader) == 0 and batches(loader) == []


def test_calling_the_loader_gives_the_batch_of_those_supervision_edges():
    data = small_data()
    sup = data.edge_index[:, :300]
    loader = LinkNeighborLoader(data, [4, 2], edge_label_index=sup, neg_sampling="binary",
                                batch_size=64, shuffle=True, seed=3)
    positions = [5, 0, 299, 17]
    batch = loader(positions)
    assert torch.equal(batch.input_id, torch.tensor(positions))
    ends = batch.n_id[batch.edge_label_index]
    assert torch.equal(ends[:, :4], sup[:, positions])
    assert torch.equal(batch.edge_label, torch.cat([torch.ones(4), torch.zeros(4)]))
    assert torch.equal(batch.x[:, 0].long(), batch.n_id)
    assert torch.equal(loader(torch.tensor(positions)).n_id, batch.n_id)  # deterministic
    assert loader.edge_label_index.shape == (2, 300)  # the loader itself is unchanged
    assert len(batches(loader)) == 5
    with pytest.raises(volley.VolleyIndexError, match=r"index\[1\] = 300"):
        loader([0, 300])
    with pytest.raises(volley.VolleyTypeError, match="integer positions"):
        loader([0.5])


def test_a_data_of_nodes_only_samples_no_neighbors():
    sup = torch.tensor([[0, 3, 5], [1, 4, 9]])
    loader = LinkNeighborLoader(Data(num_nodes=10), [2], edge_label_index=sup, batch_size=3)
    (batch,) = batches(loader)
    assert batch.edge_index.shape == (2, 0)
    assert torch.equal(torch.sort(batch.n_id).values, torch.tensor([0, 1, 3, 4, 5, 9]))


@pytest.mark.parametrize(
    "kwargs, error, message",
    [
        (dict(edge_label_index=torch.tensor([[0, 1], [2, 120]])), volley.VolleyIndexError,
         "edge_label_index[1, 1] = 120"),
        (dict(edge_label=torch.zeros(5)), volley.VolleyValueError, "one label per supervision"),
        (dict(neg_sampling=dict(mode="binary", amount=-1)), volley.VolleyValueError, "got -1"),
        (dict(neg_sampling=dict(mode="binary", amount=float("nan"))), volley.VolleyValueError,
         "positive finite"),
        (dict(neg_sampling=dict(mode="triplet", amount=1.5)), volley.VolleyValueError, "1.5"),
        (dict(neg_sampling="triplet", edge_label=torch.ones(900)), volley.VolleyValueError,
         "must be None for triplet"),
        (dict(neg_sampling="ternary"), volley.VolleyValueError, "'ternary'"),
        (dict(edge_label_index=(("a", "to", "b"), torch.zeros(2, 1, dtype=torch.long))),
         volley.VolleyValueError, "names an edge type: that needs a HeteroData"),
        (dict(edge_label_time=torch.zeros(900, dtype=torch.long)), volley.VolleyValueError,
         "without time_attr"),
        (dict(time_attr="time"), volley.VolleyValueError, "needs edge_label_time"),
        (dict(time_attr="time", edge_label_time=torch.zeros(5, dtype=torch.long)),
         volley.VolleyValueError, "one entry per supervision edge (900)"),
        (dict(time_attr="time", edge_label_time=torch.zeros(900)), volley.VolleyValueError,
         "integer timestamps"),
        (dict(edge_label_index=torch.zeros(3, 4, dtype=torch.long)), volley.VolleyValueError,
         "[2, M]"),
    ],
)
def test_bad_arguments_raise_precise_errors(kwargs, error, message):
    data = small_data()
    data.time = torch.arange(120)
    with pytest.raises(error, match=None) as caught:
        LinkNeighborLoader(data, [3], **kwargs)
    assert message in str(caught.value)


def test_batches_have_pyg_link_neighbor_loaders_fields():
    # PyG 2.5's LinkNeighborLoader.filter_fn (homogeneous): these fields, these dtypes. (PyG's
    # own loader cannot run here without pyg-lib / torch-sparse, so the list is written out.)
    data = small_data()
    common = {"x", "edge_index", "n_id", "e_id", "input_id", "num_sampled_nodes",
              "num_sampled_edges"}
    wanted = {"binary": {"edge_label_index": torch.int64, "edge_label": torch.float32},
              "triplet": {"src_index": torch.int64, "dst_pos_index": torch.int64,
                          "dst_neg_index": torch.int64}}
    for neg, fields in wanted.items():
        batch = next(iter(LinkNeighborLoader(data, [3, 2], neg_sampling=neg, batch_size=16)))
        assert common | set(fields) <= set(batch.keys())
        for key, dtype in fields.items():
            assert batch[key].dtype == dtype, key
        assert batch.e_id.dtype == batch.n_id.dtype == batch.input_id.dtype == torch.int64


@trains_a_model
def test_pyg_link_prediction_loop_runs_unchanged_on_cora():
    from torch_geometric.nn import SAGEConv

    torch.manual_seed(0)
    cora = volley.datasets.cora()
    data = Data(x=cora.x.float(), edge_index=cora.graph.to_edge_index(), num_nodes=cora.num_nodes)
    conv1, conv2 = SAGEConv(data.num_features, 32), SAGEConv(32, 32)
    params = list(conv1.parameters()) + list(conv2.parameters())
    optimizer = torch.optim.Adam(params, lr=0.01)
    loader = LinkNeighborLoader(data, num_neighbors=[10, 5], neg_sampling_ratio=1.0,
                                batch_size=256, shuffle=True, seed=0)
    losses = []
    for step, batch in enumerate(loader):
        if step == 12:
            break
        optimizer.zero_grad()
        h = conv2(conv1(batch.x, batch.edge_index).relu(), batch.edge_index)
        src, dst = batch.edge_label_index
        score = (h[src] * h[dst]).sum(dim=-1)
        loss = torch.nn.functional.binary_cross_entropy_with_logits(score, batch.edge_label)
        loss.backward()
        optimizer.step()
        losses.append(float(loss))
    assert len(losses) == 12 and all(np.isfinite(losses))
    assert np.mean(losses[-4:]) < np.mean(losses[:4])


@pytest.mark.parametrize("kind", ["node", "edge"])
@pytest.mark.parametrize("strategy", ["uniform", "last"])
@pytest.mark.parametrize("neg", [None, "binary", "triplet"])
def test_temporal_link_batches_never_see_the_future(kind, strategy, neg):
    g = torch.Generator().manual_seed(1)
    n, m = 60, 900
    edge_index = torch.randint(0, n, (2, m), generator=g)  # a multigraph
    node_time = torch.randint(0, 100, (n,), generator=g)
    edge_time = torch.randint(0, 100, (m,), generator=g)
    sup, label_time = edge_index[:, :200], torch.randint(0, 100, (200,), generator=g)
    data = Data(edge_index=edge_index, num_nodes=n, x=torch.arange(n).float().unsqueeze(1))
    data.time = node_time if kind == "node" else edge_time
    checked = 0
    for batch_size in (1, 64):
        loader = LinkNeighborLoader(data, [3, 2], edge_label_index=sup, edge_label_time=label_time,
                                    time_attr="time", temporal_strategy=strategy,
                                    neg_sampling=neg, batch_size=batch_size, shuffle=True, seed=3)
        for batch in loader:
            count = batch.input_id.numel()
            seed_time = batch.seed_time if neg == "triplet" else batch.edge_label_time
            assert torch.equal(seed_time[:count], label_time[batch.input_id])
            tree_time = label_time[batch.input_id][batch.batch]  # each node's supervision edge
            if kind == "edge":
                assert torch.all(edge_time[batch.e_id] <= tree_time[batch.edge_index[1]])
            else:
                seeds = batch.num_sampled_nodes[0]
                assert torch.all(node_time[batch.n_id[seeds:]] <= tree_time[seeds:])
            assert torch.equal(batch.x[:, 0].long(), batch.n_id)
            checked += 1
    assert checked == 200 + 4


def test_disjoint_link_batches_have_pyg_layout():
    data = small_data()
    sup = data.edge_index[:, :10]
    loader = LinkNeighborLoader(data, [2], edge_label_index=sup, neg_sampling=dict(
        mode="triplet", amount=2), disjoint=True, batch_size=4)
    batch = next(iter(loader))
    count = batch.input_id.numel()
    assert torch.equal(batch.src_index, torch.arange(count))
    assert torch.equal(batch.dst_pos_index, torch.arange(count, 2 * count))
    # PyG: the k-th negatives of every source follow each other; dst_neg_index[i, k] = 2B + kB + i
    expected = torch.arange(2 * count, 4 * count).view(2, count).t()
    assert torch.equal(batch.dst_neg_index, expected)
    assert torch.equal(batch.n_id[batch.src_index], sup[0, batch.input_id])
    assert torch.equal(batch.n_id[batch.dst_pos_index], sup[1, batch.input_id])
    assert torch.equal(batch.batch[: 4 * count], torch.arange(4 * count) % count)


@pytest.mark.parametrize("neg, amount", [("triplet", 1), ("triplet", 2), ("binary", 1),
                                         ("binary", 2)])
def test_temporal_negatives_are_no_later_than_their_edge(neg, amount):
    """PyG's test_homo_link_neighbor_loader_triplet[*-True-True] check, for both modes: under
    node time no node of a supervision edge's trees, its negatives included, is later than the
    edge's time (PyG draws negatives among the nodes no later than it). Binary with whole
    amounts only: with 1.5, PyG's batch (seed position mod B) of a destination tree is not the
    edge whose time it was sampled with (position in the destination list mod B)."""
    g = torch.Generator().manual_seed(2)
    data = Data(x=torch.arange(100), edge_index=torch.randint(0, 100, (2, 400), generator=g))
    data.time = torch.arange(100)
    sup = torch.randint(0, 100, (2, 500), generator=g)
    label_time = torch.max(data.time[sup[0]], data.time[sup[1]])  # some edges allow few nodes
    loader = LinkNeighborLoader(data, [-1, -1], edge_label_index=sup, edge_label_time=label_time,
                                time_attr="time", neg_sampling=dict(mode=neg, amount=amount),
                                disjoint=True, batch_size=20, shuffle=True, seed=5)
    negatives = []
    for batch in loader:
        count = batch.input_id.numel()
        tree_time = label_time[batch.input_id]
        assert torch.equal(batch.time, batch.n_id)  # node v's time is v
        assert torch.all(batch.time <= tree_time[batch.batch])  # PyG's check, node by node
        if neg == "triplet":
            assert torch.equal(batch.seed_time, tree_time)
            seeds = (2 + amount) * count
            assert torch.equal(batch.batch[:seeds], torch.arange(seeds) % count)
            assert torch.equal(batch.dst_neg_index.reshape(count, -1).t().reshape(-1),
                               torch.arange(2 * count, seeds))
            negatives.append(batch.n_id[batch.dst_neg_index.reshape(-1)])
        else:
            pairs = batch.edge_label_index.size(1)
            assert torch.equal(batch.edge_label_time, tree_time[torch.arange(pairs) % count])
            negatives.append(batch.n_id[batch.edge_label_index[:, count:].reshape(-1)])
    negatives = torch.cat(negatives)
    assert negatives.unique().numel() > 50  # drawn among the early nodes, not one fallback
