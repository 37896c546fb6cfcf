"""volley.plot: charts of `volley bench` lines, and `volley bench ... --plot` end to end."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys

import pytest

import volley

from conftest import volley_cli as _cli, runs_other_interpreters
from volley import plot

pytest.importorskip("matplotlib")

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def _sample_line(threads, batch_size, seps):
    return {"bench": "sample", "dataset": "cora", "fanout": "5,5", "device": "cpu",
            "threads": threads, "batch_size": batch_size, "batches": 4, "seps": seps}


def _loader_line(threads, seconds, sampling_seconds):
    return {"bench": "loader", "dataset": "cora", "fanout": "5,5", "threads": threads,
            "batch_size": 32, "batches": 4, "seconds": seconds, "seps": 1e6 / seconds,
            "sampling_only_seps": 1e6 / sampling_seconds,
            "sampling_only_seconds": sampling_seconds}


def test_sweeps_are_drawn_against_the_parameter_that_varies(tmp_path):
    lines = [_sample_line(t, b, 1e6 * t * b / 16) for b in (16, 32) for t in (1, 2, 4)]
    panels = plot.plot_bench(lines, tmp_path / "sample.png", title="sweep")
    assert [(p.bench, p.x, p.y, p.series, p.points) for p in panels] == [
        ("sample", "threads", "seps", 2, 6)  # one curve per batch size
    ]
    assert (tmp_path / "sample.png").read_bytes()[:8] == PNG_MAGIC


def test_loader_gets_a_stage_panel(tmp_path):
    lines = [_loader_line(1, 0.4, 0.1), _loader_line(2, 0.25, 0.06)]
    panels = plot.plot_bench(lines, tmp_path / "loader.png")
    assert [(p.bench, p.x, p.y) for p in panels] == [
        ("loader", "threads", "seps"), ("loader", "threads", "seconds")]


def test_one_bar_per_line_when_nothing_is_swept(tmp_path):
    lines = [{"bench": "dist", "mode": mode, "parts": 2, "seps": seps}
             for mode, seps in (("local", 3e7), ("dist worker", 2.5e7), ("dist client", 2e7))]
    (panel,) = plot.plot_bench(lines, tmp_path / "dist.svg")
    assert (panel.x, panel.series, panel.points) == (None, 3, 3)
    assert (tmp_path / "dist.svg").read_text().lstrip().startswith("<?xml")


def test_read_lines_skips_text_and_names_bad_json():
    text = "mode parts\n" + json.dumps(_sample_line(1, 8, 1.0)) + "\n\n"
    assert plot.read_lines(io.StringIO(text)) == [_sample_line(1, 8, 1.0)]
    with pytest.raises(ValueError, match="line 2: not a JSON object"):
        plot.read_lines(io.StringIO("x\n{oops\n"))
    with pytest.raises(ValueError, match="no bench lines"):
        plot.plot_bench([], "unused.png")


def test_module_command_line(tmp_path):
    source = tmp_path / "lines.jsonl"
    source.write_text("\n".join(json.dumps(_sample_line(t, 8, t * 1e6)) for t in (1, 2)))
    assert plot.main([str(tmp_path / "out.png"), str(source)]) == 0
    assert (tmp_path / "out.png").read_bytes()[:8] == PNG_MAGIC
    assert plot.main([str(tmp_path / "bad.png"), str(tmp_path / "missing.jsonl")]) == 1


@runs_other_interpreters
def test_bench_plot_end_to_end(tmp_path, cora_dir):
    cli = _cli()
    if cli is None:
        pytest.skip("no volley CLI of this build (set VOLLEY_CLI)")
    out = tmp_path / "loader.png"
    env = dict(os.environ, VOLLEY_PYTHON=sys.executable, VOLLEY_PROGRESS="0")
    env["PYTHONPATH"] = os.path.dirname(os.path.dirname(volley.__file__))
    result = subprocess.run(
        [cli, "bench", "loader", "--dataset", str(cora_dir), "--fanout", "5,5",
         "--batch-size", "32", "--threads", "1,2", "--batches", "3", "--plot", str(out)],
        capture_output=True, text=True, timeout=300, env=env)
    assert result.returncode == 0, result.stderr
    assert len(plot.read_lines(io.StringIO(result.stdout))) == 2
    assert "loader: seps against threads, 2 points" in result.stderr
    assert out.read_bytes()[:8] == PNG_MAGIC
