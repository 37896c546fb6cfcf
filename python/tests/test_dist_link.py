"""volley.dist.DistLinkNeighborLoader: link prediction over served partitions equals
volley.loader.LinkNeighborLoader over the whole renumbered graph (see test_dist.py)."""

from __future__ import annotations

import numpy as np
import pytest

import volley
from volley.loader import LinkNeighborLoader
from volley.partition import load_partition

from conftest import as_numpy

if not volley._volley._has_dist:
    pytest.skip("built without the distributed service (gRPC)", allow_module_level=True)

import volley.dist as vd  # noqa: E402

torch = pytest.importorskip("torch")


@pytest.fixture(scope="module")
def parts_dir(tmp_path_factory, cora_dir):
    out = tmp_path_factory.mktemp("cora-link-2")
    volley.partition(cora_dir, out, 2, method="random", seed=0)
    return str(out)


@pytest.fixture(scope="module")
def whole(parts_dir):
    """The whole renumbered graph, features and labels: the partitions concatenated."""
    indptr, indices, edge_ids, xs, ys = [np.zeros(1, dtype=np.int64)], [], [], [], []
    for p in range(2):
        ds = load_partition(parts_dir, p).dataset
        g = ds.graph
        indptr.append(as_numpy(g.indptr)[1:].astype(np.int64) + indptr[-1][-1])
        indices.append(as_numpy(g.indices).astype(np.int64))
        edge_ids.append(as_numpy(g.edge_ids).astype(np.int64))
        xs.append(as_numpy(ds.x))
        ys.append(as_numpy(ds.y))
    graph = volley.Graph.from_csr(
        np.concatenate(indptr), np.concatenate(indices), np.concatenate(edge_ids)
    )
    return volley.Dataset(graph, np.concatenate(xs), np.concatenate(ys), name="cora-renumbered")


@pytest.fixture(scope="module")
def servers(parts_dir):
    s0, s1 = vd.serve(parts_dir, 0), vd.serve(parts_dir, 1)
    yield dict(s0=s0, addresses=[s0.address, s1.address])
    for server in (s0, s1):
        server.shutdown(0.1)


def _supervision(whole, count=200):
    ei = as_numpy(whole.graph.to_edge_index())
    return np.ascontiguousarray(ei[:, :: ei.shape[1] // count][:, :count])


@pytest.mark.timeout(120)
@pytest.mark.parametrize("neg_sampling", ["binary", "triplet"])
@pytest.mark.parametrize("local", ["s0", None])
def test_link_batches_equal_single_machine(parts_dir, whole, servers, neg_sampling, local):
    edges = _supervision(whole)
    options = dict(edge_label_index=torch.from_numpy(edges), neg_sampling=neg_sampling,
                   batch_size=32, shuffle=True, seed=4, reject_existing=True,
                   neg_distribution="degree", exclude_edges=True)
    expected = LinkNeighborLoader(whole, [4, 2], num_workers=2, **options)
    actual = vd.DistLinkNeighborLoader(
        servers["addresses"], [4, 2], num_workers=3,
        local=servers[local] if local else None, **options
    )
    assert len(actual) == len(expected) == 7
    assert isinstance(actual, torch.utils.data.DataLoader) and len(actual.dataset) == len(edges[0])
    fields = ["n_id", "e_id", "edge_index", "x", "y", "input_id"]
    fields += (["edge_label_index", "edge_label"] if neg_sampling == "binary"
               else ["src_index", "dst_pos_index", "dst_neg_index"])
    for _ in range(2):  # two epochs
        pairs = list(zip(actual, expected))
        assert len(pairs) == 7
        for a, b in pairs:
            for field in fields:
                assert torch.equal(getattr(a, field), getattr(b, field)), field
    assert "DistLinkNeighborLoader" in repr(actual)


@pytest.mark.timeout(120)
def test_disjoint_link_batches_equal_single_machine(whole, servers):
    edges = _supervision(whole, 64)
    options = dict(edge_label_index=torch.from_numpy(edges), neg_sampling="binary",
                   batch_size=16, shuffle=True, seed=7, disjoint=True)
    expected = LinkNeighborLoader(whole, [3, 2], num_workers=2, **options)
    actual = vd.DistLinkNeighborLoader(servers["addresses"], [3, 2], num_workers=2, **options)
    pairs = list(zip(actual, expected))
    assert len(pairs) == len(expected) == 4
    for a, b in pairs:
        for field in ["n_id", "e_id", "edge_index", "batch", "x", "edge_label_index",
                      "edge_label", "input_id"]:
            assert torch.equal(getattr(a, field), getattr(b, field)), field


def test_argument_errors(servers):
    with pytest.raises(volley.VolleyValueError, match="edge_label_index is needed"):
        vd.DistLinkNeighborLoader(servers["addresses"], [2])
    with pytest.raises(volley.VolleyValueError, match="addresses must list"):
        vd.DistLinkNeighborLoader([], [2], edge_label_index=np.zeros((2, 1), dtype=np.int64))
    with pytest.raises(volley.VolleyIndexError):
        loader = vd.DistLinkNeighborLoader(
            servers["addresses"], [2], neg_sampling="binary", reject_existing=True,
            edge_label_index=np.array([[0], [10**6]], dtype=np.int64))
        next(iter(loader))
