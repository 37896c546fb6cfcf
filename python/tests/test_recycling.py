"""Recycled output memory: a batch's arrays reuse freed memory, never memory Python still views."""

from __future__ import annotations

import gc

import numpy as np

import volley

from conftest import as_numpy, data_pointer


def big_graph(n=60_000, m=600_000, seed=0):
    rng = np.random.default_rng(seed)
    edge_index = rng.integers(0, n, size=(2, m), dtype=np.int64)
    return volley.Graph.from_edge_index(edge_index, num_nodes=n)


def test_gather_output_is_recycled_only_after_python_lets_go(backend):
    table = np.arange(200_000 * 16, dtype=np.float32).reshape(200_000, 16)
    feature = volley.Feature(table)
    ids = np.arange(0, 200_000, 2, dtype=np.int64)  # 6.4 MB of rows: from the host pool
    first = feature.gather(ids)
    address = data_pointer(first)
    view = first[10:20]  # a view keeps the whole block alive
    del first
    gc.collect()
    second = feature.gather(ids[::-1].copy())
    assert data_pointer(second) != address  # the block is still viewed
    np.testing.assert_array_equal(as_numpy(view), table[ids[10:20]])
    np.testing.assert_array_equal(as_numpy(second), table[ids[::-1]])
    del view, second
    gc.collect()
    third = feature.gather(ids)  # the freed blocks come back
    np.testing.assert_array_equal(as_numpy(third), table[ids])


def test_gather_reuses_a_freed_block(backend):
    table = np.ones((100_000, 32), dtype=np.float32)
    feature = volley.Feature(table)
    ids = np.arange(50_000, dtype=np.int64)
    rows = feature.gather(ids)
    address = data_pointer(rows)
    del rows
    gc.collect()
    assert data_pointer(feature.gather(ids)) == address


def test_sampled_subgraphs_kept_by_python_are_never_overwritten(backend):
    graph = big_graph()
    sampler = volley.NeighborSampler(graph, [15, 10], seed=3)
    seeds = np.arange(0, 60_000, 30, dtype=np.int64)
    kept = sampler.sample_subgraph(seeds, batch_index=0)
    kept_copy = [as_numpy(a).copy() for a in (kept.n_id, kept.row, kept.col, kept.e_id)]
    for batch in range(1, 8):  # later batches recycle only what was let go
        sub = sampler.sample_subgraph(seeds, batch_index=batch)
        del sub
        gc.collect()
    for array, copy in zip((kept.n_id, kept.row, kept.col, kept.e_id), kept_copy):
        np.testing.assert_array_equal(as_numpy(array), copy)
    again = sampler.sample_subgraph(seeds, batch_index=0)  # recycled vectors, same result
    for array, copy in zip((again.n_id, again.row, again.col, again.e_id), kept_copy):
        np.testing.assert_array_equal(as_numpy(array), copy)


def test_sampler_reuses_freed_subgraph_memory(backend):
    graph = big_graph()
    sampler = volley.NeighborSampler(graph, [15, 10], seed=3)
    seeds = np.arange(0, 60_000, 30, dtype=np.int64)
    sub = sampler.sample_subgraph(seeds, batch_index=1)
    address = data_pointer(sub.row)
    del sub
    gc.collect()
    assert data_pointer(sampler.sample_subgraph(seeds, batch_index=1).row) == address
