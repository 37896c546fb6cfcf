"""Hostile and careless inputs: each must give a clear Volley error or the answer
PyG / torch give, never a wrong answer, a crash or an opaque message."""

from __future__ import annotations

import os

import numpy as np
import pytest

import volley
from conftest import as_numpy, torch_or_none


def _dataset(n=10):
    src = np.arange(n, dtype=np.int64)
    edge_index = np.stack([src, (src + 1) % n])
    graph = volley.Graph.from_edge_index(edge_index, num_nodes=n)
    x = np.arange(n * 3, dtype=np.float32).reshape(n, 3)
    return volley.Dataset(graph, x, np.zeros(n, np.int64))


# --- item 5: an empty selection gives no batches -------------------------------------------


def test_all_false_mask_gives_no_batches():
    dataset = _dataset()
    loader = volley.loader.NeighborLoader(
        dataset, [2], batch_size=4, input_nodes=np.zeros(10, dtype=bool))
    assert len(loader) == 0
    assert list(loader) == []


def test_empty_id_array_gives_no_batches():
    dataset = _dataset()
    for empty in (np.zeros(0, dtype=np.int64), []):
        loader = volley.loader.NeighborLoader(dataset, [2], batch_size=4, input_nodes=empty)
        assert list(loader) == []


@pytest.mark.skipif(torch_or_none() is None, reason="torch is not importable")
def test_empty_torch_mask_gives_no_batches():
    torch = torch_or_none()
    loader = volley.loader.NeighborLoader(
        _dataset(), [2], batch_size=4, input_nodes=torch.zeros(10, dtype=torch.bool))
    assert list(loader) == []


def test_none_still_means_every_node():
    loader = volley.loader.NeighborLoader(_dataset(), [2], batch_size=4)
    assert sum(int(batch.batch_size) for batch in loader) == 10


# --- item 6: gather into a non-contiguous out -----------------------------------------------


def test_gather_into_non_contiguous_out_is_refused():
    feature = volley.Feature(np.arange(30, dtype=np.float32).reshape(10, 3))
    out = np.zeros((3, 6), dtype=np.float32)[:, ::2]
    with pytest.raises(volley.VolleyValueError, match="C-contiguous"):
        feature.gather([1, 2, 3], out=out)
    good = np.zeros((3, 3), dtype=np.float32)
    assert feature.gather([1, 2, 3], out=good) is good
    np.testing.assert_array_equal(good, np.arange(30, dtype=np.float32).reshape(10, 3)[1:4])


@pytest.mark.skipif(torch_or_none() is None, reason="torch is not importable")
def test_gather_into_non_contiguous_tensor_is_refused():
    torch = torch_or_none()
    feature = volley.Feature(np.arange(30, dtype=np.float32).reshape(10, 3))
    out = torch.zeros(3, 3).t()
    with pytest.raises(volley.VolleyValueError, match="strides"):
        feature.gather([1, 2, 3], out=out)


# --- item 7: seeds that are not integers ----------------------------------------------------


@pytest.mark.parametrize(
    "seeds, match",
    [
        (np.array([1.5, 2.0]), "float64"),
        (np.array([np.nan]), "float64"),
        (np.array([True, False]), "bool"),
        ("12", "'12'"),
        (np.array(["1", "2"]), "<U1"),
        (3.0, "3.0"),
    ],
)
def test_sampler_refuses_non_integer_seeds(seeds, match):
    sampler = volley.NeighborSampler(_dataset().graph, [2])
    with pytest.raises(volley.VolleyTypeError, match=match):
        sampler.sample(seeds)


@pytest.mark.parametrize(
    "input_nodes, match",
    [
        (np.array([1.0, 2.0]), "float64"),
        (np.array([np.nan]), "float64"),
        ("12", "'12'"),
        (np.array([True, False]), None),  # a bool array not of length N
    ],
)
def test_loader_refuses_non_integer_input_nodes(input_nodes, match):
    error = volley.VolleyValueError if match is None else volley.VolleyTypeError
    with pytest.raises(error, match=match or "mask must have shape"):
        volley.loader.NeighborLoader(_dataset(), [2], input_nodes=input_nodes)


def test_loader_accepts_a_bool_mask_of_length_n():
    mask = np.zeros(10, dtype=bool)
    mask[[2, 5]] = True
    loader = volley.loader.NeighborLoader(_dataset(), [2], batch_size=8, input_nodes=mask)
    (batch,) = list(loader)
    assert sorted(as_numpy(batch.n_id)[: int(batch.batch_size)].tolist()) == [2, 5]


def test_feature_refuses_bool_and_string_ids():
    feature = volley.Feature(np.ones((4, 2), dtype=np.float32))
    with pytest.raises(volley.VolleyTypeError, match="bool"):
        feature[True]
    with pytest.raises(volley.VolleyTypeError, match="'1'"):
        feature["1"]


# --- item 9: arguments out of range name the value ------------------------------------------


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        ({"seed": -1}, volley.VolleyValueError, "seed must be >= 0, got -1"),
        ({"seed": 2**64}, volley.VolleyValueError, "seed must be <= 18446744073709551615, got"),
        ({"num_workers": 2**40}, volley.VolleyValueError, "num_workers .* 1099511627776"),
        ({"prefetch": 2**40}, volley.VolleyValueError, "prefetch .* 1099511627776"),
        ({"batch_size": 2**40}, volley.VolleyValueError, "batch_size .* 1099511627776"),
        ({"batch_size": 1.5}, volley.VolleyTypeError, "batch_size must be an integer"),
    ],
)
def test_loader_arguments_out_of_range(kwargs, error, match):
    with pytest.raises(error, match=match):
        volley.loader.NeighborLoader(_dataset(), [2], **kwargs)


def test_sampler_seed_and_batch_index_out_of_range():
    graph = _dataset().graph
    for seed in (-1, 2**64):
        with pytest.raises(volley.VolleyValueError, match=f"seed must be [<>]= \\d+, got {seed}"):
            volley.NeighborSampler(graph, [2], seed=seed)
    sampler = volley.NeighborSampler(graph, [2])
    with pytest.raises(volley.VolleyValueError, match="batch_index must be >= 0, got -1"):
        sampler.sample([0], batch_index=-1)


def test_graph_arguments_of_the_wrong_type():
    edge_index = np.array([[0, 1], [1, 0]])
    with pytest.raises(volley.VolleyTypeError, match="num_nodes must be an integer, got 1.5"):
        volley.Graph.from_edge_index(edge_index, num_nodes=1.5)
    with pytest.raises(volley.VolleyTypeError, match="orientation must be one of .* got None"):
        volley.Graph.from_edge_index(edge_index, orientation=None)


def test_non_utf8_manifest_gives_a_message(tmp_path):
    volley.Dataset(_dataset().graph, name="tiny").save(tmp_path)
    manifest = tmp_path / "volley.json"
    text = manifest.read_bytes().replace(b'"tiny"', b'"ti\xff\xfeny"')
    manifest.write_bytes(text)
    with pytest.raises(volley.VolleyOSError) as caught:
        volley.load_dataset(tmp_path)
    assert "volley.json" in str(caught.value)


def test_deeply_nested_manifest_is_refused(tmp_path):
    volley.Dataset(_dataset().graph, name="tiny").save(tmp_path)
    (tmp_path / "volley.json").write_text("[" * 100_000 + "]" * 100_000)
    with pytest.raises(volley.VolleyOSError, match="nest deeper than 64"):
        volley.load_dataset(tmp_path)
    deep = '{"format": "volley-dataset", "name": ' + "[" * 70_000 + "]" * 70_000 + "}"
    (tmp_path / "volley.json").write_text(deep)
    with pytest.raises(volley.VolleyOSError, match="nest deeper"):
        volley.load_dataset(tmp_path)


def test_manifest_that_is_a_named_pipe_does_not_block(tmp_path):
    volley.Dataset(_dataset().graph, name="tiny").save(tmp_path)
    os.remove(tmp_path / "volley.json")
    os.mkfifo(tmp_path / "volley.json")
    with pytest.raises(volley.VolleyOSError, match="named pipe"):
        volley.load_dataset(tmp_path)


# --- item 10: empty lists as PyG / torch take them ------------------------------------------


def test_empty_edge_index_list_is_a_graph_without_edges():
    graph = volley.Graph.from_edge_index([[], []], num_nodes=3)
    assert (graph.num_nodes, graph.num_edges) == (3, 0)
    assert volley.Graph.from_edge_index([[], []]).num_nodes == 0


def test_empty_id_list_gathers_no_rows():
    feature = volley.Feature(np.ones((4, 2), dtype=np.float32))
    assert tuple(feature[[]].shape) == (0, 2)
    assert tuple(feature.gather([]).shape) == (0, 2)


@pytest.mark.skipif(
    os.environ.get("VOLLEY_TEST_SANITIZED") == "1",
    reason="under ASan a failed operator new aborts the process instead of throwing bad_alloc",
)
def test_num_nodes_too_large_to_allocate_names_the_value():
    with pytest.raises(volley.VolleyValueError, match="num_nodes=1125899906842624"):
        volley.Graph.from_edge_index(np.array([[0], [1]]), num_nodes=2**50)


# --- sizes in bytes: a negative, NaN or infinite size is refused, naming it ----------------


@pytest.mark.parametrize("kwargs, error, match", [
    (dict(cache_bytes=-1), volley.VolleyValueError, r"cache_bytes must be a size in bytes >= 0, got -1"),
    (dict(cache_bytes=float("nan")), volley.VolleyValueError, r"cache_bytes must be a finite size"),
    (dict(cache_bytes=float("inf")), volley.VolleyValueError, r"got inf"),
    (dict(cache_bytes=-0.5), volley.VolleyValueError, r"got -0.5"),
    (dict(cache_bytes=True), volley.VolleyTypeError, r"got the bool True"),
    (dict(cache_bytes="1.2.3G"), volley.VolleyValueError, r"cannot read cache_bytes='1.2.3G'"),
    (dict(cache_bytes="-4G"), volley.VolleyValueError, r"cannot read cache_bytes='-4G'"),
    (dict(device_cache_size=-8), volley.VolleyValueError, r"device_cache_size must be a size"),
])
def test_feature_sizes_out_of_range_are_named(kwargs, error, match):
    with pytest.raises(error, match=match):
        volley.Feature(np.zeros((10, 3), dtype=np.float32), **kwargs)


def test_feature_sizes_in_range_are_read():
    from volley._tensor import byte_size

    assert byte_size("1.5K", "x") == 1536 and byte_size(".5M", "x") == 1 << 19
    assert byte_size(0, "x") == 0 and byte_size(None, "x") == 0 and byte_size(2.0**40, "x") == 1 << 40
