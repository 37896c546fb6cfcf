"""volley.dist: sampling and features of a partitioned graph served over gRPC.

The oracle is the single-machine path over the whole *renumbered* graph (the partitions put back
together): node ids differ between the original and the partitioned numbering, and sampling
randomness is keyed by node id, so distributed and local results are compared in the new
numbering.

Servers run in-process (``volley.dist.serve``) where nothing has to die, and as separate
processes (``volley serve``, or the same service started by Python when no CLI of this build is
found; ``VOLLEY_CLI`` names one) where a test kills one or must see that it survived. The load
test runs ``VOLLEY_LOAD_TEST_SECONDS`` seconds (default 30).
"""

from __future__ import annotations

import os
import re
import select
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import warnings

import numpy as np
import pytest

import volley
from volley.loader import NeighborLoader
from volley.partition import load_partition, split_ids, to_new_ids

from conftest import as_numpy, same_in_every_torch

if not volley._volley._has_dist:
    pytest.skip("built without the distributed service (gRPC)", allow_module_level=True)

import volley.dist as vd  # noqa: E402

torch = pytest.importorskip("torch")

TOKEN = "s3cret-token"


# --- Fixtures: a 2-part random partition of Cora, its oracle, servers ----------------------------


@pytest.fixture(scope="session")
def parts_dir(tmp_path_factory, cora_dir):
    out = tmp_path_factory.mktemp("cora-2")
    volley.partition(cora_dir, out, 2, method="random", seed=0)
    return str(out)


@pytest.fixture(scope="session")
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


@pytest.fixture(scope="session")
def servers(parts_dir):
    """In-process servers: s0, s1 serve parts 0 and 1; s0 and s1_streaming can also stream
    epochs (server-client topology), each knowing the other part's server as its peer."""
    s1 = vd.serve(parts_dir, 1)
    s0 = vd.serve(parts_dir, 0, peers=["", s1.address])
    s1_streaming = vd.serve(parts_dir, 1, peers=[s0.address, ""])
    yield dict(
        s0=s0,
        s1=s1,
        addresses=[s0.address, s1.address],
        streaming=[s0.address, s1_streaming.address],
    )
    for server in (s0, s1, s1_streaming):
        server.shutdown(0.1)


# --- Server processes -------------------------------------------------------------------------

_PYTHON_SERVER = r"""
import json, sys
import volley.dist
args = json.loads(sys.argv[1])
server = volley.dist.serve(**args)
print(f"volley serve: part {server.part} listening on {server.address}", flush=True)
server.wait()
"""


def _cli() -> str | None:
    """A `volley` binary of the build under test with a `serve` command, or None."""
    candidates = [os.environ.get("VOLLEY_CLI")]
    if os.path.realpath(volley.__file__).startswith(os.path.realpath(sys.prefix)):
        # An installed package: the CLI installed beside it comes from the same build.
        candidates.append(os.path.join(sys.prefix, "bin", "volley"))
    for path in candidates:
        if path and shutil.which(path):
            usage = subprocess.run([path, "serve", "--help"], capture_output=True, text=True,
                                   timeout=30)
            if usage.returncode == 0 and "--peers" in usage.stdout:  # a CLI with `serve`
                return path
    return None


class ServerProcess:
    """A server in a child process; `address` is read from its first stdout line."""

    def __init__(self, directory, part, tmp_path, *, token=None, peers=None, python_options=None):
        cli = None if python_options else _cli()
        if cli:
            command = [cli, "serve", directory, "--part", str(part), "--listen", "127.0.0.1:0"]
            if token:
                token_file = tmp_path / f"token-{part}"
                token_file.write_text(token + "\n")
                command += ["--token-file", str(token_file)]
            if peers:
                command += ["--peers", ",".join(peers)]
        else:
            import json

            args = dict(directory=directory, part=part, token=token, peers=peers,
                        **(python_options or {}))
            command = [sys.executable, "-c", _PYTHON_SERVER, json.dumps(args)]
        env = dict(os.environ, VOLLEY_PROGRESS="0")
        self.process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                        env=env, text=True)
        ready, _, _ = select.select([self.process.stdout], [], [], 60)
        line = self.process.stdout.readline() if ready else ""
        match = re.search(r"listening on (\S+)", line)
        if not match:
            self.kill()
            raise RuntimeError(f"server did not start: {line!r} {self.process.stderr.read()!r}")
        self.address = match.group(1)
        self.pid = self.process.pid

    def alive(self) -> bool:
        return self.process.poll() is None

    def rss_bytes(self) -> int:
        with open(f"/proc/{self.pid}/status") as status:
            for line in status:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
        raise RuntimeError("no VmRSS")

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait(timeout=30)
        for stream in (self.process.stdout, self.process.stderr):
            stream.close()


@pytest.fixture
def spawn(tmp_path):
    started = []

    def start(*args, **kwargs):
        server = ServerProcess(*args, tmp_path=tmp_path, **kwargs)
        started.append(server)
        return server

    yield start
    for server in started:
        server.kill()


# --- Helpers ------------------------------------------------------------------------------------

FIELDS = ("n_id", "e_id", "edge_index", "input_id", "x", "y")


def assert_same_batches(expected_loader, actual_loader, epochs=2):
    assert isinstance(actual_loader, torch.utils.data.DataLoader)
    assert len(actual_loader) == len(expected_loader) == len(actual_loader.batch_sampler)
    for _ in range(epochs):
        expected = list(expected_loader)
        actual = list(actual_loader)
        assert len(actual) == len(expected) > 0
        for a, b in zip(actual, expected):
            for field in FIELDS:
                assert torch.equal(getattr(a, field), getattr(b, field)), field
            assert a.batch_size == b.batch_size
            assert list(a.num_sampled_nodes) == list(b.num_sampled_nodes)
            assert list(a.num_sampled_edges) == list(b.num_sampled_edges)


# --- Equality with single-machine sampling ------------------------------------------------------


@pytest.mark.timeout(120)
@pytest.mark.parametrize("topology", vd.TOPOLOGIES)
@pytest.mark.parametrize("world_size", [1, 2])
def test_batches_equal_single_machine(parts_dir, whole, servers, topology, world_size):
    train = as_numpy(split_ids(parts_dir, "train"))
    assert len(train) == 140
    options = dict(batch_size=16, input_nodes=train, shuffle=True, seed=3)
    for rank in range(world_size):
        expected = NeighborLoader(whole, [5, 3], num_workers=2, rank=rank,
                                  world_size=world_size, **options)
        if topology == "worker":
            # Rank 0 shares the partition of its in-process server; rank 1 maps its own.
            local = servers["s0"] if rank == 0 else (parts_dir, 1)
            actual = vd.DistNeighborLoader(servers["addresses"], [5, 3], num_workers=3,
                                           topology=topology, local=local, rank=rank,
                                           world_size=world_size, **options)
        else:
            actual = vd.DistNeighborLoader(servers["streaming"], [5, 3], num_workers=3,
                                           topology=topology, rank=rank, world_size=world_size,
                                           **options)
        assert_same_batches(expected, actual)


@pytest.mark.timeout(60)
@pytest.mark.parametrize("topology", vd.TOPOLOGIES)
def test_all_neighbors_replace_and_masks(parts_dir, whole, servers, topology):
    mask = np.zeros(whole.num_nodes, dtype=bool)
    mask[::7] = True
    options = dict(batch_size=100, input_nodes=mask, seed=11, replace=True, drop_last=True)
    expected = NeighborLoader(whole, [-1, 4], num_workers=1, **options)
    where = (dict(addresses=servers["addresses"], local=(parts_dir, 0)) if topology == "worker"
             else dict(addresses=servers["streaming"], server=servers["streaming"][1]))
    actual = vd.DistNeighborLoader(num_neighbors=[-1, 4], topology=topology, **where, **options)
    assert_same_batches(expected, actual, epochs=1)


@pytest.mark.timeout(60)
@pytest.mark.parametrize("topology", vd.TOPOLOGIES)
def test_an_empty_selection_gives_no_batches(parts_dir, whole, servers, topology):
    # As in PyG (and the local loader): an all-False mask or an empty id list selects no seed.
    where = (dict(addresses=servers["addresses"], local=(parts_dir, 0)) if topology == "worker"
             else dict(addresses=servers["streaming"], server=servers["streaming"][1]))
    for empty in (np.zeros(whole.num_nodes, dtype=bool), np.zeros(0, dtype=np.int64)):
        loader = vd.DistNeighborLoader(num_neighbors=[5], topology=topology, batch_size=64,
                                       input_nodes=empty, **where)
        assert len(loader) == 0
        assert list(loader) == []


@pytest.mark.timeout(60)
def test_dist_sampler_equals_sampler(whole, servers):
    graph = vd.connect(servers["addresses"])  # every part by RPC
    rng = np.random.default_rng(0)
    for sizes, replace in (([10, 5], False), ([-1], False), ([3, 3, 3], True)):
        expected = volley.NeighborSampler(whole.graph, sizes, replace=replace, seed=5)
        actual = vd.DistSampler(graph, sizes, replace=replace, seed=5)
        for batch in range(4):
            seeds = rng.choice(whole.num_nodes, size=50, replace=False)
            a, b = actual.sample_subgraph(seeds, batch), expected.sample_subgraph(seeds, batch)
            for field in ("n_id", "row", "col", "e_id"):
                assert torch.equal(getattr(a, field), getattr(b, field)), field
            assert a.num_sampled_nodes == b.num_sampled_nodes
            n_id, batch_size, adjs = actual.sample(seeds, batch)
            assert batch_size == 50 and len(adjs) == len(sizes)
    with pytest.raises(IndexError, match="2708"):
        actual.sample([2708])


@pytest.mark.timeout(60)
def test_features_and_labels_equal(parts_dir, cora_dir, whole, servers):
    graph = vd.DistGraph(servers["addresses"], local=(parts_dir, 1))
    assert graph.num_nodes == 2708 and graph.local_part == 1
    assert graph.info["num_parts"] == 2 and graph.book.num_parts == 2
    ids = np.random.default_rng(1).permutation(whole.num_nodes)
    x, y = as_numpy(whole.x), as_numpy(whole.y)
    features = vd.DistFeatureStore(graph)
    assert features.shape == (2708, 1433) and features.dtype == "uint8"
    assert np.array_equal(as_numpy(features.gather(ids)), x[ids])
    assert np.array_equal(as_numpy(features.gather(ids, dtype="float32")), x[ids].astype("f4"))
    assert np.array_equal(as_numpy(graph.labels[ids]), y[ids])
    # Ids of the original dataset reach the same rows through the node map.
    cora = volley.load_dataset(cora_dir)
    old = np.arange(0, 2708, 5)
    new = as_numpy(to_new_ids(parts_dir, old))
    assert np.array_equal(as_numpy(features[new]), as_numpy(cora.x)[old])
    train_old = as_numpy(cora.train_idx)
    assert np.array_equal(as_numpy(to_new_ids(parts_dir, as_numpy(cora.train_mask))),
                          as_numpy(to_new_ids(parts_dir, np.sort(train_old))))
    assert np.array_equal(np.sort(as_numpy(to_new_ids(parts_dir, train_old))),
                          as_numpy(split_ids(parts_dir, "train")))
    with pytest.raises(IndexError, match="-1"):
        features.gather([0, -1])
    with pytest.raises(IndexError):
        to_new_ids(parts_dir, [2708])


# --- Argument errors ----------------------------------------------------------------------------


@pytest.mark.timeout(60)
def test_argument_errors(parts_dir, servers, monkeypatch):
    addresses = servers["addresses"]
    with pytest.raises(ValueError, match="topology"):
        vd.DistNeighborLoader(addresses, [5], topology="peer-to-peer", local=(parts_dir, 0))
    with pytest.raises(ValueError, match="local="):
        vd.DistNeighborLoader(addresses, [5], topology="worker")
    with pytest.raises(ValueError, match="server"):
        vd.DistNeighborLoader(None, [5], topology="server-client")
    with pytest.raises(ValueError, match="local= is for topology='worker'"):
        vd.DistNeighborLoader(addresses, [5], topology="server-client", local=(parts_dir, 0))
    with pytest.raises(ValueError, match="server= is for"):
        vd.DistNeighborLoader(addresses, [5], local=(parts_dir, 0), server=addresses[0])
    with pytest.raises(ValueError, match="cannot sample epochs"):  # s1 was started without peers
        vd.DistNeighborLoader(addresses, [5], topology="server-client", server=addresses[1])
    with pytest.raises(IndexError, match="2708"):
        vd.DistNeighborLoader(addresses, [5], input_nodes=[0, 2708], local=(parts_dir, 0))
    with pytest.raises(IndexError, match="2708"):
        vd.DistNeighborLoader(servers["streaming"], [5], input_nodes=[2708],
                              topology="server-client")
    with pytest.raises(ValueError):  # a server of part 0 where part 1's is expected
        vd.connect([addresses[0], addresses[0]])
    with pytest.raises(ConnectionError):
        vd.connect([addresses[0], "127.0.0.1:1"], connect_timeout=1.0)
    monkeypatch.setattr(volley._volley, "_has_dist", False)
    with pytest.raises(RuntimeError, match="libgrpc"):
        vd.serve(parts_dir, 0)
    with pytest.raises(RuntimeError, match="libgrpc"):
        vd.DistNeighborLoader(addresses, [5], local=(parts_dir, 0))


@pytest.mark.timeout(60)
def test_mode_is_the_deprecated_spelling_of_topology(parts_dir, servers):
    addresses = servers["addresses"]
    with pytest.warns(DeprecationWarning, match="topology="):
        loader = vd.DistNeighborLoader(addresses, [5], mode="worker", local=(parts_dir, 0))
    assert loader.topology == "worker" and "topology='worker'" in repr(loader)
    with pytest.warns(DeprecationWarning, match="topology"):
        assert loader.mode == "worker"
    with pytest.warns(DeprecationWarning):
        streamed = vd.DistNeighborLoader(servers["streaming"], [5], batch_size=1024,
                                         mode="server-client")
    assert streamed.topology == "server-client"
    assert sum(b.batch_size for b in streamed) == 2708
    with pytest.warns(DeprecationWarning):
        assert vd.MODES == vd.TOPOLOGIES == ("worker", "server-client")
    # NeighborLoader's modes are not topologies; the two spellings must agree.
    with pytest.raises(volley.VolleyValueError, match="mode='GPU'") as caught:
        vd.DistNeighborLoader(addresses, [5], mode="GPU", local=(parts_dir, 0))
    assert isinstance(caught.value, ValueError)
    with pytest.raises(volley.VolleyValueError, match="disagree"):
        vd.DistNeighborLoader(addresses, [5], topology="worker", mode="server-client",
                              local=(parts_dir, 0))
    # topology= alone warns nothing.
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        vd.DistNeighborLoader(addresses, [5], topology="worker", local=(parts_dir, 0))


# --- Security -----------------------------------------------------------------------------------


@pytest.mark.timeout(60)
def test_tokens_are_checked(parts_dir):
    with vd.serve(parts_dir, 1, token=TOKEN) as s1, \
            vd.serve(parts_dir, 0, token=TOKEN, peers=["", s1.address]) as s0:
        assert s0.authenticated and s1.authenticated
        addresses = [s0.address, s1.address]
        for token in (None, "wrong"):
            with pytest.raises(PermissionError):
                vd.connect(addresses, token=token)
            with pytest.raises(PermissionError):
                vd.DistNeighborLoader(addresses, [5], local=(parts_dir, 0), token=token)
            with pytest.raises(PermissionError):
                vd.DistNeighborLoader(addresses, [5], topology="server-client", token=token)
            assert isinstance(pytest.raises(PermissionError, vd.connect, addresses,
                                            token=token).value, volley.VolleyPermissionError)
        loader = vd.DistNeighborLoader(addresses, [5], batch_size=512, topology="server-client",
                                       token=TOKEN)
        assert sum(b.batch_size for b in loader) == 2708
        graph = vd.connect(addresses, token=TOKEN)
        assert graph.features[[0, 2000]].shape == (2, 1433)
        assert s0.stats()["failed_requests"] > 0


# --- Robustness ---------------------------------------------------------------------------------


def _send_raw(address, payload, read=True):
    host, port = address.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        try:
            sock.sendall(payload)
            if read:
                sock.settimeout(2)
                sock.recv(65536)
        except OSError:  # the server closed the connection: what it should do
            pass


@pytest.mark.timeout(120)
@same_in_every_torch
def test_garbage_and_oversized_requests_do_not_crash_the_server(parts_dir, spawn):
    s1 = spawn(parts_dir, 1)
    # Small max_message_bytes so an oversized request is cheap to make.
    s0 = spawn(parts_dir, 0, peers=["", s1.address],
               python_options=dict(max_message_bytes=1 << 20))
    rng = np.random.default_rng(0)
    preface = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
    payloads = [
        b"",
        b"GET / HTTP/1.1\r\nHost: x\r\n\r\n",
        rng.bytes(1 << 20),
        preface + rng.bytes(4096),
        # A HEADERS frame claiming 16 MiB, then a DATA frame claiming a 2 GiB gRPC message.
        preface + b"\x00\x00\x00\x04\x00\x00\x00\x00\x00" + b"\xff\xff\xff\x01\x04\x00\x00\x00\x01",
        preface + b"\x00\x00\x00\x04\x00\x00\x00\x00\x00"
        + b"\x00\x00\x05\x00\x00\x00\x00\x00\x01" + b"\x00\x7f\xff\xff\xff",
    ]
    for server in (s0, s1):
        for payload in payloads:
            _send_raw(server.address, payload)
    assert s0.alive() and s1.alive()
    graph = vd.connect([s0.address, s1.address], deadline=10.0)
    part0 = np.arange(0, 100, dtype=np.int64)
    # 300,000 ids (2.4 MB) to part 0's server: over its 1 MiB request limit, so the client
    # splits them into calls under it (users never meet the server's limits).
    many = np.resize(part0, 300_000)
    np.testing.assert_array_equal(graph.labels[many], np.resize(graph.labels[part0], 300_000))
    assert s0.alive() and s1.alive()
    assert graph.labels[part0].shape == (100,)
    loader = vd.DistNeighborLoader(graph, [5, 5], batch_size=8)  # replies under 1 MiB
    assert sum(b.batch_size for b in loader) == 2708
    assert s0.alive() and s1.alive()


@pytest.mark.timeout(120)
@pytest.mark.parametrize("topology, victim", [("worker", "remote"),
                                              ("server-client", "streaming"),
                                              ("server-client", "peer")])
def test_killed_server_raises_in_the_trainer_within_the_deadline(parts_dir, spawn, topology,
                                                                   victim):
    deadline, slack = 5.0, 5.0
    s1 = spawn(parts_dir, 1)
    s0 = spawn(parts_dir, 0, peers=["", s1.address])
    options = dict(batch_size=8, shuffle=True, seed=0, num_workers=2, deadline=deadline)
    if topology == "worker":
        loader = vd.DistNeighborLoader([s0.address, s1.address], [10, 10], topology=topology,
                                       local=(parts_dir, 0), **options)
        target = s1
    else:
        loader = vd.DistNeighborLoader([s0.address, s1.address], [10, 10], topology=topology,
                                       server=s0.address, **options)
        target = s0 if victim == "streaming" else s1
    batches = iter(loader)
    for _ in range(3):
        next(batches)
    killed = time.monotonic()
    os.kill(target.pid, signal.SIGKILL)
    received = 0
    with pytest.raises((ConnectionError, TimeoutError)) as raised:
        for _ in batches:
            received += 1
    elapsed = time.monotonic() - killed
    assert elapsed < deadline + slack, (elapsed, raised.value)
    assert received < len(loader) - 3, "the epoch finished although a server died"
    assert isinstance(raised.value, volley.VolleyError)
    assert re.search(r"\d+\.\d+\.\d+\.\d+:\d+", str(raised.value)), str(raised.value)


@pytest.mark.timeout(int(os.environ.get("VOLLEY_LOAD_TEST_SECONDS", "30")) + 120)
@same_in_every_torch
def test_load_of_eight_clients(parts_dir, spawn):
    seconds = float(os.environ.get("VOLLEY_LOAD_TEST_SECONDS", "30"))
    s1 = spawn(parts_dir, 1)
    s0 = spawn(parts_dir, 0, peers=["", s1.address])
    addresses = [s0.address, s1.address]
    errors, batches, lock = [], [0, 0], threading.Lock()
    stop = threading.Event()

    def client(index: int) -> None:
        try:
            if index % 2 == 0:  # worker-style: samples across both servers by RPC
                loader = vd.DistNeighborLoader(vd.connect(addresses), [10, 5], batch_size=64,
                                               shuffle=True, seed=index, num_workers=2)
            else:  # server-client: epochs streamed from s0
                loader = vd.DistNeighborLoader(addresses, [10, 5], batch_size=64, shuffle=True,
                                               seed=index, num_workers=2, topology="server-client",
                                               server=s0.address)
            while not stop.is_set():
                for batch in loader:
                    assert batch.x.shape[0] == batch.n_id.shape[0]
                    with lock:
                        batches[index % 2] += 1
                    if stop.is_set():
                        break
        except BaseException as error:  # noqa: BLE001 (reported below)
            errors.append(error)

    def rss():
        return s0.rss_bytes() + s1.rss_bytes()

    threads = [threading.Thread(target=client, args=(i,), daemon=True) for i in range(8)]
    for thread in threads:
        thread.start()
    warm_up = min(5.0, seconds / 3)  # connections, buffers, allocator arenas
    time.sleep(warm_up)
    samples = []  # servers' RSS twice a second: it swings with the batches in flight
    end = time.monotonic() + seconds - warm_up
    while time.monotonic() < end and not errors:
        samples.append(rss())
        time.sleep(0.5)
    stop.set()
    for thread in threads:
        thread.join(timeout=60)
    assert not errors, errors
    assert not any(thread.is_alive() for thread in threads)
    assert batches[0] > 0 and batches[1] > 0
    assert s0.alive() and s1.alive()
    # Bounded memory: the peak of the second half is within 128 MiB of the first half's (no
    # growth with the number of requests), and below 2 GiB in all.
    half = max(1, len(samples) // 2)
    first, second = max(samples[:half]), max(samples[half:] or samples)
    assert second - first < 128 << 20, (first >> 20, second >> 20)
    assert second < 2 << 30
    print(f"load: {batches} batches (worker, server-client) in {seconds:.0f} s; servers' peak "
          f"RSS {first >> 20} MiB in the first half, {second >> 20} MiB in the second")


@pytest.mark.timeout(60)
def test_server_handle(parts_dir):
    with vd.serve(parts_dir, 0) as server:
        assert re.fullmatch(r"127\.0\.0\.1:\d+", server.address)
        assert server.port == int(server.address.rsplit(":", 1)[1]) and server.port > 0
        assert server.part == 0 and not server.authenticated
        assert server.fingerprint == volley._volley.dataset_fingerprint(parts_dir)
        assert not server.wait(timeout=0.1)
        threading.Timer(0.2, server.shutdown).start()
        assert server.wait(timeout=30)
        assert "part=0" in repr(server)
    with pytest.raises(IndexError):
        vd.serve(parts_dir, 2)
    with pytest.raises(OSError):
        vd.serve(parts_dir, 0, listen="203.0.113.1:1")  # an address this machine does not have


def test_large_gathers_and_hops_are_split_under_the_server_limits(parts_dir, whole):
    """``gather(np.arange(800_000) % 2708)`` over 2 GB aborted both servers.
    The same request shape under tiny limits (64 KiB replies: 11 float32 Cora rows a call)
    is split by the client and gives exactly the local answer."""
    limits = dict(max_reply_bytes=64 << 10, max_ids_per_call=500)
    with vd.serve(parts_dir, 0, **limits) as s0, vd.serve(parts_dir, 1, **limits) as s1:
        graph = vd.connect([s0.address, s1.address], deadline=30.0)
        ids = np.arange(8_000) % 2708
        x = vd.DistFeatureStore(graph).gather(ids, dtype="float32")
        np.testing.assert_array_equal(x, as_numpy(whole.x)[ids].astype(np.float32))
        np.testing.assert_array_equal(graph.labels[ids], as_numpy(whole.y)[ids])
        local = NeighborLoader(whole, [-1, 10], batch_size=1000, shuffle=False)
        dist = vd.DistNeighborLoader(graph, [-1, 10], batch_size=1000, shuffle=False)
        for a, b in zip(local, dist):
            np.testing.assert_array_equal(as_numpy(a.n_id), as_numpy(b.n_id))
            np.testing.assert_array_equal(as_numpy(a.edge_index), as_numpy(b.edge_index))
        # A fanout with replacement over one reply (4095 picks) is refused, naming the limit.
        sampler = vd.DistSampler(graph, [5000], replace=True)
        with pytest.raises(volley.VolleyValueError, match="4095"):
            sampler.sample(np.arange(4))

