"""Discovery through torch.distributed's key-value store: servers register their part's address
(volley.dist.serve(..., rendezvous=...)) and loaders, DistGraph and server-client servers read
every part's address from it — both topologies give the local loader's batches with no address
list; a part that never registers, two datasets under one name and bad arguments are errors."""

from __future__ import annotations

import datetime
import threading
import time

import pytest

import volley
from volley.loader import NeighborLoader
from volley.partition import split_ids

from conftest import as_numpy
from test_dist import assert_same_batches, parts_dir, whole  # noqa: F401 (fixtures)

if not volley._volley._has_dist:
    pytest.skip("built without the distributed service (gRPC)", allow_module_level=True)

import volley.dist as vd  # noqa: E402

torch = pytest.importorskip("torch")
dist = torch.distributed


@pytest.fixture
def store():
    """A c10d TCPStore on loopback (what torchrun's rendezvous serves) and its 'host:port'."""
    master = dist.TCPStore("127.0.0.1", 0, is_master=True, wait_for_workers=False,
                           timeout=datetime.timedelta(seconds=30))
    yield master, f"127.0.0.1:{master.port}"


def _expected(parts_dir, whole):  # noqa: F811
    train = as_numpy(split_ids(parts_dir, "train"))
    options = dict(batch_size=16, input_nodes=train, shuffle=True, seed=3)
    return NeighborLoader(whole, [5, 3], num_workers=2, **options), options


def test_worker_topology_needs_no_address_list(parts_dir, whole, store):  # noqa: F811
    _, endpoint = store
    servers = [vd.serve(parts_dir, p, rendezvous=endpoint, service="worker") for p in (0, 1)]
    try:
        expected, options = _expected(parts_dir, whole)
        loader = vd.DistNeighborLoader(None, [5, 3], num_workers=3, local=servers[0],
                                       rendezvous=endpoint, service="worker", **options)
        assert_same_batches(expected, loader, epochs=1)
        graph = vd.DistGraph(None, rendezvous=endpoint, service="worker")
        assert graph.addresses == [s.address for s in servers]
    finally:
        for server in servers:
            server.shutdown(0.1)


def test_replicas_register_beside_each_other(parts_dir, whole, store):  # noqa: F811
    # Two servers of part 1 registered as replicas: the loader finds both ("a|b") and goes on
    # with the same batches when the first is shut down mid-epoch.
    _, endpoint = store
    servers = [vd.serve(parts_dir, 0, rendezvous=endpoint, service="replicas")]
    servers += [vd.serve(parts_dir, 1, rendezvous=endpoint, service="replicas", replica=True)
                for _ in range(2)]
    try:
        graph = vd.DistGraph(None, rendezvous=endpoint, service="replicas")
        assert graph.addresses == [servers[0].address,
                                   f"{servers[1].address}|{servers[2].address}"]
        expected, options = _expected(parts_dir, whole)
        loader = vd.DistNeighborLoader(None, [5, 3], num_workers=2, local=servers[0],
                                       rendezvous=endpoint, service="replicas", deadline=5,
                                       **options)
        batches = []
        for batch in loader:
            batches.append(batch)
            if len(batches) == 2:
                servers[1].shutdown(0)
        want = list(expected)
        assert len(batches) == len(want)
        for a, b in zip(batches, want):
            assert torch.equal(a.n_id, b.n_id) and torch.equal(a.edge_index, b.edge_index)
    finally:
        for server in servers:
            server.shutdown(0.1)


def test_server_client_servers_find_their_peers(parts_dir, whole, store):  # noqa: F811
    _, endpoint = store
    servers = [None, None]

    def start(part):  # each waits for the other's registration: start them together
        servers[part] = vd.serve(parts_dir, part, rendezvous=endpoint, service="streams",
                                 peers="rendezvous", peer_deadline=20)

    threads = [threading.Thread(target=start, args=(p,)) for p in (0, 1)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    try:
        assert all(servers)
        expected, options = _expected(parts_dir, whole)
        loader = vd.DistNeighborLoader(None, [5, 3], num_workers=3, topology="server-client",
                                       rendezvous=endpoint, service="streams", **options)
        assert loader.server == servers[0].address  # rank 0 of 1: part 0's server
        assert_same_batches(expected, loader, epochs=1)
    finally:
        for server in servers:
            if server is not None:
                server.shutdown(0.1)


def test_env_rendezvous_reads_master_addr(parts_dir, store, monkeypatch):  # noqa: F811
    master, endpoint = store
    monkeypatch.setenv("MASTER_ADDR", "127.0.0.1")
    monkeypatch.setenv("MASTER_PORT", str(master.port))
    server = vd.serve(parts_dir, 0, listen="0.0.0.0:0", rendezvous="env", service="env")
    try:
        registered = master.get("volley/env/part/0").decode()
        assert registered.endswith(f":{server.port}") and not registered.startswith("0.0.0.0")
    finally:
        server.shutdown(0.1)


def test_missing_parts_and_mixed_datasets_are_errors(parts_dir, store, tmp_path,
                                                     cora_dir):  # noqa: F811
    master, endpoint = store
    server = vd.serve(parts_dir, 0, rendezvous=endpoint, service="half")
    try:
        started = time.monotonic()
        with pytest.raises(volley.VolleyConnectionError, match="part 1 of 2 did not register"):
            vd.DistGraph(None, rendezvous=endpoint, service="half", connect_timeout=1)
        assert time.monotonic() - started < 5
        with pytest.raises(volley.VolleyConnectionError, match="no server registered under"):
            vd.DistGraph(None, rendezvous=endpoint, service="nobody", connect_timeout=1)
        other = str(tmp_path / "other-2")
        volley.partition(cora_dir, other, 2, method="random", seed=9)
        stranger = vd.serve(other, 1, rendezvous=endpoint, service="half")
        with pytest.raises(volley.VolleyValueError, match="parts of two datasets"):
            vd.DistGraph(None, rendezvous=endpoint, service="half")
        stranger.shutdown(0.1)
        with pytest.raises(volley.VolleyValueError, match="addresses or rendezvous=, not both"):
            vd.DistNeighborLoader([server.address], [2], local=server, rendezvous=endpoint)
        with pytest.raises(volley.VolleyValueError, match="'host:port', 'env' or a"):
            vd.DistGraph(None, rendezvous="nowhere")
        with pytest.raises(volley.VolleyValueError, match="peers='rendezvous' needs"):
            vd.serve(parts_dir, 1, peers="rendezvous")
    finally:
        server.shutdown(0.1)


def test_heterogeneous_partitions_register_too(tmp_path, store):
    pytest.importorskip("torch_geometric")
    from test_dist_hetero import _dataset

    _, endpoint = store
    parts = str(tmp_path / "typed-2")
    volley.partition(_dataset(), parts, 2, method="random")
    servers = [vd.serve(parts, p, rendezvous=endpoint, service="typed") for p in (0, 1)]
    try:
        options = dict(batch_size=32, input_nodes=("paper", torch.arange(100)), shuffle=True,
                       seed=1, local=servers[0])
        found = vd.DistNeighborLoader(None, [3, 2], rendezvous=endpoint, service="typed",
                                      **options)
        listed = vd.DistNeighborLoader([s.address for s in servers], [3, 2], **options)
        pairs = list(zip(found, listed))
        assert len(pairs) == 4
        for a, b in pairs:
            assert torch.equal(a["paper"].n_id, b["paper"].n_id)
            assert torch.equal(a["author"].n_id, b["author"].n_id)
    finally:
        for server in servers:
            server.shutdown(0.1)
