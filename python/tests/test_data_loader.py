"""Every loader is a ``torch.utils.data.DataLoader`` with PyG's attributes, honours a framework's
sampler, pickles and deep-copies to a loader with the same batches, and reads ``data``'s
attributes when an epoch starts (both graph kinds)."""

from __future__ import annotations

import copy
import pickle
import subprocess
import sys

import numpy as np
import pytest

import volley
from volley.loader import LinkNeighborLoader, NeighborLoader

torch = pytest.importorskip("torch")
pytest.importorskip("torch_geometric")
from torch.utils.data import DataLoader, DistributedSampler  # noqa: E402
from torch_geometric.data import Data, HeteroData  # noqa: E402
from conftest import runs_other_interpreters

WRITES = ("author", "writes", "paper")


def homogeneous(seed=0):
    generator = torch.Generator().manual_seed(seed)
    return Data(x=torch.randn(120, 4, generator=generator), y=torch.arange(120),
                edge_index=torch.randint(0, 120, (2, 900), generator=generator), num_nodes=120)


def heterogeneous(seed=0):
    generator = torch.Generator().manual_seed(seed)
    data = HeteroData()
    data["paper"].x = torch.randn(60, 3, generator=generator)
    data["author"].x = torch.randn(40, 3, generator=generator)
    data["author"].num_nodes = 40
    edges = torch.stack([torch.randint(0, 40, (300,), generator=generator),
                         torch.randint(0, 60, (300,), generator=generator)])
    data[WRITES].edge_index = edges
    data["paper", "rev_writes", "author"].edge_index = edges.flip(0)
    return data


def loaders():
    """One loader of each local class and graph kind, with a shuffled order."""
    return {
        "node": NeighborLoader(homogeneous(), [3, 2], batch_size=16, shuffle=True, num_workers=2),
        "link": LinkNeighborLoader(homogeneous(), [3], batch_size=64, shuffle=True,
                                   neg_sampling_ratio=1.0, num_workers=2),
        "hetero-node": NeighborLoader(heterogeneous(), [3, 2], input_nodes="paper",
                                      batch_size=8, shuffle=True, num_workers=2),
        "hetero-link": LinkNeighborLoader(heterogeneous(), [3], edge_label_index=WRITES,
                                          batch_size=32, shuffle=True, num_workers=2),
    }


def fingerprint(batch):
    """What identifies a batch: its nodes, edges and input ids (per type for a HeteroData)."""
    stores = batch.stores if isinstance(batch, HeteroData) else [batch]
    return [(key, value.tolist()) for store in stores for key, value in sorted(store.items())
            if key in ("n_id", "e_id", "input_id", "edge_label_index", "edge_label")]


def epoch(loader, number=0):
    loader.set_epoch(number)
    return [fingerprint(batch) for batch in loader]


@pytest.mark.parametrize("kind", ["node", "link", "hetero-node", "hetero-link"])
def test_every_loader_is_a_data_loader_with_pygs_attributes(kind):
    loader = loaders()[kind]
    assert isinstance(loader, DataLoader)
    inputs = {"node": 120, "link": 900, "hetero-node": 60, "hetero-link": 300}[kind]
    assert loader.dataset == range(inputs) and len(loader.dataset) == inputs
    assert type(loader.sampler).__name__ == "RandomSampler" and len(loader.sampler) == inputs
    assert loader.batch_sampler.batch_size == loader.batch_size
    assert loader.num_workers == 2 and loader.drop_last is False and loader.generator is None
    assert loader.node_sampler is not None
    # collate_fn builds the batch of input positions, as PyG's does.
    batch = loader.collate_fn([1, 0, 3])
    store = batch if kind in ("node", "link") else batch[
        "paper" if kind == "hetero-node" else WRITES]
    assert store.input_id.tolist() == [1, 0, 3]


def test_collate_fn_maps_positions_to_the_input_nodes():
    data = homogeneous()
    loader = NeighborLoader(data, [2], batch_size=4, input_nodes=torch.arange(100, 110))
    batch = loader.collate_fn([2, 5])
    assert batch.n_id[:2].tolist() == [102, 105] and batch.input_id.tolist() == [2, 5]
    with pytest.raises(volley.VolleyIndexError, match=r"index\[1\] = 10 is not an input position"):
        loader.collate_fn([0, 10])


@pytest.mark.parametrize("kind", ["node", "hetero-node"])
def test_a_frameworks_distributed_sampler_sets_the_order(kind):
    """Lightning injects a DistributedSampler: the two ranks' batches cover the inputs once."""
    seen = []
    for rank in range(2):
        sampler = DistributedSampler(range(120 if kind == "node" else 60), num_replicas=2,
                                     rank=rank, shuffle=True, seed=4)
        data = homogeneous() if kind == "node" else heterogeneous()
        extra = {} if kind == "node" else {"input_nodes": "paper"}
        loader = NeighborLoader(data, [2], batch_size=7, sampler=sampler, **extra)
        assert loader.sampler is sampler and len(loader) == len(loader.batch_sampler)
        batches = list(loader)
        assert len(batches) == len(loader)
        for batch in batches:
            store = batch if kind == "node" else batch["paper"]
            seen += store.input_id.tolist()
            assert store.n_id[: store.batch_size].tolist() == store.input_id.tolist()
    assert sorted(seen) == list(range(120 if kind == "node" else 60))


def test_a_batch_sampler_gives_its_batches():
    loader = NeighborLoader(homogeneous(), [2], batch_sampler=[[5, 1], [7], [0, 2, 4]])
    assert loader.batch_size is None and len(loader) == 3
    assert [b.input_id.tolist() for b in loader] == [[5, 1], [7], [0, 2, 4]]


@pytest.mark.parametrize("arguments, message", [
    (dict(sampler=range(10), shuffle=True), "sampler is mutually exclusive with shuffle"),
    (dict(batch_sampler=[[0]], batch_size=4), "batch_sampler is mutually exclusive"),
    (dict(collate_fn=lambda b: b), "NeighborLoader sets collate_fn itself"),
    (dict(dataset=range(3)), "NeighborLoader sets dataset itself"),
])
def test_sampler_arguments_that_clash_are_refused(arguments, message):
    for data, extra in ((homogeneous(), {}), (heterogeneous(), {"input_nodes": "paper"})):
        with pytest.raises((volley.VolleyValueError, volley.VolleyTypeError), match=message):
            NeighborLoader(data, [2], **extra, **arguments)


@pytest.mark.parametrize("kind", ["node", "link", "hetero-node", "hetero-link"])
@pytest.mark.parametrize("how", ["pickle", "deepcopy"])
def test_a_copy_yields_the_same_batches(kind, how):
    loader = loaders()[kind]  # its seed drawn from torch: the copy must keep it
    loader.set_epoch(3)
    twin = pickle.loads(pickle.dumps(loader)) if how == "pickle" else copy.deepcopy(loader)
    assert type(twin) is type(loader) and twin._epoch == 3 and twin.seed == loader.seed
    assert epoch(twin, 1) == epoch(loader, 1)
    assert epoch(twin, 2) != epoch(twin, 1)  # shuffled: the check above can fail


_SPAWNED = """
import pickle, sys
import torch
loader = pickle.loads(sys.stdin.buffer.read())
loader.set_epoch(1)
out = [[b.n_id.tolist(), b.input_id.tolist()] for b in loader]
sys.stdout.buffer.write(pickle.dumps(out))
"""


@runs_other_interpreters
def test_a_pickle_loads_in_a_fresh_process_with_the_same_batches():
    loader = NeighborLoader(homogeneous(), [3, 2], batch_size=16, shuffle=True)
    result = subprocess.run([sys.executable, "-c", _SPAWNED], input=pickle.dumps(loader),
                            capture_output=True, check=True, timeout=120)
    loader.set_epoch(1)
    assert pickle.loads(result.stdout) == [[b.n_id.tolist(), b.input_id.tolist()]
                                           for b in loader]


def test_deleted_and_added_attributes_are_read_when_an_epoch_starts():
    loader = NeighborLoader(homogeneous(), [2], batch_size=32)
    assert "x" in next(iter(loader))
    del loader.data.x  # PyG's reddit example drops x to save work
    batch = next(iter(loader))
    assert "x" not in batch and "y" in batch
    loader.data.n_id_twice = torch.arange(120) * 2
    batch = next(iter(loader))
    assert torch.equal(batch.n_id_twice, batch.n_id * 2)
    assert torch.equal(loader(torch.tensor([3])).n_id_twice[:1], torch.tensor([6]))
    loader.data.y = torch.arange(120) + 1000  # replaced: the new values
    batch = next(iter(loader))
    assert torch.equal(batch.y, batch.n_id + 1000)


def test_typed_attributes_are_read_when_an_epoch_starts():
    loader = NeighborLoader(heterogeneous(), [2], input_nodes="paper", batch_size=16)
    del loader.data["author"].x
    batch = next(iter(loader))
    assert "x" not in batch["author"] and "x" in batch["paper"]
    loader.data["author"].z = torch.arange(40) * 3
    batch = next(iter(loader))
    assert torch.equal(batch["author"].z, batch["author"].n_id * 3)


def test_link_loader_reads_attributes_too():
    loader = LinkNeighborLoader(homogeneous(), [2], batch_size=32)
    del loader.data.x
    loader.data.w = torch.arange(120).float()
    batch = next(iter(loader))
    assert "x" not in batch and torch.equal(batch.w, batch.n_id.float())
    assert "edge_label_index" in batch  # the loader's own keys stay its own



def test_attributes_on_another_device_are_indexed_there():
    """A meta tensor stands for a CUDA one here: torch indexes it on its device."""
    data = homogeneous()
    data.x = torch.empty(120, 4, device="meta")
    data.h = torch.empty(900, 2, device="meta")  # edge-level
    for loader in (NeighborLoader(data, [2], batch_size=8, feature_dtype="float16"),
                   LinkNeighborLoader(data, [2], batch_size=8)):
        batch = next(iter(loader))
        assert batch.x.device.type == "meta" and batch.x.shape == (batch.n_id.numel(), 4)
        assert batch.h.device.type == "meta" and batch.h.shape == (batch.e_id.numel(), 2)
        assert torch.equal(batch.y, batch.n_id)  # the host attributes as before
    typed = heterogeneous()
    typed["author"].x = torch.empty(40, 3, device="meta")
    batch = next(iter(NeighborLoader(typed, [2], input_nodes="paper", batch_size=8)))
    assert batch["author"].x.device.type == "meta"
    assert batch["author"].x.shape[0] == batch["author"].n_id.numel()
    assert batch["paper"].x.device.type == "cpu"


def test_a_frameworks_sampler_runs_as_one_native_epoch():
    """A sampler's order is one native epoch over the reordered inputs (pipeline speed): the
    batches equal an unshuffled loader's over those inputs, input_id mapped back."""
    data = homogeneous()
    inputs = torch.arange(10, 110)
    order = [int(i) for i in np.random.default_rng(1).permutation(100)]
    loader = NeighborLoader(data, [3, 2], batch_size=16, input_nodes=inputs, sampler=order,
                            seed=4, num_workers=2)
    assert loader._sampler_native(np.array(order)) is not None
    plain = NeighborLoader(data, [3, 2], batch_size=16, input_nodes=inputs[order], seed=4,
                           num_workers=2)
    got, want = list(loader), list(plain)
    assert len(got) == len(want) == len(loader) == 7
    for a, b in zip(got, want):
        assert torch.equal(a.n_id, b.n_id) and torch.equal(a.edge_index, b.edge_index)
        assert a.input_id.tolist() == [order[i] for i in b.input_id.tolist()]
