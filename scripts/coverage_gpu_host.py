#!/usr/bin/env python3
"""Line coverage of Volley's GPU code by the gpu-host tests, from gcov (no other tools).

usage: scripts/coverage_gpu_host.py BUILD_DIR   (a build made with --coverage, tests run)

Reports, per file under src/**/cuda/ plus the kernel-body headers outside cuda/ folders
(sampling/internal/pick.h, core/internal/{atomics,executor,host_executor}.h, host_executor.cc):
lines gcov counts as executable and how many ran. Files the host build never compiles (.cu,
.cuh, and the CUDA-runtime .cc files) have no gcov data; their executable lines are estimated
(non-blank lines that are not comments, preprocessor lines, lone braces or namespace lines) and
counted as not run, so the total is honest about what only a GPU runs.

Also reported, apart: the GPU front ends (every-build files of the GPU path, run through the
public API on the host-executor device by cuda_loader_gpu_host_test.cc).
"""
import json
import os
import re
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
EXTRA = ["src/volley/sampling/internal/pick.h", "src/volley/core/internal/atomics.h",
         "src/volley/core/internal/executor.h", "src/volley/core/internal/host_executor.h",
         "src/volley/core/internal/host_executor.cc"]


FRONT_ENDS = ["src/volley/core/emulated_device.cc", "src/volley/sampling/cuda_sampler.cc",
              "src/volley/feature/gpu_tiers.cc", "src/volley/loader/cuda_loader.cc",
              "src/volley/loader/device_memory.cc"]


def wanted(rel):
    return ("/cuda/" in rel and rel.startswith("src/volley/")) or rel in EXTRA or rel in FRONT_ENDS


def estimate(path):
    count = 0
    in_comment = False
    for line in path.read_text().splitlines():
        s = line.strip()
        if in_comment:
            in_comment = "*/" not in s
            continue
        if s.startswith("/*"):
            in_comment = "*/" not in s
            continue
        if (not s or s.startswith("//") or s.startswith("#") or re.fullmatch(r"[{}();]*", s)
                or s.startswith("namespace") or s.startswith("}  // namespace")
                or s in ("public:", "private:", "protected:")):
            continue
        count += 1
    return count


def main():
    build = Path(sys.argv[1]).resolve()
    lines = defaultdict(dict)  # file -> line -> ran
    for gcda in build.rglob("*.gcda"):
        out = subprocess.run(["gcov", "--json-format", "--stdout", "-o", str(gcda.parent),
                              str(gcda)], capture_output=True, text=True, cwd=build).stdout
        for chunk in out.splitlines():
            if not chunk.strip():
                continue
            for entry in json.loads(chunk)["files"]:
                path = Path(entry["file"])
                if not path.is_absolute():
                    path = (build / path).resolve()
                try:
                    rel = str(path.resolve().relative_to(ROOT))
                except ValueError:
                    continue
                if not wanted(rel):
                    continue
                for item in entry["lines"]:
                    n = item["line_number"]
                    lines[rel][n] = lines[rel].get(n, False) or item["count"] > 0
    rows = []
    for path in sorted(ROOT.glob("src/volley/**/*")):
        rel = str(path.relative_to(ROOT))
        if not path.is_file() or not wanted(rel):
            continue
        if rel in lines:
            rows.append((rel, len(lines[rel]), sum(lines[rel].values()), "gcov"))
        else:
            rows.append((rel, estimate(path), 0, "never compiled by the host build"))
    front = [r for r in rows if r[0] in FRONT_ENDS]
    rows = [r for r in rows if r[0] not in FRONT_ENDS]
    total = sum(r[1] for r in rows)
    ran = sum(r[2] for r in rows)
    logic = [r for r in rows if r[3] == "gcov"]
    logic_total = sum(r[1] for r in logic)
    logic_ran = sum(r[2] for r in logic)
    for rel, n, k, how in rows + front:
        share = f"{100.0 * k / n:5.1f}%" if n else "  -  "
        print(f"{share}  {k:4d}/{n:<4d}  {rel}  ({how})")
    print(f"kernel logic (files the host build compiles): {logic_ran}/{logic_total} lines = "
          f"{100.0 * logic_ran / max(logic_total, 1):.1f}%")
    folder = [r for r in rows if "/cuda/" in r[0]]
    print(f"files under src/**/cuda/ only: {sum(r[2] for r in folder)}/{sum(r[1] for r in folder)} "
          f"lines = {100.0 * sum(r[2] for r in folder) / max(sum(r[1] for r in folder), 1):.1f}%")
    print(f"everything under src/**/cuda/ + body headers: {ran}/{total} lines = "
          f"{100.0 * ran / max(total, 1):.1f}%")
    front_total, front_ran = sum(r[1] for r in front), sum(r[2] for r in front)
    print(f"GPU front ends (public API on the host-executor device): {front_ran}/{front_total} "
          f"lines = {100.0 * front_ran / max(front_total, 1):.1f}%")


if __name__ == "__main__":
    main()
