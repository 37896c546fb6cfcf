"""Charts of ``volley bench`` results (matplotlib).

``volley bench ... --plot FILE.png`` hands the JSON lines it printed to this module; it can also be
run by hand on saved lines::

    volley bench sample --dataset data/cora --threads 1,2 --batch-size 64,128 > sample.jsonl
    python -m volley.plot sample.png < sample.jsonl

What is drawn, per kind of bench line (its ``"bench"`` field):

- throughput (``seps``; ``gather_gbps`` for ``gather``) against the first of ``threads``,
  ``batch_size``, ``loader_threads``, ``batch`` that varies between the lines, one curve per value
  of the others; without such a parameter, one bar per line, labelled by what differs;
- the run's own references where the line carries them: ``sampling_only_seps`` for ``loader``,
  ``memcpy_gbps`` for ``gather`` (dashed);
- for ``loader``, a second panel: seconds per batch split into sampling (the same batches sampled
  alone, at the same thread count, in the same run) and the rest of the pipeline (feature and
  label gather, assembly).

matplotlib is imported lazily (``pip install matplotlib``); the figure is drawn with the Agg
backend through matplotlib's object API, so the caller's pyplot state is left alone.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any, Dict, Iterable, List, NamedTuple, Optional, Sequence, Tuple

from ._volley import VolleyImportError, VolleyValueError

#: x-axis candidates, in order of preference.
SWEEP_KEYS = ("threads", "batch_size", "loader_threads", "batch")

#: (field, axis label) of the throughput drawn for each kind of bench line.
METRICS = {
    "sample": ("seps", "sampled edges / s"),
    "loader": ("seps", "sampled edges / s (with features)"),
    "gather": ("gather_gbps", "gathered GB/s"),
    "dist": ("seps", "sampled edges / s"),
}

#: (field, legend label) of a reference measured in the same run, drawn dashed.
REFERENCES = {
    "loader": ("sampling_only_seps", "sampling alone"),
    "gather": ("memcpy_gbps", "memcpy"),
}

# Fields that describe a measurement's outcome, not its configuration (never used as labels).
_OUTCOME_FIELDS = {
    "seps", "nodes_per_second", "seconds", "sampled_edges", "sampled_nodes", "batches_per_second",
    "sampling_only_seps", "sampling_only_seconds", "ratio_to_sampling_only", "gather_seconds",
    "gather_gbps", "memcpy_gbps", "ratio_to_memcpy", "rows_per_second", "load_average",
    "cpu_seconds", "seps_per_cpu_second", "ratio_to_local", "ratio_to_local_per_cpu_second",
    "checked_batches", "d2d_copy_gbps", "pinned_h2d_gbps", "bytes_per_batch", "batches",
}


class Panel(NamedTuple):
    """What one panel of the chart shows (returned for checks and captions)."""

    bench: str
    title: str
    x: Optional[str]  # the swept parameter, or None for a bar per line
    y: str  # the plotted field
    series: int  # curves (or bars)
    points: int  # measurements drawn


def read_lines(stream: Iterable[str]) -> List[Dict[str, Any]]:
    """The JSON objects among ``stream``'s lines (other lines, e.g. tables, are skipped).

    Raises:
        ValueError: a line that starts with ``{`` but is not valid JSON (names the line).
    """
    lines = []
    for number, text in enumerate(stream, 1):
        text = text.strip()
        if not text.startswith("{"):
            continue
        try:
            lines.append(json.loads(text))
        except json.JSONDecodeError as error:
            raise VolleyValueError(f"line {number}: not a JSON object: {error}") from error
    return lines


def _swept_key(lines: Sequence[Dict[str, Any]]) -> Optional[str]:
    for key in SWEEP_KEYS:
        if len({line.get(key) for line in lines}) > 1:
            return key
    return None


def _label(line: Dict[str, Any], varying: Sequence[str]) -> str:
    return ", ".join(f"{key}={line.get(key)}" for key in varying) or line.get("bench", "")


def _varying(lines: Sequence[Dict[str, Any]], exclude: Sequence[str]) -> List[str]:
    keys = sorted({key for line in lines for key in line} - _OUTCOME_FIELDS - set(exclude))
    return [key for key in keys if len({json.dumps(line.get(key)) for line in lines}) > 1]


def _title(bench: str, lines: Sequence[Dict[str, Any]]) -> str:
    first = lines[0]
    parts = [f"volley bench {bench}"]
    if "dataset" in first:
        parts.append(str(first["dataset"]))
    if "fanout" in first:
        parts.append(f"fanout {first['fanout']}")
    if "device" in first:
        parts.append(str(first["device"]) + (f" {first['mode']}" if "mode" in first else ""))
    return ", ".join(parts)


def _draw_throughput(axes: Any, bench: str, lines: Sequence[Dict[str, Any]]) -> Panel:
    field, ylabel = METRICS.get(bench, ("seps", "sampled edges / s"))
    reference = REFERENCES.get(bench)
    x_key = _swept_key(lines)
    scale, unit = (1e6, "M ") if field == "seps" else (1.0, "")
    title = _title(bench, lines)
    if x_key is None:
        varying = _varying(lines, ())
        labels = [_label(line, varying) for line in lines]
        values = [line.get(field, 0) / scale for line in lines]
        bars = axes.bar(range(len(lines)), values, color="#4C72B0", label=ylabel)
        axes.set_xticks(range(len(lines)), labels, rotation=20 if len(lines) > 3 else 0,
                        ha="right" if len(lines) > 3 else "center", fontsize=8)
        axes.bar_label(bars, fmt="%.3g", fontsize=8)
        if reference and all(reference[0] in line for line in lines):
            axes.plot(range(len(lines)), [line[reference[0]] / scale for line in lines], "k--",
                      marker="_", markersize=20, label=reference[1])
            axes.legend(fontsize=8)
        axes.set_ylabel(f"{unit}{ylabel}")
        axes.set_title(title, fontsize=10)
        return Panel(bench, title, None, field, len(lines), len(lines))
    others = _varying(lines, (x_key,))
    groups: Dict[str, List[Dict[str, Any]]] = {}
    for line in lines:
        groups.setdefault(_label(line, others), []).append(line)
    for label, group in groups.items():
        group = sorted(group, key=lambda line: line[x_key])
        xs = [line[x_key] for line in group]
        axes.plot(xs, [line.get(field, 0) / scale for line in group], marker="o",
                  label=label if others else ylabel)
        if reference and all(reference[0] in line for line in group):
            axes.plot(xs, [line[reference[0]] / scale for line in group], "--", marker=".",
                      color=axes.lines[-1].get_color(),
                      label=f"{reference[1]}" + (f" ({label})" if others else ""))
    xs = sorted({line[x_key] for line in lines})
    axes.set_xticks(xs, [str(x) for x in xs])
    axes.set_xlabel(x_key.replace("_", " "))
    axes.set_ylabel(f"{unit}{ylabel}")
    axes.set_ylim(bottom=0)
    axes.grid(alpha=0.3)
    axes.legend(fontsize=8)
    axes.set_title(title, fontsize=10)
    return Panel(bench, title, x_key, field, len(groups), len(lines))


def _draw_stages(axes: Any, lines: Sequence[Dict[str, Any]]) -> Panel:
    """Seconds per batch of `bench loader`, split into sampling and the rest of the pipeline."""
    x_key = _swept_key(lines) or "threads"
    others = _varying(lines, (x_key,))
    ordered = sorted(lines, key=lambda line: [json.dumps(line.get(key)) for key in others]
                     + [line.get(x_key, 0)])
    labels, sampling, rest = [], [], []
    for line in ordered:
        batches = max(1, int(line.get("batches", 1)))
        total = line["seconds"] / batches
        sample = min(total, line["sampling_only_seconds"] / batches)
        labels.append("\n".join(f"{key.replace('_', ' ')} {line.get(key)}"
                                for key in [x_key, *others]))
        sampling.append(sample * 1e3)
        rest.append((total - sample) * 1e3)
    positions = range(len(ordered))
    axes.bar(positions, sampling, color="#4C72B0", label="sampling")
    axes.bar(positions, rest, bottom=sampling, color="#DD8452",
             label="gather features + labels, assembly")
    axes.set_xticks(positions, labels, fontsize=8)
    axes.set_ylabel("ms per batch (epoch / batches)")
    axes.legend(fontsize=8)
    title = "time per batch by stage (sampling: same batches sampled alone)"
    axes.set_title(title, fontsize=10)
    return Panel("loader", title, x_key, "seconds", 2, len(ordered))


def plot_bench(lines: Sequence[Dict[str, Any]], path: "os.PathLike[str] | str",
               *, title: Optional[str] = None) -> List[Panel]:
    """Draws ``volley bench`` JSON lines into an image file.

    Args:
        lines: the parsed JSON lines (dicts with a ``"bench"`` field).
        path: the image to write (PNG, or any format matplotlib knows by the extension).
        title: a title over the whole figure.

    Returns:
        One ``Panel`` per panel drawn.

    Raises:
        VolleyValueError: no lines, or a line without ``"bench"``.
        VolleyImportError: matplotlib is not installed.
    """
    if not lines:
        raise VolleyValueError("no bench lines to plot (volley bench prints one JSON line per figure)")
    by_bench: Dict[str, List[Dict[str, Any]]] = {}
    for line in lines:
        if "bench" not in line:
            raise VolleyValueError(f"not a volley bench line (no 'bench' field): {line}")
        by_bench.setdefault(line["bench"], []).append(line)
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError as error:
        raise VolleyImportError("plotting needs matplotlib (pip install matplotlib)") from error

    panels: List[Tuple[str, List[Dict[str, Any]], bool]] = []
    for bench, group in by_bench.items():
        panels.append((bench, group, False))
        if bench == "loader" and all("sampling_only_seconds" in line for line in group):
            panels.append((bench, group, True))
    figure = Figure(figsize=(6.4, 3.6 * len(panels)), dpi=100, layout="constrained")
    FigureCanvasAgg(figure)
    drawn = []
    for index, (bench, group, stages) in enumerate(panels):
        axes = figure.add_subplot(len(panels), 1, index + 1)
        drawn.append(_draw_stages(axes, group) if stages else _draw_throughput(axes, bench, group))
    if title:
        figure.suptitle(title)
    figure.savefig(os.fspath(path))
    return drawn


def main(argv: Optional[Sequence[str]] = None) -> int:
    """``python -m volley.plot OUT.png [--title T] [INPUT.jsonl]``: draws bench lines."""
    parser = argparse.ArgumentParser(
        prog="python -m volley.plot",
        description="Draw `volley bench` JSON lines (read from INPUT or stdin) into an image.",
    )
    parser.add_argument("output", help="image file to write (.png, .svg, .pdf)")
    parser.add_argument("input", nargs="?", help="file of JSON lines (default: stdin)")
    parser.add_argument("--title", help="title over the figure")
    args = parser.parse_args(argv)
    try:
        if args.input:
            with open(args.input, encoding="utf-8") as stream:
                lines = read_lines(stream)
        else:
            lines = read_lines(sys.stdin)
        panels = plot_bench(lines, args.output, title=args.title)
    except (ValueError, ImportError, OSError) as error:
        print(f"volley.plot: error: {error}", file=sys.stderr)
        return 1
    for panel in panels:
        axis = f"against {panel.x}" if panel.x else "one bar per run"
        print(f"volley.plot: {panel.bench}: {panel.y} {axis}, {panel.points} points",
              file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
