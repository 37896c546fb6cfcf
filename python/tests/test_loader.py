"""volley.loader.NeighborLoader: PyG's NeighborLoader interface on the C++ pipeline."""

from __future__ import annotations

import os

import numpy as np
import pytest

import volley
from volley.loader import Batch, NeighborLoader

from conftest import as_numpy

torch = pytest.importorskip("torch")
pyg = pytest.importorskip("torch_geometric")
from torch_geometric.data import Data  # noqa: E402


def random_data(num_nodes=400, num_edges=3000, num_features=8, num_classes=4, seed=0):
    generator = torch.Generator().manual_seed(seed)
    edge_index = torch.randint(0, num_nodes, (2, num_edges), generator=generator)
    x = torch.randn(num_nodes, num_features, generator=generator)
    y = torch.randint(0, num_classes, (num_nodes,), generator=generator)
    return Data(x=x, y=y, edge_index=edge_index, num_nodes=num_nodes)


def thread_count() -> int:
    return len(os.listdir("/proc/self/task"))


def test_batches_carry_pyg_fields_with_pyg_meaning():
    data = random_data()
    train = torch.arange(0, 400, 3)
    loader = NeighborLoader(data, num_neighbors=[5, 3], batch_size=32, input_nodes=train,
                            shuffle=True, num_workers=2, seed=1)
    assert len(loader) == (len(train) + 31) // 32
    edges = set(map(tuple, data.edge_index.t().tolist()))
    for batch in loader:
        assert isinstance(batch, Data)
        n = batch.n_id.numel()
        assert batch.x.dtype == torch.float32 and batch.x.shape == (n, 8)
        assert torch.equal(batch.x, data.x[batch.n_id])
        assert torch.equal(batch.y, data.y[batch.n_id])
        # Seeds first; input_id points into input_nodes.
        assert torch.equal(batch.n_id[: batch.batch_size], train[batch.input_id])
        # edge_index is local; e_id names the original column of data.edge_index.
        assert batch.edge_index.dtype == torch.int64
        assert torch.equal(batch.n_id[batch.edge_index], data.edge_index[:, batch.e_id])
        for source, target in batch.n_id[batch.edge_index].t().tolist():
            assert (source, target) in edges
        assert sum(batch.num_sampled_nodes) == n
        assert sum(batch.num_sampled_edges) == batch.edge_index.size(1)
        assert batch.num_sampled_nodes[0] == batch.batch_size
        # Hop-0 edges point into the seeds, at most 5 per seed.
        hop0 = batch.edge_index[:, : batch.num_sampled_edges[0]]
        assert bool((hop0[1] < batch.batch_size).all())
        assert int(torch.bincount(hop0[1]).max()) <= 5


def test_every_input_node_once_per_epoch_and_reproducible():
    data = random_data()
    mask = torch.zeros(400, dtype=torch.bool)
    mask[::2] = True
    loader = NeighborLoader(data, [4, 4], batch_size=23, input_nodes=mask, shuffle=True,
                            num_workers=3, seed=7)
    epochs = []
    for _ in range(2):
        seeds = torch.cat([b.n_id[: b.batch_size] for b in loader])
        assert sorted(seeds.tolist()) == list(range(0, 400, 2))
        epochs.append(seeds)
    assert not torch.equal(epochs[0], epochs[1]), "shuffle must differ between epochs"
    again = NeighborLoader(data, [4, 4], batch_size=23, input_nodes=mask, shuffle=True,
                           num_workers=1, seed=7)
    first = [b for b in again][0]
    reference = [b for b in NeighborLoader(data, [4, 4], batch_size=23, input_nodes=mask,
                                           shuffle=True, num_workers=4, seed=7)][0]
    assert torch.equal(first.n_id, reference.n_id)
    assert torch.equal(first.e_id, reference.e_id)


def test_pyg_training_loop_runs_unchanged():
    from torch_geometric.nn import SAGEConv

    torch.manual_seed(0)
    data = random_data(num_features=16)
    conv1, conv2 = SAGEConv(16, 32), SAGEConv(32, 4)
    params = list(conv1.parameters()) + list(conv2.parameters())
    optimizer = torch.optim.Adam(params, lr=0.01)
    loader = NeighborLoader(data, num_neighbors=[10, 10], batch_size=64, shuffle=True)
    losses = []
    for _ in range(3):
        for batch in loader:
            optimizer.zero_grad()
            hidden = conv1(batch.x, batch.edge_index).relu()
            out = conv2(hidden, batch.edge_index)[: batch.batch_size]
            loss = torch.nn.functional.cross_entropy(out, batch.y[: batch.batch_size])
            loss.backward()
            optimizer.step()
            losses.append(float(loss))
    assert all(np.isfinite(losses))
    assert np.mean(losses[-5:]) < np.mean(losses[:5])


def test_volley_dataset_input_and_uint8_features(cora_dir):
    cora = volley.load_dataset(cora_dir)
    loader = NeighborLoader(cora, [5], batch_size=50, input_nodes=cora.train_idx, seed=0)
    batch = next(iter(loader))
    assert batch.x.dtype == torch.float32
    assert torch.equal(batch.x, cora.x[batch.n_id].float())
    assert torch.equal(batch.y, cora.y[batch.n_id])


def test_batch_fallback_without_pyg(monkeypatch):
    monkeypatch.setattr(volley.loader, "_pyg_data_class", lambda: None)
    loader = NeighborLoader(random_data(), [3], batch_size=10, seed=0)
    batch = next(iter(loader))
    assert isinstance(batch, Batch)
    for field in ("x", "y", "edge_index", "n_id", "e_id", "batch_size", "num_sampled_nodes",
                  "num_sampled_edges", "input_id"):
        assert hasattr(batch, field), field
    assert batch.num_nodes == batch.n_id.numel()


def test_batches_stay_valid_while_referenced():
    data = random_data()
    loader = NeighborLoader(data, [5, 5], batch_size=16, num_workers=2, prefetch=1, seed=3)
    kept = [batch for batch in loader]  # every batch kept alive at once
    for batch in kept:
        assert torch.equal(batch.x, data.x[batch.n_id])


@pytest.mark.parametrize("kind", ["Data", "HeteroData"])
def test_worker_failure_surfaces_as_exception(kind):
    """A batch that fails on a worker raises at its place in the epoch, which then ends: for
    both graph kinds (one pipeline)."""
    def fail_on_third(index):
        if index == 2:
            raise KeyError("injected failure")

    if kind == "Data":
        data, typed = random_data(), {}
    else:
        from test_hetero import toy_hetero

        data, typed = toy_hetero(), {"input_nodes": "paper"}
    loader = NeighborLoader(data, [3], batch_size=10, num_workers=2, seed=0,
                            _on_batch_start=fail_on_third, **typed)
    iterator = iter(loader)
    next(iterator)
    next(iterator)
    with pytest.raises(RuntimeError, match="injected failure"):
        next(iterator)
    with pytest.raises(StopIteration):
        next(iterator)


def settled_thread_count(limit: float = 5.0) -> int:
    """The thread count, after a garbage collection, once it has not changed for 0.3 s (threads
    that earlier tests' objects hold until collected, or that are still ending, such as a pool
    shut down without waiting, are not counted)."""
    import gc
    import time

    gc.collect()
    count, stable_since, start = thread_count(), time.monotonic(), time.monotonic()
    while time.monotonic() - stable_since < 0.3 and time.monotonic() - start < limit:
        time.sleep(0.05)
        now = thread_count()
        if now != count:
            count, stable_since = now, time.monotonic()
    return count


def test_early_exit_leaves_no_threads():
    before = settled_thread_count()
    loader = NeighborLoader(random_data(), [10, 10], batch_size=5, num_workers=4, seed=0)
    for i, _ in enumerate(loader):
        if i == 2:
            break
    import gc

    gc.collect()
    assert settled_thread_count() == before


@pytest.mark.parametrize(
    "kwargs, error, message",
    [
        (dict(num_neighbors=[5, -3]), ValueError, r"num_neighbors\[1\] must be >= -1, got -3"),
        (dict(num_neighbors=[5], input_nodes=[1, 400]), IndexError, "input node 400"),
        (dict(num_neighbors=[5], input_nodes=[2, 2]), ValueError, "appears twice"),
        (dict(num_neighbors=[5], batch_size=0), ValueError, "batch_size must be >= 1"),
        (dict(num_neighbors=[5], weighted=True), ValueError, "edge_weight"),
    ],
)
def test_bad_arguments_raise_precise_errors(kwargs, error, message):
    with pytest.raises(error, match=message):
        NeighborLoader(random_data(), **kwargs)


def test_rejects_non_graph_data():
    with pytest.raises(TypeError, match="edge_index"):
        NeighborLoader(object(), [5])


# --- the loader's policy lives in C++ -----------------------------------------------------------


def test_options_cross_as_one_typed_struct():
    from volley import _volley

    options = _volley.LoaderOptions(
        _volley.NeighborSamplerOptions([5, -1], replace=True), batch_size=7, shuffle=True,
        seed=3, rank=1, world_size=2, feature_dtype="float16",
    )
    assert (options.batch_size, options.shuffle, options.rank, options.world_size) == (7, True, 1,
                                                                                        2)
    assert options.sampler.fanouts == [5, -1] and options.sampler.replace
    assert options.feature_dtype == "float16"
    assert "world_size=2" in repr(options)
    with pytest.raises(TypeError):
        _volley.LoaderOptions(_volley.NeighborSamplerOptions([5]), batch_size="64")
    with pytest.raises(TypeError):
        _volley.LoaderOptions(_volley.NeighborSamplerOptions([5]), unknown_option=1)
    loader = NeighborLoader(random_data(), [4, 2], batch_size=10, shuffle=True, seed=9, rank=1,
                            world_size=3, num_workers=2, feature_dtype="float32")
    native = loader._native.options
    assert (native.batch_size, native.seed, native.rank, native.world_size) == (10, 9, 1, 3)
    assert native.sampler.fanouts == [4, 2] and native.num_threads == 2


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(rank=3, world_size=3), "got rank=3, world_size=3"),
        (dict(num_workers=-2), "num_workers must be >= 0, got -2"),
        (dict(prefetch=-1), "prefetch must be >= 0, got -1"),
        (dict(input_nodes=[1, 2], rank=0, world_size=3, drop_last=True),
         "2 input nodes cannot be split over 3 ranks with drop_last"),
    ],
)
def test_options_are_checked_at_construction_with_the_value(kwargs, message):
    with pytest.raises(ValueError, match=message):
        NeighborLoader(random_data(), [3], **kwargs)


def test_one_native_loader_serves_every_epoch_of_a_rank():
    data = random_data()
    train = torch.arange(1, 400, 2)
    loader = NeighborLoader(data, [3, 3], batch_size=16, input_nodes=train, shuffle=True, seed=4,
                            rank=1, world_size=3, num_workers=2)
    native = loader._native
    for epoch in range(3):
        positions = loader.rank_positions(epoch)
        assert len(positions) == 67  # ceil(200 / 3)
        ids = torch.cat([batch.input_id for batch in loader])
        assert loader._native is native
        np.testing.assert_array_equal(ids.numpy(), positions)
        # The rank's share of the single-process order: positions 1, 4, 7, ... of it.
        single = NeighborLoader(data, [3, 3], batch_size=16, input_nodes=train, shuffle=True,
                                seed=4)
        order = single.rank_positions(epoch)
        np.testing.assert_array_equal(positions, np.resize(order, 201)[1::3])


@pytest.mark.parametrize("kind", ["Data", "HeteroData"])
def test_disjoint_inputs_may_repeat_a_tree_each(kind):
    """With disjoint sampling an input node may repeat (a tree each), for both graph kinds; without
    it, inputs are distinct."""
    seeds = torch.tensor([3, 3, 5])
    if kind == "Data":
        data, inputs = random_data(), seeds
    else:
        from test_hetero import toy_hetero

        data, inputs = toy_hetero(), ("paper", seeds)
    batch = next(iter(NeighborLoader(data, [2], input_nodes=inputs, batch_size=3, disjoint=True)))
    store = batch if kind == "Data" else batch["paper"]
    assert store.n_id[:3].tolist() == [3, 3, 5] and store.batch[:3].tolist() == [0, 1, 2]
    with pytest.raises(volley.VolleyValueError, match="appears twice"):
        NeighborLoader(data, [2], input_nodes=inputs, batch_size=3)
