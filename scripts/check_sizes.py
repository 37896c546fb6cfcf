#!/usr/bin/env python3
"""Lists the source files and C++ functions that are too long for the project's rules.

    python3 scripts/check_sizes.py                 # the whole checkout
    python3 scripts/check_sizes.py src/volley/dist  # only what lies below these paths

Rules (docs: STYLE.md):
  * a C++ (.cc .h .cu .cuh .cpp .hpp) or Python (.py) source file has at most 600 lines;
  * a C++ function has at most 80 lines, from the line its signature starts on to its closing
    brace. Tests (tests/, *_test.*) and generated code (build trees, *.pb.*) are exempt from this
    rule.

Prints one line per finding, `path: ...`, and exits 1 when there is any, 0 otherwise. The files
are the ones git tracks plus the untracked ones it does not ignore (all files below the root
outside a git checkout). The function scanner matches braces after removing comments, string
and character literals and preprocessor lines: a brace that opens at namespace or class scope
after a parameter list `(...)` (optionally followed by qualifiers, a trailing return type or a
constructor's initializer list) starts a function. It needs only the standard library.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
from pathlib import Path

MAX_FILE_LINES = 600
MAX_FUNCTION_LINES = 80
CPP_SUFFIXES = {".cc", ".h", ".cu", ".cuh", ".cpp", ".hpp"}
PY_SUFFIXES = {".py"}
SKIPPED_DIRS = {"build", ".venv", "venv", "node_modules", "third_party", ".git", "__pycache__"}

CONTROL = re.compile(r"^(if|for|while|switch|catch|do|else|try|return)\b")
TYPE_KEYWORD = re.compile(r"\b(class|struct|union|enum)\b")
QUALIFIERS = re.compile(
    r"^(\s|const\b|volatile\b|noexcept\b(\s*\([^)]*\))?|override\b|final\b|mutable\b|&&|&|"
    r"->[^{;]*|requires\b[^{;]*|try\b)*$"
)


def source_files(root: Path) -> list[Path]:
    try:
        listed = subprocess.run(
            ["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"],
            cwd=root, check=True, capture_output=True).stdout.decode().split("\0")
        paths = [root / name for name in listed if name]
    except (OSError, subprocess.CalledProcessError):
        paths = []
        for directory, subdirectories, names in os.walk(root):
            subdirectories[:] = [d for d in subdirectories if d not in SKIPPED_DIRS]
            paths.extend(Path(directory) / name for name in names)
    return sorted(p for p in paths
                  if p.suffix in CPP_SUFFIXES | PY_SUFFIXES and p.is_file()
                  and not SKIPPED_DIRS & set(p.relative_to(root).parts[:-1]))


def is_generated(relative: Path) -> bool:
    return ".pb." in relative.name or "generated" in relative.parts


def is_test(relative: Path) -> bool:
    return relative.parts[0] == "tests" or relative.stem.endswith("_test")


def strip_code(text: str) -> str:
    """Comments, literals and preprocessor lines blanked out; newlines kept (line numbers hold)."""
    out: list[str] = []
    i, n = 0, len(text)
    line_start = True
    while i < n:
        c = text[i]
        if line_start and c == "#":  # a preprocessor line, with its continuations
            while i < n and text[i] != "\n":
                if text[i] == "\\" and i + 1 < n and text[i + 1] == "\n":
                    out.append("\n")
                    i += 2
                    continue
                i += 1
            continue
        if c == "\n":
            out.append(c)
            line_start = True
            i += 1
            continue
        if c in " \t":
            out.append(c)
            i += 1
            continue
        line_start = False
        if text.startswith("//", i):
            while i < n and text[i] != "\n":
                i += 1
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            end = n if end < 0 else end + 2
            out.append(re.sub(r"[^\n]", " ", text[i:end]))
            i = end
        elif c == "R" and text.startswith('R"', i) and (i == 0 or not text[i - 1].isalnum()):
            open_paren = text.find("(", i + 2)
            delimiter = ")" + text[i + 2:open_paren] + '"'
            end = text.find(delimiter, open_paren)
            end = n if end < 0 else end + len(delimiter)
            out.append('""' + re.sub(r"[^\n]", " ", text[i + 2:end]))
            i = end
        elif c in "\"'":
            if c == "'" and i > 0 and text[i - 1].isalnum():  # a digit separator: 1'000
                out.append(" ")
                i += 1
                continue
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            out.append(c + " " * max(0, j - i - 1) + c)
            i = j + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def matching_brace(code: str, open_at: int) -> int:
    depth = 0
    for j in range(open_at, len(code)):
        if code[j] == "{":
            depth += 1
        elif code[j] == "}":
            depth -= 1
            if depth == 0:
                return j
    return len(code) - 1


def classify(header: str) -> str:
    """What a '{' after `header` opens: 'scope' (namespace, class, extern), 'function',
    'member-init' (a brace inside a constructor's initializer list) or 'other'."""
    h = " ".join(header.split())
    if not h or CONTROL.match(h):
        return "other"
    if re.match(r"^(inline\s+)?namespace\b", h) or h.startswith("extern"):
        return "scope"
    close = h.rfind(")")
    if TYPE_KEYWORD.search(h) and (close < 0 or TYPE_KEYWORD.search(h[close:])):
        return "scope" if "=" not in h else "other"
    if close < 0 or "(" not in h:
        return "other"
    tail = h[close + 1:]
    if QUALIFIERS.match(tail):
        return "function"
    if re.match(r"^\s*(noexcept\s*)?:", tail):  # a constructor's initializer list
        return "member-init" if re.search(r"[\w>]\s*$", tail) else "function"
    return "other"


def long_functions(path: Path) -> list[tuple[int, int, str]]:
    """(first line, lines, name) of every function over the limit."""
    code = strip_code(path.read_text(encoding="utf-8", errors="replace"))
    found = []
    header_start = 0
    i = 0
    scopes: list[str] = []  # kinds of the open braces we descend into (scopes only)
    while i < len(code):
        c = code[i]
        if c in ";}":
            if c == "}" and scopes:
                scopes.pop()
            header_start = i + 1
            i += 1
            continue
        if c != "{":
            i += 1
            continue
        header = code[header_start:i]
        kind = classify(header)
        if kind == "scope":
            scopes.append("scope")
            header_start = i + 1
            i += 1
            continue
        end = matching_brace(code, i)
        if kind == "member-init":  # part of the header: keep reading it
            i = end + 1
            continue
        if kind == "function":
            offset = header_start + len(header) - len(header.lstrip())
            first = code.count("\n", 0, offset) + 1
            last = code.count("\n", 0, end) + 1
            lines = last - first + 1
            if lines > MAX_FUNCTION_LINES:
                name = re.findall(r"([~\w:]+)\s*\(", header)
                found.append((first, lines, name[0] if name else "?"))
        i = end + 1
        header_start = i
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("paths", nargs="*", help="only files below these paths (default: all)")
    parser.add_argument("--root", default=Path(__file__).resolve().parent.parent, type=Path,
                        help="the checkout (default: this script's repository)")
    arguments = parser.parse_args()
    root = arguments.root.resolve()
    limits = [Path(p).resolve() for p in arguments.paths]
    findings = []
    for path in source_files(root):
        if limits and not any(path == p or p in path.parents for p in limits):
            continue
        relative = path.relative_to(root)
        if is_generated(relative):
            continue
        lines = path.read_text(encoding="utf-8", errors="replace").count("\n")
        if lines > MAX_FILE_LINES:
            findings.append(f"{relative}: {lines} lines (at most {MAX_FILE_LINES})")
        if path.suffix in CPP_SUFFIXES and not is_test(relative):
            for first, count, name in long_functions(path):
                findings.append(f"{relative}:{first}: function {name} is {count} lines "
                                f"(at most {MAX_FUNCTION_LINES})")
    for finding in findings:
        print(finding)
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main())
