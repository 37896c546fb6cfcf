"""The GPU data path from Python: ``device=`` / ``mode=`` on NeighborSampler, Feature and
NeighborLoader.

CPU-side tests run everywhere: argument checks, and the clear error a CUDA request gets from a
build without CUDA or a machine without a GPU. GPU tests run where torch sees a GPU and this
build of Volley has CUDA, and in CI on the host-executor device (``VOLLEY_HOST_EXECUTOR=1``:
test_cuda_host_executor.py runs this file so): the same GPU and UVA code paths with their kernels
on host threads and device arrays as CPU tensors. They compare every device output with the CPU
path's, exactly. Tests of CUDA streams and device memory accounting need a real GPU.
"""

from __future__ import annotations

import numpy as np
import pytest

import volley
from volley import _volley
from volley.loader import NeighborLoader

torch = pytest.importorskip("torch")

EMULATED = bool(_volley.cuda_emulated())  # the host-executor device stands in for cuda:0
HAS_GPU = (
    not EMULATED
    and bool(_volley.cuda_built())
    and torch.cuda.is_available()
    and _volley.cuda_device_count() > 0
)
RUNS_GPU_PATHS = HAS_GPU or EMULATED
needs_gpu = pytest.mark.skipif(
    not RUNS_GPU_PATHS, reason="needs a CUDA GPU (or VOLLEY_HOST_EXECUTOR=1: test_cuda_host_executor.py)"
)
needs_real_gpu = pytest.mark.skipif(not HAS_GPU, reason="needs a real GPU (CUDA streams, device memory)")
no_gpu = pytest.mark.skipif(RUNS_GPU_PATHS, reason="checks the error raised without a usable GPU")


def _to_device(tensor):
    """``tensor`` where the device path's inputs live: the GPU, or the CPU when emulated."""
    return tensor.cuda() if HAS_GPU else tensor


def _on_device(tensor) -> bool:
    """Whether ``tensor`` is a device output: a CUDA tensor, or a CPU one when emulated."""
    return tensor.is_cuda if HAS_GPU else tensor.device.type == "cpu"


def _graph_data(num_nodes: int = 400, num_edges: int = 4000, dim: int = 8, seed: int = 0):
    rng = np.random.default_rng(seed)
    src = rng.integers(0, num_nodes, num_edges)
    dst = (rng.integers(0, num_nodes, num_edges) * rng.integers(0, num_nodes, num_edges)) // num_nodes
    edge_index = torch.from_numpy(np.stack([src, dst]).astype(np.int64))
    x = torch.from_numpy(rng.standard_normal((num_nodes, dim)).astype(np.float32))
    y = torch.from_numpy(rng.integers(0, 5, num_nodes).astype(np.int64))
    return edge_index, x, y


class _Data:
    def __init__(self, edge_index, x, y, num_nodes):
        self.edge_index, self.x, self.y, self.num_nodes = edge_index, x, y, num_nodes


def _no_gpu_message() -> str:
    if _volley.cuda_built():
        return r"CUDA device 0 requested, but 0 CUDA device\(s\) are visible"
    return "no CUDA support"


# --- CPU-side: argument checks ------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["zero-copy", "gpus", "", "DEVICE"])
def test_bad_mode_is_a_value_error(mode):
    edge_index, x, y = _graph_data()
    graph = volley.Graph.from_edge_index(edge_index)
    with pytest.raises(ValueError, match="mode must be 'GPU'"):
        volley.NeighborSampler(graph, [3], device="cuda", mode=mode)
    with pytest.raises(ValueError, match="mode must be 'GPU'"):
        NeighborLoader(_Data(edge_index, x, y, 400), [3], batch_size=8, device="cuda", mode=mode)


@pytest.mark.parametrize("device", ["gpu", "cuda:x", -1, "tpu", 1.5, True])
def test_bad_device_is_a_value_error(device):
    edge_index, x, y = _graph_data()
    graph = volley.Graph.from_edge_index(edge_index)
    with pytest.raises(ValueError, match="device|ordinal"):
        volley.NeighborSampler(graph, [3], device=device)
    with pytest.raises(ValueError, match="device|ordinal"):
        volley.Feature(x, device=device)
    with pytest.raises(ValueError, match="device|ordinal"):
        NeighborLoader(_Data(edge_index, x, y, 400), [3], batch_size=8, device=device)


@pytest.mark.parametrize("mode", ["GPU", "uva"])
def test_gpu_modes_need_a_device(mode):
    edge_index, _, _ = _graph_data()
    graph = volley.Graph.from_edge_index(edge_index)
    with pytest.raises(ValueError, match="needs a CUDA device"):
        volley.NeighborSampler(graph, [3], mode=mode)


def test_sampler_arguments_are_checked_before_the_device():
    edge_index, _, _ = _graph_data()
    graph = volley.Graph.from_edge_index(edge_index)
    with pytest.raises(ValueError, match="at least one hop"):
        volley.NeighborSampler(graph, [], device="cuda", mode="GPU")
    with pytest.raises(ValueError, match="size -2 at hop 0"):
        volley.NeighborSampler(graph, [-2], device="cuda", mode="UVA")


def test_cpu_mode_and_cpu_device_are_the_cpu_path():
    edge_index, _, _ = _graph_data()
    graph = volley.Graph.from_edge_index(edge_index)
    seeds = torch.arange(20)
    reference = volley.NeighborSampler(graph, [4, 3], seed=3).sample(seeds, 0)
    for kwargs in (dict(mode="CPU"), dict(device="cpu"), dict(device=torch.device("cpu"), mode="cpu")):
        sampler = volley.NeighborSampler(graph, [4, 3], seed=3, **kwargs)
        assert sampler.mode == "CPU" and sampler.device is None
        n_id, batch_size, adjs = sampler.sample(seeds, 0)
        assert torch.equal(n_id, reference[0]) and n_id.device.type == "cpu"
        assert batch_size == reference[1]
        for got, want in zip(adjs, reference[2]):
            assert torch.equal(got.edge_index, want.edge_index)
    assert volley.Feature(torch.ones(3, 2), device="cpu").device == torch.device("cpu")


def test_cuda_helpers_work_in_every_build():
    assert isinstance(_volley.cuda_built(), bool)
    assert _volley.cuda_device_count() >= 0
    assert _volley.check_cuda_sampling_mode("uva") == "UVA"
    with pytest.raises(ValueError, match="is not a CUDA sampling mode"):
        _volley.check_cuda_sampling_mode("CPU")


# --- CPU-side: a CUDA request without CUDA or without a GPU ------------------------------------


@no_gpu
def test_sampler_on_cuda_without_a_gpu_is_a_clear_error():
    edge_index, _, _ = _graph_data()
    graph = volley.Graph.from_edge_index(edge_index)
    for mode in ("GPU", "UVA", None):
        with pytest.raises(volley.VolleyRuntimeError, match=_no_gpu_message()):
            volley.NeighborSampler(graph, [3], device="cuda", mode=mode)
    with pytest.raises(RuntimeError, match=_no_gpu_message()):
        volley.NeighborSampler(graph, [3], 0, "GPU")  # Quiver's positional order


@no_gpu
def test_feature_on_cuda_without_a_gpu_is_a_clear_error():
    _, x, _ = _graph_data()
    with pytest.raises(volley.VolleyRuntimeError, match=_no_gpu_message()):
        volley.Feature(x, device="cuda")
    with pytest.raises(volley.VolleyRuntimeError, match=_no_gpu_message()):
        volley.Feature(device="cuda:0", device_cache_size="1M").from_cpu_tensor(x)


@no_gpu
def test_loader_on_cuda_without_a_gpu_is_a_clear_error():
    edge_index, x, y = _graph_data()
    for mode in ("GPU", "UVA"):
        with pytest.raises(volley.VolleyRuntimeError, match=_no_gpu_message()):
            NeighborLoader(_Data(edge_index, x, y, 400), [3], batch_size=8, device="cuda", mode=mode)


@no_gpu
def test_device_feature_cannot_be_shared():
    _, x, _ = _graph_data()
    with pytest.raises(ValueError, match="cannot be shared"):
        volley.Feature(x, device="cuda", shared=True)


# --- GPU: device outputs equal the CPU outputs ---------------------------------------------------


@needs_gpu
@pytest.mark.parametrize("mode", ["GPU", "UVA"])
def test_sampler_equals_cpu(mode):
    edge_index, _, _ = _graph_data(2000, 30000)
    graph = volley.Graph.from_edge_index(edge_index)
    cpu = volley.NeighborSampler(graph, [5, 4, 3], seed=11)
    gpu = volley.NeighborSampler(graph, [5, 4, 3], device="cuda", mode=mode, seed=11)
    for batch in range(5):
        seeds = torch.randperm(2000)[:128]
        want = cpu.sample_subgraph(seeds, batch)
        got = gpu.sample_subgraph(_to_device(seeds), batch)
        assert _on_device(got.n_id)
        for field in ("n_id", "row", "col", "e_id"):
            assert torch.equal(getattr(got, field).cpu(), getattr(want, field)), field
        assert got.num_sampled_nodes == want.num_sampled_nodes
        assert got.num_sampled_edges == want.num_sampled_edges


@needs_real_gpu
def test_sampler_results_on_a_side_stream():
    edge_index, _, _ = _graph_data(2000, 30000)
    graph = volley.Graph.from_edge_index(edge_index)
    cpu = volley.NeighborSampler(graph, [5, 4], seed=1)
    gpu = volley.NeighborSampler(graph, [5, 4], device="cuda", mode="GPU", seed=1)
    stream = torch.cuda.Stream()
    seeds = torch.arange(300)
    with torch.cuda.stream(stream):
        n_id, _, _ = gpu.sample(seeds, 0)
        total = n_id.sum()  # queued on the side stream, after the batch
    stream.synchronize()
    assert int(total) == int(cpu.sample(seeds, 0)[0].sum())


@needs_gpu
@pytest.mark.parametrize("cache", [None, "4K", "disk"])
def test_feature_gather_equals_cpu(cache, tmp_path):
    """Rows in device memory, the rest pinned or (disk) left in the .npy file."""
    _, x, _ = _graph_data(2000, 100, dim=16)
    if cache == "disk":
        np.save(tmp_path / "x.npy", x.numpy())
        feature = volley.Feature(tmp_path / "x.npy", device="cuda", device_cache_size="4K", disk=True)
        assert feature.tiers[-1]["location"] == "mapped_file" and feature.disk_io
    else:
        feature = volley.Feature(x, device="cuda", device_cache_size=cache)
    ids = torch.randint(0, 2000, (777,))
    for id_input in (ids, _to_device(ids), ids.numpy()):
        rows = feature[id_input]
        assert _on_device(rows) and torch.equal(rows.cpu(), x[ids])
    with pytest.raises(IndexError, match="2000"):
        feature[torch.tensor([1, 2000])]


def _cpu_and_gpu_loaders(mode, **kwargs):
    edge_index, x, y = _graph_data(3000, 40000, dim=12, seed=5)
    data = _Data(edge_index, x, y, 3000)
    train = torch.arange(0, 3000, 3)
    common = dict(batch_size=64, input_nodes=train, shuffle=True, seed=99, **kwargs)
    return (
        NeighborLoader(data, [6, 4, 3], num_workers=2, **common),
        NeighborLoader(data, [6, 4, 3], device="cuda", mode=mode, **common),
    )


@needs_gpu
@pytest.mark.parametrize("mode", ["GPU", "UVA", "CPU"])
def test_loader_batches_equal_cpu(mode):
    cpu, gpu = _cpu_and_gpu_loaders(mode)
    assert len(cpu) == len(gpu)
    # GPU and UVA batches come from the native GPU pipeline (also on the host-executor device).
    assert gpu._native.on_cuda == (mode != "CPU")
    for _epoch in range(2):
        count = 0
        for want, got in zip(cpu, gpu):
            assert _on_device(got.x) and _on_device(got.edge_index) and _on_device(got.n_id)
            for field in ("x", "y", "edge_index", "n_id", "e_id", "input_id"):
                assert torch.equal(getattr(got, field).cpu(), getattr(want, field)), field
            assert got.batch_size == want.batch_size
            assert list(got.num_sampled_nodes) == list(want.num_sampled_nodes)
            count += 1
        assert count == len(cpu)


@needs_gpu
def test_loader_over_features_on_the_disk_equals_cpu(tmp_path):
    """x a GPU Feature whose uncached rows stay in its .npy file: the UVA loader's batches are the
    CPU loader's, those rows read from the disk."""
    edge_index, x, y = _graph_data(3000, 40000, dim=12, seed=5)
    np.save(tmp_path / "x.npy", x.numpy())
    on_disk = volley.Feature(tmp_path / "x.npy", device="cuda", device_cache_size=200 * 48, disk=True)
    common = dict(batch_size=64, input_nodes=torch.arange(0, 3000, 3), shuffle=True, seed=99)
    cpu = NeighborLoader(_Data(edge_index, x, y, 3000), [6, 4, 3], **common)
    gpu = NeighborLoader(_Data(edge_index, on_disk, y, 3000), [6, 4, 3], device="cuda", mode="UVA", **common)
    count = 0
    for want, got in zip(cpu, gpu):
        for field in ("x", "y", "edge_index", "n_id"):
            assert torch.equal(getattr(got, field).cpu(), getattr(want, field)), field
        count += 1
    assert count == len(cpu) and on_disk.disk_stats[1] > 0


@needs_gpu
@pytest.mark.parametrize("mode", ["GPU", "UVA"])
@pytest.mark.parametrize("strategy", ["uniform", "last"])
def test_temporal_loader_batches_equal_cpu(mode, strategy):
    """time_attr / input_time on the CUDA loader: the batches (batch vector included) are the CPU
    loader's, input nodes repeating at different times."""
    edge_index, x, y = _graph_data(1500, 20000, dim=6, seed=8)
    data = _Data(edge_index, x, y, 1500)
    rng = np.random.default_rng(2)
    data.time = torch.from_numpy(rng.integers(0, 500, edge_index.shape[1]))  # edge time
    train = torch.arange(0, 1500, 5).repeat(2)
    input_time = torch.from_numpy(rng.integers(0, 600, len(train)))
    common = dict(batch_size=50, input_nodes=train, input_time=input_time, time_attr="time",
                  temporal_strategy=strategy, shuffle=True, seed=4)
    cpu = NeighborLoader(data, [5, 3], num_workers=2, **common)
    gpu = NeighborLoader(data, [5, 3], device="cuda", mode=mode, **common)
    assert gpu._native.on_cuda
    count = 0
    for want, got in zip(cpu, gpu):
        assert _on_device(got.edge_index) and _on_device(got.batch)
        for field in ("x", "y", "edge_index", "n_id", "e_id", "input_id", "batch"):
            assert torch.equal(getattr(got, field).cpu(), getattr(want, field)), field
        count += 1
    assert count == len(cpu) > 0


@needs_gpu
@pytest.mark.parametrize("mode", ["GPU", "UVA"])
def test_disjoint_loader_batches_equal_cpu(mode):
    """disjoint=True on the CUDA loader: each seed its own tree (a repeated input node too), the
    CPU loader's batches, batch vector included."""
    edge_index, x, y = _graph_data(1200, 15000, dim=5, seed=3)
    data = _Data(edge_index, x, y, 1200)
    common = dict(batch_size=40, input_nodes=torch.arange(0, 1200, 7).repeat(2), disjoint=True,
                  shuffle=True, seed=9)
    cpu = NeighborLoader(data, [4, 3], num_workers=2, **common)
    gpu = NeighborLoader(data, [4, 3], device="cuda", mode=mode, **common)
    assert gpu._native.on_cuda
    count = 0
    for want, got in zip(cpu, gpu):
        assert _on_device(got.batch)
        for field in ("x", "y", "edge_index", "n_id", "e_id", "input_id", "batch"):
            assert torch.equal(getattr(got, field).cpu(), getattr(want, field)), field
        count += 1
    assert count == len(cpu) > 0


@needs_gpu
@pytest.mark.parametrize("mode", ["GPU", "UVA"])
def test_temporal_sampler_equals_cpu(mode):
    edge_index, _, _ = _graph_data(800, 9000, seed=4)
    rng = np.random.default_rng(6)
    graph = volley.Graph.from_edge_index(edge_index, node_time=rng.integers(0, 90, 800))
    cpu = volley.NeighborSampler(graph, [4, 3], seed=3, time_attr="node_time", temporal_strategy="last")
    gpu = volley.NeighborSampler(graph, [4, 3], device="cuda", mode=mode, seed=3, time_attr="node_time",
                                 temporal_strategy="last")
    seeds, times = torch.tensor([5, 5, 17, 300]), torch.tensor([10, 80, 40, 60])
    want = cpu.sample_subgraph(seeds, 1, seed_time=times)
    got = gpu.sample_subgraph(_to_device(seeds), 1, seed_time=times)
    assert _on_device(got.n_id) and _on_device(got.batch)
    for field in ("n_id", "row", "col", "e_id", "batch"):
        assert torch.equal(getattr(got, field).cpu(), getattr(want, field)), field


@needs_real_gpu
def test_loader_memory_does_not_grow_over_1000_batches():
    _, gpu = _cpu_and_gpu_loaders("GPU")

    def run(batches):
        done = 0
        while done < batches:
            for batch in gpu:
                (batch.x.sum() + batch.edge_index.sum()).item()  # use it on the current stream
                done += 1
                if done == batches:
                    break
        torch.cuda.synchronize()

    run(100)
    allocated = torch.cuda.memory_allocated()
    free_before, _ = torch.cuda.mem_get_info()
    run(1000)
    free_after, _ = torch.cuda.mem_get_info()
    assert torch.cuda.memory_allocated() <= allocated + (1 << 20)
    assert free_before <= free_after + (64 << 20), (free_before, free_after)


# --- heterogeneous sampling on the GPU -----------------------------------------------------------


def _weighted_toy_hetero():
    """test_hetero's toy HeteroData, larger, with weights on the writes edges."""
    pytest.importorskip("torch_geometric.data")
    from test_hetero import WRITES, toy_hetero

    data = toy_hetero(seed=4, papers=300, authors=120)
    rng = np.random.default_rng(4)
    count = data[WRITES].edge_index.shape[1]
    data[WRITES].edge_weight = torch.from_numpy(rng.uniform(0.1, 5.0, count).astype(np.float32))
    return data


def _hetero_fanouts():
    from test_hetero import CITES, REV, WRITES

    return [[4, 3], {WRITES: [-1, 2], CITES: [3, 0], REV: [2, 3]}]


@needs_gpu
@pytest.mark.parametrize("mode", ["GPU", "UVA"])
def test_hetero_sampler_equals_cpu(mode):
    data = _weighted_toy_hetero()
    graph = volley.HeteroGraph.from_pyg(data)
    rng = np.random.default_rng(2)
    for fanouts in _hetero_fanouts():
        for replace in (False, True):
            for weighted in (False, True):
                kwargs = dict(replace=replace, weighted=weighted, seed=11)
                cpu = volley.HeteroNeighborSampler(graph, fanouts, **kwargs)
                gpu = volley.HeteroNeighborSampler(graph, fanouts, device="cuda", mode=mode, **kwargs)
                assert (gpu.device, gpu.mode, cpu.device, cpu.mode) == (0, mode, None, "CPU")
                assert gpu._native.on_cuda and not cpu._native.on_cuda
                for batch in range(3):
                    seeds = {"paper": rng.choice(300, 40, replace=False)}
                    if batch == 1:
                        seeds["author"] = rng.choice(120, 5, replace=False)
                    want, got = cpu.sample(seeds, batch), gpu.sample(seeds, batch)
                    for key in ("node", "row", "col", "edge", "edge_index"):
                        for type_, array in want[key].items():
                            assert np.array_equal(np.asarray(got[key][type_]), np.asarray(array)), (key, type_)
                    for key in ("num_sampled_nodes", "num_sampled_edges", "batch_size"):
                        assert got[key] == want[key], key


@needs_gpu
@pytest.mark.parametrize("mode", ["GPU", "UVA"])
def test_hetero_loader_batches_equal_cpu(mode):
    data = _weighted_toy_hetero()
    fanouts = _hetero_fanouts()[1]
    kwargs = dict(batch_size=32, input_nodes=("paper", data["paper"].train_mask), seed=3,
                  weighted=True, num_workers=2)
    cpu = NeighborLoader(data, fanouts, **kwargs)
    gpu = NeighborLoader(data, fanouts, device="cuda", mode=mode, **kwargs)
    assert gpu.node_sampler.device == 0 and gpu.node_sampler.mode == mode
    _expect_same_typed_batches(cpu, gpu, ("n_id", "x", "y"))


def _expect_same_typed_batches(cpu, gpu, node_fields):
    """The device loader's batches (on the device) equal the CPU loader's (or a list of its
    batches): `node_fields` and num_sampled_nodes per node type, edge_index and e_id per edge
    type, the input ids."""
    count = 0
    for want, got in zip(cpu, gpu):
        assert _on_device(got["paper"].x) and _on_device(got["paper"].n_id)
        for node_type in want.node_types:
            for field in node_fields:
                if field in want[node_type]:
                    assert torch.equal(got[node_type][field].cpu(), want[node_type][field]), (
                        node_type, field)
            assert list(got[node_type].num_sampled_nodes) == list(want[node_type].num_sampled_nodes)
        for edge_type in want.edge_types:
            for field in ("edge_index", "e_id"):
                assert torch.equal(got[edge_type][field].cpu(), want[edge_type][field]), (edge_type, field)
        assert torch.equal(got["paper"].input_id.cpu(), want["paper"].input_id)
        count += 1
    assert count == len(cpu) > 1


@needs_gpu
@pytest.mark.parametrize("mode", ["GPU", "UVA"])
def test_hetero_link_loader_batches_equal_cpu(mode):
    """The typed link loader on a device: the CPU link loader's batches (supervision edges,
    binary negatives, sampled subgraphs), on the device."""
    from volley.loader import LinkNeighborLoader

    data = _weighted_toy_hetero()
    edge_type = data.edge_types[0]
    kwargs = dict(edge_label_index=(edge_type, None), batch_size=16, seed=5, num_workers=2,
                  neg_sampling="binary")
    cpu = LinkNeighborLoader(data, [3, 2], **kwargs)
    gpu = LinkNeighborLoader(data, [3, 2], device="cuda", mode=mode, **kwargs)
    assert gpu.node_sampler.device == 0 and gpu.node_sampler.mode == mode
    count = 0
    for want, got in zip(cpu, gpu):
        assert _on_device(got[edge_type].edge_label_index)
        for node_type in want.node_types:
            assert torch.equal(got[node_type].n_id.cpu(), want[node_type].n_id), node_type
        for key in ("edge_label_index", "edge_label", "input_id"):
            assert torch.equal(got[edge_type][key].cpu(), want[edge_type][key]), key
        for t in want.edge_types:
            assert torch.equal(got[t].edge_index.cpu(), want[t].edge_index), t
        count += 1
    assert count == len(cpu) > 1


@needs_gpu
@pytest.mark.parametrize("mode", ["GPU", "UVA"])
@pytest.mark.parametrize("kind", ["disjoint", "node_time", "edge_time"])
def test_hetero_tree_loader_batches_equal_cpu(kind, mode):
    """Disjoint and temporal (time_attr: paper node times, authors untimed; or edge times with
    input_time and the "last" strategy) typed loaders on a device: the CPU loader's batches,
    each node's tree (batch) included, input nodes repeating."""
    from test_hetero import CITES, REV, WRITES

    data = _weighted_toy_hetero()
    rng = np.random.default_rng(7)
    train = torch.arange(0, 300, 3).repeat(2)
    kwargs = dict(batch_size=40, input_nodes=("paper", train), seed=6, shuffle=True)
    if kind == "disjoint":
        kwargs.update(disjoint=True)
    elif kind == "node_time":
        data["paper"].time = torch.from_numpy(rng.integers(0, 50, 300))
        kwargs.update(time_attr="time")
    else:
        for edge_type in (WRITES, CITES, REV):
            data[edge_type].time = torch.from_numpy(
                rng.integers(0, 50, data[edge_type].edge_index.shape[1]))
        kwargs.update(time_attr="time", temporal_strategy="last",
                      input_time=torch.from_numpy(rng.integers(0, 60, len(train))))
    cpu = NeighborLoader(data, [4, 3], num_workers=2, **kwargs)
    gpu = NeighborLoader(data, [4, 3], device="cuda", mode=mode, **kwargs)
    assert gpu.node_sampler.device == 0 and gpu.node_sampler.disjoint
    want = list(cpu)
    assert all("batch" in batch[t] for batch in want for t in ("paper", "author"))
    _expect_same_typed_batches(want, gpu, ("n_id", "x", "batch"))


def test_hetero_gpu_sampler_checks_its_mode():
    graph = volley.HeteroGraph.from_pyg(_weighted_toy_hetero())
    with pytest.raises(ValueError, match="mode must be 'GPU'"):
        volley.HeteroNeighborSampler(graph, [2], device="cuda", mode="zero-copy")


@no_gpu
def test_hetero_sampler_on_cuda_without_a_gpu_is_a_clear_error():
    graph = volley.HeteroGraph.from_pyg(_weighted_toy_hetero())
    for mode in ("GPU", "UVA"):
        with pytest.raises(volley.VolleyRuntimeError, match=_no_gpu_message()):
            volley.HeteroNeighborSampler(graph, [3], device="cuda", mode=mode)


@needs_real_gpu
def test_cuda_attributes_of_a_cpu_loader_stay_on_the_gpu():
    """A Data whose x and y live on CUDA: the CPU loader's batches carry them there (indexed by
    torch on the device, as PyG's loader keeps them), equal to the host rows."""
    from torch_geometric.data import Data

    generator = torch.Generator().manual_seed(2)
    host = Data(x=torch.randn(300, 8, generator=generator), y=torch.arange(300),
                edge_index=torch.randint(0, 300, (2, 2000), generator=generator))
    data = Data(x=host.x.cuda(), y=host.y.cuda(), edge_index=host.edge_index)
    for batch in NeighborLoader(data, [4, 2], batch_size=64, seed=1):
        assert batch.x.is_cuda and batch.y.is_cuda and not batch.n_id.is_cuda
        assert torch.equal(batch.x.cpu(), host.x[batch.n_id])
        assert torch.equal(batch.y.cpu(), batch.n_id)


@needs_gpu
@pytest.mark.parametrize("mode", ["GPU", "UVA"])
def test_a_resumed_device_epoch_gives_the_batches_left(mode):
    """state_dict / load_state_dict on the device loader: the native epoch starts at the first
    batch left, and those batches equal the CPU loader's."""
    cpu, gpu = _cpu_and_gpu_loaders(mode)
    want = [b.n_id for b in cpu]
    iterator = iter(gpu)
    for _ in range(3):
        next(iterator)
    state = gpu.state_dict()
    assert state["batches_taken"] == 3
    resumed = _cpu_and_gpu_loaders(mode)[1]
    resumed.load_state_dict(state)
    got = [b.n_id.cpu() for b in resumed]
    assert len(got) == len(want) - 3
    assert all(torch.equal(a, b) for a, b in zip(got, want[3:]))
