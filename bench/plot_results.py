"""Draws the figures of bench/RESULTS.md that compare Volley against targets or other systems.

    .venv/bin/python bench/plot_results.py            # writes docs/images/results_*.png
    .venv/bin/python bench/plot_results.py --out DIR

RESULTS.md is a dated log of hand-written tables, so the figures are copied here, each with the
section and the text it is read from (``quoted``);
python/tests/test_plot_results.py checks that every quoted text still stands in that section, so a
figure cannot drift from the log. Add a figure the same way when a section is added.

Figures:
- results_sampling.png: CPU sampling SEPS at 1 and 2 threads (3 runs, range) against the issue's
  targets (16M SEPS at one thread; two threads >= 1.8x one) and pyg-lib's quoted 5.4M SEPS/thread;
  the loader's share of sampling-only throughput against its 0.8 target.
- results_dist.png: distributed sampling SEPS as a share of local sampling, per mode, against the
  0.5 target.
- results_gather.png: feature gather GB/s against memcpy of the same bytes, per storage tier.
"""

from __future__ import annotations

import argparse
import os
from typing import Dict, List, NamedTuple, Sequence, Tuple

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


class Figure(NamedTuple):
    """A figure's numbers and the RESULTS.md text they are read from."""

    # (heading of the RESULTS.md section without "## ", text that must stand in that section)
    quoted: Tuple[Tuple[str, str], ...]
    data: Dict[str, object]


_SAMPLING = "2026-11-21 — CPU neighbor sampling (issue 3)"
_SHARING = "2026-11-21 — multi-process sharing (issue 8)"  # holds the quiet re-measure
_DIST = "2026-11-21 — distributed sampling over gRPC (issue 7)"
_GATHER = "2026-11-21 — feature gather (issue 4)"


SAMPLING = Figure(
    quoted=(
        (_SHARING, "| 1 | 19.26M, 19.49M, 18.94M |"),
        (_SHARING, "| 2 | 38.57M, 36.63M, 38.31M |"),
        (_SAMPLING, "**≥ 16M sampled edges\nper second (SEPS) with one thread, and ≥ 1.8× that "
                    "with two**"),
        (_SAMPLING, "about 5.4M SEPS per thread"),
        (_SHARING, "1 thread 22.1\nbatches/s = 0.511 of sampling only; 2 threads 41.3 batches/s "
                   "= 0.480 (target 0.8"),
    ),
    data={
        "seps": {1: [19.26, 19.49, 18.94], 2: [38.57, 36.63, 38.31]},  # millions, quiet machine
        "target_one_thread": 16.0,
        "two_thread_factor": 1.8,
        "pyg_lib_per_thread": 5.4,
        "loader_share": {1: 0.511, 2: 0.480},
        "loader_target": 0.8,
    },
)

DIST = Figure(
    quoted=(
        (_DIST, "| dist worker | 1 (0) | 0.83–0.95 / 0.78–0.95 |"),
        (_DIST, "| dist client | 1 (1) | 0.67–0.69 / 0.67–0.73 |"),
        (_DIST, "| **dist worker** | **2 (1)** | **0.80–0.81 / 0.81** |"),
        (_DIST, "| **dist client** | **2 (2)** | **0.70–0.71 / 0.77** |"),
        (_DIST, "**2\npartitions reaches ≥ 50% of local sampled edges per second (SEPS)"),
        (_DIST, "the issue's 0.5 target"),
    ),
    data={
        # mode, parts (remote) -> {loader threads: (low, high)} of SEPS / local SEPS
        "rows": [
            ("worker, 1 part (0 remote)", {2: (0.83, 0.95), 8: (0.78, 0.95)}),
            ("client, 1 part (1 remote)", {2: (0.67, 0.69), 8: (0.67, 0.73)}),
            ("worker, 2 parts (1 remote)", {2: (0.80, 0.81), 8: (0.81, 0.81)}),
            ("client, 2 parts (2 remote)", {2: (0.70, 0.71), 8: (0.77, 0.77)}),
        ],
        "target": 0.5,
    },
)

GATHER = Figure(
    quoted=(
        (_GATHER, "| host (THP) | float32 | auto (streaming) | 1 | 0.93 / 1.02 / 1.02 | "
                  "7.31 / 7.21 / 7.38 | 9.81 / 9.76 / 9.88 |"),
        (_GATHER, "| host (THP) | float32 | auto (streaming) | 2 | 0.93 / 1.02 / 1.02 | "
                  "13.33 / 11.98 / 12.35 | 9.67 / 9.85 / 9.76 |"),
        (_GATHER, "| mapped `.npy` (page cache) | float32 | auto | 1 / 2 | 1.02 / 1.01 | "
                  "7.43 / 12.60 | 9.87 / 10.87 |"),
        (_GATHER, "| shared memory (4 KiB pages) | float32 | auto | 1 / 2 | 1.02 / 1.01 | "
                  "5.40 / 8.67 | 13.39 / 11.04 |"),
        (_GATHER, "| host (THP) | float16 → float32 | auto | 1 / 2 | 1.02 / 1.01 | "
                  "9.50 / 17.38 | 13.77 / 11.51 |"),
    ),
    data={
        # tier -> {threads: (gather GB/s runs, memcpy GB/s runs)}
        "rows": [
            ("host, huge pages", {1: ([7.31, 7.21, 7.38], [9.81, 9.76, 9.88]),
                                   2: ([13.33, 11.98, 12.35], [9.67, 9.85, 9.76])}),
            ("mapped .npy", {1: ([7.43], [9.87]), 2: ([12.60], [10.87])}),
            ("shared memory", {1: ([5.40], [13.39]), 2: ([8.67], [11.04])}),
            ("host, float16\n-> float32", {1: ([9.50], [13.77]), 2: ([17.38], [11.51])}),
        ],
    },
)

FIGURES = {"results_sampling.png": SAMPLING, "results_dist.png": DIST,
           "results_gather.png": GATHER}


def section_text(results: str, heading: str) -> str:
    """The text of the RESULTS.md section under '## heading' (up to the next '## ')."""
    start = results.index("## " + heading + "\n")
    end = results.find("\n## ", start + 3)
    return results[start:] if end < 0 else results[start:end]


def stale_quotes(results: str, figure: Figure) -> List[str]:
    """The quoted texts of `figure` that no longer stand in their RESULTS.md sections."""
    problems = []
    for heading, quoted in figure.quoted:
        if "## " + heading + "\n" not in results:
            problems.append(f"RESULTS.md has no section '{heading}'")
        elif quoted not in section_text(results, heading):
            problems.append(f"RESULTS.md section '{heading}' no longer says {quoted!r}")
    return problems


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values)


def _errors(groups: Sequence[Sequence[float]]) -> List[List[float]]:
    """matplotlib yerr rows (below, above) from the mean to the min and max of each group."""
    return [[_mean(g) - min(g) for g in groups], [max(g) - _mean(g) for g in groups]]


def draw_sampling(figure) -> None:
    data = SAMPLING.data
    seps, left = data["seps"], figure.add_subplot(1, 2, 1)
    threads = sorted(seps)
    xs = range(len(threads))
    width = 0.27
    means = [_mean(seps[t]) for t in threads]
    left.bar([x - width for x in xs], means, width, yerr=_errors([seps[t] for t in threads]),
             capsize=3, color="#4C72B0", label="Volley (3 runs)")
    targets = [data["target_one_thread"], data["two_thread_factor"] * means[0]]
    left.bar(list(xs), targets, width, color="#C9C9C9",
             label="target (16M; 2 threads: 1.8× one)")
    left.bar([x + width for x in xs], [data["pyg_lib_per_thread"] * t for t in threads], width,
             color="#DD8452", label="pyg-lib (quoted)")
    for x, value in zip(xs, means):
        left.annotate(f"{value:.1f}M", (x - width, value), ha="center", va="bottom", fontsize=8,
                      xytext=(0, 3), textcoords="offset points")
    left.set_xticks(list(xs), [f"{t} thread{'s' if t > 1 else ''}" for t in threads])
    left.set_ylabel("M sampled edges / s")
    left.set_title("CPU sampling, products-sized graph\nfanout 15,10,5, batch 1024", fontsize=9)
    left.legend(fontsize=8)

    right = figure.add_subplot(1, 2, 2)
    share = data["loader_share"]
    right.bar(list(xs), [share[t] for t in threads], 0.5, color="#4C72B0",
              label="loader / sampling alone")
    right.axhline(data["loader_target"], color="k", linestyle="--", linewidth=1,
                  label=f"target {data['loader_target']}")
    for x, t in zip(xs, threads):
        right.annotate(f"{share[t]:.2f}", (x, share[t]), ha="center", va="bottom", fontsize=8,
                       xytext=(0, 3), textcoords="offset points")
    right.set_xticks(list(xs), [f"{t} thread{'s' if t > 1 else ''}" for t in threads])
    right.set_ylim(0, 1)
    right.set_ylabel("share of sampling-only throughput")
    right.set_title("loader with 100 float32 features\n(sample + gather)", fontsize=9)
    right.legend(fontsize=8, loc="upper right")


def draw_dist(figure) -> None:
    rows, axes = DIST.data["rows"], figure.add_subplot(1, 1, 1)
    width = 0.38
    for offset, threads, color in ((-width / 2, 2, "#4C72B0"), (width / 2, 8, "#55A868")):
        low = [ranges[threads][0] for _, ranges in rows]
        high = [ranges[threads][1] for _, ranges in rows]
        middle = [(a + b) / 2 for a, b in zip(low, high)]
        axes.bar([i + offset for i in range(len(rows))], middle, width, color=color,
                 yerr=[[m - a for m, a in zip(middle, low)], [b - m for m, b in zip(middle, high)]],
                 capsize=3, label=f"{threads} loader threads (2 runs, range)")
    axes.axhline(1.0, color="#888888", linewidth=1, label="local sampling")
    axes.axhline(DIST.data["target"], color="k", linestyle="--", linewidth=1,
                 label=f"target {DIST.data['target']} (2 parts)")
    axes.set_xticks(range(len(rows)), [label.replace(", ", ",\n") for label, _ in rows],
                    fontsize=8)
    axes.set_ylim(0, 1.15)
    axes.set_ylabel("SEPS / local SEPS")
    axes.set_title("Distributed sampling over gRPC on loopback, products-sized graph", fontsize=9)
    axes.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))


def draw_gather(figure) -> None:
    rows, axes = GATHER.data["rows"], figure.add_subplot(1, 1, 1)
    labels, gather, memcpy = [], [], []
    for tier, by_threads in rows:
        for threads in sorted(by_threads):
            runs, copies = by_threads[threads]
            labels.append(f"{tier}\n{threads} thread{'s' if threads > 1 else ''}")
            gather.append(_mean(runs))
            memcpy.append(_mean(copies))
    xs = range(len(labels))
    axes.bar([x - 0.2 for x in xs], gather, 0.4, color="#4C72B0", label="gather (random rows)")
    axes.bar([x + 0.2 for x in xs], memcpy, 0.4, color="#C9C9C9",
             label="memcpy of the same bytes")
    axes.set_xticks(list(xs), labels, fontsize=7)
    for x in range(1, len(labels) // 2):
        axes.axvline(2 * x - 0.5, color="#DDDDDD", linewidth=0.8)
    axes.set_ylabel("GB/s")
    axes.set_title("Feature gather, 2.4M x 100, batches of 150,000 ids (2-core machine)",
                   fontsize=9)
    axes.legend(fontsize=8)


DRAW = {"results_sampling.png": (draw_sampling, (8.0, 3.6)),
        "results_dist.png": (draw_dist, (9.0, 3.6)),
        "results_gather.png": (draw_gather, (9.0, 3.8))}


def main(argv: Sequence[str] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=os.path.join(ROOT, "docs", "images"),
                        help="directory for the PNGs (default: docs/images)")
    parser.add_argument("--dpi", type=int, default=80)
    args = parser.parse_args(argv)
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure as MplFigure

    with open(os.path.join(HERE, "RESULTS.md"), encoding="utf-8") as stream:
        results = stream.read()
    os.makedirs(args.out, exist_ok=True)
    for name, figure_data in FIGURES.items():
        problems = stale_quotes(results, figure_data)
        if problems:
            raise SystemExit(f"{name}: {problems[0]}; update bench/plot_results.py")
        draw, size = DRAW[name]
        figure = MplFigure(figsize=size, dpi=args.dpi, layout="constrained")
        FigureCanvasAgg(figure)
        draw(figure)
        path = os.path.join(args.out, name)
        figure.savefig(path)
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
