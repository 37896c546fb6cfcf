"""Checks an installed Volley wheel from outside the source tree (`scripts/dev.sh wheel`).

Run with the Python of a fresh venv into which only the wheel (and the test requirements) were
installed, from a directory that holds no Volley sources:

    python scripts/wheel_check.py --source .

It checks that
1. `import volley` resolves to the installed package, not to a checkout;
2. `ldd` on the extension and on the `volley` CLI finds every library, and each one is either
   bundled in the wheel (`volley.libs/`) or a system C/C++ runtime library (glibc's, libstdc++,
   libgcc_s) — nothing from gRPC, protobuf, fmt, METIS or zlib is taken from the system;
3. the CLI runs: `volley --help`, and `volley info` on the bundled Cora (from the wheel);
4. the Python test suite passes against the installed package (pytest is run on a copy of the
   tests in a temporary directory; the tests marked same_in_every_torch are left to the first
   leg).
Exits non-zero, naming what failed.
"""

from __future__ import annotations

import argparse
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile

# What a manylinux wheel may take from the system: glibc's libraries and the C++ runtime.
SYSTEM_LIBRARIES = re.compile(
    r"^(linux-vdso\.so|ld-linux[-\w]*\.so|libc\.so|libm\.so|libpthread\.so|libdl\.so|librt\.so"
    r"|libutil\.so|libresolv\.so|libstdc\+\+\.so|libgcc_s\.so)"
)


def fail(message: str) -> None:
    print(f"wheel check: FAILED: {message}", file=sys.stderr)
    sys.exit(1)


def ldd_problems(path: str, bundled_dir: str) -> list:
    """Libraries of `path` that are missing or come from the system without being allowed."""
    result = subprocess.run(["ldd", path], capture_output=True, text=True, env={"PATH": "/usr/bin:/bin"})
    if result.returncode != 0:
        return [f"ldd {path} failed: {result.stderr.strip()}"]
    problems = []
    for line in result.stdout.splitlines():
        line = line.strip()
        name = os.path.basename(line.split()[0])
        if "not found" in line:
            problems.append(f"{os.path.basename(path)}: {name} not found")
            continue
        target = line.split("=>")[1].split("(")[0].strip() if "=>" in line else name
        if SYSTEM_LIBRARIES.match(name):
            continue
        if target and os.path.realpath(target).startswith(os.path.realpath(bundled_dir) + os.sep):
            continue
        problems.append(f"{os.path.basename(path)}: {name} => {target} (neither bundled nor a "
                        "system C/C++ runtime library)")
    return problems


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--source", required=True,
                        help="the checkout whose python/tests (and bench/, examples/ that tests "
                             "run as scripts) are copied; nothing of it goes on sys.path")
    parser.add_argument("--skip-tests", action="store_true", help="checks 1-3 only")
    args = parser.parse_args()

    import volley

    package = os.path.dirname(os.path.realpath(volley.__file__))
    prefix = os.path.realpath(sys.prefix)
    if not package.startswith(prefix + os.sep):
        fail(f"volley was imported from {package}, not from the venv {prefix}")
    print(f"wheel check: volley {volley.__version__} from {package}")

    bundled = os.path.join(os.path.dirname(package), "volley.libs")
    extension = glob.glob(os.path.join(package, "_volley*.so"))
    cli = os.path.join(prefix, "bin", "volley")
    # auditwheel moves an ELF script to <site-packages>/volley.scripts/ (beside volley.libs/) and
    # installs a launcher script in bin/ that execs it.
    cli_binary = os.path.join(os.path.dirname(package), "volley.scripts", "volley")
    if not os.path.exists(cli_binary):
        cli_binary = cli
    if not extension or not os.path.exists(cli) or not os.path.exists(cli_binary):
        fail(f"extension {extension} or CLI {cli} ({cli_binary}) missing from the installed wheel")
    problems = ldd_problems(extension[0], bundled) + ldd_problems(cli_binary, bundled)
    if problems:
        fail("\n  ".join(["libraries:"] + problems))
    bundled_names = sorted(os.listdir(bundled)) if os.path.isdir(bundled) else []
    print(f"wheel check: ldd ok; bundled: {', '.join(bundled_names) or 'nothing'}")

    for command in ([cli, "--help"], [cli, "info", str(volley.datasets.bundled_dir("cora"))]):
        result = subprocess.run(command, capture_output=True, text=True, timeout=120)
        if result.returncode != 0:
            fail(f"{' '.join(command)} exited {result.returncode}: {result.stderr}")
        print(f"wheel check: `volley {' '.join(command[1:])}` ok: "
              f"{result.stdout.strip().splitlines()[0] if result.stdout.strip() else ''}")

    if args.skip_tests:
        return 0
    with tempfile.TemporaryDirectory(prefix="volley-wheel-check-") as scratch:
        for part in ("python/tests", "bench", "examples"):
            shutil.copytree(os.path.join(args.source, part), os.path.join(scratch, part),
                            ignore=shutil.ignore_patterns("__pycache__", "out"))
        tests = os.path.join(scratch, "python", "tests")
        # VOLLEY_TEST_LEG=wheel: the tests whose subject does not change with the Python
        # packages (the service under load, faults; conftest.py's same_in_every_torch) ran in
        # the first leg over the same binaries.
        env = dict(os.environ, VOLLEY_CLI=cli, VOLLEY_SOURCE_DIR=os.path.abspath(args.source),
                   VOLLEY_TEST_LEG="wheel")
        env.pop("PYTHONPATH", None)
        result = subprocess.run(
            [sys.executable, "-m", "pytest", tests, "-q", "-p", "no:cacheprovider"],
            cwd=scratch, env=env)
        if result.returncode != 0:
            fail(f"the Python tests failed against the installed wheel (exit {result.returncode})")
    print("wheel check: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
