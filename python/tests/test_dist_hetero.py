"""volley.dist over heterogeneous partitions : a heterogeneous dataset partitioned in 2
and 3 parts, one in-process server per part (volley.dist.serve); DistNeighborLoader with
input_nodes=(node_type, ids) yields the local heterogeneous loader's HeteroData batches over the
whole renumbered graph (the parts concatenated), bit for bit: ids, edges, edge ids, per-hop counts,
features and labels per node type. Errors name the type; what is not served says so. `volley
serve` of a heterogeneous directory answers the same client."""

from __future__ import annotations

import os
import subprocess

import numpy as np
import pytest

import volley
from volley.loader import NeighborLoader

from conftest import as_numpy
from test_dist import spawn  # noqa: F401 (the fixture: servers in child processes)

if not volley._volley._has_dist:
    pytest.skip("built without the distributed service (gRPC)", allow_module_level=True)

import volley.dist as vd  # noqa: E402

torch = pytest.importorskip("torch")
pytest.importorskip("torch_geometric")

WRITES = ("author", "writes", "paper")
CITES = ("paper", "cites", "paper")
REV = ("paper", "rev_writes", "author")
AFFILIATED = ("author", "affiliated_with", "institution")


def _dataset(seed: int = 0, papers: int = 300, authors: int = 200,
             institutions: int = 9) -> volley.HeteroDataset:
    """Random typed edges (a reverse type included); features on papers and authors, labels on
    papers."""
    rng = np.random.default_rng(seed)
    counts = {"paper": papers, "author": authors, "institution": institutions}

    def edges(src: str, dst: str, count: int) -> np.ndarray:
        return np.stack([rng.integers(0, counts[src], count), rng.integers(0, counts[dst], count)])

    writes = edges("author", "paper", 1200)
    graph = volley.HeteroGraph.from_edge_index_dict(
        {WRITES: writes, CITES: edges("paper", "paper", 900), REV: writes[::-1].copy(),
         AFFILIATED: edges("author", "institution", 250)}, counts)
    x = {"paper": rng.normal(size=(papers, 5)).astype(np.float32),
         "author": rng.normal(size=(authors, 3)).astype(np.float32)}
    return volley.HeteroDataset(graph, x, {"paper": rng.integers(0, 4, papers)}, name="typed")


def _whole(parts_dir: str, num_parts: int):
    """The whole renumbered graph as a PyG HeteroData: per edge type the parts' rows (owned
    destinations, new ids) with their new source ids, placed at their edge ids (so the CSR the
    local loader builds has the parts' rows and edge ids); x / y per type concatenated."""
    from torch_geometric.data import HeteroData

    parts = [volley.load_partition(parts_dir, p) for p in range(num_parts)]
    graph = parts[0].dataset.graph
    data = HeteroData()
    for node_type in graph.node_types:
        data[node_type].num_nodes = sum(p.num_nodes[node_type] for p in parts)
        for key, field in (("x", "x_dict"), ("y", "y_dict")):
            if node_type in getattr(parts[0].dataset, field):
                data[node_type][key] = torch.from_numpy(np.concatenate(
                    [as_numpy(getattr(p.dataset, field)[node_type]) for p in parts]))
    for edge_type in graph.edge_types:
        src, dst, eid = [], [], []
        for part in parts:
            csr = part.dataset.graph.graph(edge_type)
            indptr = as_numpy(csr.indptr).astype(np.int64)
            rows = np.repeat(np.arange(len(indptr) - 1), np.diff(indptr))
            dst.append(rows + part.first_node[edge_type[2]])
            src.append(as_numpy(csr.indices).astype(np.int64))
            eid.append(as_numpy(csr.edge_ids).astype(np.int64))
        eid = np.concatenate(eid)
        edge_index = np.empty((2, len(eid)), dtype=np.int64)
        edge_index[0, eid], edge_index[1, eid] = np.concatenate(src), np.concatenate(dst)
        data[edge_type].edge_index = torch.from_numpy(edge_index)
    return data


@pytest.fixture(scope="module", params=[(2, "random"), (3, "metis")], ids=["2-random", "3-metis"])
def served(request, tmp_path_factory):
    num_parts, method = request.param
    parts_dir = str(tmp_path_factory.mktemp("hetero") / f"typed-{num_parts}")
    volley.partition(_dataset(), parts_dir, num_parts, method=method)
    servers = [vd.serve(parts_dir, p) for p in range(num_parts)]
    yield parts_dir, servers, _whole(parts_dir, num_parts)
    for server in servers:
        server.shutdown()


def _expect_same(got, want, where: str) -> None:
    for node_type in want.node_types:
        for key in ("n_id", "x", "y"):
            if key in want[node_type]:
                assert torch.equal(got[node_type][key], want[node_type][key]), (where, node_type,
                                                                                 key)
            else:
                assert key not in got[node_type], (where, node_type, key)
        assert got[node_type].num_sampled_nodes == want[node_type].num_sampled_nodes, where
    for edge_type in want.edge_types:
        assert torch.equal(torch.as_tensor(got[edge_type].edge_index),
                           torch.as_tensor(want[edge_type].edge_index)), (where, edge_type)
        assert torch.equal(got[edge_type].e_id, want[edge_type].e_id), (where, edge_type)
        assert got[edge_type].num_sampled_edges == want[edge_type].num_sampled_edges, where
    assert torch.equal(got["paper"].input_id, want["paper"].input_id), where
    assert got["paper"].batch_size == want["paper"].batch_size, where


@pytest.mark.parametrize("fanouts", [[4, 3], {WRITES: [-1, 2], CITES: [3, 0], REV: [2, 2],
                                              AFFILIATED: [1, 1]}], ids=["list", "per-type"])
def test_batches_equal_the_local_loader(served, fanouts):
    parts_dir, servers, whole = served
    ids = np.random.default_rng(5).permutation(whole["paper"].num_nodes)[:70]
    options = dict(batch_size=16, input_nodes=("paper", ids), shuffle=True, seed=11,
                   num_workers=2)
    local = NeighborLoader(whole, fanouts, **options)
    remote = vd.DistNeighborLoader([s.address for s in servers], fanouts, topology="worker",
                                   **options)
    assert len(remote) == len(local) == 5
    assert isinstance(remote, torch.utils.data.DataLoader) and len(remote.dataset) == 70
    edges = 0
    for epoch in range(2):
        for index, (got, want) in enumerate(zip(remote, local)):
            _expect_same(got, want, f"epoch {epoch} batch {index}")
            edges += sum(int(want[t].e_id.numel()) for t in want.edge_types)
    assert edges > 0
    # loader(positions): the one-batch pipeline over the same source, equal too.
    _expect_same(remote([3, 0, 9]), local([3, 0, 9]), "loader(positions)")


def test_server_client_batches_equal_the_local_loader(served):
    parts_dir, servers, whole = served
    peers = [""] + [s.address for s in servers[1:]]
    streaming = vd.serve(parts_dir, 0, peers=peers)  # samples across every part, streams
    try:
        fanouts = {WRITES: [3, 2], CITES: [2, 2], REV: [2, 1], AFFILIATED: [1, 1]}
        ids = np.random.default_rng(9).permutation(whole["paper"].num_nodes)[:55]
        options = dict(batch_size=16, input_nodes=("paper", ids), shuffle=True, seed=21)
        local = NeighborLoader(whole, fanouts, **options)
        remote = vd.DistNeighborLoader([s.address for s in servers], fanouts,
                                       topology="server-client", server=streaming.address,
                                       **options)
        for epoch in range(2):
            count = 0
            for index, (got, want) in enumerate(zip(remote, local)):
                _expect_same(got, want, f"server-client epoch {epoch} batch {index}")
                count += 1
            assert count == len(local) == 4
        assert isinstance(remote, vd.DistNeighborLoader)  # one class per PyG class
        # loader(positions) and a rank's share: the homogeneous server-client loader's, typed.
        _expect_same(remote([3, 0, 9]), local([3, 0, 9]), "server-client loader(positions)")
        ranked = dict(options, rank=1, world_size=2)
        local = NeighborLoader(whole, fanouts, **ranked)
        remote = vd.DistNeighborLoader([s.address for s in servers], fanouts,
                                       topology="server-client", server=streaming.address,
                                       **ranked)
        assert len(remote) == len(local) == 2
        for index, (got, want) in enumerate(zip(remote, local)):
            _expect_same(got, want, f"server-client rank 1 batch {index}")
    finally:
        streaming.shutdown()


def test_local_part_is_served_from_this_process(served):
    parts_dir, servers, whole = served
    addresses = [s.address for s in servers]
    addresses[0] = ""
    loader = vd.DistNeighborLoader(addresses, [3, 2], batch_size=20,
                                   input_nodes=("paper", np.arange(40)), local=(parts_dir, 0))
    local = NeighborLoader(whole, [3, 2], batch_size=20, input_nodes=("paper", np.arange(40)),
                           seed=loader.seed)
    for index, (got, want) in enumerate(zip(loader, local)):
        _expect_same(got, want, f"batch {index}")
    # The in-process server's own partition, shared: the local part is never called over RPC.
    before = servers[1].stats()["requests"]
    addresses = [s.address for s in servers]
    loader = vd.DistNeighborLoader(addresses, [3, 2], batch_size=20,
                                   input_nodes=("paper", np.arange(40)), local=servers[1],
                                   seed=loader.seed)
    local.set_epoch(0)
    for index, (got, want) in enumerate(zip(loader, local)):
        _expect_same(got, want, f"batch {index} (local=server)")
    assert servers[1].stats()["requests"] == before


def test_errors_name_the_type(served):
    _, servers, whole = served
    addresses = [s.address for s in servers]
    papers = whole["paper"].num_nodes
    with pytest.raises(volley.VolleyIndexError, match="node type 'paper'"):
        vd.DistNeighborLoader(addresses, [2], input_nodes=("paper", [0, papers]))
    with pytest.raises(volley.VolleyValueError, match="venue"):
        vd.DistNeighborLoader(addresses, [2], input_nodes=("venue", [0]))
    with pytest.raises(volley.VolleyValueError, match="paper__likes__paper"):  # as locally
        vd.DistNeighborLoader(addresses, {("paper", "likes", "paper"): [2]}, default=[1],
                              input_nodes=("paper", [0, 1]))
    with pytest.raises(volley.VolleyValueError, match="cannot sample epochs"):  # (as Data's)
        vd.DistNeighborLoader(addresses, [2], input_nodes=("paper", [0]),
                              topology="server-client")
    with pytest.raises(volley.VolleyValueError, match="heterogeneous"):
        vd.connect(addresses)


def test_what_is_not_served_says_so(served):
    parts_dir, servers, _ = served
    addresses = [s.address for s in servers]
    with pytest.raises(volley.VolleyValueError, match="peers must list one address per part"):
        vd.serve(parts_dir, 0, peers=[""])
    # An unknown topology is refused as for homogeneous partitions, by the same check.
    with pytest.raises(volley.VolleyValueError, match="topology must be 'worker' or 'server-client'"):
        vd.DistNeighborLoader(addresses, [2], input_nodes=("paper", [0, 1]), topology="ring")
    # (temporal, disjoint and multi-rank sampling: test_dist_hetero_temporal.py)


def _cli() -> str:
    path = os.environ.get("VOLLEY_CLI")
    if not path or not os.path.exists(path):
        pytest.skip("VOLLEY_CLI does not name a volley binary")
    usage = subprocess.run([path, "serve", "--help"], capture_output=True, text=True, check=False)
    if usage.returncode != 0:
        pytest.skip("this volley binary has no serve command")
    return path


def test_volley_serve_answers_the_heterogeneous_client(served):
    parts_dir, servers, whole = served
    process = subprocess.Popen([_cli(), "serve", parts_dir, "--part", "0", "--listen",
                                "127.0.0.1:0"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True)
    try:
        line = process.stdout.readline()
        assert "listening on" in line, (line, process.stderr.read() if process.poll() else "")
        addresses = [line.strip().rsplit(" ", 1)[-1]] + [s.address for s in servers[1:]]
        loader = vd.DistNeighborLoader(addresses, [3, 3], batch_size=25,
                                       input_nodes=("paper", np.arange(50)), seed=3)
        local = NeighborLoader(whole, [3, 3], batch_size=25, input_nodes=("paper", np.arange(50)),
                               seed=3)
        for index, (got, want) in enumerate(zip(loader, local)):
            _expect_same(got, want, f"batch {index}")
    finally:
        process.terminate()
        process.wait(timeout=30)


def test_a_dead_server_or_a_wrong_token_is_an_error_not_a_hang(served):
    parts_dir, servers, _ = served
    guarded = vd.serve(parts_dir, 0, token="s3cret")
    fresh = [guarded] + [vd.serve(parts_dir, p) for p in range(1, len(servers))]
    addresses = [s.address for s in fresh]
    with pytest.raises(PermissionError, match="part 0"):
        vd.DistNeighborLoader(addresses, [2], input_nodes=("paper", [0]), token="wrong",
                              connect_timeout=5)
    loader = vd.DistNeighborLoader(addresses, [2, 2], batch_size=10, token="s3cret",
                                   input_nodes=("paper", np.arange(30)), deadline=5,
                                   connect_timeout=2)
    last = len(fresh) - 1
    fresh[last].shutdown()
    with pytest.raises((ConnectionError, TimeoutError), match=f"part {last}"):
        list(loader)
    for server in fresh:
        server.shutdown()


@pytest.fixture(scope="module")
def two_parts(tmp_path_factory):
    parts_dir = str(tmp_path_factory.mktemp("hetero-fail") / "typed-2")
    volley.partition(_dataset(), parts_dir, 2, method="random")
    return parts_dir


@pytest.mark.timeout(120)
@pytest.mark.parametrize("topology, victim, signal_name", [
    ("worker", "remote", "SIGKILL"), ("worker", "remote", "SIGSTOP"),
    ("server-client", "streaming", "SIGSTOP"), ("server-client", "peer", "SIGSTOP")])
def test_a_failed_server_raises_within_the_deadline(two_parts, spawn, topology, victim,
                                                    signal_name):
    """Killing or stopping a server of a heterogeneous partitioning raises in the trainer within
    the deadline + 1 s, naming the server (a peer's failure as the peer's), in both topologies."""
    import re
    import signal
    import time

    deadline = 2.0
    s1 = spawn(two_parts, 1)
    s0 = spawn(two_parts, 0, peers=["", s1.address])
    options = dict(batch_size=4, input_nodes=("paper", np.arange(300)), shuffle=True, seed=0,
                   num_workers=2, deadline=deadline)
    if topology == "worker":
        loader = vd.DistNeighborLoader([s0.address, s1.address], [5, 5], topology=topology,
                                       local=(two_parts, 0), **options)
        target = s1
    else:
        loader = vd.DistNeighborLoader([s0.address, s1.address], [5, 5], topology=topology,
                                       server=s0.address, **options)
        target = s0 if victim == "streaming" else s1
    batches = iter(loader)
    for _ in range(3):
        next(batches)
    started = time.monotonic()
    os.kill(target.pid, getattr(signal, signal_name))
    received = 0
    with pytest.raises((ConnectionError, TimeoutError)) as raised:
        for _ in batches:
            received += 1
    elapsed = time.monotonic() - started
    assert elapsed < deadline + 1, (elapsed, str(raised.value))
    assert received < len(loader) - 3, "the epoch finished although a server failed"
    assert re.search(re.escape(target.address), str(raised.value)), str(raised.value)
    if victim == "peer":
        assert "its peer failed" in str(raised.value)


@pytest.fixture(scope="module")
def wide_parts(tmp_path_factory):
    """Two parts of a dense typed graph with wide paper features: a batch of 64 papers with all
    neighbors of two hops is several megabytes, so a batch or two fill a stream's flow-control
    window and the server's stream waits for its reader (the whole epoch cannot be buffered)."""
    rng = np.random.default_rng(4)
    counts = {"paper": 2000, "author": 800, "institution": 9}
    writes = np.stack([rng.integers(0, 800, 20000), rng.integers(0, 2000, 20000)])
    graph = volley.HeteroGraph.from_edge_index_dict(
        {WRITES: writes, CITES: np.stack([rng.integers(0, 2000, 20000),
                                           rng.integers(0, 2000, 20000)]),
         REV: writes[::-1].copy(),
         AFFILIATED: np.stack([rng.integers(0, 800, 900), rng.integers(0, 9, 900)])}, counts)
    x = {"paper": rng.normal(size=(2000, 512)).astype(np.float32),
         "author": rng.normal(size=(800, 3)).astype(np.float32)}
    wide = volley.HeteroDataset(graph, x, {"paper": rng.integers(0, 4, 2000)}, name="wide")
    parts_dir = str(tmp_path_factory.mktemp("hetero-wide") / "wide-2")
    volley.partition(wide, parts_dir, 2, method="random")
    return parts_dir


def _paused_typed_stream(addresses, server):
    loader = vd.DistNeighborLoader(addresses, [-1, -1], batch_size=64, topology="server-client",
                                   server=server, input_nodes=("paper", np.arange(2000)),
                                   deadline=5.0, connect_timeout=5.0, num_workers=1)
    iterator = iter(loader)
    next(iterator)
    return iterator


@pytest.mark.timeout(180)
def test_paused_typed_streams_hold_no_thread_and_are_capped(wide_parts):
    """The typed batch stream is the homogeneous one's callback stream: three times as many
    paused streams as handler threads leave the other calls working, and streams beyond
    ``max_epoch_streams`` are refused as busy."""
    threads = 4
    with vd.serve(wide_parts, 1, threads=threads) as s1, \
            vd.serve(wide_parts, 0, threads=threads, peers=["", s1.address]) as s0:
        addresses = [s0.address, s1.address]
        paused = [_paused_typed_stream(addresses, s0.address) for _ in range(3 * threads)]
        worker = vd.DistNeighborLoader(addresses, [2], batch_size=8, deadline=5.0,
                                       input_nodes=("paper", np.arange(16)), connect_timeout=5.0)
        assert len(list(worker)) == 2  # hops and rows answered beside the paused streams
        assert len(list(paused[0])) == 2000 // 64  # resumes where it stopped: 32 batches, less 1
        del paused
    with vd.serve(wide_parts, 1, threads=8) as s1, \
            vd.serve(wide_parts, 0, threads=8, peers=["", s1.address], max_epoch_streams=2) as s0:
        addresses = [s0.address, s1.address]
        paused = [_paused_typed_stream(addresses, s0.address) for _ in range(2)]
        with pytest.raises(volley.VolleyConnectionError, match="busy"):
            paused.append(_paused_typed_stream(addresses, s0.address))
