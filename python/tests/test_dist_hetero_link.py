"""volley.dist.DistLinkNeighborLoader over heterogeneous partitions (issues 14 and 15): with
edge_label_index=(edge_type, index) in new ids it yields the local heterogeneous
LinkNeighborLoader's HeteroData batches over the whole renumbered graph, bit for bit (binary,
triplet and no negatives; ids, edges, edge ids, counts, features, labels, label indices), the
supervision edges being the original dataset's mapped through the partition book. Negatives lie
in their type's range, every supervision edge comes once per epoch, and errors name the type and
the value."""

from __future__ import annotations

import numpy as np
import pytest

import volley
from volley.loader import LinkNeighborLoader
from volley.partition import load_node_map, to_new_ids

from conftest import as_numpy
from test_dist_hetero import AFFILIATED, CITES, WRITES, _dataset, _whole

if not volley._volley._has_dist:
    pytest.skip("built without the distributed service (gRPC)", allow_module_level=True)

import volley.dist as vd  # noqa: E402
from volley._dist_hetero_link import DistHeteroLinkNeighborLoader  # noqa: E402

torch = pytest.importorskip("torch")
pytest.importorskip("torch_geometric")

HOSTS = ("institution", "hosts", "paper")  # supervision only: no message-passing edges


@pytest.fixture(scope="module", params=[(2, "random"), (3, "metis")], ids=["2-random", "3-metis"])
def served(request, tmp_path_factory):
    num_parts, method = request.param
    parts_dir = str(tmp_path_factory.mktemp("hetero-link") / f"typed-{num_parts}")
    original = _dataset()
    volley.partition(original, parts_dir, num_parts, method=method)
    servers = [vd.serve(parts_dir, p) for p in range(num_parts)]
    yield parts_dir, servers, _whole(parts_dir, num_parts), original
    for server in servers:
        server.shutdown()


def _new_ids(parts_dir: str, edge_type: tuple, old: np.ndarray) -> np.ndarray:
    """Supervision edges of the original dataset in the partitioned numbering: each row through
    its node type's map (the partition book's old id -> new id)."""
    rows = [to_new_ids(load_node_map(parts_dir, node_type=t), r)
            for t, r in ((edge_type[0], old[0]), (edge_type[2], old[1]))]
    return np.stack([as_numpy(r) for r in rows]).astype(np.int64)


def _original_edges(original, edge_type: tuple, count: int) -> np.ndarray:
    edge_index = as_numpy(original.graph.edge_index(edge_type)).astype(np.int64)
    return np.ascontiguousarray(edge_index[:, ::max(1, edge_index.shape[1] // count)][:, :count])


def _expect_same(got, want, where: str) -> None:
    """Every store of ``want`` in ``got`` with the same keys and equal values (but
    ``num_nodes``, which the local loader sets only because ``_whole`` sets it)."""
    assert sorted(got.node_types) == sorted(want.node_types), where
    assert sorted(got.edge_types) == sorted(want.edge_types), where
    for key in list(want.node_types) + list(want.edge_types):
        mine, theirs = got[key], want[key]
        names = sorted(set(theirs.keys()) - {"num_nodes"})
        assert sorted(set(mine.keys()) - {"num_nodes"}) == names, (where, key)
        for name in names:
            a, b = mine[name], theirs[name]
            if isinstance(b, torch.Tensor):
                a, b = torch.as_tensor(a), torch.as_tensor(b)
                assert a.dtype == b.dtype and torch.equal(a, b), (where, key, name)
            else:
                assert a == b, (where, key, name)


CASES = {
    "binary-writes": dict(edge_type=WRITES, fanouts=[3, 2], neg_sampling="binary",
                          neg_sampling_ratio=2.0),
    "binary-cites-per-type": dict(edge_type=CITES, neg_sampling="binary", labels=True, fanouts={
        WRITES: [-1, 2], CITES: [3, 0], ("paper", "rev_writes", "author"): [2, 2],
        AFFILIATED: [1, 1]}),
    "triplet-affiliated": dict(edge_type=AFFILIATED, fanouts=[2, 2],
                               neg_sampling=dict(mode="triplet", amount=3)),
    "none-writes-labels": dict(edge_type=WRITES, fanouts=[2], neg_sampling=None, labels=True),
    "disjoint-exclude-undirected": dict(edge_type=WRITES, fanouts=[2, 2], neg_sampling="binary",
                                        disjoint=True, exclude_edges=True, undirected=True),
    "rank-1-of-2-triplet": dict(edge_type=WRITES, fanouts=[2], rank=1, world_size=2,
                                neg_sampling=dict(mode="triplet", amount=2)),
}


@pytest.mark.parametrize("case", list(CASES), ids=list(CASES))
def test_batches_equal_the_local_loader(served, case):
    parts_dir, servers, whole, original = served
    options = dict(CASES[case])
    edge_type, fanouts = options.pop("edge_type"), options.pop("fanouts")
    index = _new_ids(parts_dir, edge_type, _original_edges(original, edge_type, 60))
    # The mapped edges are edges of the renumbered graph.
    whole_edges = set(map(tuple, whole[edge_type].edge_index.t().tolist()))
    assert set(map(tuple, index.T.tolist())) <= whole_edges
    if options.pop("labels", False):
        options["edge_label"] = torch.from_numpy(np.random.default_rng(1).integers(0, 2, 60))
    options.update(batch_size=16, shuffle=True, seed=13, num_workers=2)
    local = LinkNeighborLoader(whole, fanouts, edge_label_index=(edge_type, index), **options)
    remote = vd.DistLinkNeighborLoader([s.address for s in servers], fanouts,
                                       edge_label_index=(edge_type, torch.from_numpy(index)),
                                       **options)
    assert isinstance(remote, DistHeteroLinkNeighborLoader)
    assert isinstance(remote, vd.DistLinkNeighborLoader)  # one class per PyG class
    assert isinstance(remote, torch.utils.data.DataLoader) and len(remote.dataset) == 60
    assert len(remote) == len(local) == (2 if "world_size" in options else 4)
    assert repr(remote) == "LinkNeighborLoader()"
    assert f"edge_type={edge_type}, edges=60" in remote.describe()
    for epoch in range(2):
        seen = []
        for number, (got, want) in enumerate(zip(remote, local)):
            _expect_same(got, want, f"{case} epoch {epoch} batch {number}")
            seen.append(got[edge_type].input_id)
        share = sorted(torch.cat(seen).tolist())  # each edge once per epoch (the rank's share)
        assert share == (list(range(60)) if "world_size" not in options else
                         sorted(local.rank_positions(epoch).tolist())), epoch


def test_negatives_are_in_range_and_of_their_types(served):
    parts_dir, servers, whole, original = served
    counts = {t: whole[t].num_nodes for t in whole.node_types}
    addresses = [s.address for s in servers]
    index = _new_ids(parts_dir, AFFILIATED, _original_edges(original, AFFILIATED, 50))
    binary = vd.DistLinkNeighborLoader(addresses, [2, 1], edge_label_index=(AFFILIATED, index),
                                       neg_sampling_ratio=3.0, batch_size=10, seed=2)
    for batch in binary:
        store, size = batch[AFFILIATED], batch[AFFILIATED].input_id.numel()
        authors = batch["author"].n_id[store.edge_label_index[0]]
        institutions = batch["institution"].n_id[store.edge_label_index[1]]
        assert store.edge_label_index.shape == (2, 4 * size)
        assert torch.equal(authors[:size], torch.from_numpy(index[0][store.input_id.numpy()]))
        assert torch.equal(institutions[:size],
                           torch.from_numpy(index[1][store.input_id.numpy()]))
        assert 0 <= int(authors.min()) and int(authors.max()) < counts["author"]
        assert 0 <= int(institutions.min()) and int(institutions.max()) < counts["institution"]
        assert store.edge_label.tolist() == [1.0] * size + [0.0] * (3 * size)
    # Triplet with weights over the destination type: only the weighted institutions.
    weight = torch.zeros(counts["institution"])
    weight[[1, 4]] = 1.0
    triplet = vd.DistLinkNeighborLoader(addresses, [2], edge_label_index=(AFFILIATED, index),
                                        neg_sampling=dict(mode="triplet", amount=2,
                                                          weight=weight),
                                        batch_size=10, seed=2)
    local = LinkNeighborLoader(whole, [2], edge_label_index=(AFFILIATED, index), batch_size=10,
                               neg_sampling=dict(mode="triplet", amount=2, weight=weight), seed=2)
    for number, (batch, want) in enumerate(zip(triplet, local)):
        _expect_same(batch, want, f"weighted triplet batch {number}")
        negatives = batch["institution"].n_id[batch["institution"].dst_neg_index]
        assert negatives.shape == (batch[AFFILIATED].input_id.numel(), 2)
        assert set(negatives.flatten().tolist()) <= {1, 4}
        assert "edge_label_index" not in batch[AFFILIATED]


def test_supervision_without_message_passing_edges_and_no_hops(served):
    _, servers, whole, _ = served
    pairs = np.stack([np.random.default_rng(3).integers(0, whole[t].num_nodes, 30)
                      for t in ("institution", "paper")])
    for fanouts in ([2, 2], []):
        options = dict(edge_label_index=(HOSTS, pairs), batch_size=8, seed=5,
                       neg_sampling="binary")
        remote = vd.DistLinkNeighborLoader([s.address for s in servers], fanouts, **options)
        local = LinkNeighborLoader(whole, fanouts, **options)
        for number, (got, want) in enumerate(zip(remote, local)):
            _expect_same(got, want, f"fanouts {fanouts} batch {number}")


def test_local_part_is_sampled_in_this_process(served):
    parts_dir, servers, whole, original = served
    index = _new_ids(parts_dir, WRITES, _original_edges(original, WRITES, 40))
    options = dict(edge_label_index=(WRITES, index), batch_size=20, neg_sampling="binary",
                   seed=8)
    local = LinkNeighborLoader(whole, [3, 2], **options)
    addresses = [s.address for s in servers]
    in_process = vd.DistLinkNeighborLoader([""] + addresses[1:], [3, 2],
                                           local=(parts_dir, 0), **options)
    for number, (got, want) in enumerate(zip(in_process, local)):
        _expect_same(got, want, f"local=(dir, 0) batch {number}")
    before = servers[1].stats()["requests"]
    shared = vd.DistLinkNeighborLoader(addresses, [3, 2], local=servers[1], **options)
    local.set_epoch(0)
    for number, (got, want) in enumerate(zip(shared, local)):
        _expect_same(got, want, f"local=server batch {number}")
    assert servers[1].stats()["requests"] == before  # its own part was never called over RPC


def test_errors_name_the_type_and_the_value(served):
    _, servers, whole, _ = served
    addresses = [s.address for s in servers]
    papers, authors = whole["paper"].num_nodes, whole["author"].num_nodes

    def loader(edge_label_index, **options):
        return vd.DistLinkNeighborLoader(addresses, [2], edge_label_index=edge_label_index,
                                         **options)

    with pytest.raises(volley.VolleyIndexError,
                       match=f"edge_label_index\\[1, 1\\] = {papers} is out of range for node "
                             f"type 'paper' with {papers} nodes"):
        loader((WRITES, [[0, 1], [0, papers]]))
    with pytest.raises(volley.VolleyIndexError,
                       match="edge_label_index\\[0, 0\\] = -1 is out of range for node type "
                             "'author'"):
        loader((WRITES, [[-1, 1], [0, 2]]))
    with pytest.raises(volley.VolleyIndexError, match=f"= {authors} is out of range for node type 'author'"):
        loader((("paper", "rev_writes", "author"), [[0], [authors]]))
    with pytest.raises(volley.VolleyValueError, match="unknown node type 'venue'"):
        loader((("paper", "published_in", "venue"), [[0], [0]]))
    with pytest.raises(volley.VolleyValueError,  # no such pair: PyG's ('paper', 'to', 'venue')
                       match="edge type \\('paper', 'to', 'venue'\\): unknown node type 'venue'"):
        loader((("paper", "venue"), [[0], [0]]))
    with pytest.raises(volley.VolleyValueError, match="must be given"):
        loader((WRITES, None))
    with pytest.raises(volley.VolleyValueError, match="must be given"):
        loader(WRITES)
    with pytest.raises(volley.VolleyValueError, match="one label per supervision edge \\(2\\)"):
        loader((WRITES, [[0, 1], [0, 1]]), edge_label=torch.ones(3))
    with pytest.raises(volley.VolleyValueError, match="triplet"):
        loader((WRITES, [[0, 1], [0, 1]]), edge_label=torch.ones(2), neg_sampling="triplet")
    with pytest.raises(volley.VolleyValueError, match=f"weight must be {papers}"):
        loader((WRITES, [[0], [0]]), neg_sampling=dict(mode="triplet", weight=torch.ones(5)))
    with pytest.raises(volley.VolleyValueError, match="shape \\[2, M\\]"):
        loader((WRITES, [0, 1, 2]))
    # A plain index over heterogeneous servers: the homogeneous client says what to do.
    with pytest.raises(volley.VolleyValueError, match="heterogeneous"):
        loader(np.zeros((2, 3), dtype=np.int64))


def test_what_is_not_served_says_so(served):
    _, servers, _, _ = served
    addresses = [s.address for s in servers]
    refused = {
        "temporal link sampling": dict(time_attr="time", edge_label_time=[1]),
        "topology='server-client'": dict(topology="server-client"),
        "subgraph_type='induced'": dict(subgraph_type="induced"),
        "reject_existing=True": dict(reject_existing=True),
        "neg_distribution='degree'": dict(neg_distribution="degree"),
    }
    for what, options in refused.items():
        with pytest.raises(volley.VolleyNotImplementedError,
                           match=f"{what}.*link prediction over (the service|heterogeneous "
                                 "partitions)"):
            vd.DistLinkNeighborLoader(addresses, [2], edge_label_index=(WRITES, [[0], [0]]),
                                      **options)
    # What neither kind serves is refused with one message for both (one signature, one check).
    for what in ("temporal link sampling", "topology='server-client'", "subgraph_type='induced'"):
        messages = []
        for index in ((WRITES, [[0], [0]]), np.zeros((2, 1), dtype=np.int64)):
            with pytest.raises(volley.VolleyNotImplementedError) as refusal:
                vd.DistLinkNeighborLoader(addresses, [2], edge_label_index=index,
                                          **refused[what])
            messages.append(str(refusal.value))
        assert messages[0] == messages[1] and what in messages[0]
    with pytest.raises(TypeError, match="'input_nodes'"):
        vd.DistLinkNeighborLoader(addresses, [2], edge_label_index=(WRITES, [[0], [0]]),
                                  input_nodes=("paper", [0]))


def test_a_dead_server_is_an_error_not_a_hang(served):
    parts_dir, servers, _, _ = served
    fresh = [vd.serve(parts_dir, p) for p in range(len(servers))]
    try:
        loader = vd.DistLinkNeighborLoader([s.address for s in fresh], [2, 2], batch_size=10,
                                           edge_label_index=(WRITES, [[0, 1, 2], [0, 1, 2]]),
                                           neg_sampling="binary", deadline=5, connect_timeout=2)
        last = len(fresh) - 1
        fresh[last].shutdown()
        with pytest.raises((ConnectionError, TimeoutError), match=f"part {last}"):
            list(loader)
    finally:
        for server in fresh:
            server.shutdown()


def test_a_pyg_link_prediction_step_runs_on_the_batches(served):
    """to_hetero GraphSAGE + dot product, one optimizer step per batch: the batches are what a
    PyG heterogeneous link-prediction loop expects (x where served, edge_label_index, labels)."""
    nn = pytest.importorskip("torch_geometric.nn")
    parts_dir, servers, whole, original = served
    index = _new_ids(parts_dir, WRITES, _original_edges(original, WRITES, 64))
    loader = vd.DistLinkNeighborLoader([s.address for s in servers], [3, 2],
                                       edge_label_index=(WRITES, index), neg_sampling="binary",
                                       batch_size=32, shuffle=True, seed=0)
    torch.manual_seed(0)

    class Encoder(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.first = nn.SAGEConv((-1, -1), 8)
            self.second = nn.SAGEConv((-1, -1), 8)

        def forward(self, x, edge_index):
            return self.second(self.first(x, edge_index).relu(), edge_index)

    metadata = (list(whole.node_types), list(whole.edge_types))
    model = nn.to_hetero(Encoder(), metadata)
    embed = torch.nn.Embedding(whole["institution"].num_nodes, 4)
    optimizer = torch.optim.Adam(list(model.parameters()) + list(embed.parameters()), lr=0.01)
    steps = 0
    for batch in loader:
        x = {"paper": batch["paper"].x, "author": batch["author"].x,
             "institution": embed(batch["institution"].n_id)}
        out = model(x, {t: batch[t].edge_index for t in batch.edge_types})
        label_index = batch[WRITES].edge_label_index
        score = (out["author"][label_index[0]] * out["paper"][label_index[1]]).sum(-1)
        loss = torch.nn.functional.binary_cross_entropy_with_logits(score,
                                                                    batch[WRITES].edge_label)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        assert torch.isfinite(loss)
        steps += 1
    assert steps == 2
