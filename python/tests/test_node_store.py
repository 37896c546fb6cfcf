"""Writable node data (volley.NodeStore), learnable embeddings (volley.nn.Embedding) and the
sparse optimizers (volley.optim): every operation locally and shared across processes, PyG's
FeatureStore interface, checkpoints, a writer killed mid-push, torch's optimizers as reference,
and two DDP ranks in the synchronous mode."""

from __future__ import annotations

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
from conftest import free_port, gloo_env, runs_other_interpreters
from volley import NodeStore

torch = pytest.importorskip("torch")

PYTHONPATH = os.path.dirname(os.path.dirname(volley.__file__))


def run_python(code, stdin=None, **kwargs):
    return subprocess.Popen([sys.executable, "-c", textwrap.dedent(code)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env=gloo_env(PYTHONPATH=PYTHONPATH), **kwargs)


@pytest.mark.parametrize("shared", [False, True])
def test_pull_push_assign_add_with_repeated_ids(shared):
    store = NodeStore(shared=shared)
    store.init("h", 6, 3)
    assert torch.equal(store.pull("h", [0, 5]), torch.zeros(2, 3))
    values = torch.arange(9, dtype=torch.float32).view(3, 3)
    store.push("h", [4, 1, 4], values)  # id 4: the last position's row
    expected = np.zeros((6, 3), np.float32)
    expected[4], expected[1] = values[2], values[1]
    assert np.array_equal(store.pull("h", range(6)).numpy(), expected)
    store.push("h", torch.tensor([4, 1, 4]), values, op="add")  # id 4: rows 0 and 2 summed
    expected[4] += values[0].numpy() + values[2].numpy()
    expected[1] += values[1].numpy()
    assert np.array_equal(store.pull("h", np.arange(6)).numpy(), expected)
    assert store.size("h") == (6, 3) and store.names() == [(None, "h")]


def test_typed_tables_and_inits():
    store = NodeStore()
    store.init("emb", 50, 4, node_type="author", init="normal", scale=0.5, seed=3)
    store.init("emb", 20, 4, node_type="field", init="uniform", scale=0.1)
    store.init("h", 20, 2, node_type="field", dtype=torch.float16)
    again = NodeStore()
    again.init("emb", 50, 4, node_type="author", init="normal", scale=0.5, seed=3)
    author = store.pull("emb", range(50), node_type="author")
    assert torch.equal(author, again.pull("emb", range(50), node_type="author"))
    assert 0.3 < float(author.std()) < 0.7
    assert float(store.pull("emb", range(20), node_type="field").abs().max()) <= 0.1
    store.push("h", [3], [[1 / 3, 2.0]], node_type="field")
    assert store.pull("h", [3], node_type="field", dtype="float16").dtype == torch.float16
    assert "'emb' of 'author': [50, 4] float32" in repr(store)


def test_errors_name_the_offending_value():
    store = NodeStore()
    store.init("h", 4, 2)
    with pytest.raises(volley.VolleyValueError, match="no node data 'x' .*known: 'h'"):
        store.pull("x", [0])
    with pytest.raises(volley.VolleyValueError, match="'h' already exists"):
        store.init("h", 4, 2)
    with pytest.raises(volley.VolleyIndexError, match="id 4 at position 1 out of range"):
        store.push("h", [0, 4], torch.ones(2, 2))
    assert torch.equal(store.pull("h", [0]), torch.zeros(1, 2))  # nothing was written
    with pytest.raises(volley.VolleyValueError, match=r"shape \(2, 3\) do not fit 2 ids of dim 2"):
        store.push("h", [0, 1], torch.ones(2, 3))
    with pytest.raises(volley.VolleyValueError, match="dtype must be one of .* got 'int64'"):
        store.init("i", 4, 2, dtype="int64")
    with pytest.raises(volley.VolleyValueError, match="op must be one of"):
        store.push("h", [0], torch.ones(1, 2), op="multiply")
    with pytest.raises(volley.VolleyTypeError, match="integer node ids, got dtype float"):
        store.pull("h", torch.tensor([0.5]))
    with pytest.raises(volley.VolleyValueError, match="optimizer_slots"):
        store.init("j", 4, 2, optimizer_slots=3)
    with pytest.raises(volley.VolleyValueError, match="init must be one of"):
        store.init("k", 4, 2, init="ones")


def test_pyg_feature_store_interface():
    pyg_data = pytest.importorskip("torch_geometric.data")
    store = NodeStore()
    assert isinstance(store, pyg_data.FeatureStore)
    x = torch.arange(12, dtype=torch.float32).view(6, 2)
    assert store.put_tensor(x, group_name="paper", attr_name="x", index=None)
    assert torch.equal(store.get_tensor("paper", "x", index=torch.tensor([5, 0])), x[[5, 0]])
    store.update_tensor(torch.full((1, 2), -1.0), group_name="paper", attr_name="x",
                        index=torch.tensor([2]))
    assert torch.equal(store["paper", "x", None][2], torch.tensor([-1.0, -1.0]))
    assert store.get_tensor_size(group_name="paper", attr_name="x", index=None) == (6, 2)
    assert [(a.group_name, a.attr_name) for a in store.get_all_tensor_attrs()] == [("paper", "x")]
    assert store.remove_tensor(group_name="paper", attr_name="x", index=None)
    assert store.get_all_tensor_attrs() == []


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_checkpoint_round_trip_is_bit_identical(tmp_path, dtype):
    store = NodeStore()
    emb = volley.nn.Embedding({"a": 30, "b": 10}, 4, store=store, dtype=dtype)
    optimizer = volley.optim.SparseAdam([emb], lr=0.05)
    for step in range(3):
        rows = emb({"a": torch.tensor([1, 2, 2, step]), "b": torch.tensor([0])})
        (rows["a"].sum() + rows["b"].pow(2).sum()).backward()
        optimizer.step()
    store.save(tmp_path / "state.npz")
    restored = NodeStore()
    volley.nn.Embedding({"a": 30, "b": 10}, 4, store=restored, dtype=dtype, seed=99)
    restored.load(tmp_path / "state.npz")
    for key, value in store.state_dict().items():
        assert np.array_equal(restored.state_dict()[key], value), key
    assert int(store.state_dict()["a/embedding/steps"]) == 3
    other = NodeStore()
    other.init("other", 10, 4, node_type="b")
    with pytest.raises(volley.VolleyValueError, match="has no b/other/values"):
        other.load(tmp_path / "state.npz")


@runs_other_interpreters
def test_shared_store_is_written_by_another_process():
    store = NodeStore(shared=True)
    store.init("h", 8, 2, optimizer_slots=1)
    child = run_python("""
        import pickle, sys, torch
        store = pickle.loads(sys.stdin.buffer.read())
        store.push("h", [7], torch.tensor([[5.0, 6.0]]))
        store.step("h", [0], [[1.0, 1.0]], optimizer="adagrad", lr=0.5, eps=1e-10)
    """)
    out, err = child.communicate(pickle.dumps(store), timeout=60)
    assert child.returncode == 0, err.decode()
    assert torch.equal(store.pull("h", [7]), torch.tensor([[5.0, 6.0]]))
    assert torch.allclose(store.pull("h", [0]), torch.tensor([[-0.5, -0.5]]))


@runs_other_interpreters
def test_a_writer_killed_mid_push_leaves_whole_rows(tmp_path):
    store = NodeStore(shared=True)
    store.init("h", 64, 8192)  # 32 KiB rows: kill -9 lands inside one most of the time
    (tmp_path / "store.pickle").write_bytes(pickle.dumps(store))
    child = run_python(f"""
        import pickle, torch
        with open({str(tmp_path / "store.pickle")!r}, "rb") as file:
            store = pickle.load(file)
        ids = torch.arange(64)
        print("writing", flush=True)
        value = 1.0
        while True:
            store.push("h", ids, torch.full((64, 8192), value))
            value += 1.0
    """)
    assert child.stdout.readline().strip() == b"writing", child.stderr.read().decode()
    time.sleep(0.3)
    os.kill(child.pid, signal.SIGKILL)
    child.wait(timeout=30)
    rows = store.pull("h", range(64))  # repairs a stripe the writer died holding; never hangs
    assert float(rows.max()) >= 1.0  # the writer got through at least one row
    assert torch.equal(rows, rows[:, :1].expand_as(rows)), "a row was left half written"
    store.push("h", [0], torch.zeros(1, 8192))  # the stripes are usable again
    assert float(store.pull("h", [0]).abs().max()) == 0.0


def torch_reference(kind, weight, batches, lr):
    """torch.nn.Embedding(sparse=True) trained by torch's optimizer on the same batches."""
    reference = torch.nn.Embedding.from_pretrained(weight.clone(), freeze=False, sparse=True)
    if kind == "adam":
        optimizer = torch.optim.SparseAdam(reference.parameters(), lr=lr)
    else:
        optimizer = torch.optim.Adagrad(reference.parameters(), lr=lr)
    for ids in batches:
        optimizer.zero_grad()
        loss(reference(ids)).backward()
        optimizer.step()
    return reference.weight.detach()


def loss(rows):
    return (rows * torch.linspace(-1, 1, rows.shape[1])).sum() + rows.pow(2).sum()


@pytest.mark.parametrize("kind", ["adam", "adagrad"])
def test_optimizers_match_torchs(kind):
    batches = [torch.tensor([0, 3, 3, 9]), torch.tensor([1, 3]), torch.tensor([9, 9, 9, 2])]
    emb = volley.nn.Embedding(12, 5, seed=4)
    weight = emb.weight()
    if kind == "adam":
        optimizer = volley.optim.SparseAdam([emb], lr=0.1)
    else:
        optimizer = volley.optim.SparseAdagrad([emb], lr=0.1)
    for number, ids in enumerate(batches):
        if number % 2 == 0:
            optimizer.zero_grad()
        rows = emb(ids)
        assert rows.requires_grad and rows.shape == (len(ids), 5)
        if number % 2 == 1:  # zero_grad between forward and backward keeps this forward's rows
            optimizer.zero_grad()
        loss(rows).backward()
        optimizer.step()
    expected = torch_reference(kind, weight, batches, 0.1)
    assert torch.allclose(emb.weight(), expected, atol=1e-6), (emb.weight() - expected).abs().max()
    assert not torch.equal(emb.weight(), weight)
    with torch.no_grad():  # evaluation: no trace, no gradient
        assert not emb(torch.tensor([0])).requires_grad
    loss(emb(torch.tensor([1]))).backward()
    optimizer.zero_grad()  # before step: the gradient is dropped, as torch's zero_grad does
    before = emb.weight()
    optimizer.step()
    assert torch.equal(emb.weight(), before)


def test_embedding_and_optimizer_errors():
    emb = volley.nn.Embedding({"a": 4}, 2, optimizer_slots=1)
    with pytest.raises(volley.VolleyTypeError, match="dict of ids per node type"):
        emb(torch.tensor([0]))
    rows = emb({"a": torch.tensor([1])})
    rows["a"].sum().backward()
    with pytest.raises(volley.VolleyValueError, match="SparseAdam needs 2 optimizer-state slot"):
        volley.optim.SparseAdam([emb]).step()
    with pytest.raises(volley.VolleyTypeError, match="trains volley.nn.Embedding modules"):
        volley.optim.SparseAdagrad([torch.nn.Linear(2, 2)])
    with pytest.raises(volley.VolleyValueError, match="mode must be one of"):
        volley.optim.SparseAdagrad([emb], mode="eventually")
    with pytest.raises(volley.VolleyValueError, match="no tables named 'other'"):
        volley.nn.Embedding.from_store(emb.store, "other")
    assert volley.nn.Embedding.from_store(emb.store).node_types == ["a"]


DDP_RANK = """
import sys, torch, torch.distributed as dist, pickle, volley
rank, port, path, placements = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4].split(",")
dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=2)
# One embedding per placement: a local table per rank, or a store every rank reaches (shared
# memory, the servers), pickled by the test.
embeddings = {}
for placement in placements:
    if placement == "local":
        embeddings[placement] = volley.nn.Embedding(12, 5, seed=4)
    else:
        with open(f"{path}.{placement}", "rb") as file:
            embeddings[placement] = volley.nn.Embedding.from_store(pickle.load(file))
optimizer = volley.optim.SparseAdam(list(embeddings.values()), lr=0.1)
batches = [[[0, 3, 3], [3, 9]], [[1], [9, 9, 2]]]
for step in batches:
    optimizer.zero_grad()
    loss = 0
    for emb in embeddings.values():
        rows = emb(torch.tensor(step[rank]))
        loss = loss + (rows * torch.linspace(-1, 1, 5)).sum() + rows.pow(2).sum()
    loss.backward()
    optimizer.step()
for placement, emb in embeddings.items():
    if rank == 0 or placement == "local":
        torch.save(emb.weight(), f"{path}.{placement}.{rank}")
dist.destroy_process_group()
"""


def _served_store(tmp_path, num_nodes: int):
    """A NodeStore on two in-process servers of a small partitioned graph, and the servers."""
    import volley.dist

    ring = np.stack([np.arange(num_nodes), (np.arange(num_nodes) + 1) % num_nodes])
    graph = volley.Graph.from_edge_index(ring, num_nodes=num_nodes)
    volley.partition(volley.Dataset(graph, name="ring"), tmp_path / "ring-2", 2, method="random")
    servers = [volley.dist.serve(tmp_path / "ring-2", p) for p in range(2)]
    return NodeStore(servers=[s.address for s in servers]), servers


@runs_other_interpreters
def test_two_ddp_ranks_in_sync_mode_equal_one_process(tmp_path):
    """Two gloo ranks train one embedding per placement (a local table each, a shared store, a
    store on two servers) in mode="sync": each equals one process applying rank 0's then rank
    1's gradients of every step, and the local replicas are identical."""
    placements = ["local", "shared"] + (["servers"] if volley._volley._has_dist else [])
    reference = volley.nn.Embedding(12, 5, seed=4)
    path = str(tmp_path / "store")
    stores, servers = {}, []
    for placement in placements[1:]:
        store = NodeStore(shared=True)
        if placement == "servers":
            store, servers = _served_store(tmp_path, 12)
        stores[placement] = volley.nn.Embedding(12, 5, seed=4, store=store)
        with open(f"{path}.{placement}", "wb") as file:
            pickle.dump(store, file)
    port = free_port()
    ranks = [subprocess.Popen([sys.executable, "-c", DDP_RANK, str(rank), str(port), path,
                               ",".join(placements)],
                              env=gloo_env(PYTHONPATH=PYTHONPATH),
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE) for rank in (0, 1)]
    for rank in ranks:
        out, err = rank.communicate(timeout=120)
        assert rank.returncode == 0, err.decode()[-3000:]
    # One process applying rank 0's then rank 1's gradients of each step, summed per id.
    optimizer = volley.optim.SparseAdam([reference], lr=0.1)
    for ids in ([0, 3, 3, 3, 9], [1, 9, 9, 2]):
        optimizer.zero_grad()
        rows = reference(torch.tensor(ids))
        loss(rows).backward()
        optimizer.step()
    local = [torch.load(f"{path}.local.{rank}") for rank in (0, 1)]
    assert torch.equal(local[0], local[1])  # identical replicas
    assert torch.allclose(local[0], reference.weight(), atol=1e-6)
    for placement, emb in stores.items():  # updated once, by rank 0
        result = torch.load(f"{path}.{placement}.0")
        assert torch.allclose(result, reference.weight(), atol=1e-6), placement
        assert torch.equal(emb.weight(), result), placement
    for server in servers:
        server.shutdown()


def test_read_only_features_are_read_and_refuse_writes(cora_dir):
    """A feature file in the store: pulled like a table, every write refused by name."""
    path = os.path.join(cora_dir, "features.npy")
    x = np.load(path)
    store = NodeStore()
    store.attach_feature("x", path, node_type="paper")
    store.init("h", len(x), 4, node_type="paper")
    ids = [5, 0, 2707, 5]
    assert np.array_equal(store.pull("x", ids, node_type="paper").numpy(), x[ids])
    assert store.size("x", "paper") == x.shape
    with pytest.raises(volley.VolleyValueError, match="'x' of 'paper' is a read-only feature"):
        store.push("x", [0], np.zeros((1, x.shape[1]), np.float32), node_type="paper")
    with pytest.raises(volley.VolleyValueError, match="read-only feature"):
        store.step("x", [0], np.zeros((1, x.shape[1]), np.float32), optimizer="adagrad", lr=0.1,
                   eps=1e-10, node_type="paper")
    assert np.array_equal(np.load(path)[0], x[0])  # the file is untouched
    assert list(store.state_dict()) == ["paper/h/values", "paper/h/state", "paper/h/steps"]
    if hasattr(store, "get_tensor"):  # PyG installed: the store is its FeatureStore
        rows = store.get_tensor(group_name="paper", attr_name="x", index=torch.tensor([3]))
        assert np.array_equal(rows.numpy(), x[[3]])
        with pytest.raises(volley.VolleyValueError, match="read-only feature"):
            store.update_tensor(torch.zeros(1, x.shape[1]), group_name="paper", attr_name="x",
                                index=torch.tensor([3]))
    with pytest.raises(volley.VolleyValueError, match="already exists"):
        store.attach_feature("h", path, node_type="paper")
