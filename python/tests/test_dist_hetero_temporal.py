"""volley.dist over heterogeneous partitions, temporal and disjoint sampling and the rank split
(issues 14 and 16): times per type written into a partitioned directory
(volley.hetero_partition.write_times) and served; DistNeighborLoader(time_attr=..., input_time=...,
temporal_strategy=..., disjoint=...) yields the local heterogeneous loader's batches over the whole
renumbered graph holding the same times, bit for bit, in both topologies; rank / world_size split
every epoch. Failure paths: times of the wrong length or for an unknown type, a time file of the
wrong length, times the directory lacks, input_time missing or of the wrong length — each error
names the type."""

from __future__ import annotations

import os
import subprocess

import numpy as np
import pytest

import volley
from volley.hetero_partition import verify_hetero_partitioned_dataset, write_times
from volley.loader import NeighborLoader

from test_dist_hetero import AFFILIATED, CITES, REV, WRITES, _cli, _dataset, _expect_same, _whole

import volley.dist as vd  # noqa: E402 (test_dist_hetero skips a build without gRPC)

torch = pytest.importorskip("torch")

FANOUTS = {WRITES: [3, 2], CITES: [2, 2], REV: [2, 1], AFFILIATED: [1, 1]}


@pytest.fixture(scope="module")
def timed(tmp_path_factory):
    """A 2-part directory with node times of paper and author and edge times of writes and
    cites; its servers (one started with peers, for server-client); the whole renumbered graph
    with the same times as 'node_time' / 'edge_time'."""
    dataset = _dataset(seed=3)
    parts_dir = str(tmp_path_factory.mktemp("hetero-time") / "typed-2")
    volley.partition(dataset, parts_dir, 2, method="random")
    rng = np.random.default_rng(4)
    counts = {"paper": 300, "author": 200}
    node_time = {t: rng.integers(0, 50, n) for t, n in counts.items()}
    edge_time = {WRITES: rng.integers(0, 50, 1200), CITES: rng.integers(0, 50, 900)}
    written = write_times(parts_dir, node_time=node_time, edge_time=edge_time)
    assert len(written) == 4
    whole = _whole(parts_dir, 2)
    for node_type in counts:
        whole[node_type].node_time = torch.from_numpy(
            np.load(os.path.join(parts_dir, f"{node_type}.node_time.npy")))
    for edge_type, times in edge_time.items():
        whole[edge_type].edge_time = torch.from_numpy(times)
    servers = [vd.serve(parts_dir, p) for p in range(2)]
    streaming = vd.serve(parts_dir, 0, peers=["", servers[1].address])
    yield parts_dir, servers, streaming, whole
    for server in servers + [streaming]:
        server.shutdown()


def _expect_same_trees(got, want, where: str) -> None:
    _expect_same(got, want, where)
    for node_type in want.node_types:
        assert torch.equal(got[node_type].batch, want[node_type].batch), (where, node_type)
    if "seed_time" in want["paper"]:
        assert torch.equal(got["paper"].seed_time, want["paper"].seed_time), where


def _remote(timed, topology: str, **options):
    parts_dir, servers, streaming, _ = timed
    addresses = [s.address for s in servers]
    if topology == "server-client":
        return vd.DistNeighborLoader(addresses, FANOUTS, topology=topology,
                                     server=streaming.address, **options)
    if topology == "worker-local":
        addresses[0] = ""
        return vd.DistNeighborLoader(addresses, FANOUTS, local=(parts_dir, 0), **options)
    return vd.DistNeighborLoader(addresses, FANOUTS, topology="worker", **options)


@pytest.mark.parametrize("topology", ["worker", "worker-local", "server-client"])
@pytest.mark.parametrize("time_attr,given", [("node_time", False), ("node_time", True),
                                             ("edge_time", True)],
                         ids=["node-own", "node-given", "edge"])
@pytest.mark.parametrize("strategy", ["uniform", "last"])
def test_temporal_batches_equal_the_local_loader(timed, topology, time_attr, given, strategy):
    whole = timed[3]
    ids = np.random.default_rng(5).permutation(300)[:45]
    options = dict(batch_size=16, input_nodes=("paper", ids), shuffle=True, seed=11,
                   num_workers=2, time_attr=time_attr, temporal_strategy=strategy)
    if given:
        options["input_time"] = np.random.default_rng(6).integers(10, 50, len(ids))
    local = NeighborLoader(whole, FANOUTS, **options)
    remote = _remote(timed, topology, **options)
    assert len(remote) == len(local) == 3
    edges = 0
    for epoch in range(2):
        count = 0
        for index, (got, want) in enumerate(zip(remote, local)):
            _expect_same_trees(got, want, f"{topology} epoch {epoch} batch {index}")
            edges += sum(int(want[t].e_id.numel()) for t in want.edge_types)
            count += 1
        assert count == 3
    assert edges > 0


@pytest.mark.parametrize("topology", ["worker", "server-client"])
def test_disjoint_batches_equal_the_local_loader(timed, topology):
    whole = timed[3]
    ids = np.random.default_rng(7).permutation(300)[:40]
    options = dict(batch_size=16, input_nodes=("paper", ids), seed=3, disjoint=True)
    local = NeighborLoader(whole, FANOUTS, **options)
    remote = _remote(timed, topology, **options)
    trees = 0
    for index, (got, want) in enumerate(zip(remote, local)):
        _expect_same_trees(got, want, f"{topology} batch {index}")
        trees = max(trees, int(got["author"].batch.max()) + 1 if got["author"].batch.numel()
                    else 0)
    assert trees > 1  # several seeds' trees reached authors


@pytest.mark.parametrize("topology", ["worker", "server-client"])
@pytest.mark.parametrize("drop_last", [False, True])
def test_ranks_split_every_epoch(timed, topology, drop_last):
    whole = timed[3]
    ids = np.arange(37)
    options = dict(batch_size=8, input_nodes=("paper", ids), shuffle=True, seed=5,
                   drop_last=drop_last)
    seen = []
    for rank in range(3):
        remote = _remote(timed, topology, rank=rank, world_size=3, **options)
        # The local loader splits by the same policy: rank r's batches are its batches.
        local = NeighborLoader(whole, FANOUTS, rank=rank, world_size=3, **options)
        assert len(remote) == len(local) == (12 // 8 if drop_last else 2)
        for epoch in range(2):
            positions = remote.rank_positions(epoch)
            assert len(positions) == (12 if drop_last else 13)
            np.testing.assert_array_equal(positions, local.rank_positions(epoch))
            remote.set_epoch(epoch)
            local.set_epoch(epoch)
            count = 0
            for index, (got, want) in enumerate(zip(remote, local)):
                _expect_same(got, want, f"rank {rank} epoch {epoch} batch {index}")
                np.testing.assert_array_equal(got["paper"].input_id.numpy(),
                                              positions[index * 8:(index + 1) * 8])
                if epoch == 0:
                    seen.append(got["paper"].input_id.numpy())
                count += 1
            assert count == len(local)
    seen = np.concatenate(seen)
    if drop_last:  # 36 of 37 (the tail cut), each once; the batches' tails cut too
        assert len(set(seen.tolist())) == len(seen) == 3 * 8
    else:  # every input node, two repeated to pad 37 to 39
        assert set(seen.tolist()) == set(range(37)) and len(seen) == 39


def test_time_errors_name_the_type(timed, tmp_path):
    parts_dir, servers, _, _ = timed
    addresses = [s.address for s in servers]
    with pytest.raises(volley.VolleyValueError, match="node type 'author' must have one entry "
                       r"per node \(200\), got 7"):
        write_times(parts_dir, node_time={"author": np.zeros(7, dtype=np.int64)})
    with pytest.raises(volley.VolleyValueError, match="venue"):
        write_times(parts_dir, node_time={"venue": np.zeros(7, dtype=np.int64)})
    with pytest.raises(volley.VolleyValueError, match="author__writes__paper.*1200"):
        write_times(parts_dir, edge_time={WRITES: np.zeros(5, dtype=np.int64)})
    with pytest.raises(volley.VolleyValueError, match="integer"):
        write_times(parts_dir, node_time={"paper": np.zeros(300)})
    base = dict(input_nodes=("paper", np.arange(10)), batch_size=5)
    with pytest.raises(volley.VolleyValueError, match="input_time .*type 'paper' \\(10\\), got shape \\[3\\]"):
        vd.DistNeighborLoader(addresses, FANOUTS, time_attr="node_time", input_time=[1, 2, 3],
                              **base)
    with pytest.raises(volley.VolleyValueError, match="edge time needs input_time.*'paper'"):
        vd.DistNeighborLoader(addresses, FANOUTS, time_attr="edge_time", **base)
    with pytest.raises(volley.VolleyValueError, match="of type 'institution' have no node time"):
        vd.DistNeighborLoader(addresses, FANOUTS, time_attr="node_time",
                              input_nodes=("institution", [0, 1]))
    with pytest.raises(volley.VolleyValueError, match="input_time was given without time_attr"):
        vd.DistNeighborLoader(addresses, FANOUTS, input_time=np.arange(10), **base)
    with pytest.raises(volley.VolleyValueError,  # as for a homogeneous graph
                       match="temporal sampling does not support weighted sampling yet"):
        vd.DistNeighborLoader(addresses, FANOUTS, time_attr="node_time", weighted=True, **base)
    # A directory without times, and a time file of the wrong length written by hand.
    bare = str(tmp_path / "bare-2")
    volley.partition(_dataset(seed=3), bare, 2, method="random")
    plain = [vd.serve(bare, p) for p in range(2)]
    try:
        with pytest.raises(volley.VolleyValueError, match="needs node times.*write_times"):
            vd.DistNeighborLoader([s.address for s in plain], FANOUTS, time_attr="node_time",
                                  **base)
    finally:
        for server in plain:
            server.shutdown()
    np.save(os.path.join(bare, "author.node_time.npy"), np.zeros(150, dtype=np.int64))
    with pytest.raises(volley.VolleyValueError, match=r"node type 'author' .*200 entries"):
        vd.serve(bare, 0)
    problems = verify_hetero_partitioned_dataset(bare)
    assert len(problems) == 1 and "author.node_time.npy" in problems[0], problems


def test_volley_serve_and_info_read_the_times(timed):
    parts_dir, servers, _, whole = timed
    cli = _cli()
    info = subprocess.run([cli, "info", parts_dir], capture_output=True, text=True, check=True)
    assert ("times: paper (node time) author (node time) author__writes__paper (edge time) "
            "paper__cites__paper (edge time)") in info.stdout, info.stdout
    process = subprocess.Popen([cli, "serve", parts_dir, "--part", "0", "--listen",
                                "127.0.0.1:0"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True)
    try:
        line = process.stdout.readline()
        assert "listening on" in line, (line, process.stderr.read() if process.poll() else "")
        addresses = [line.strip().rsplit(" ", 1)[-1], servers[1].address]
        options = dict(batch_size=20, input_nodes=("paper", np.arange(40)), seed=2,
                       time_attr="edge_time", input_time=np.full(40, 30))
        loader = vd.DistNeighborLoader(addresses, FANOUTS, **options)
        for index, (got, want) in enumerate(zip(loader, NeighborLoader(whole, FANOUTS,
                                                                       **options))):
            _expect_same_trees(got, want, f"volley serve, batch {index}")
    finally:
        process.terminate()
        process.wait(timeout=30)
