"""Replicas of a part and failover: a killed or frozen replica in the worker topology, a lost
streaming server in server-client; each epoch completes with the single-machine batches."""

from __future__ import annotations

import os
import signal
import time

import pytest

import volley
from volley.loader import NeighborLoader

if not volley._volley._has_dist:
    pytest.skip("built without the distributed service (gRPC)", allow_module_level=True)

import volley.dist as vd  # noqa: E402
from test_dist import FIELDS, parts_dir, spawn, whole  # noqa: E402,F401 (its fixtures)

torch = pytest.importorskip("torch")
if os.environ.get("VOLLEY_TEST_SANITIZED") == "1":  # the servers here are the release CLI's
    pytest.skip("the failover paths run under ASan in the C++ suite (DistReplicaTest); these "
                "tests' servers are release processes", allow_module_level=True)


@pytest.mark.timeout(120)
@pytest.mark.parametrize("signal_name", ["SIGKILL", "SIGSTOP"])
def test_a_lost_replica_is_failed_over_with_the_same_batches(parts_dir, whole, spawn,
                                                            signal_name):
    # Part 1 served twice (replicas "a|b"); one replica killed or frozen mid-epoch: the epoch
    # completes with the single-machine batches, none lost or repeated, the frozen one costing
    # one deadline.
    deadline = 1.0
    first, second = spawn(parts_dir, 1), spawn(parts_dir, 1)
    options = dict(batch_size=16, shuffle=True, seed=5)
    expected = list(NeighborLoader(whole, [5, 3], num_workers=2, **options))
    loader = vd.DistNeighborLoader(["", [first.address, second.address]], [5, 3],
                                   topology="worker", local=(parts_dir, 0), num_workers=2,
                                   deadline=deadline, **options)
    actual, lost_at = [], None
    for batch in loader:
        actual.append(batch)
        if len(actual) == 3:
            os.kill(first.pid, getattr(signal, signal_name))
            lost_at = time.monotonic()
    elapsed = time.monotonic() - lost_at
    try:
        assert len(actual) == len(expected) == len(loader)
        for a, b in zip(actual, expected):
            for field in FIELDS:
                assert torch.equal(getattr(a, field), getattr(b, field)), field
        assert elapsed < deadline + 10, elapsed
        seen = torch.cat([b.input_id for b in actual]).sort().values  # each seed once
        assert torch.equal(seen, torch.arange(len(seen)))
    finally:
        if signal_name == "SIGSTOP":
            os.kill(first.pid, signal.SIGCONT)


@pytest.mark.timeout(120)
@pytest.mark.parametrize("signal_name", ["SIGKILL", "SIGSTOP"])
def test_a_lost_streaming_server_is_replaced_with_the_same_batches(parts_dir, whole, spawn,
                                                                  signal_name):
    # Server-client: two streaming servers; the one streaming killed or frozen mid-epoch: the
    # other streams the rest of the epoch, from the first batch not yet delivered.
    s1 = spawn(parts_dir, 1)
    first = spawn(parts_dir, 0, peers=["", s1.address])
    second = spawn(parts_dir, 0, peers=["", s1.address])
    options = dict(batch_size=16, shuffle=True, seed=6)
    expected = list(NeighborLoader(whole, [5, 3], num_workers=2, **options))
    loader = vd.DistNeighborLoader([first.address, s1.address], [5, 3],
                                   topology="server-client", num_workers=2, deadline=1.0,
                                   server=[first.address, second.address], **options)
    actual = []
    for batch in loader:
        actual.append(batch)
        if len(actual) == 3:
            os.kill(first.pid, getattr(signal, signal_name))
    assert len(actual) == len(expected) == len(loader)
    for a, b in zip(actual, expected):
        for field in FIELDS:
            assert torch.equal(getattr(a, field), getattr(b, field)), field
