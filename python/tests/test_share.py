"""Sharing graphs, datasets, features and samplers across processes (volley._share)."""

from __future__ import annotations

import hashlib
import multiprocessing
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
from volley import _share

from conftest import as_numpy, same_in_every_torch, runs_other_interpreters

# Where this process imported volley from (the dev tree or site-packages): children must import
# the same build.
PYTHON_DIR = os.path.dirname(os.path.dirname(os.path.abspath(volley.__file__)))


def _dataset(num_nodes: int = 2000, num_features: int = 16, seed: int = 0) -> volley.Dataset:
    rng = np.random.default_rng(seed)
    edges = rng.integers(0, num_nodes, size=(2, num_nodes * 8), dtype=np.int64)
    graph = volley.Graph.from_edge_index(edges, num_nodes=num_nodes, undirected=True)
    x = rng.standard_normal((num_nodes, num_features), dtype=np.float32)
    y = rng.integers(0, 5, size=num_nodes, dtype=np.int64)
    split = volley.random_split(num_nodes, seed=seed)
    return volley.Dataset(
        graph, x, y, train_idx=split.train, val_idx=split.val, test_idx=split.test, name="toy"
    )


def _digest(*arrays) -> str:
    digest = hashlib.sha256()
    for array in arrays:
        digest.update(np.ascontiguousarray(volley._tensor.to_numpy(array)).tobytes())
    return digest.hexdigest()


def _sample_digest(sampler: volley.NeighborSampler, x, seeds) -> str:
    sub = sampler.sample_subgraph(seeds, batch_index=3)
    return _digest(sub.n_id, sub.row, sub.col, sub.e_id, x[sub.n_id])


def _memfd_mappings() -> dict:
    """Sums of the smaps fields of this process's Volley memfd mappings, in kB."""
    totals = {"Rss": 0, "Pss": 0, "Private_Clean": 0, "Private_Dirty": 0}
    inside = False
    with open("/proc/self/smaps") as smaps:
        for line in smaps:
            fields = line.split()
            if "-" in fields[0] and len(fields) >= 5:  # a mapping's header line
                inside = len(fields) >= 6 and fields[5].startswith("/memfd:volley")
            elif inside and fields[0].rstrip(":") in totals:
                totals[fields[0].rstrip(":")] += int(fields[1])
    return totals


def _shmem_kb() -> int:
    with open("/proc/meminfo") as meminfo:
        for line in meminfo:
            if line.startswith("Shmem:"):
                return int(line.split()[1])
    raise AssertionError("no Shmem in /proc/meminfo")


def _dev_shm() -> set:
    """The names in /dev/shm but Python's multiprocessing semaphores (``sem.mp-*``), which tests
    running beside this one (pytest -n) create and remove at any time; Volley makes none."""
    return {name for name in os.listdir("/dev/shm") if not name.startswith("sem.mp-")}


# --- in one process ---------------------------------------------------------------------------


def test_share_memory_moves_arrays_once_and_keeps_values():
    dataset = _dataset()
    # as_numpy, not np.array: torch's Tensor.__array__ takes no `copy` keyword (numpy 2 warns).
    x_before = as_numpy(dataset.x).copy()
    indices_before = as_numpy(dataset.graph.indices).copy()
    assert not dataset.is_shared
    assert dataset.share_memory_() is dataset
    assert dataset.is_shared and dataset.graph.is_shared
    np.testing.assert_array_equal(np.asarray(dataset.x), x_before)
    np.testing.assert_array_equal(np.asarray(dataset.graph.indices), indices_before)
    state = volley._volley.dataset_state(dataset._native)
    assert state[3][0][0].startswith("memfd:")  # the features' handle
    dataset.share_memory_()  # idempotent: the same segments
    assert volley._volley.dataset_state(dataset._native) == state


def test_pickle_round_trip_attaches_instead_of_copying():
    dataset = _dataset().share_memory_()
    copy = pickle.loads(pickle.dumps(dataset))
    assert copy.is_shared and copy.num_classes == dataset.num_classes and copy.name == "toy"
    for name in ("x", "y", "train_idx", "val_idx", "test_idx"):
        np.testing.assert_array_equal(np.asarray(getattr(copy, name)), getattr(dataset, name))
    copy.x[0, 0] = 42.0  # same memory, not a copy
    assert float(dataset.x[0, 0]) == 42.0
    graph = pickle.loads(pickle.dumps(dataset.graph))
    np.testing.assert_array_equal(np.asarray(graph.indptr), dataset.graph.indptr)


def test_an_edge_split_travels_with_its_dataset(tmp_path):
    """A split dataset's supervision and negative edges are shared and pickled with it."""
    volley.split_edges(_dataset(), tmp_path / "split", seed=0)
    dataset = volley.load_dataset(tmp_path / "split")
    copy = pickle.loads(pickle.dumps(dataset))
    assert copy.is_shared
    for name in ("train_edges", "val_edges", "test_edges", "val_neg_edges", "test_neg_edges"):
        np.testing.assert_array_equal(as_numpy(getattr(copy, name)),
                                      as_numpy(getattr(dataset, name)))


def test_typed_graphs_and_datasets_pickle_by_handle_as_homogeneous_ones():
    """A HeteroDataset (and its HeteroGraph) shares once and pickles by handle: the copy reads
    the same memory, every type's arrays and counts equal."""
    torch = pytest.importorskip("torch")
    pytest.importorskip("torch_geometric")
    from test_hetero import toy_hetero

    dataset = volley.HeteroDataset.from_pyg(toy_hetero(seed=4, papers=3000), name="toy")
    assert not dataset.is_shared and not dataset.graph.is_shared
    payload = pickle.dumps(dataset)  # shares first, in place
    assert dataset.is_shared and dataset.graph.is_shared
    assert len(payload) < 4_000, "handles, not arrays"
    copy = pickle.loads(payload)
    assert copy.is_shared and copy.name == "toy"
    assert copy.num_classes_dict == dataset.num_classes_dict
    assert copy.graph.num_nodes_dict == dataset.graph.num_nodes_dict
    for edge_type in dataset.edge_types:
        assert torch.equal(copy.graph.edge_index(edge_type), dataset.graph.edge_index(edge_type))
    for field in ("x_dict", "y_dict", "train_idx_dict"):
        mine, theirs = getattr(dataset, field), getattr(copy, field)
        assert mine.keys() == theirs.keys()
        for node_type in mine:
            assert torch.equal(theirs[node_type], mine[node_type])
    copy.x_dict["paper"][0, 0] = 42.0  # the same memory, not a copy
    assert float(dataset.x_dict["paper"][0, 0]) == 42.0
    state = volley._volley.hetero_dataset_state(dataset._native)
    dataset.share_memory_()  # idempotent: the same segments
    assert volley._volley.hetero_dataset_state(dataset._native) == state
    graph = pickle.loads(pickle.dumps(dataset.graph))
    assert graph.is_shared and graph.num_edges_dict == dataset.graph.num_edges_dict
    with pytest.raises(volley.VolleyValueError, match="tuple"):
        volley._volley.hetero_dataset_from_state(("toy",))


def test_pickling_an_unshared_object_shares_it_first():
    graph = _dataset().graph
    assert not graph.is_shared
    copy = pickle.loads(pickle.dumps(graph))
    assert graph.is_shared and copy.is_shared
    np.testing.assert_array_equal(np.asarray(copy.indices), graph.indices)


def test_pickled_sampler_samples_what_the_original_samples():
    graph = _dataset().graph
    sampler = volley.NeighborSampler(graph, [5, 3], seed=11)
    sampler.sample([1, 2])  # advances the default batch index
    copy = pickle.loads(pickle.dumps(sampler))
    assert copy.sizes == [5, 3] and copy.seed == 11 and copy.graph.is_shared
    first, second = sampler.sample([3, 4, 5]), copy.sample([3, 4, 5])
    np.testing.assert_array_equal(np.asarray(first[0]), np.asarray(second[0]))


def test_feature_pickles_by_handle_and_tiered_stores_flatten():
    table = np.arange(4000, dtype=np.float32).reshape(1000, 4)
    feature = volley.Feature(table)
    clone = pickle.loads(pickle.dumps(feature))  # shares first
    assert feature.tiers[0]["location"] == "shared_memory"
    assert clone.tiers[0]["shared_name"].startswith("memfd:")
    ids = np.array([999, 0, 5])
    np.testing.assert_array_equal(volley._tensor.to_numpy(clone[ids]), table[ids])
    tiered = volley.Feature(table, cache_bytes=400, hot_order=np.arange(999, -1, -1))
    assert len(tiered.tiers) == 2
    assert tiered.share_memory_() is tiered and len(tiered.tiers) == 1
    flat = pickle.loads(pickle.dumps(tiered))
    np.testing.assert_array_equal(volley._tensor.to_numpy(flat[np.arange(1000)]), table)


@same_in_every_torch
@runs_other_interpreters
def test_handle_of_an_exited_process_fails_clearly(tmp_path):
    script = textwrap.dedent(
        """
        import pickle, sys
        import volley
        from test_share import _dataset
        dataset = _dataset().share_memory_()
        sys.stdout.buffer.write(pickle.dumps(dataset))
        """
    )
    env = dict(os.environ, PYTHONPATH=f"{PYTHON_DIR}:{os.path.dirname(__file__)}")
    before = _dev_shm()
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, env=env, timeout=60, check=True
    )
    assert _dev_shm() - before == set(), "no /dev/shm names after a normal exit"
    with pytest.raises(volley.VolleyOSError, match="memfd:.*is gone"):
        pickle.loads(result.stdout)


# --- across processes ---------------------------------------------------------------------------


def _child_attach_and_sample(payload: bytes, seeds, queue) -> None:
    dataset, sampler = pickle.loads(payload)
    x = dataset.x
    checksum = float(np.asarray(x, dtype=np.float64).sum())  # touches every page of x
    queue.put((_sample_digest(sampler, dataset.feature, seeds), checksum, _memfd_mappings()))


@pytest.mark.timeout(60)
@runs_other_interpreters
def test_spawned_child_attaches_and_samples_exactly_what_the_parent_samples():
    dataset = _dataset(num_nodes=100_000, num_features=64).share_memory_()  # x: 25.6 MB
    sampler = volley.NeighborSampler(dataset.graph, [10, 5], seed=7)
    seeds = np.arange(0, 100_000, 997, dtype=np.int64)
    payload = pickle.dumps((dataset, sampler))
    assert len(payload) < 10_000, "handles, not arrays"
    context = multiprocessing.get_context("spawn")
    queue = context.Queue()
    child = context.Process(target=_child_attach_and_sample, args=(payload, seeds, queue))
    child.start()
    digest, checksum, mappings = queue.get(timeout=50)
    child.join(timeout=10)
    assert child.exitcode == 0
    assert digest == _sample_digest(sampler, dataset.feature, seeds)
    assert checksum == pytest.approx(float(np.asarray(dataset.x, dtype=np.float64).sum()))
    # The child mapped all of x (Rss) but owns none of it privately: no copy.
    x_kb = as_numpy(dataset.x).nbytes // 1024  # torch tensor or, without torch, numpy array
    assert mappings["Rss"] >= x_kb
    assert mappings["Private_Clean"] + mappings["Private_Dirty"] == 0, mappings
    assert mappings["Pss"] <= mappings["Rss"] * 0.6, mappings  # parent holds the other half


_KILL_SCRIPT = """
import multiprocessing, os, pickle, sys, time
import numpy as np
import volley

def child(payload, ready, parent):
    dataset = pickle.loads(payload)
    float(np.asarray(dataset.x).sum())      # touch every page
    ready.set()
    # Exit once the parent is gone. Its pid comes as an argument: read here with getppid(), after
    # ready.set(), it would be the new parent's when the kill comes first, and the loop endless.
    while os.getppid() == parent:
        time.sleep(0.05)

if __name__ == "__main__":
    rows = int(sys.argv[1])
    graph = volley.Graph.from_edge_index(np.array([[0, 1], [1, 2]]), num_nodes=rows)
    x = np.ones((rows, 256), dtype=np.float32)
    dataset = volley.Dataset(graph, x).share_memory_()
    del x
    context = multiprocessing.get_context("spawn")
    ready = context.Event()
    process = context.Process(target=child, args=(pickle.dumps(dataset), ready, os.getpid()))
    process.start()
    ready.wait(60)
    print(process.pid, flush=True)
    time.sleep(600)
"""


def _gone(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] in ("Z", "X")  # zombies hold no memory
    except FileNotFoundError:
        return True


@pytest.mark.timeout(60)
@same_in_every_torch
@runs_other_interpreters
def test_no_leak_after_kill_9_of_the_parent(tmp_path):
    script = tmp_path / "share_then_wait.py"
    script.write_text(_KILL_SCRIPT)
    rows = 160_000  # x: 160 MB
    shm_before, names_before = _shmem_kb(), _dev_shm()
    parent = subprocess.Popen(
        [sys.executable, str(script), str(rows)],
        stdout=subprocess.PIPE,
        text=True,
        env=dict(os.environ, PYTHONPATH=PYTHON_DIR),
    )
    try:
        child_pid = int(parent.stdout.readline())
        grown_kb = _shmem_kb() - shm_before
        assert grown_kb > 120_000, f"expected ~160 MB of shared memory, Shmem grew {grown_kb} kB"
        os.kill(parent.pid, signal.SIGKILL)
        parent.wait(timeout=10)
        deadline = time.monotonic() + 20
        while not _gone(child_pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert _gone(child_pid), "the child should exit once its parent is gone"
    finally:
        if parent.poll() is None:
            parent.kill()
        parent.stdout.close()
    # sem.mp-*: the killed parent's multiprocessing semaphores (its Event), which its resource
    # tracker unlinks on its own schedule; not Volley's, and racy under load.
    leaked = _dev_shm() - names_before
    assert leaked == set(), "a killed run must leave nothing in /dev/shm"
    deadline = time.monotonic() + 10
    while _shmem_kb() - shm_before > 60_000 and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _shmem_kb() - shm_before < 60_000, "the segment's memory must be freed"


def test_proportional_set_size_reads_this_process():
    assert _share.proportional_set_size() > 0
    assert _share.proportional_set_size(os.getpid()) > 0


# --- data-parallel input split (volley.loader.NeighborLoader rank / world_size) -----------------


def _rank_seeds(dataset, train, rank, world_size, epoch, **options):
    from volley.loader import NeighborLoader

    loader = NeighborLoader(
        dataset, [3, 2], batch_size=16, input_nodes=train, shuffle=True, seed=5, rank=rank,
        world_size=world_size, num_workers=1, **options,
    )
    loader.set_epoch(epoch)
    batches = list(loader)
    assert len(batches) == len(loader)
    seeds = [np.asarray(batch.n_id[: batch.batch_size]) for batch in batches]
    for batch, ids in zip(batches, seeds):  # input_id indexes the full input list
        np.testing.assert_array_equal(train[np.asarray(batch.input_id)], ids)
    return np.concatenate(seeds), len(batches), _digest(*(batch.n_id for batch in batches))


@pytest.mark.parametrize("world_size", [2, 3])
def test_ranks_cover_every_training_node_once_per_epoch(world_size):
    dataset = _dataset(num_nodes=600)
    train = np.asarray(dataset.train_idx)[: 300 - 300 % world_size]  # divisible: no padding
    digests = set()
    for epoch in range(2):
        parts = [_rank_seeds(dataset, train, r, world_size, epoch) for r in range(world_size)]
        seeds = np.concatenate([part[0] for part in parts])
        assert len({part[1] for part in parts}) == 1, "every rank has the same number of batches"
        np.testing.assert_array_equal(np.sort(seeds), np.sort(train))  # each node exactly once
        digests.update(part[2] for part in parts)
    assert len(digests) == 2 * world_size, "seeds differ per rank and per epoch"
    again = _rank_seeds(dataset, train, 1, world_size, 1)
    assert again[2] in digests, "reproducible"


def test_uneven_split_pads_or_drops():
    dataset = _dataset(num_nodes=600)
    train = np.asarray(dataset.train_idx)[:301]
    padded = [_rank_seeds(dataset, train, r, 2, 0)[0] for r in range(2)]
    assert [len(p) for p in padded] == [151, 151]
    seeds = np.concatenate(padded)
    assert set(seeds.tolist()) == set(train.tolist())  # all covered, one node twice
    dropped = [_rank_seeds(dataset, train, r, 2, 0, drop_last=True)[0] for r in range(2)]
    assert [len(d) for d in dropped] == [144, 144]  # 150 each, then whole batches of 16
    assert len(np.unique(np.concatenate(dropped))) == 288
    from volley.loader import NeighborLoader

    with pytest.raises(ValueError, match="rank"):
        NeighborLoader(dataset, [2], input_nodes=train, rank=2, world_size=2)
    with pytest.raises(ValueError, match="both"):
        NeighborLoader(dataset, [2], input_nodes=train, rank=0)
