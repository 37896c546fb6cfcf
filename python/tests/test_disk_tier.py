"""Features larger than memory: a sparse 64 GiB .npy opens and gathers; the disk tier (io_uring
or pread, static or SIEVE cache) equals numpy; bad files and bad options raise clear errors."""

from __future__ import annotations

import os

import numpy as np
import pytest

import volley
from volley._tensor import to_numpy


def physical_ram() -> int:
    return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")


def sparse_npy(path, rows: int, width: int) -> int:
    """A float32 [rows, width] .npy whose data is a hole (truncate: no disk used); returns the
    byte offset of its data."""
    header = np.lib.format.header_data_from_array_1_0(np.zeros((1, width), np.float32))
    header["shape"] = (rows, width)
    with open(path, "wb") as f:
        np.lib.format.write_array_header_1_0(f, header)
        offset = f.tell()
    os.truncate(path, offset + rows * width * 4)
    return offset


def test_a_sparse_64_gib_file_opens_as_features_and_gathers(tmp_path):
    path = tmp_path / "huge.npy"
    width = 800
    rows = (64 << 30) // (width * 4)
    offset = sparse_npy(path, rows, width)
    fd = os.open(path, os.O_WRONLY)
    try:
        os.pwrite(fd, np.arange(width, dtype=np.float32).tobytes(), offset + 11 * width * 4)
    finally:
        os.close(fd)
    feature = volley.Feature(str(path))
    assert feature.shape == (rows, width)
    if 64 << 30 > physical_ram() // 2:
        assert feature.disk_io != ""  # picked by itself
    rows_out = to_numpy(feature[np.array([rows - 1, 11, 0, 11], dtype=np.int64)])
    assert rows_out.shape == (4, width)
    np.testing.assert_array_equal(rows_out[1], np.arange(width, dtype=np.float32))
    np.testing.assert_array_equal(rows_out[3], np.arange(width, dtype=np.float32))
    assert not rows_out[0].any() and not rows_out[2].any()


@pytest.mark.parametrize("policy", ["static", "dynamic", "lookahead"])
@pytest.mark.parametrize("io_uring", [True, False])
def test_the_disk_tier_equals_numpy(tmp_path, policy, io_uring):
    rng = np.random.default_rng(3)
    table = rng.standard_normal((2000, 33)).astype(np.float32)
    path = tmp_path / "x.npy"
    np.save(path, table)
    feature = volley.Feature(
        str(path), cache_bytes="40K", policy=policy, disk=True, io_uring=io_uring
    )
    assert feature.disk_io.startswith("io_uring" if io_uring else "pread")
    ids = rng.integers(0, 2000, size=3000).astype(np.int64)
    for _ in range(2):
        np.testing.assert_array_equal(to_numpy(feature[ids]), table[ids])
    hits, misses = feature.disk_stats
    assert hits + misses == 2 * len(ids) and hits > 0
    half = to_numpy(feature.gather(ids[:50], dtype="float16"))
    np.testing.assert_array_equal(half, table[ids[:50]].astype(np.float16))


def test_disk_io_support_names_the_reader():
    support = volley.disk_io_support()
    assert support == "io_uring" or support.startswith("pread (io_uring refused")


def test_bad_policies_and_changed_files_raise(tmp_path):
    path = tmp_path / "x.npy"
    np.save(path, np.ones((256, 8), np.float32))
    with pytest.raises(volley.VolleyValueError, match="'fifo'"):
        volley.Feature(str(path), policy="fifo")
    with pytest.raises(volley.VolleyValueError, match="mapped .npy file"):
        volley.Feature(np.ones((4, 2), np.float32), disk=True)
    feature = volley.Feature(str(path), disk=True, cache_bytes=0)
    os.truncate(path, 200)
    with pytest.raises(volley.VolleyOSError, match="changed on disk"):
        feature[np.array([100], dtype=np.int64)]
    with pytest.raises(volley.VolleyOSError, match="x.npy"):
        volley.Feature(str(path), disk=True)


@pytest.mark.parametrize("policy", [None, "static", "dynamic", "lookahead"])
def test_neighbor_loader_takes_the_row_cache_options(cora_dir, policy):
    from volley.loader import NeighborLoader

    cora = volley.load_dataset(cora_dir)
    x = to_numpy(cora.x)
    loader = NeighborLoader(
        cora, [5], batch_size=50, input_nodes=cora.train_idx, seed=0,
        cache_bytes="64K", policy=policy,
    )
    batch = next(iter(loader))
    n_id = to_numpy(batch.n_id)
    np.testing.assert_array_equal(to_numpy(batch.x), x[n_id].astype(np.float32))


def test_a_loader_over_a_lookahead_disk_tier_gathers_the_right_rows(tmp_path):
    from volley.loader import NeighborLoader

    rng = np.random.default_rng(7)
    table = rng.standard_normal((300, 8)).astype(np.float32)
    np.save(tmp_path / "x.npy", table)
    feature = volley.Feature(str(tmp_path / "x.npy"), cache_bytes="2K", policy="lookahead",
                             disk=True)
    class Data:  # a minimal PyG-like Data
        pass

    data = Data()
    data.edge_index = rng.integers(0, 300, size=(2, 1500)).astype(np.int64)
    data.num_nodes = 300
    data.x = feature
    loader = NeighborLoader(data, [4, 2], batch_size=16, shuffle=True, seed=1, num_workers=2)
    for batch in loader:
        np.testing.assert_array_equal(to_numpy(batch.x), table[to_numpy(batch.n_id)])
    hits, misses = feature.disk_stats
    assert hits > 0 and misses > 0
    # The window: any lookahead gives the same rows (only the cache's choices differ).
    for window in (0, 32):
        loader = NeighborLoader(data, [4, 2], batch_size=16, shuffle=True, seed=1, num_workers=2,
                                lookahead=window)
        assert loader._options.lookahead == window
        for batch in loader:
            np.testing.assert_array_equal(to_numpy(batch.x), table[to_numpy(batch.n_id)])
    with pytest.raises(volley.VolleyValueError, match="lookahead"):
        NeighborLoader(data, [4, 2], batch_size=16, lookahead=-1)


def _batches(loader):
    return [
        (to_numpy(b.n_id).copy(), to_numpy(b.edge_index).copy(), to_numpy(b.x).copy())
        for b in loader
    ]


@pytest.mark.parametrize("read_ahead", [False, True])
def test_lookahead_batches_are_bit_identical_to_a_loader_without_it(tmp_path, read_ahead):
    """NeighborLoader(lookahead=k) samples each batch once (the batches ahead are kept): its
    batches equal those of a loader over the table in memory, for any window and worker count."""
    from volley.loader import NeighborLoader

    class Data:  # a minimal PyG-like Data
        pass

    rng = np.random.default_rng(11)
    table = rng.standard_normal((400, 12)).astype(np.float32)
    np.save(tmp_path / "x.npy", table)
    edge_index = rng.integers(0, 400, size=(2, 3000)).astype(np.int64)
    plain = Data()
    plain.edge_index, plain.num_nodes, plain.x = edge_index, 400, table
    for workers in (1, 2, 3):
        want = _batches(NeighborLoader(plain, [3, 2], batch_size=24, shuffle=True, seed=4,
                                       num_workers=workers))
        for window in (1, 3, 8):
            feature = volley.Feature(str(tmp_path / "x.npy"), cache_bytes="4K",
                                     policy="lookahead", disk=True, read_ahead=read_ahead)
            data = Data()
            data.edge_index, data.num_nodes, data.x = edge_index, 400, feature
            got = _batches(NeighborLoader(data, [3, 2], batch_size=24, shuffle=True, seed=4,
                                          num_workers=workers, lookahead=window))
            assert len(got) == len(want) == 17
            for (n0, e0, x0), (n1, e1, x1) in zip(want, got):
                np.testing.assert_array_equal(n0, n1)
                np.testing.assert_array_equal(e0, e1)
                assert x0.tobytes() == x1.tobytes()
            hits, misses = feature.disk_stats
            assert hits + misses == sum(len(n) for n, _, _ in got) and hits > 0
            if not read_ahead:
                assert feature._native().rows_read_ahead == 0


def test_a_truncated_file_raises_at_a_batch_with_read_ahead(tmp_path):
    from volley.loader import NeighborLoader

    class Data:
        pass

    rng = np.random.default_rng(2)
    np.save(tmp_path / "x.npy", rng.standard_normal((300, 8)).astype(np.float32))
    feature = volley.Feature(str(tmp_path / "x.npy"), cache_bytes="1K", policy="lookahead",
                             disk=True, read_ahead=True)
    os.truncate(tmp_path / "x.npy", 2000)
    data = Data()
    data.edge_index = rng.integers(0, 300, size=(2, 1500)).astype(np.int64)
    data.num_nodes, data.x = 300, feature
    loader = NeighborLoader(data, [4], batch_size=16, num_workers=2, lookahead=4)
    with pytest.raises(volley.VolleyOSError, match="changed on disk"):
        for _ in loader:
            pass


def test_neighbor_loader_row_cache_needs_a_dataset():
    from volley.loader import NeighborLoader

    class Data:
        edge_index = np.array([[0, 1], [1, 0]], dtype=np.int64)
        x = np.ones((2, 3), np.float32)
        num_nodes = 2

    with pytest.raises(volley.VolleyValueError, match="volley.Dataset"):
        NeighborLoader(Data(), [1], batch_size=1, cache_bytes="1M")


def test_a_mapped_file_truncated_under_a_running_loader_is_an_error_not_a_signal(tmp_path):
    """The mapped tier (the default for files under half the RAM): truncating, rewriting or
    deleting the file while a loader gathers from it gives VolleyOSError at a batch, never a
    SIGBUS; the process goes on (a fresh Feature on a whole file works after)."""
    from volley.loader import NeighborLoader

    class Data:
        pass

    rng = np.random.default_rng(4)
    table = rng.standard_normal((6000, 64)).astype(np.float32)
    path = tmp_path / "x.npy"
    for change in ("truncate", "rewrite", "delete"):
        np.save(path, table)
        feature = volley.Feature(str(path))
        assert feature.disk_io == ""  # mapped, not the disk tier
        data = Data()
        data.edge_index = rng.integers(0, 6000, size=(2, 30000)).astype(np.int64)
        data.num_nodes, data.x = 6000, feature
        loader = NeighborLoader(data, [5, 5], batch_size=256, num_workers=2, shuffle=True)
        batches = iter(loader)
        next(batches)  # running
        if change == "truncate":
            os.truncate(path, 4096)
        elif change == "rewrite":  # in place, shorter: the pages past the new end go
            with open(path, "r+b") as f:
                f.truncate(0)
                f.write(b"\x93NUMPY" + b"\0" * 100)
        else:  # unlinking keeps the pages (the map holds the inode): batches go on
            os.remove(path)
        if change == "delete":
            assert sum(1 for _ in batches) >= 0
            continue
        with pytest.raises(volley.VolleyOSError, match="changed on disk"):
            for _ in batches:
                pass
    np.save(path, table)
    np.testing.assert_array_equal(to_numpy(volley.Feature(str(path))[np.arange(3)]), table[:3])


def _typed_batches(loader):
    return [{t: (to_numpy(b[t].n_id).copy(), to_numpy(b[t].x).copy())
             for t in b.node_types if "x" in b[t]} for b in loader]


@pytest.mark.parametrize("workers", [1, 2])
def test_typed_lookahead_tables_read_the_batches_ahead_with_the_same_batches(tmp_path, workers):
    """A HeteroData whose node types' x are lookahead disk tiers: the typed loader announces its
    batches ahead to every type's store (their rows read ahead only with a window), and its
    batches equal those over the tables in memory."""
    pyg_data = pytest.importorskip("torch_geometric.data")
    import torch
    from volley.loader import NeighborLoader

    rng = np.random.default_rng(3)
    sizes = {"paper": 300, "author": 200}
    tables = {t: rng.standard_normal((n, 8)).astype(np.float32) for t, n in sizes.items()}
    for t, table in tables.items():
        np.save(tmp_path / f"{t}.npy", table)
    plain = pyg_data.HeteroData()
    for t, table in tables.items():
        plain[t].x, plain[t].num_nodes = torch.from_numpy(table), sizes[t]
    edges = np.stack([rng.integers(0, 200, 1500), rng.integers(0, 300, 1500)])
    plain["author", "writes", "paper"].edge_index = torch.from_numpy(edges)
    plain["paper", "rev_writes", "author"].edge_index = torch.from_numpy(edges[::-1].copy())
    arguments = dict(input_nodes="paper", batch_size=24, shuffle=True, seed=4,
                     num_workers=workers)
    want = _typed_batches(NeighborLoader(plain, [3, 2], **arguments))
    for window in (0, 3):
        data = plain.clone()
        for t in sizes:
            data[t].x = volley.Feature(str(tmp_path / f"{t}.npy"), cache_bytes="1K",
                                       policy="lookahead", disk=True, read_ahead=True)
        got = _typed_batches(NeighborLoader(data, [3, 2], lookahead=window, **arguments))
        assert len(got) == len(want) == 13
        for a, b in zip(want, got):
            assert a.keys() == b.keys() == set(sizes)
            for t in a:
                np.testing.assert_array_equal(a[t][0], b[t][0])
                assert a[t][1].tobytes() == b[t][1].tobytes()
        for t in sizes:
            ahead = data[t].x._native().rows_read_ahead
            assert (ahead > 0) == (window > 0), (t, window, ahead)


def test_a_typed_datasets_features_take_the_row_cache_options(tmp_path):
    """A HeteroDataset's features go through its native stores, as a Dataset's do: cache_bytes
    shared among the node types with features by their bytes, the same batches."""
    from test_hetero import toy_hetero
    from volley.loader import NeighborLoader

    data = toy_hetero(papers=400)
    data["author"].x = data["paper"].x.new_ones((40, 12))
    volley.HeteroDataset.from_pyg(data, name="toy").save(tmp_path / "toy")
    dataset = volley.load_dataset(tmp_path / "toy")
    arguments = dict(input_nodes="paper", batch_size=32, shuffle=True, seed=2)
    want = _typed_batches(NeighborLoader(dataset, [2, 2], **arguments))
    loader = NeighborLoader(dataset, [2, 2], cache_bytes=3200, policy="static", **arguments)
    cached = {t: feature.tiers for t, (_, feature) in loader._dataset_x.items()}
    # paper: 400 x 4 float32 (6,400 bytes), author: 40 x 12 (1,920): shares of 3,200 bytes by
    # bytes (2,461 and 738), in whole rows of 16 and 48 bytes.
    assert cached["paper"][0]["rows"] == 3200 * 6400 // 8320 // 16 == 153
    assert cached["author"][0]["rows"] == 3200 * 1920 // 8320 // 48 == 15
    got = _typed_batches(loader)
    assert len(got) == len(want) == 13
    for a, b in zip(want, got):
        for t in a:
            np.testing.assert_array_equal(a[t][0], b[t][0])
            np.testing.assert_array_equal(a[t][1], b[t][1])
