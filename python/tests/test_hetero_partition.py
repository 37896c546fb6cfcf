"""Heterogeneous partitioning through volley.partition / volley.load_partition: ownership, edges
(with edge ids) per edge type, node data, per-type balance, METIS against random, errors."""

from __future__ import annotations

import json
import subprocess

import numpy as np
import pytest

import volley
from volley.hetero_partition import HeteroPartition
from volley.partition import load_node_map, verify_partitioned_dataset

from conftest import as_numpy, volley_cli as _cli

WRITES = ("author", "writes", "paper")
CITES = ("paper", "cites", "paper")
REV = ("paper", "rev_writes", "author")
AFFILIATED = ("author", "affiliated_with", "institution")


def clustered_dataset(seed: int = 0, papers: int = 400, authors: int = 300,
                      institutions: int = 12, clusters: int = 4) -> volley.HeteroDataset:
    """Four communities: 90% of the edges stay inside one (METIS should find them)."""
    rng = np.random.default_rng(seed)
    cluster = {"paper": rng.integers(0, clusters, papers),
               "author": rng.integers(0, clusters, authors),
               "institution": np.arange(institutions) % clusters}
    counts = {"paper": papers, "author": authors, "institution": institutions}

    def edges(src: str, dst: str, count: int) -> np.ndarray:
        d = rng.integers(0, counts[dst], count)
        s = np.empty(count, dtype=np.int64)
        for i, v in enumerate(d):
            same = np.flatnonzero(cluster[src] == cluster[dst][v])
            s[i] = rng.choice(same) if rng.random() < 0.9 and same.size else rng.integers(
                0, counts[src])
        return np.stack([s, d])

    writes = edges("author", "paper", 1500)
    graph = volley.HeteroGraph.from_edge_index_dict(
        {WRITES: writes, CITES: edges("paper", "paper", 1200), REV: writes[::-1].copy(),
         AFFILIATED: edges("author", "institution", 300)}, counts)
    x = rng.normal(size=(papers, 5)).astype(np.float32)
    y = rng.integers(0, 3, papers)
    order = rng.permutation(papers)
    return volley.HeteroDataset(
        graph, {"paper": x, "author": rng.normal(size=(authors, 2)).astype(np.float32)},
        {"paper": y}, train_idx_dict={"paper": np.sort(order[:100])},
        val_idx_dict={"paper": np.sort(order[100:150])}, name="clustered")


def sorted_edges(dst_ids, src_ids, edge_ids):
    triples = np.stack([np.asarray(dst_ids), np.asarray(src_ids), np.asarray(edge_ids)], 1)
    return triples[np.lexsort(triples.T[::-1])]


def input_edges(graph, edge_type):
    csr = graph.graph(edge_type)
    indptr, indices = as_numpy(csr.indptr), as_numpy(csr.indices)
    ids = csr.edge_ids
    ids = np.arange(indices.size) if ids is None else as_numpy(ids)
    return sorted_edges(np.repeat(np.arange(indptr.size - 1), np.diff(indptr)), indices, ids)


def check_round_trip(dataset: volley.HeteroDataset, out, k: int) -> None:
    graph = dataset.graph
    old = {t: np.argsort(as_numpy(load_node_map(out, node_type=t, verify=True)))
           for t in graph.node_types}
    found = {e: [] for e in graph.edge_types}
    owned = {t: 0 for t in graph.node_types}
    for p in range(k):
        part = volley.load_partition(out, p, verify=True)
        assert isinstance(part, HeteroPartition) and part.part == p
        for edge_type in graph.edge_types:
            src, _, dst = edge_type
            csr = part.dataset.graph.graph(edge_type)
            indptr, indices = as_numpy(csr.indptr), as_numpy(csr.indices)
            rows = part.first_node[dst] + np.repeat(np.arange(indptr.size - 1), np.diff(indptr))
            found[edge_type].append(sorted_edges(old[dst][rows], old[src][indices],
                                                 as_numpy(csr.edge_ids)))
        for t in graph.node_types:
            n = part.num_nodes[t]
            owned[t] += n
            originals = old[t][part.first_node[t] + np.arange(n)]
            if t in dataset.x_dict:
                np.testing.assert_array_equal(as_numpy(part.dataset.x_dict[t]),
                                              as_numpy(dataset.x_dict[t])[originals])
            if t in dataset.y_dict:
                np.testing.assert_array_equal(as_numpy(part.dataset.y_dict[t]),
                                              as_numpy(dataset.y_dict[t])[originals])
            for split in ("train_idx_dict", "val_idx_dict"):
                local = getattr(part.dataset, split).get(t)
                if local is not None:
                    assert set(originals[as_numpy(local)]) <= set(
                        as_numpy(getattr(dataset, split)[t]))
    assert owned == graph.num_nodes_dict
    for edge_type in graph.edge_types:
        union = np.concatenate(found[edge_type])
        np.testing.assert_array_equal(union[np.lexsort(union.T[::-1])],
                                      input_edges(graph, edge_type))


@pytest.mark.parametrize("method", ["random", "metis", "stream"])
def test_round_trip_from_memory_and_directory(tmp_path, method):
    dataset = clustered_dataset()
    result = volley.partition(dataset, tmp_path / "mem", 3, method=method)
    assert isinstance(result, volley.HeteroPartitionResult)
    assert set(result.books) == {"paper", "author", "institution"}
    check_round_trip(dataset, tmp_path / "mem", 3)
    dataset.save(tmp_path / "source")
    again = volley.partition(tmp_path / "source", tmp_path / "dir", 3, method=method)
    assert again.books == result.books
    manifest = json.loads((tmp_path / "dir" / "partition.json").read_text())
    assert manifest["version"] == 2 and manifest["method"] == method
    assert {t["name"] for t in manifest["node_types"]} == {"author", "paper", "institution"}


def test_random_balances_every_type_and_metis_cuts_less(tmp_path):
    dataset = clustered_dataset(seed=1)
    random = volley.partition(dataset, tmp_path / "r", 4, method="random")
    for node_type, book in random.books.items():
        n = dataset.graph.num_nodes(node_type)
        assert max(len(book.range(p)) for p in range(4)) <= max(int(np.ceil(1.05 * n / 4)),
                                                                 -(-n // 4)), node_type
    metis = volley.partition(dataset, tmp_path / "m", 4, method="metis")
    assert metis.quality["cut_edges"] < 0.6 * random.quality["cut_edges"]
    assert all(b < 1.3 for b in metis.quality["node_balance"].values())
    assert sum(metis.quality["cut_edges_per_type"].values()) == metis.quality["cut_edges"]
    stream = volley.partition(dataset, tmp_path / "s", 4, method="stream")
    assert stream.quality["cut_edges"] < random.quality["cut_edges"]
    for node_type, book in stream.books.items():
        n = dataset.graph.num_nodes(node_type)
        assert max(len(book.range(p)) for p in range(4)) <= max(int(np.ceil(1.05 * n / 4)),
                                                                 -(-n // 4)) + 1, node_type


def test_bad_input_names_the_value(tmp_path):
    dataset = clustered_dataset()
    with pytest.raises(volley.VolleyValueError, match="'hotness'"):
        volley.partition(dataset, tmp_path / "a", 2, method="hotness")
    with pytest.raises(volley.VolleyValueError, match="got 0"):
        volley.partition(dataset, tmp_path / "b", 0, method="random")
    with pytest.raises(volley.VolleyValueError,
                       match="num_parts = 13 exceeds the 12 nodes of node type 'institution'"):
        volley.partition(dataset, tmp_path / "c", 13, method="random")
    volley.partition(dataset, tmp_path / "ok", 2, method="random")
    assert verify_partitioned_dataset(tmp_path / "ok") == []
    with pytest.raises(volley.VolleyIndexError, match="partition 2 out of range"):
        volley.load_partition(tmp_path / "ok", 2)
    with (tmp_path / "ok" / "part-0" / "part.json").open("a") as f:
        f.write(" ")
    with pytest.raises(volley.VolleyOSError, match="part-0/part.json: crc32: expected"):
        volley.load_partition(tmp_path / "ok", 0)
    problems = verify_partitioned_dataset(tmp_path / "ok")
    assert len(problems) == 1 and "part-0/part.json: crc32" in problems[0]


def test_cli_verify_reports_a_damaged_part_in_both_formats(tmp_path):
    """`volley info --verify` on a damaged heterogeneous partitioning fails (exit 1) listing the
    problem: as lines, or under --json as one JSON object with a failed "verify", as for a
    homogeneous one."""
    cli = _cli()
    if cli is None:
        pytest.skip("no volley CLI here ($VOLLEY_CLI unset and none installed beside this Python)")
    volley.partition(clustered_dataset(), tmp_path / "out", 2, method="random")
    ok = subprocess.run([cli, "info", str(tmp_path / "out"), "--verify", "--json"],
                        capture_output=True, text=True, timeout=60)
    assert ok.returncode == 0, ok.stderr
    assert json.loads(ok.stdout)["verify"] == {"ok": True, "problems": []}
    with (tmp_path / "out" / "part-1" / "part.json").open("a") as f:
        f.write(" ")
    plain = subprocess.run([cli, "info", str(tmp_path / "out"), "--verify"],
                           capture_output=True, text=True, timeout=60)
    assert plain.returncode != 0
    assert "verify: 1 problem" in plain.stdout and "part-1/part.json: crc32" in plain.stdout
    assert "verification failed: 1 problem" in plain.stderr
    as_json = subprocess.run([cli, "info", str(tmp_path / "out"), "--verify", "--json"],
                             capture_output=True, text=True, timeout=60)
    assert as_json.returncode != 0
    report = json.loads(as_json.stdout)
    assert report["kind"] == "partitioned" and report["verify"]["ok"] is False
    assert len(report["verify"]["problems"]) == 1
    assert "part-1/part.json: crc32" in report["verify"]["problems"][0]


def test_one_set_of_functions_serves_both_kinds(tmp_path):
    """volley.partition's readers take a directory of either kind: node maps by node type, the
    manifest, ids to the new numbering; time files only where the format has them."""
    from volley.partition import read_partition_manifest, to_new_ids, write_times

    volley.partition(clustered_dataset(), tmp_path / "typed", 2, method="random")
    authors = as_numpy(load_node_map(tmp_path / "typed", node_type="author"))
    np.testing.assert_array_equal(
        as_numpy(to_new_ids(tmp_path / "typed", [3, 1], node_type="author")), authors[[3, 1]])
    assert read_partition_manifest(tmp_path / "typed")["version"] == 2
    with pytest.raises(volley.VolleyValueError, match="name a node type"):
        load_node_map(tmp_path / "typed")
    volley.partition(volley.datasets.bundled_dir("cora"), tmp_path / "plain", 2, method="random")
    assert read_partition_manifest(tmp_path / "plain")["version"] == 1
    assert as_numpy(load_node_map(tmp_path / "plain")).shape == (2708,)
    with pytest.raises(volley.VolleyValueError, match="homogeneous"):
        write_times(tmp_path / "plain", node_time={})
