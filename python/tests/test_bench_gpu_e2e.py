"""bench/gpu_e2e.py runs: its --smoke mode (a tiny random graph on the CPU) prints its figures."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from conftest import runs_other_interpreters

pytest.importorskip("torch")

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@runs_other_interpreters
def test_gpu_e2e_smoke(tmp_path):
    out = tmp_path / "e2e.json"
    import volley

    # The volley this test imported (installed, or the checkout's python/ with PYTHONPATH).
    env = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(volley.__file__)))
    result = subprocess.run(
        [sys.executable, os.path.join(ROOT, "bench", "gpu_e2e.py"), "--smoke", "--device", "cpu",
         "--json", str(out)],
        capture_output=True, text=True, timeout=300, env=env,
    )
    assert result.returncode == 0, result.stderr
    figures = {line["figure"]: line for line in map(json.loads, out.read_text().splitlines())}
    epoch = figures["epoch_vs_compute"]
    assert epoch["batches"] > 0 and epoch["epoch_s"] > 0 and epoch["compute_s"] > 0
    alone = figures["loader_alone"]
    assert alone["batches"] == epoch["batches"] and alone["edges_per_s"] > 0
