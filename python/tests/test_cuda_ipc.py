"""Placed graphs shared between processes by handle (CUDA IPC; docs/guide/gpu.md), in CI on the
host-executor device: every test runs its processes with ``VOLLEY_HOST_EXECUTOR=1``, where a
device or pinned block is a memfd segment, so that a second process opens the very same bytes.

The processes are this file run as a script (``python test_cuda_ipc.py <role> ...``): a sender
places a graph, samples, pickles; a receiver unpickles, checks it opened the sender's memory
(the same segment, not a copy) and samples the same batch.
"""

from __future__ import annotations

import hashlib
import os
import pickle
import subprocess
import sys

import numpy as np
import pytest

import volley

from conftest import runs_other_interpreters, same_in_every_torch

# The hand-off is native (handles, mappings); the subprocesses only import the package: once, on
# the first leg, is enough. Every test starts other Python processes (seconds each under ASan);
# the gpu-host C++ tests run the hand-off under ASan and TSan.
pytestmark = [same_in_every_torch, runs_other_interpreters]

PYTHON_DIR = os.path.dirname(os.path.dirname(os.path.abspath(volley.__file__)))
SEEDS = np.arange(0, 400, 7, dtype=np.int64)
TIMEOUT = 120


def _graph() -> volley.Graph:
    rng = np.random.default_rng(5)
    edges = rng.integers(0, 1500, size=(2, 12000), dtype=np.int64)
    return volley.Graph.from_edge_index(edges, num_nodes=1500, undirected=True)


def _typed_graph() -> volley.HeteroGraph:
    rng = np.random.default_rng(6)
    return volley.HeteroGraph.from_edge_index_dict(
        {("author", "writes", "paper"): rng.integers(0, 400, size=(2, 3000), dtype=np.int64),
         ("paper", "cites", "paper"): rng.integers(0, 400, size=(2, 5000), dtype=np.int64)},
        num_nodes_dict={"author": 400, "paper": 400})


def _sampler(kind: str, mode: str, device: str):
    """The sampler of each graph kind, placed on `device`; or ("feature") a GPU feature cache
    sharded over devices 0 and 1 (the rest pinned) in a hot order, gathered on `device`."""
    if kind == "feature":
        rows = np.random.default_rng(8).normal(size=(1500, 12)).astype(np.float32)
        hot = np.random.default_rng(9).permutation(1500)
        return volley.Feature(rows, device=device, devices=[0, 1], hot_order=hot,
                              device_cache_size=300 * 12 * 4)
    if kind == "loader":
        from torch_geometric.data import Data
        import torch

        edges = torch.from_numpy(np.random.default_rng(5).integers(0, 1500, (2, 12000)))
        x = torch.from_numpy(np.random.default_rng(6).normal(size=(1500, 8)).astype(np.float32))
        return volley.loader.NeighborLoader(Data(edge_index=edges, x=x, num_nodes=1500), [6, 4],
                                            input_nodes=torch.from_numpy(SEEDS), batch_size=20,
                                            device=device, mode=mode, seed=11)
    if kind == "typed":
        return volley.HeteroNeighborSampler(_typed_graph(), [6, 4], device=device, mode=mode,
                                            seed=11)
    return volley.NeighborSampler(_graph(), [6, 4], device=device, mode=mode, seed=11)


def _digest(sampler) -> str:
    digest = hashlib.sha256()
    if isinstance(sampler, volley.Feature):
        ids = np.arange(0, 1500, 3, dtype=np.int64)
        arrays = [sampler[ids]]
    elif isinstance(sampler, volley.loader.NeighborLoader):
        sampler.set_epoch(0)
        batch = next(iter(sampler))
        arrays = [batch.n_id.cpu(), batch.edge_index.cpu(), batch.x.cpu()]
    elif isinstance(sampler, volley.HeteroNeighborSampler):
        out = sampler.sample({"paper": SEEDS}, batch_index=3)
        arrays = [*out["node"].values(), *out["row"].values(), *out["col"].values(),
                  *out["edge"].values()]
    else:
        sub = sampler.sample_subgraph(SEEDS, batch_index=3)
        arrays = [sub.n_id, sub.row, sub.col, sub.e_id]
    for array in arrays:
        digest.update(np.ascontiguousarray(volley._tensor.to_numpy(array)).tobytes())
    return digest.hexdigest()


class _Tiers:
    """A GPU feature's tiers, read as placed graphs are (``ipc_handles``)."""

    def __init__(self, feature):
        self.feature = feature

    def ipc_handles(self) -> tuple:
        return tuple(tier["shared_name"] for tier in self.feature.tiers)


def _placed_graphs(sampler) -> list:
    """The placed CudaGraphs behind a sampler: its graph's, or each edge type's (a feature: its
    tiers)."""
    if isinstance(sampler, volley.Feature):
        return [_Tiers(sampler)]
    if isinstance(sampler, volley.loader.NeighborLoader):
        return [sampler._cuda_rows[0]]
    if isinstance(sampler, volley.HeteroNeighborSampler):
        return [sampler._placed.edges(e) for e in range(len(sampler.graph.edge_types))]
    return [sampler._placed]


def _segment_inodes(*placed) -> list:
    """The inodes of the memfd segments behind placed graphs' indptr and indices: equal in two
    processes exactly when both map the same memory."""
    inodes = []
    for graph in placed:
        for text in graph.ipc_handles():
            assert text.startswith("ipc:"), text
            pid, fd = text.split(":memfd:")[1].split(":")[:2]
            inodes.append(os.stat(f"/proc/{pid}/fd/{fd}").st_ino)
    return inodes


# --- the processes --------------------------------------------------------------------------


def send(kind: str, mode: str, device: str, path: str) -> None:
    """Places a sampler's graph (`kind`: "graph" or "typed"), pickles the sampler to `path` (and
    its placed graph alone to `path`.placed), prints its batch digest and the segment inodes,
    then waits for a line on stdin (the receiver is done) before exiting."""
    sampler = _sampler(kind, mode, device)
    before = _digest(sampler)
    payload = pickle.dumps(sampler)
    with open(path, "wb") as out:
        out.write(payload)
    if kind not in ("feature", "loader"):
        assert sampler._placed.shareable
        with open(path + ".placed", "wb") as out:  # the placed graph alone
            out.write(pickle.dumps(sampler._placed))
    assert _digest(sampler) == before, "sharing the placed graph changed its batches"
    print(before, *_segment_inodes(*_placed_graphs(sampler)), flush=True)
    sys.stdin.readline()


def receive(path: str) -> None:
    """Unpickles the sampler of `path`; prints its batch digest and segment inodes."""
    with open(path, "rb") as payload:
        sampler = pickle.load(payload)
    if not isinstance(sampler, (volley.Feature, volley.loader.NeighborLoader)):
        assert sampler._placed.shareable and sampler.mode in ("GPU", "UVA")
    print(_digest(sampler), *_segment_inodes(*_placed_graphs(sampler)), flush=True)


def receive_error(*paths: str) -> None:
    """Unpickles each of `paths` expecting a Volley error; prints its type and message, one line
    a path."""
    for path in paths:
        try:
            with open(path, "rb") as payload:
                pickle.load(payload)
            print("NoError", flush=True)
        except volley.VolleyError as error:
            print(type(error).__name__, str(error).replace("\n", " "), flush=True)


# --- the tests ------------------------------------------------------------------------------


def _env(devices: int = 1, emulate: bool = True) -> dict:
    env = dict(os.environ, PYTHONPATH=PYTHON_DIR + os.pathsep + os.environ.get("PYTHONPATH", ""))
    env.pop("VOLLEY_HOST_EXECUTOR", None)
    if emulate:
        env.update(VOLLEY_HOST_EXECUTOR="1", VOLLEY_HOST_EXECUTOR_DEVICES=str(devices))
    return env


def _run(role: str, *args: str, env: dict) -> str:
    result = subprocess.run([sys.executable, os.path.abspath(__file__), role, *args], env=env,
                            capture_output=True, text=True, timeout=TIMEOUT)
    assert result.returncode == 0, result.stderr[-4000:]
    return result.stdout.strip()


class Sender:
    """A sender process kept alive until `close` (the handles name its memory)."""

    def __init__(self, mode: str, device: str, path: str, env: dict, kind: str = "graph"):
        self.process = subprocess.Popen(
            [sys.executable, os.path.abspath(__file__), "send", kind, mode, device, path], env=env,
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        line = self.process.stdout.readline().split()
        if not line:
            self.close()
            pytest.fail(f"the sender failed: {self.stderr[-4000:]}")
        self.digest, self.inodes = line[0], line[1:]

    def close(self) -> int:
        try:
            _, self.stderr = self.process.communicate(input="done\n", timeout=TIMEOUT)
        except subprocess.TimeoutExpired:
            self.process.kill()
            _, self.stderr = self.process.communicate()
        return self.process.returncode


def _can_emulate() -> bool:
    probe = "from volley import _volley; print(_volley.cuda_emulated())"
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                            env=_env(), timeout=TIMEOUT)
    return result.returncode == 0 and result.stdout.strip() == "True"


needs_emulation = pytest.mark.skipif(
    not _can_emulate(), reason="this build has no host executor (no CCCL headers at build time)")


@needs_emulation
@pytest.mark.parametrize("kind", ["graph", "typed"])
@pytest.mark.parametrize("mode", ["GPU", "UVA"])
def test_pickled_gpu_sampler_opens_the_same_placed_graph_and_samples_the_same(tmp_path, mode,
                                                                              kind):
    path = str(tmp_path / "sampler.pkl")
    sender = Sender(mode, "cuda:1", path, _env(devices=2), kind)
    try:
        received = _run("receive", path, env=_env(devices=2)).split()
    finally:
        assert sender.close() == 0
    assert received[0] == sender.digest, "the receiver's batch differs from the sender's"
    assert received[1:] == sender.inodes, "the receiver must map the sender's segments, not copies"


@needs_emulation
def test_handle_of_an_exited_sender_fails_naming_it(tmp_path):
    path = str(tmp_path / "sampler.pkl")
    Sender("GPU", "cuda", path, _env()).close()
    placed, sampler = _run("receive_error", path + ".placed", path, env=_env()).splitlines()
    kind, message = placed.split(" ", 1)
    assert kind == "VolleyOSError", message
    assert "cannot open IPC handle 'ipc:cuda:0:memfd:" in message and "is gone" in message
    kind, message = sampler.split(" ", 1)
    assert kind == "VolleyOSError" and "is gone" in message, message  # the sampler's host graph


@needs_emulation
def test_handle_of_a_missing_device_or_another_kind_fails_naming_it(tmp_path):
    path = str(tmp_path / "sampler.pkl")
    sender = Sender("GPU", "cuda:1", path, _env(devices=2))
    try:
        kind, message = _run("receive_error", path, env=_env(devices=1)).split(" ", 1)
        assert kind == "VolleyRuntimeError", message
        assert "'ipc:cuda:1:memfd:" in message and "cuda:1" in message
        assert "1 CUDA device(s) are visible" in message
        kind, message = _run("receive_error", path, env=_env(emulate=False)).split(" ", 1)
        assert kind == "VolleyRuntimeError" and "does not emulate" in message, message
    finally:
        sender.close()


def _in_emulated_process(code: str) -> str:
    return _run("exec", code, env=_env())


@needs_emulation
def test_placed_graph_pickles_by_handle_and_shareable_placement_copies_nothing():
    out = _in_emulated_process(
        "import pickle; from volley import _cuda, _volley\n"
        "g = _graph()\n"
        "placed = _cuda.place_graph(g, 'UVA', 0, shareable=True)\n"
        "assert placed.shareable and placed.ipc_handles()[1].startswith('ipc:pinned_host:-1:')\n"
        "handles = placed.ipc_handles()\n"
        "pickle.dumps(placed)\n"
        "assert placed.ipc_handles() == handles, 'a shareable placement is pickled as it is'\n"
        "plain = _cuda.place_graph(g, 'GPU', 0)\n"
        "assert not plain.shareable and plain.ipc_handles() == ('', '')\n"
        "again = pickle.loads(pickle.dumps(plain))\n"
        "assert plain.shareable, 'pickling moves the graph to shareable memory in place'\n"
        "assert _segment_inodes(again) == _segment_inodes(plain)\n"
        "assert (again.num_nodes, again.num_edges, again.mode) == (1500, plain.num_edges, 'GPU')\n"
        "print('ok')\n")
    assert out == "ok"


@needs_emulation
@pytest.mark.parametrize("mode", ["GPU", "UVA"])
def test_pickled_cuda_loader_opens_the_sender_placed_graph(tmp_path, mode):
    """A CUDA NeighborLoader pickled in one process (as torch.multiprocessing hands it to a
    rank): the copy samples from the sender's placed graph, not a placement of its own, and
    gives the same first batch."""
    pytest.importorskip("torch_geometric")
    path = str(tmp_path / "loader.pkl")
    sender = Sender(mode, "cuda:0", path, _env(devices=1), "loader")
    try:
        received = _run("receive", path, env=_env(devices=1)).split()
    finally:
        assert sender.close() == 0
    assert received[0] == sender.digest, "the copy's first batch differs from the sender's"
    assert received[1:] == sender.inodes, "the copy must map the sender's placed graph"


@needs_emulation
def test_pickled_gpu_feature_opens_the_same_tiers_and_gathers_the_same(tmp_path):
    """A GPU feature cache sharded over two emulated devices, pickled in one process: the
    receiver gathers the same rows from the sender's shards and pinned rows (the same segments,
    not copies)."""
    path = str(tmp_path / "feature.pkl")
    sender = Sender("GPU", "cuda:1", path, _env(devices=2), "feature")
    try:
        received = _run("receive", path, env=_env(devices=2)).split()
    finally:
        assert sender.close() == 0
    assert received[0] == sender.digest, "the receiver's rows differ from the sender's"
    assert len(sender.inodes) == 3  # two device shards and the pinned rows
    assert received[1:] == sender.inodes, "the receiver must map the sender's segments, not copies"


if __name__ == "__main__":
    role, arguments = sys.argv[1], sys.argv[2:]
    if role == "exec":
        exec(arguments[0])
    else:
        {"send": send, "receive": receive, "receive_error": receive_error}[role](*arguments)
