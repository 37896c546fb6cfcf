"""The examples run: each in a small configuration, checked on what it prints (never on time)."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

from conftest import trains_a_model, volley_cli as _cli, runs_other_interpreters

torch = pytest.importorskip("torch")
pytest.importorskip("torch_geometric")

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EXAMPLES = os.path.join(ROOT, "examples")


def _run_example(name, *args):
    """Runs examples/<name> with the volley this test imported; the CompletedProcess."""
    import volley

    env = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(volley.__file__)))
    return subprocess.run([sys.executable, os.path.join(EXAMPLES, name), *args],
                          capture_output=True, text=True, timeout=600, env=env)


def _auc_rows(stdout):
    """{row label: (val, test)} of temporal_link_pred.py's summary."""
    rows = re.findall(r"^  (.+?)\s+val (\d\.\d{3})  test (\d\.\d{3})$", stdout, re.MULTILINE)
    return {label: (float(val), float(test)) for label, val, test in rows}


@trains_a_model
def test_temporal_link_pred_prints_the_three_aucs():
    cli = _cli()
    if cli is None:
        pytest.skip("no volley CLI of this build to generate the stream (set VOLLEY_CLI)")
    result = _run_example("temporal_link_pred.py", "--cli", cli, "--nodes", "1000",
                          "--events", "12000", "--epochs", "3", "--workers", "1")
    assert result.returncode == 0, result.stderr
    assert "temporal   epoch   3" in result.stdout and "static     epoch   1" in result.stdout
    rows = _auc_rows(result.stdout)
    temporal = rows['GNN, temporal sampling ("last")']
    static = rows["GNN, no time constraint"]
    embeddings = rows["per-node embeddings, no graph"]
    assert all(0.0 <= auc <= 1.0 for pair in rows.values() for auc in pair), rows
    assert temporal[1] > 0.6 and temporal[1] > embeddings[1], rows  # recency is learned
    # The leakage is visible: the unconstrained model's validation figure (a graph holding the
    # validation events) beats the same model validated without them, and its own test figure.
    val_past = float(re.search(r"training events: val (\d\.\d{3})", result.stdout).group(1))
    assert static[0] > val_past and static[0] > static[1], (static, val_past)


@runs_other_interpreters
def test_temporal_link_pred_rejects_a_graph_without_times(cora_dir):
    result = _run_example("temporal_link_pred.py", "--dataset", str(cora_dir))
    assert result.returncode == 2
    assert "has no edge times" in result.stderr and str(cora_dir) in result.stderr


@trains_a_model
def test_lightning_sage_trains_cora():
    pytest.importorskip("pytorch_lightning")  # installed on the newest-torch leg
    result = _run_example("lightning_sage.py", "--epochs", "3", "--min-test-accuracy", "0.5")
    assert result.returncode == 0, result.stdout + result.stderr[-3000:]
    assert re.search(r"^Cora, 3 epochs on 1 process\(es\): test accuracy 0\.\d{3}$",
                     result.stdout, re.MULTILINE), result.stdout


@trains_a_model
def test_learnable_embeddings_beat_zero_inputs():
    cli = _cli()
    if cli is None:
        pytest.skip("no volley CLI of this build to generate the graph (set VOLLEY_CLI)")
    import volley

    env = dict(os.environ, VOLLEY_CLI=cli,
               PYTHONPATH=os.path.dirname(os.path.dirname(volley.__file__)))
    result = subprocess.run([sys.executable, os.path.join(EXAMPLES, "train_hetero_embeddings.py"),
                             "--nodes", "4000", "--epochs", "5", "--fanouts", "5", "3",
                             "--min-gain", "0.10"]
                            + (["--servers", "2"] if volley._volley._has_dist else []),
                            capture_output=True, text=True, timeout=600, env=env)
    assert result.returncode == 0, result.stdout + result.stderr[-3000:]
    assert re.search(r"learnable embeddings 0\.\d{3}, zero inputs 0\.\d{3}", result.stdout)
    if volley._volley._has_dist:  # the store on two servers learns as well
        assert re.search(r"on 2 servers 0\.\d{3} \(\+", result.stdout), result.stdout



@trains_a_model
def test_control_variates_train_with_histories_on_servers():
    """train_gcn_cv.py end to end on a small generated graph, the histories on 2 servers: both
    runs train (well above the 1/47 of chance) and the summary names both figures."""
    if _cli() is None:
        pytest.skip("no volley CLI of this build to generate the graph (set VOLLEY_CLI)")
    result = _run_example("train_gcn_cv.py", "--nodes", "6000", "--edges", "90000", "--epochs",
                          "10", "--batch-size", "64", "--hidden", "32", "--servers", "2",
                          "--max-gap", "100")
    assert result.returncode == 0, result.stderr
    plain = re.search(r"plain neighbor sampling \[10, 10\]: test acc (\d\.\d{4}), epoch",
                      result.stdout)
    variate = re.search(r"control variates \[2\] \(histories in 2 servers\): test acc "
                        r"(\d\.\d{4}), epoch .* faster\), [+-]\d+\.\d{2} accuracy points",
                        result.stdout)
    assert plain and variate, result.stdout
    assert float(plain.group(1)) > 0.3 and float(variate.group(1)) > 0.3, result.stdout
