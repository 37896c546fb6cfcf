"""volley.split_edges / `volley split-edges`: link-prediction edge splits into a dataset directory."""

import os
import subprocess

import numpy as np
import pytest

import volley
from conftest import as_numpy


def _pairs(array):
    a = as_numpy(array)
    assert a.dtype == np.int64 and a.ndim == 2 and a.shape[0] == 2
    return [tuple(p) for p in a.T.tolist()]


def _edges(graph):
    ei = as_numpy(graph.to_edge_index())
    return [tuple(p) for p in ei.T.tolist()]


@pytest.mark.parametrize("undirected", [False, True])
def test_sides_are_disjoint_cover_every_edge_and_negatives_are_no_edges(cora_dir, tmp_path, undirected):
    out = tmp_path / "cora-link"
    summary = volley.split_edges(cora_dir, out, val=0.1, test=0.2, undirected=undirected, seed=3)
    ds = volley.load_dataset(out)
    assert volley.verify_dataset(out) == []
    canon = (lambda p: (min(p), max(p))) if undirected else (lambda p: p)
    original = volley.load_dataset(cora_dir)
    units = {canon(e) for e in _edges(original.graph)}
    sides = {}
    for name in ("train", "val", "test"):
        for pair in _pairs(getattr(ds, f"{name}_edges")):
            assert pair not in sides, f"{pair} in {sides[pair]} and {name}"
            sides[pair] = name
            if undirected:
                assert pair[0] <= pair[1]
    assert set(sides) == units  # every edge on a side, nothing else listed
    assert summary["num_units"] == len(units)
    assert summary["num_val"] == int(0.1 * len(units))
    # The message-passing graph: exactly the edges of training units (both directions kept).
    mp = _edges(ds.graph)
    assert sorted(mp) == sorted(e for e in _edges(original.graph) if sides[canon(e)] == "train")
    negatives = _pairs(ds.val_neg_edges) + _pairs(ds.test_neg_edges)
    assert len(negatives) == summary["num_val_neg"] + summary["num_test_neg"]
    assert len(set(negatives)) == len(negatives)
    for pair in negatives:
        assert pair[0] != pair[1] and canon(pair) not in units
    # Node data comes along.
    assert ds.x.shape == original.x.shape and ds.num_classes == original.num_classes


def test_deterministic_for_a_seed_and_thread_count(cora_dir, tmp_path):
    threads = volley.get_num_threads()
    try:
        volley.set_num_threads(1)
        volley.split_edges(cora_dir, tmp_path / "a", undirected=True, seed=5)
        volley.set_num_threads(2)
        volley.split_edges(volley.load_dataset(cora_dir), tmp_path / "b", undirected=True, seed=5)
    finally:
        volley.set_num_threads(threads)
    volley.split_edges(cora_dir, tmp_path / "c", undirected=True, seed=6)
    for name in ("indices", "train_edges", "val_edges", "test_edges", "val_neg_edges"):
        a = np.load(tmp_path / "a" / f"{name}.npy")
        assert np.array_equal(a, np.load(tmp_path / "b" / f"{name}.npy")), name
    assert not np.array_equal(
        np.load(tmp_path / "a" / "val_edges.npy"), np.load(tmp_path / "c" / "val_edges.npy")
    )


def test_bad_inputs(cora_dir, tmp_path):
    with pytest.raises(volley.VolleyValueError, match=r"val fraction 1\.5 is outside \[0, 1\)"):
        volley.split_edges(cora_dir, tmp_path / "x", val=1.5)
    with pytest.raises(volley.VolleyValueError, match="test fraction -0.1"):
        volley.split_edges(cora_dir, tmp_path / "x", test=-0.1)
    with pytest.raises(volley.VolleyValueError, match=r"0\.6 \+ test fraction 0\.4"):
        volley.split_edges(cora_dir, tmp_path / "x", val=0.6, test=0.4)
    with pytest.raises(volley.VolleyValueError, match="neg_ratio -2"):
        volley.split_edges(cora_dir, tmp_path / "x", neg_ratio=-2)
    assert not os.path.exists(tmp_path / "x")
    with pytest.raises(volley.VolleyOSError, match="is not a dataset directory"):
        volley.split_edges(tmp_path / "missing", tmp_path / "x")
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "f").write_text("x")
    with pytest.raises(volley.VolleyOSError, match="exists and is not empty"):
        volley.split_edges(cora_dir, tmp_path / "full")
    with pytest.raises(volley.VolleyTypeError, match="got int"):
        volley.split_edges(3, tmp_path / "y")


def test_cli_split_edges_and_info(cora_dir, tmp_path):
    from test_dist import _cli  # VOLLEY_CLI, or the CLI installed beside the package

    cli = _cli()
    if cli is None:
        pytest.skip("no volley CLI of this build (set VOLLEY_CLI)")
    out = tmp_path / "split"
    run = subprocess.run(
        [cli, "-q", "split-edges", str(cora_dir), str(out), "--val", "0.05", "--test", "0.1",
         "--undirected", "--seed", "2", "--neg-ratio", "2"],
        capture_output=True, text=True,
    )
    assert run.returncode == 0, run.stderr
    assert "undirected edges" in run.stdout
    info = subprocess.run([cli, "info", "--verify", str(out)], capture_output=True, text=True)
    assert info.returncode == 0, info.stderr
    ds = volley.load_dataset(out)
    val = ds.val_edges.shape[1]
    assert f"val {val:,}" in info.stdout and ds.val_neg_edges.shape[1] == 2 * val
    bad = subprocess.run(
        [cli, "split-edges", str(cora_dir), str(tmp_path / "z"), "--val", "0.7", "--test", "0.3"],
        capture_output=True, text=True,
    )
    assert bad.returncode != 0 and "leaves no training edges" in bad.stderr
