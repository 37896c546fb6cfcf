"""Discovery through torch.distributed's key-value store: servers register their part's address
(volley.dist.serve(..., rendezvous=...)) and loaders, DistGraph and server-client servers read
every part's address from it — both topologies give the local loader's batches with no address
list; a part that never registers, two datasets under one name and bad arguments are errors.
``python -m volley serve`` starts such servers as a group of their own, claiming distinct parts
with ``--part auto``."""

from __future__ import annotations

import datetime
import os
import re
import select
import signal
import subprocess
import sys
import threading
import time

import pytest

import volley
from volley.loader import NeighborLoader
from volley.partition import split_ids

from conftest import as_numpy, runs_other_interpreters, volley_cli
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


# --- python -m volley serve: a server group of its own -------------------------------------------


@pytest.fixture
def commands():
    """Starts ``python -m volley serve ARGS`` (each in a process group of its own, killed at
    the end of the test)."""
    import volley as package

    started = []
    env = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(package.__file__)))

    def start(*args):
        process = subprocess.Popen([sys.executable, "-m", "volley", "serve", *args], env=env,
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                   start_new_session=True)
        started.append(process)
        return process

    yield start
    for process in started:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


SERVING = re.compile(r"^volley serve: part (\d+) of 'cora' \(2 parts\) listening on \S+, "
                     r"registered as (\S+) under rendezvous service '(\w+)'$")


def serving(process, timeout=60):
    """(part, registered address) from a command's first line (its stderr when it ends)."""
    if not select.select([process.stdout], [], [], timeout)[0]:
        pytest.fail(f"python -m volley serve printed nothing within {timeout} s")
    line = process.stdout.readline().rstrip("\n")
    match = SERVING.match(line)
    assert match, (line, process.stderr.read() if process.poll() is not None else "")
    return int(match.group(1)), match.group(2)


def stopped(process, timeout=30):
    """A command's stderr after SIGTERM (its exit status must be 0)."""
    process.send_signal(signal.SIGTERM)
    _, errors = process.communicate(timeout=timeout)
    assert process.returncode == 0, errors
    return errors


@runs_other_interpreters
def test_serve_command_claims_distinct_parts_that_loaders_find(parts_dir, whole, store,
                                                               commands):  # noqa: F811
    master, endpoint = store
    auto = [parts_dir, "--part", "auto", "--rendezvous", endpoint, "--service", "group"]
    first = [commands(*auto, "--peers", "rendezvous") for _ in range(2)]  # starting together
    lines = [serving(process) for process in first]
    found = dict(lines)
    assert sorted(found) == [0, 1]
    expected, options = _expected(parts_dir, whole)
    loader = vd.DistNeighborLoader(None, [5, 3], num_workers=2, topology="server-client",
                                   rendezvous=endpoint, service="group", **options)
    listed = vd.DistNeighborLoader([found[0], found[1]], [5, 3], num_workers=2,
                                   topology="server-client", **options)
    assert_same_batches(listed, loader, epochs=1)  # each loader's first epoch
    assert_same_batches(expected, vd.DistNeighborLoader(
        None, [5, 3], num_workers=2, topology="server-client", rendezvous=endpoint,
        service="group", **options), epochs=1)

    # Every part claimed: one more server is refused, a replica claims part 0 again.
    extra = commands(*auto)
    assert extra.wait(60) == 2 and "all 2 parts are claimed" in extra.stderr.read()
    replica = commands(*auto, "--replica")
    part, address = serving(replica)
    assert part == 0
    assert master.get("volley/group/part/0").decode() == f"{found[0]}|{address}"
    # A stopped server gives its claim up and leaves its part's replicas; the next 'auto'
    # server takes its part.
    assert "stopped after" in stopped(replica)
    assert master.get("volley/group/part/0").decode() == found[0]
    stopped(first[[part for part, _ in lines].index(1)])
    part, address = serving(commands(*auto))
    assert part == 1 and master.get("volley/group/part/1").decode() == address


def test_serve_command_names_bad_values(parts_dir, store, capsys):  # noqa: F811
    from volley._serve import main

    _, endpoint = store
    for argv, status, message in [
        (["--part", "x"], 2, "--part must be a partition number (0, 1, ...) or 'auto', got 'x'"),
        (["--part", "2"], 2, f"--part 2 out of range: {parts_dir!r} has 2 partitions (0..1)"),
        (["--part", "0", "--deadline", "0"], 2, "--deadline must be > 0, got 0"),
        (["--part", "auto", "--rendezvous", "nowhere"], 2, "got 'nowhere'"),
    ]:
        argv = [parts_dir] + (argv if "--rendezvous" in argv else argv + ["--rendezvous",
                                                                          endpoint])
        assert main(argv) == status, argv
        assert message in capsys.readouterr().err, argv
    missing = parts_dir + "-missing"
    assert main([missing, "--part", "auto", "--rendezvous", endpoint]) == 1
    assert f"{missing!r} holds no partition.json" in capsys.readouterr().err


def test_the_cli_points_to_the_python_command(parts_dir):  # noqa: F811
    cli = volley_cli()
    if cli is None:
        pytest.skip("no volley CLI of this build (set VOLLEY_CLI)")
    run = subprocess.run([cli, "serve", parts_dir, "--part", "auto", "--rendezvous",
                          "host0:29400"], capture_output=True, text=True, timeout=60)
    assert run.returncode != 0
    assert "'host0:29400': this command cannot register" in run.stderr
    assert "python -m volley serve DATASET --part N|auto --rendezvous host0:29400" in run.stderr
