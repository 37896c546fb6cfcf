"""volley.NodeStore on the partition servers (``servers=``): every operation against the same
calls on a local store (bit for bit: initial rows, pushes with repeated ids, Adagrad and Adam
steps, checkpoints), for a homogeneous and a heterogeneous partitioning, with server limits small
enough that calls are split; tables opened by another trainer and through pickling; a writer
killed with kill -9 mid-push; a stopped server; errors that name the value."""

from __future__ import annotations

import os
import pickle
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

import volley
from conftest import runs_other_interpreters
from volley import NodeStore

if not volley._volley._has_dist:
    pytest.skip("built without the distributed service (gRPC)", allow_module_level=True)

import volley.dist as vd  # noqa: E402

torch = pytest.importorskip("torch")

TOKEN = "node-data-token"
# Small limits: a pull of 300 rows of dim 64 (float32) takes several calls a part.
LIMITS = dict(max_reply_bytes=64 << 10, max_request_bytes=1 << 20)


def _typed_dataset() -> "volley.HeteroDataset":
    rng = np.random.default_rng(1)
    counts = {"paper": 400, "author": 300}
    writes = np.stack([rng.integers(0, 300, 900), rng.integers(0, 400, 900)])
    graph = volley.HeteroGraph.from_edge_index_dict(
        {("author", "writes", "paper"): writes,
         ("paper", "rev_writes", "author"): writes[::-1].copy()}, counts)
    return volley.HeteroDataset(graph, {"paper": rng.normal(size=(400, 3)).astype(np.float32)},
                                {"paper": rng.integers(0, 3, 400)}, name="typed-state")


@pytest.fixture(scope="module", params=["homogeneous", "heterogeneous"])
def served(request, tmp_path_factory, cora_dir):
    """(addresses, node type, node count, servers) of a 2-part partitioning served in-process."""
    out = str(tmp_path_factory.mktemp("state") / "parts")
    typed = request.param == "heterogeneous"
    volley.partition(_typed_dataset() if typed else cora_dir, out, 2, method="random", seed=0)
    servers = [vd.serve(out, p, token=TOKEN, **LIMITS) for p in range(2)]
    node_type, count = ("author", 300) if typed else (None, 2708)
    yield [s.address for s in servers], node_type, count, servers
    for server in servers:
        server.shutdown()


def remote_store(served) -> NodeStore:
    return NodeStore(servers=served[0], token=TOKEN, deadline=10)


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_every_operation_matches_a_local_table(served, dtype):
    _, node_type, n, _ = served
    remote, local = remote_store(served), NodeStore()
    name = f"emb-{dtype}"
    for store in (remote, local):
        store.init(name, n, 64, node_type=node_type, dtype=dtype, init="normal", scale=0.1,
                   seed=5, optimizer_slots=2)
        store.init(f"{name}-ada", n, 64, node_type=node_type, dtype=dtype, init="uniform",
                   scale=0.2, seed=6, optimizer_slots=1)
    rng = np.random.default_rng(0)
    ids = rng.integers(0, n, 600)  # repeats, both parts, several calls a part
    assert torch.equal(remote.pull(name, ids, node_type=node_type),
                       local.pull(name, ids, node_type=node_type))
    values = torch.from_numpy(rng.standard_normal((600, 64), dtype=np.float32))
    last_part_only = np.arange(n - 5, n)  # rows of one part: the other still counts the step
    # Over 1 MiB a part: several calls each, repeated ids in more than one of them.
    many = np.concatenate([np.arange(n - 20, n), rng.integers(0, 20, 9000)])
    many_values = torch.from_numpy(rng.standard_normal((len(many), 64), dtype=np.float32))
    for store in (remote, local):
        store.push(name, many, many_values, op="add", node_type=node_type)
        store.step(name, many, many_values, optimizer="adam", lr=0.01, eps=1e-8,
                   node_type=node_type)
        store.push(name, ids, values, op="add", node_type=node_type)
        store.push(name, ids[:50], values[:50], node_type=node_type)
        store.step(name, ids, values, optimizer="adam", lr=0.05, eps=1e-8, node_type=node_type)
        store.step(name, last_part_only, values[:5], optimizer="adam", lr=0.05, eps=1e-8,
                   node_type=node_type)
        store.step(f"{name}-ada", ids[::3], values[::3], optimizer="adagrad", lr=0.1,
                   eps=1e-10, node_type=node_type)
    assert remote.table(name, node_type).steps == local.table(name, node_type).steps == 3
    got, want = remote.state_dict(), local.state_dict()
    assert sorted(got) == sorted(want)
    for key in want:
        assert np.array_equal(got[key], want[key]), key
    assert torch.equal(remote.pull(name, ids, node_type=node_type, dtype=dtype),
                       local.pull(name, ids, node_type=node_type, dtype=dtype))
    remote.remove(name, node_type)
    remote.remove(f"{name}-ada", node_type)


def test_checkpoint_round_trip_and_another_trainer(served, tmp_path):
    _, node_type, n, _ = served
    store = remote_store(served)
    emb = volley.nn.Embedding(n if node_type is None else {node_type: n}, 8, store=store,
                              name="learned")
    optimizer = volley.optim.SparseAdam([emb], lr=0.05)
    seeds = torch.tensor([0, 1, 1, n - 1])
    for _ in range(2):
        rows = emb(seeds if node_type is None else {node_type: seeds})
        out = rows if node_type is None else rows[node_type]
        out.pow(2).sum().backward()
        optimizer.step()
    store.save(tmp_path / "state.npz")
    saved = store.state_dict()
    other = remote_store(served)  # another trainer: opens the table by name
    assert torch.equal(other.pull("learned", seeds, node_type=node_type),
                       store.pull("learned", seeds, node_type=node_type))
    other.push("learned", [2], torch.full((1, 8), 7.0), node_type=node_type)
    assert float(store.pull("learned", [2], node_type=node_type)[0, 0]) == 7.0
    copy = pickle.loads(pickle.dumps(store))  # connects again, same tables
    assert copy.placement == "servers" and copy.names() == store.names()
    copy.load(tmp_path / "state.npz")
    for key, value in saved.items():
        assert np.array_equal(store.state_dict()[key], value), key
    store.init("learned", n, 8, node_type=node_type, optimizer_slots=2, exist_ok=True)
    store.remove("learned", node_type)
    with pytest.raises(volley.VolleyValueError, match="no node data"):
        other.pull("learned", [0], node_type=node_type)


def test_errors_name_the_offending_value(served):
    addresses, node_type, n, servers = served
    store = remote_store(served)
    store.init("h", n, 4, node_type=node_type)
    with pytest.raises(volley.VolleyValueError, match="already exists"):
        store.init("h", n, 4, node_type=node_type)
    with pytest.raises(volley.VolleyValueError, match="exists on part 0 with dim 4"):
        store.init("h", n, 5, node_type=node_type, exist_ok=True)
    with pytest.raises(volley.VolleyValueError, match=f"num_nodes {n + 1} is not the served"):
        store.init("g", n + 1, 4, node_type=node_type)
    with pytest.raises(volley.VolleyIndexError, match=f"id {n} at position 1 out of range"):
        store.push("h", [0, n], torch.ones(2, 4), node_type=node_type)
    assert torch.equal(store.pull("h", [0], node_type=node_type), torch.zeros(1, 4))
    with pytest.raises(volley.VolleyValueError, match="shape"):
        store.push("h", [0], torch.ones(1, 3), node_type=node_type)
    with pytest.raises(volley.VolleyValueError, match="needs 1 optimizer-state slot"):
        store.step("h", [0], torch.ones(1, 4), optimizer="adagrad", lr=0.1, eps=1e-10,
                   node_type=node_type)
    wrong_type = "venue" if node_type else "paper"
    with pytest.raises(volley.VolleyValueError, match=f"node type '{wrong_type}'"):
        store.init("t", 10, 4, node_type=wrong_type)
    with pytest.raises(volley.VolleyPermissionError, match="token"):
        NodeStore(servers=addresses, token="wrong").pull("h", [0], node_type=node_type)
    with pytest.raises(volley.VolleyValueError, match="shared=True and servers="):
        NodeStore(shared=True, servers=addresses)
    store.remove("h", node_type)


def test_tables_over_the_servers_budget_are_refused(tmp_path, cora_dir):
    out = str(tmp_path / "parts")
    volley.partition(cora_dir, out, 2, method="random", seed=0)
    servers = [vd.serve(out, p, max_node_data_bytes=1 << 20) for p in range(2)]
    try:
        store = NodeStore(servers=[s.address for s in servers])
        store.init("small", 2708, 16)
        with pytest.raises(volley.VolleyValueError, match="max_node_data_bytes"):
            store.init("large", 2708, 512)
        servers[1].shutdown()
        started = time.monotonic()
        with pytest.raises(volley.VolleyConnectionError, match="part 1"):
            store.pull("small", [0, 1, 2, 3, 2707])
        assert time.monotonic() - started < 15
    finally:
        for server in servers:
            server.shutdown()


@runs_other_interpreters
def test_a_writer_killed_mid_push_leaves_whole_rows(tmp_path, cora_dir):
    """A trainer killed with kill -9 while it pushes: every row holds one complete push (the
    servers' side is one code path for both kinds of partitioning: Cora's is enough)."""
    parts = str(tmp_path / "parts")
    volley.partition(cora_dir, parts, 2, method="random", seed=0)
    servers = [vd.serve(parts, p, token=TOKEN, **LIMITS) for p in range(2)]
    addresses, node_type, n = [s.address for s in servers], None, 2708
    store = remote_store((addresses,))
    store.init("killed", n, 256, node_type=node_type)
    child = subprocess.Popen([sys.executable, "-c", textwrap.dedent(f"""
        import numpy as np, volley
        store = volley.NodeStore(servers={addresses!r}, token={TOKEN!r})
        ids = np.arange({n})
        print("ready", flush=True)
        for value in range(1, 1_000_000):
            store.push("killed", ids, np.full(({n}, 256), value, np.float32),
                       node_type={node_type!r})
    """)], stdout=subprocess.PIPE, env=dict(os.environ, PYTHONPATH=os.path.dirname(
        os.path.dirname(volley.__file__))))
    assert child.stdout.readline().strip() == b"ready"
    time.sleep(0.5)
    child.send_signal(signal.SIGKILL)
    child.wait(timeout=30)
    rows = store.pull("killed", np.arange(n), node_type=node_type).numpy()
    assert rows.max() > 0
    assert np.all(rows == rows[:, :1]), "a row holds values of two pushes"
    for server in servers:
        server.shutdown()


def test_aggregation_between_tables_on_the_servers(served):
    """NodeStore.aggregate with both tables on the servers equals it on local tables."""
    _, node_type, n, _ = served
    rng = np.random.default_rng(3)
    edges = rng.integers(0, n, (2, 8 * n))
    graph = volley.Graph.from_edge_index(edges[:, edges[0] != edges[1]], n)
    remote, local = remote_store(served), NodeStore()
    for store in (remote, local):
        store.init("feat", n, 16, init="normal", seed=2, node_type=node_type)
        store.aggregate(graph, "feat", "hop1", op="gcn", node_type=node_type)
    assert torch.equal(remote.pull("hop1", np.arange(n), node_type=node_type),
                       local.pull("hop1", np.arange(n), node_type=node_type))
    remote.remove("feat", node_type)
    remote.remove("hop1", node_type)


def _free_addresses(count: int) -> list:
    """Loopback addresses free a moment ago (servers that are each other's peers need them
    before either starts)."""
    import socket

    sockets = [socket.socket() for _ in range(count)]
    try:
        for sock in sockets:
            sock.bind(("127.0.0.1", 0))
        return [f"127.0.0.1:{sock.getsockname()[1]}" for sock in sockets]
    finally:
        for sock in sockets:
            sock.close()


def test_servers_aggregate_the_rows_they_own(tmp_path, cora_dir):
    """graph=None: each server aggregates its own rows over its part of the graph, fetching the
    other part's rows from its peer; equal to the aggregation of the whole renumbered graph."""
    parts = str(tmp_path / "parts")
    volley.partition(cora_dir, parts, 2, method="random", seed=1)
    addresses = _free_addresses(2)
    servers = [vd.serve(parts, p, listen=addresses[p], peers=addresses, **LIMITS)
               for p in range(2)]
    try:
        store = NodeStore(servers=addresses, deadline=20)
        n = 2708
        store.init("x", n, 12, init="normal", seed=4)
        x = store.pull("x", np.arange(n))
        from volley.partition import load_node_map

        new_id = torch.as_tensor(load_node_map(parts))
        edge_index = new_id[volley.load_dataset(str(cora_dir)).graph.to_edge_index()]
        graph = volley.Graph.from_edge_index(edge_index, n)
        for op in ("sum", "mean", "gcn"):
            store.aggregate(None, "x", f"on-servers-{op}", op=op)
            got = store.pull(f"on-servers-{op}", np.arange(n))
            assert torch.allclose(got, volley.aggregate(graph, x, op), atol=1e-5), op
        with pytest.raises(volley.VolleyValueError, match="cannot be aggregated into itself"):
            store.aggregate(None, "x", "x")
        with pytest.raises(volley.VolleyValueError, match="weighted 'gcn' on the servers"):
            store.aggregate(None, "x", "w", op="gcn", weighted=True)
        with pytest.raises(volley.VolleyValueError, match="placement is 'local': pass the graph"):
            local = NodeStore()
            local.init("x", n, 2)
            local.aggregate(None, "x", "y")
    finally:
        for server in servers:
            server.shutdown()
