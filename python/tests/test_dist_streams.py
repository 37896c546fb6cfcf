"""Server-client epoch streams and the server's threads: trainers that take a
batch and pause keep their stream open. A paused stream holds no server thread (the stream is a
callback reactor whose work runs only while a batch is fetched), so many more streams than
handler threads can pause while connect, hops and rows keep working; the number of open
streams is capped (``max_epoch_streams``) and one more is refused as busy
(``VolleyConnectionError``)."""

from __future__ import annotations

import numpy as np
import pytest

import volley

if not volley._volley._has_dist:
    pytest.skip("built without the distributed service (gRPC)", allow_module_level=True)

import volley.dist as vd  # noqa: E402

pytest.importorskip("torch")


@pytest.fixture(scope="module")
def parts(tmp_path_factory, cora_dir):
    out = tmp_path_factory.mktemp("cora-2-streams")
    volley.partition(cora_dir, out, 2, method="random", seed=0)
    return str(out)


def paused_iterator(addresses, server):
    # Batches of ~1,000 nodes with 1,433 float32 features: a few fill the stream's window, so
    # the server's stream waits for this reader.
    loader = vd.DistNeighborLoader(
        addresses, [10, 10], batch_size=64, topology="server-client",
        server=server, deadline=5.0, connect_timeout=5.0, num_workers=1)
    iterator = iter(loader)
    next(iterator)
    return iterator


def check_other_calls(addresses):
    graph = vd.connect(addresses, connect_timeout=5.0, deadline=5.0)
    assert graph.labels[np.arange(100)].shape == (100,)
    assert vd.DistSampler(graph, [5, 5]).sample(np.arange(10))[1] == 10


@pytest.mark.timeout(180)
def test_paused_streams_hold_no_thread(parts):
    threads = 8
    with vd.serve(parts, 1, threads=threads) as s1, \
            vd.serve(parts, 0, threads=threads, peers=["", s1.address]) as s0:
        addresses = [s0.address, s1.address]
        # Three times as many paused streams as handler threads (the synchronous server
        # refused the fifth).
        paused = [paused_iterator(addresses, s0.address) for _ in range(3 * threads)]
        check_other_calls(addresses)
        # A paused stream resumes where it stopped and finishes its epoch.
        rest = list(paused[0])
        assert len(rest) == (2708 + 63) // 64 - 1
        del paused


@pytest.mark.timeout(120)
def test_streams_beyond_the_cap_are_refused_as_busy(parts):
    with vd.serve(parts, 1, threads=8) as s1, \
            vd.serve(parts, 0, threads=8, peers=["", s1.address], max_epoch_streams=2) as s0:
        addresses = [s0.address, s1.address]
        paused = [paused_iterator(addresses, s0.address) for _ in range(2)]
        with pytest.raises(volley.VolleyConnectionError, match="busy"):
            paused.append(paused_iterator(addresses, s0.address))
        check_other_calls(addresses)
        # A stream that ends frees its place.
        del paused[0]
        import gc
        gc.collect()
        for _ in range(50):
            try:
                paused.append(paused_iterator(addresses, s0.address))
                break
            except volley.VolleyConnectionError:
                import time
                time.sleep(0.1)
        assert len(paused) == 2
        del paused


def test_a_negative_stream_cap_is_refused(parts):
    with pytest.raises(volley.VolleyValueError, match="max_epoch_streams must be >= 0, got -1"):
        vd.serve(parts, 0, max_epoch_streams=-1)
