"""volley.Feature: gather equals numpy fancy indexing in every tier and dtype; shared memory
across processes; mapped files; errors; the loader and Dataset with Feature stores."""

from __future__ import annotations

import pickle
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import volley
from volley._tensor import to_numpy

from conftest import torch_or_none, runs_other_interpreters

torch = torch_or_none()

DTYPES = ["float32", "float16", "int8", "uint8", "int64"]


def make_table(dtype: str, rows: int = 500, width: int = 7, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    if dtype.startswith("float"):
        return (rng.integers(-1000, 1000, size=(rows, width)) / 8).astype(dtype)
    info = np.iinfo(dtype)
    return rng.integers(info.min, info.max, size=(rows, width), dtype=dtype, endpoint=True)


def batches(rows: int):
    rng = np.random.default_rng(1)
    return [
        np.array([], dtype=np.int64),
        np.array([4, 4, 4, rows - 1, 0, 4], dtype=np.int64),
        rng.integers(0, rows, size=20000).astype(np.int64),
        rng.integers(0, rows, size=33).astype(np.int64),
    ]


def features_of(table: np.ndarray, tmp_path) -> dict:
    path = tmp_path / f"table-{table.dtype}.npy"
    np.save(path, table)
    n = table.shape[0]
    hot = np.arange(n - 1, -1, -3, dtype=np.int64)
    row_bytes = table.itemsize * table.shape[1]
    return {
        "host": volley.Feature(table),
        "shared": volley.Feature(table, shared=True),
        "mapped": volley.Feature(str(path)),
        "cache+host": volley.Feature(table, cache_bytes=row_bytes * (n // 4), hot_order=hot),
        "cache+mapped": volley.Feature(path, cache_bytes=row_bytes * 50, hot_order=hot),
    }


@pytest.mark.parametrize("dtype", DTYPES)
def test_gather_equals_fancy_indexing_in_every_tier(dtype, tmp_path, backend):
    table = make_table(dtype)
    for name, feature in features_of(table, tmp_path).items():
        assert feature.shape == table.shape and len(feature) == table.shape[0]
        for ids in batches(table.shape[0]):
            np.testing.assert_array_equal(to_numpy(feature[ids]), table[ids], err_msg=name)
            if backend == "torch":
                assert isinstance(feature[torch.from_numpy(ids)], torch.Tensor)
            else:
                assert isinstance(feature[ids], np.ndarray)
        assert any(t["location"] == "mapped_file" for t in feature.tiers) == ("mapped" in name)


@pytest.mark.skipif(torch is None, reason="bfloat16 needs torch")
def test_bfloat16_gathers_and_converts_exactly():
    x = torch.randn(300, 9).to(torch.bfloat16)
    feature = volley.Feature(x)
    ids = torch.tensor([7, 299, 0, 7])
    assert torch.equal(feature[ids], x[ids])
    assert torch.equal(feature.gather(ids, dtype="float32"), x[ids].float())


def test_float16_to_float32_is_exact_for_every_bit_pattern():
    halves = np.arange(65536, dtype=np.uint16).view(np.float16).reshape(-1, 64)
    feature = volley.Feature(halves)
    ids = np.arange(halves.shape[0])[::-1].copy()
    got = to_numpy(feature.gather(ids, dtype="float32"))
    expected = halves[ids].astype(np.float32)
    finite = ~np.isnan(expected)
    np.testing.assert_array_equal(got[finite], expected[finite])
    assert np.isnan(got[~finite]).all()


def test_integer_conversions_are_exact():
    table = make_table("uint8")
    ids = np.array([3, 499, 3])
    np.testing.assert_array_equal(
        to_numpy(volley.Feature(table).gather(ids, dtype="float32")), table[ids].astype(np.float32)
    )
    labels = make_table("int8")[:, 0].copy()
    np.testing.assert_array_equal(
        to_numpy(volley.Feature(labels).gather(ids, dtype="int64")), labels[ids].astype(np.int64)
    )


def test_gather_into_out_buffer():
    table = make_table("float16")
    ids = np.array([1, 2, 400])
    out = np.zeros((3, 7), dtype=np.float32)
    assert volley.Feature(table).gather(ids, dtype="float32", out=out) is out
    np.testing.assert_array_equal(out, table[ids].astype(np.float32))
    with pytest.raises(ValueError, match="out must be"):
        volley.Feature(table).gather(ids, dtype="float32", out=np.zeros((2, 7), np.float32))


def test_index_forms(backend):
    table = make_table("float32", rows=50)
    feature = volley.Feature(table)
    np.testing.assert_array_equal(to_numpy(feature[3]), table[3])
    np.testing.assert_array_equal(to_numpy(feature[10:20:3]), table[10:20:3])
    mask = np.zeros(50, dtype=bool)
    mask[[2, 9]] = True
    np.testing.assert_array_equal(to_numpy(feature[mask]), table[mask])
    np.testing.assert_array_equal(to_numpy(feature[[5, 5, 1]]), table[[5, 5, 1]])


def test_out_of_range_id_raises_with_the_id():
    feature = volley.Feature(make_table("float32", rows=100))
    with pytest.raises(IndexError, match=r"row id 100 at position 2 out of range"):
        feature[np.array([0, 1, 100, 3])]
    with pytest.raises(volley.VolleyIndexError, match=r"row id -7 at position 0"):
        feature[[-7]]
    big = np.zeros(50000, dtype=np.int64)
    big[40000] = 12345
    with pytest.raises(IndexError, match=r"row id 12345 at position 40000"):
        feature[big]


@runs_other_interpreters
def test_shared_feature_attached_from_a_second_process(tmp_path):
    table = make_table("float32", rows=300, width=5)
    feature = volley.Feature(table, shared=True)
    ids = np.array([299, 0, 17, 17])
    script = textwrap.dedent(
        f"""
        import sys, numpy as np, volley
        from volley._tensor import to_numpy
        f = volley.Feature.attach({feature.shared_name!r})
        np.save(sys.argv[1], to_numpy(f[np.array({ids.tolist()})]))
        """
    )
    result_path = tmp_path / "rows.npy"
    subprocess.run([sys.executable, "-c", script, str(result_path)], check=True)
    np.testing.assert_array_equal(np.load(result_path), table[ids])
    # Pickling a shared Feature attaches by name (what multiprocessing does).
    clone = pickle.loads(pickle.dumps(feature))
    np.testing.assert_array_equal(to_numpy(clone[ids]), table[ids])
    # Pickling an unshared Feature moves it to shared memory first (volley._share).
    unshared = volley.Feature(table)
    np.testing.assert_array_equal(to_numpy(pickle.loads(pickle.dumps(unshared))[ids]), table[ids])
    assert unshared.tiers[0]["location"] == "shared_memory"


def _rss_anon_kib() -> int:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("RssAnon:"):
                return int(line.split()[1])
    return 0


def test_mapped_feature_is_not_loaded(tmp_path):
    table = np.lib.format.open_memmap(
        tmp_path / "big.npy", mode="w+", dtype=np.float32, shape=(32768, 1024)
    )  # 128 MiB
    table[::1000, 0] = np.arange(0, 32768, 1000)
    table.flush()
    del table
    before = _rss_anon_kib()
    feature = volley.Feature(tmp_path / "big.npy")
    rows = to_numpy(feature[np.arange(0, 32768, 1000)])
    assert _rss_anon_kib() - before < 32 * 1024  # far below the file's 128 MiB
    np.testing.assert_array_equal(rows[:, 0], np.arange(0, 32768, 1000))
    assert feature.tiers[0]["location"] == "mapped_file"


def test_hot_order_by_degree_fills_the_cache_with_high_degree_rows():
    edge_index = np.array([[0, 2, 3, 0, 1, 3], [1, 1, 1, 2, 2, 0]])
    graph = volley.Graph.from_edge_index(edge_index, num_nodes=5)
    np.testing.assert_array_equal(to_numpy(volley.hotness_by_degree(graph)), [1, 2, 0, 3, 4])
    table = make_table("float32", rows=5, width=4)
    feature = volley.Feature(table, cache_bytes=2 * 16, hot_order="degree", graph=graph)
    assert [t["rows"] for t in feature.tiers] == [2, 5]
    np.testing.assert_array_equal(to_numpy(feature[[0, 1, 2, 3, 4]]), table)
    # Quiver's spelling.
    quiver_style = volley.Feature(
        rank=0, device_list=[0], device_cache_size=32, cache_policy="device_replicate",
        csr_topo=graph,
    ).from_cpu_tensor(table)
    assert [t["rows"] for t in quiver_style.tiers] == [2, 5]
    np.testing.assert_array_equal(to_numpy(quiver_style[[4, 1]]), table[[4, 1]])


def test_hot_order_by_sampling_is_deterministic():
    rng = np.random.default_rng(0)
    edge_index = rng.integers(0, 400, size=(2, 3000))
    graph = volley.Graph.from_edge_index(edge_index, num_nodes=400)
    seeds = np.arange(0, 400, 4)
    a = to_numpy(volley.hotness_by_sampling(graph, seeds, [5, 5], 16, seed=3))
    b = to_numpy(volley.hotness_by_sampling(graph, seeds, [5, 5], 16, seed=3))
    np.testing.assert_array_equal(a, b)
    assert sorted(a.tolist()) == list(range(400))


def test_errors_for_bad_options():
    table = make_table("float32", rows=10)
    with pytest.raises(ValueError, match="hot_order"):
        volley.Feature(table, hot_order="sometimes")
    with pytest.raises(ValueError, match="twice"):
        volley.Feature(table, cache_bytes=100, hot_order=[1, 1])
    with pytest.raises(ValueError, match="size in bytes"):
        volley.Feature(table, cache_bytes="lots")
    with pytest.raises(RuntimeError, match="from_cpu_tensor"):
        volley.Feature()[0]
    big = make_table("float32", rows=100)
    assert [t["rows"] for t in volley.Feature(big, cache_bytes="1K").tiers] == [1024 // 28, 100]


def test_dataset_feature_and_label_stores():
    cora = volley.datasets.cora()
    ids = np.array([0, 2707, 5, 5])
    np.testing.assert_array_equal(to_numpy(cora.feature[ids]), to_numpy(cora.x)[ids])
    np.testing.assert_array_equal(to_numpy(cora.label[ids]), to_numpy(cora.y)[ids])
    assert cora.feature.shape == (2708, 1433)
    assert cora.label.shape == (2708,)
    assert cora.feature.tiers[0]["location"] == "mapped_file"  # stays mapped, not copied


@pytest.mark.skipif(torch is None, reason="the PyG-style loader test uses torch")
def test_loader_takes_feature_stores():
    from volley.loader import NeighborLoader

    cora = volley.datasets.cora()
    graph = cora.graph
    x = to_numpy(cora.x)
    tiered = volley.Feature(x, cache_bytes=x[0].nbytes * 500, hot_order="degree", graph=graph)

    class Data:  # a minimal PyG-like Data
        pass

    data = Data()
    data.edge_index = graph.to_edge_index()
    data.num_nodes = cora.num_nodes
    data.x = tiered
    data.y = cora.label
    loader = NeighborLoader(data, [5, 5], batch_size=256, seed=1, feature_dtype="float32")
    plain = NeighborLoader(cora, [5, 5], batch_size=256, seed=1)
    count = 0
    for a, b in zip(loader, plain):
        assert torch.equal(a.n_id, b.n_id)
        assert torch.equal(a.x, b.x)
        assert torch.equal(a.y, b.y)
        count += 1
    assert count == len(plain)
