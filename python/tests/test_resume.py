"""Resumable loaders: ``state_dict()`` taken anywhere in an epoch, loaded into a new loader with the
same arguments, continues with exactly the batches not yet taken (both graph kinds, node and
link loaders, locally and over the service)."""

from __future__ import annotations

import numpy as np
import pytest

import volley
from volley.loader import LinkNeighborLoader, NeighborLoader

torch = pytest.importorskip("torch")
pytest.importorskip("torch_geometric")
from torch_geometric.data import HeteroData  # noqa: E402

from test_data_loader import WRITES, fingerprint, heterogeneous, homogeneous  # noqa: E402

MAKERS = {
    "node": lambda: NeighborLoader(homogeneous(), [3, 2], batch_size=16, shuffle=True, seed=7,
                                   num_workers=2),
    "link": lambda: LinkNeighborLoader(homogeneous(), [3], batch_size=100, shuffle=True, seed=7,
                                       neg_sampling_ratio=1.0, num_workers=2),
    "hetero-node": lambda: NeighborLoader(heterogeneous(), [3, 2], input_nodes="paper",
                                          batch_size=8, shuffle=True, seed=7, num_workers=2),
    "hetero-link": lambda: LinkNeighborLoader(heterogeneous(), [3], edge_label_index=WRITES,
                                              batch_size=40, shuffle=True, seed=7,
                                              neg_sampling="binary", num_workers=2),
}


def take(loader, count):
    """The fingerprints of the next `count` batches of a new epoch (the iterator then dropped)."""
    iterator = iter(loader)
    return [fingerprint(next(iterator)) for _ in range(count)]


@pytest.mark.parametrize("kind", list(MAKERS))
def test_a_loaded_state_continues_with_the_batches_left(kind):
    reference = MAKERS[kind]()
    epochs = [[fingerprint(b) for b in reference] for _ in range(2)]
    count = len(epochs[0])
    assert count >= 4 and epochs[0] != epochs[1]
    assert reference.state_dict() == {"epoch": 2, "batches_taken": 0, "seed": 7,
                                      "num_batches": count}
    for taken in (0, 1, count // 2, count - 1):
        first = MAKERS[kind]()
        assert take(first, taken) == epochs[0][:taken]
        state = first.state_dict()
        assert state["epoch"] == 0 and state["batches_taken"] == taken
        resumed = MAKERS[kind]()
        resumed.load_state_dict(state)
        assert [fingerprint(b) for b in resumed] == epochs[0][taken:]
        assert [fingerprint(b) for b in resumed] == epochs[1]  # then the next epoch, whole


def test_a_state_at_the_end_of_an_epoch_starts_the_next():
    loader = MAKERS["node"]()
    whole = [fingerprint(b) for b in loader]
    second = [fingerprint(b) for b in loader]
    other = MAKERS["node"]()
    other.load_state_dict({"epoch": 0, "batches_taken": len(whole), "seed": 7,
                           "num_batches": len(whole)})
    assert list(other) == []  # nothing left of epoch 0
    assert [fingerprint(b) for b in other] == second


def test_a_state_from_a_frameworks_sampler_skips_its_first_batches():
    sampler = list(np.random.default_rng(0).permutation(120))
    loader = NeighborLoader(homogeneous(), [2], batch_size=16, sampler=sampler, seed=3)
    whole = [b.input_id.tolist() for b in loader]
    again = NeighborLoader(homogeneous(), [2], batch_size=16, sampler=sampler, seed=3)
    again.load_state_dict({"epoch": 0, "batches_taken": 3, "seed": 3, "num_batches": len(whole)})
    assert [b.input_id.tolist() for b in again] == whole[3:]


@pytest.mark.parametrize("change, message", [
    (dict(seed=8), "saved by a loader with seed 8, this one has seed 7"),
    (dict(num_batches=3), "3 batches per epoch, this one has 8"),
    (dict(batches_taken=9), "batches_taken 9: not a position"),
    (dict(epoch=-1), "epoch -1"),
])
def test_a_state_that_does_not_fit_is_refused(change, message):
    loader = MAKERS["node"]()
    state = dict(loader.state_dict(), **change)
    with pytest.raises(volley.VolleyValueError, match=message):
        loader.load_state_dict(state)
    with pytest.raises(volley.VolleyValueError, match="lacks batches_taken"):
        loader.load_state_dict({"epoch": 0, "seed": 7, "num_batches": 8})


# --- over the service ---------------------------------------------------------------------------

dist_only = pytest.mark.skipif(not volley._volley._has_dist, reason="built without gRPC")


@pytest.fixture(scope="module")
def cora_parts(tmp_path_factory, cora_dir):
    out = str(tmp_path_factory.mktemp("cora-2-resume"))
    volley.partition(cora_dir, out, 2, method="random", seed=0)
    return out


@pytest.fixture(scope="module")
def typed_parts(tmp_path_factory):
    from test_dist_hetero import _dataset

    out = str(tmp_path_factory.mktemp("typed-2-resume") / "typed-2")
    volley.partition(_dataset(), out, 2, method="random")
    return out


def _resumes(make, taken=3):
    whole = [fingerprint(b) for b in make()]
    first = make()
    take(first, taken)
    again = make()
    again.load_state_dict(first.state_dict())
    assert [fingerprint(b) for b in again] == whole[taken:]


@dist_only
@pytest.mark.timeout(120)
@pytest.mark.parametrize("topology", ["worker", "server-client"])
def test_distributed_loaders_resume(cora_parts, typed_parts, topology):
    import volley.dist as vd

    for parts, inputs in ((cora_parts, np.arange(0, 2708, 7)),
                          (typed_parts, ("paper", np.arange(0, 300, 2)))):
        with vd.serve(parts, 1) as s1, vd.serve(parts, 0, peers=["", s1.address]) as s0:
            where = {"server": s0.address} if topology == "server-client" else {"local": s0}
            _resumes(lambda: vd.DistNeighborLoader(
                [s0.address, s1.address], [3, 2], batch_size=32, input_nodes=inputs,
                shuffle=True, seed=5, topology=topology, deadline=10, **where))


def test_typed_batches_keep_their_kind():
    loader = MAKERS["hetero-node"]()
    loader.load_state_dict(dict(loader.state_dict(), batches_taken=2))
    assert all(isinstance(b, HeteroData) for b in loader)
