"""bench/plot_results.py: its figures still stand in bench/RESULTS.md, and it draws them."""

from __future__ import annotations

import importlib.util
import os

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, "bench", "plot_results.py")


def _module():
    spec = importlib.util.spec_from_file_location("plot_results", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _numbers(value):
    """Every number inside nested dicts, lists and tuples (dict keys too)."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        yield value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _numbers(key)
            yield from _numbers(item)
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from _numbers(item)


def test_every_figure_is_read_from_results_md():
    module = _module()
    with open(os.path.join(ROOT, "bench", "RESULTS.md"), encoding="utf-8") as stream:
        results = stream.read()
    for name, figure in module.FIGURES.items():
        assert module.stale_quotes(results, figure) == [], name
        quoted = " ".join(text for _, text in figure.quoted)
        for number in _numbers(figure.data):
            assert f"{number:g}" in quoted, f"{name}: {number:g} is not in the quoted texts"


def test_stale_quotes_are_reported():
    module = _module()
    figure = module.Figure(quoted=(("no such section", "x"),), data={})
    assert module.stale_quotes("## other\ntext\n", figure) == [
        "RESULTS.md has no section 'no such section'"]
    figure = module.Figure(quoted=(("other", "missing words"),), data={})
    assert "no longer says 'missing words'" in module.stale_quotes("## other\ntext\n", figure)[0]


def test_draws_every_figure(tmp_path):
    pytest.importorskip("matplotlib")
    assert _module().main(["--out", str(tmp_path)]) == 0
    for name in ("results_sampling.png", "results_dist.png", "results_gather.png"):
        assert (tmp_path / name).read_bytes()[:4] == b"\x89PNG"
