"""Server-client epoch streams and the server's handler threads (issue 17, item 4): trainers
that take a batch and pause keep their stream open, and an open stream holds a handler thread
while its reader pauses. A server keeps max(4, threads / 4) threads for other calls: once the
rest hold streams, one more stream is refused as busy (``VolleyConnectionError``), and connect,
hops and rows keep working."""

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


@pytest.mark.timeout(120)
def test_paused_streams_do_not_starve_other_calls(parts):
    threads = 8  # 4 kept for other calls: at most 4 streams
    with vd.serve(parts, 1, threads=threads) as s1, \
            vd.serve(parts, 0, threads=threads, peers=["", s1.address]) as s0:
        addresses = [s0.address, s1.address]

        def paused_iterator():
            # Batches of ~1,000 nodes with 1,433 float32 features: a few fill the stream's
            # window, so the server's handler waits for this reader.
            loader = vd.DistNeighborLoader(
                addresses, [10, 10], batch_size=64, topology="server-client",
                server=s0.address, deadline=5.0, connect_timeout=5.0, num_workers=1)
            iterator = iter(loader)
            next(iterator)
            return iterator

        paused = [paused_iterator() for _ in range(threads // 2)]
        with pytest.raises(volley.VolleyConnectionError, match="busy"):
            paused.append(paused_iterator())
        # Every other call still has threads.
        graph = vd.connect(addresses, connect_timeout=5.0, deadline=5.0)
        assert graph.labels[np.arange(100)].shape == (100,)
        assert vd.DistSampler(graph, [5, 5]).sample(np.arange(10))[1] == 10
        del paused
