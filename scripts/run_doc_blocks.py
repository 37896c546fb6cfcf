#!/usr/bin/env python3
"""Runs every Python code block of the user guide, so that no example in it goes stale.

For each page (``docs/guide/**/*.md``, ``docs/*.md`` and ``README.md``; ``.. code-block:: python``
of ``docs/*.rst`` too), the ```` ```python ```` blocks run in order, in one fresh namespace per page,
in a fresh temporary directory per page, on the CPU (``CUDA_VISIBLE_DEVICES`` is emptied).

A block that cannot run here (a GPU, several machines, ``torchrun``, a network, data that is not
bundled) is marked by an HTML comment on the line(s) just before its fence, which MyST does not
render::

    <!-- skip: needs a GPU -->

Only ``python`` blocks run (``bash``, ``text`` and the rest are shown, not run). A hidden set-up
step (data a block assumes, such as a small ``HeteroData``) is an HTML comment whose first line
is ``<!-- setup``; its body runs where it stands and is not counted.

``VOLLEY_DOC_TIMES=1`` prints each block's time. Prints each page's count of blocks run and skipped, the totals and the wall time; exits 1 when a
block fails, naming the page and the line of the fence. Usage::

    PYTHONPATH=python python scripts/run_doc_blocks.py [PAGE ...]
"""

from __future__ import annotations

import contextlib
import glob
import io
import os
import re
import sys
import tempfile
import time
import traceback

os.environ["CUDA_VISIBLE_DEVICES"] = ""  # CPU only, even on a machine with a GPU
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

FENCE = re.compile(r"^(\s*)(`{3,}|~{3,})\s*\{?([A-Za-z0-9_+-]*)\}?\s*(.*)$")
SKIP = re.compile(r"<!--\s*skip:\s*(.+?)\s*-->")
RST_BLOCK = re.compile(r"^(\s*)\.\. code-block::\s*python\s*$")


def default_pages() -> list:
    pages = sorted(glob.glob(os.path.join(ROOT, "docs", "guide", "**", "*.md"), recursive=True))
    pages += sorted(glob.glob(os.path.join(ROOT, "docs", "*.md")))
    pages += sorted(glob.glob(os.path.join(ROOT, "docs", "*.rst")))
    return pages + [os.path.join(ROOT, "README.md")]


def markdown_blocks(text: str) -> list:
    """(line, code, skip_reason or None, is_setup) for each python block and setup comment."""
    lines = text.splitlines()
    blocks, i, pending_skip = [], 0, None
    while i < len(lines):
        line = lines[i]
        if line.strip().startswith("<!-- setup"):
            body, i = [], i + 1
            while i < len(lines) and not lines[i].strip().startswith("-->"):
                body.append(lines[i])
                i += 1
            blocks.append((i, "\n".join(body), None, True))
            i += 1
            continue
        skip = SKIP.search(line)
        if skip:
            pending_skip = skip.group(1)
            i += 1
            continue
        fence = FENCE.match(line)
        if fence:
            indent, marker, language = fence.group(1), fence.group(2), fence.group(3)
            start, body, i = i + 1, [], i + 1
            while i < len(lines) and not lines[i].strip().startswith(marker):
                body.append(lines[i][len(indent):] if lines[i].startswith(indent) else lines[i])
                i += 1
            if language in ("python", "py"):
                blocks.append((start, "\n".join(body), pending_skip, False))
            pending_skip = None
            i += 1
            continue
        if line.strip():
            pending_skip = None  # a marker applies to the block right after it only
        i += 1
    return blocks


def rst_blocks(text: str) -> list:
    lines = text.splitlines()
    blocks, i, pending_skip = [], 0, None
    while i < len(lines):
        line = lines[i]
        skip = re.match(r"^\.\.\s+skip:\s*(.+)$", line.strip())
        if skip:
            pending_skip = skip.group(1)
            i += 1
            continue
        match = RST_BLOCK.match(line)
        if match:
            start, body, i = i + 1, [], i + 1
            while i < len(lines) and (not lines[i].strip() or lines[i].startswith(match.group(1) + " ")):
                body.append(lines[i])
                i += 1
            width = min((len(l) - len(l.lstrip()) for l in body if l.strip()), default=0)
            code = "\n".join(l[width:] for l in body)
            blocks.append((start, code, pending_skip, False))
            pending_skip = None
            continue
        if line.strip():
            pending_skip = None
        i += 1
    return blocks


def run_page(path: str) -> tuple:
    text = open(path, encoding="utf-8").read()
    blocks = rst_blocks(text) if path.endswith(".rst") else markdown_blocks(text)
    ran = skipped = 0
    namespace = {"__name__": "__doc_block__"}
    cwd = os.getcwd()
    with tempfile.TemporaryDirectory(prefix="volley-doc-") as work:
        os.chdir(work)
        try:
            for line, code, skip, _setup in blocks:
                if skip is not None:
                    skipped += 1
                    continue
                block_start = time.monotonic()
                printed = io.StringIO()  # what a block prints is shown only when it fails
                try:
                    with contextlib.redirect_stdout(printed):
                        exec(compile(code, f"{os.path.relpath(path, ROOT)}:{line}", "exec"), namespace)
                except BaseException:
                    sys.stdout.write(printed.getvalue())
                    traceback.print_exc()
                    print(f"FAILED: {os.path.relpath(path, ROOT)}, the block at line {line}",
                          file=sys.stderr)
                    return ran, skipped, False
                ran += not _setup
                if os.environ.get("VOLLEY_DOC_TIMES"):
                    print(f"  line {line}: {time.monotonic() - block_start:.2f} s")
        finally:
            os.chdir(cwd)
    return ran, skipped, True


def main(argv: list) -> int:
    pages = [os.path.abspath(p) for p in argv] or default_pages()
    start = time.monotonic()
    total_ran = total_skipped = 0
    ok = True
    for page in pages:
        page_start = time.monotonic()
        ran, skipped, page_ok = run_page(page)
        total_ran += ran
        total_skipped += skipped
        ok &= page_ok
        if ran or skipped or not page_ok:
            print(f"{os.path.relpath(page, ROOT)}: {ran} ran, {skipped} skipped "
                  f"({time.monotonic() - page_start:.1f} s)")
    print(f"doc blocks: {total_ran} ran, {total_skipped} skipped, {len(pages)} pages, "
          f"{time.monotonic() - start:.1f} s{'' if ok else ', FAILED'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
