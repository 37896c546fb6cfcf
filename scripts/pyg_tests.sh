#!/usr/bin/env bash
# scripts/pyg_tests.sh — runs PyG's own tests of the loaders (test/loader/test_neighbor_loader.py
# and test_link_neighbor_loader.py) and, where pytorch_lightning is installed, of its Lightning
# data modules (test/data/lightning/test_datamodule.py), from the PyG version installed in a
# Python environment, twice each: against PyG itself and with Volley's classes substituted before
# collection (torch_geometric.loader's NeighborLoader, LinkNeighborLoader, NodeLoader and
# LinkLoader; torch_geometric.sampler.NeighborSampler; torch_geometric.data.lightning's
# LightningNodeData and LightningLinkData). Prints the pass / fail / skip counts of the runs.
#   PYG_TEST_FILES  the test files to run, relative to PyG's test/ (default: those above; a bare
#                   name is one under test/loader/)
#
#   scripts/pyg_tests.sh [PYTHON] [TAG]
#     PYTHON  interpreter of the leg (default .venv/bin/python)
#     TAG     PyG git tag whose tests to run (default: the installed torch_geometric.__version__;
#             PyG 2.8.1 has no tag, 2.8.0.post1's loader tests are the newest released ones)
#   PYG_GIT   a git directory of github.com/pyg-team/pytorch_geometric (default: the snapshot
#             /work/.mirror/pyg-team+pytorch_geometric/repo); without one, the tag's tarball is
#             downloaded from GitHub. Nothing of PyG is copied into this repository: the tests
#             are written to a temporary directory that is removed afterwards.
#   VOLLEY_CLI / PYTHONPATH as for python/tests (default: ./python when the built module lies
#             there, else the Volley installed in PYTHON's environment). Exits 1, saying why,
#             when PYTHON cannot import volley._volley or a run ends without pytest's summary.
# Both runs read the Cora of PyG's `get_dataset` fixture from Volley's bundled copy (the same
# graph, features and Planetoid split) instead of downloading it: CI has no internet.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
python=${1:-$root/.venv/bin/python}
python="$(cd "$(dirname "$python")" && pwd)/$(basename "$python")"  # absolute (tests run elsewhere)
# The Volley the runs import: $PYTHONPATH's when given, else the checkout's python/ when a
# built module lies there, else the one installed in $python's environment. None: fail now,
# not with empty result lines.
if [ -z "${PYTHONPATH:-}" ] && PYTHONPATH="$root/python" "$python" -c 'import volley._volley' 2>/dev/null; then
  export PYTHONPATH="$root/python"
fi
if ! where=$(cd / && "$python" -W ignore -c 'import volley._volley, volley; print(volley.__file__)' 2>&1); then
  echo "pyg_tests.sh: $python cannot import volley._volley (PYTHONPATH=${PYTHONPATH:-unset})." >&2
  echo "  Build and install it first (scripts/dev.sh setup), or set PYTHONPATH to a tree with" >&2
  echo "  the built module. The error:" >&2
  echo "$where" | tail -n 3 | sed 's/^/  /' >&2
  exit 1
fi
echo "Volley: $where"
tag=${2:-$("$python" -c 'import torch_geometric; print(torch_geometric.__version__)' 2>/dev/null | tail -1 || true)}
if [ -z "$tag" ]; then
  echo "pyg_tests.sh: $python has no torch_geometric (pass the PyG tag to test as the second argument)" >&2
  exit 1
fi
git_dir=${PYG_GIT:-/work/.mirror/pyg-team+pytorch_geometric/repo}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT


fetch() {  # fetch <path in the PyG tree> <destination>
  if [ -d "$git_dir" ]; then
    git --git-dir="$git_dir" show "$tag:$1" >"$2"
  else
    [ -f "$work/pyg.tar.gz" ] || curl -fsSL -o "$work/pyg.tar.gz" \
      "https://github.com/pyg-team/pytorch_geometric/archive/refs/tags/$tag.tar.gz"
    tar -xzOf "$work/pyg.tar.gz" --wildcards "*/$1" >"$2"
  fi
}
default_files="loader/test_neighbor_loader.py loader/test_link_neighbor_loader.py"
if "$python" -c 'import pytorch_lightning' 2>/dev/null; then
  default_files="$default_files data/lightning/test_datamodule.py"
fi
test_files=""
for file in ${PYG_TEST_FILES:-$default_files}; do
  case "$file" in */*) ;; *) file="loader/$file" ;; esac
  test_files="$test_files $file"
done
mkdir -p "$work/test"
fetch test/conftest.py "$work/test/conftest.py"
for file in $test_files; do
  mkdir -p "$work/test/$(dirname "$file")"
  fetch "test/$file" "$work/test/$file"
done
# Imported by pytest before the test module is collected: the substitution is in place when the
# test file runs `from torch_geometric.loader import NeighborLoader`. In the Volley run, Volley
# is the sampling backend, so the skips that only say "PyG's backend (pyg-lib / torch-sparse)
# is missing" are lifted and the test module's backend flags read True; tests that call a
# backend directly (two-package equality tests), need another package (torch_frame) or the
# internet keep their skips.
cat >"$work/volley_conftest.py" <<'PY'
import os
VOLLEY = os.environ.get("VOLLEY_SUBSTITUTE") == "1"
BUILT = [0]  # loaders built so far: a test that passes without building one proves nothing
if VOLLEY:
    import torch_geometric.loader
    import volley.loader
    def _substitute(name):
        cls = getattr(volley.loader, name, None)
        if cls is None:  # not in this Volley: PyG's own class stays
            return
        setattr(torch_geometric.loader, name, cls)
        init = cls.__init__

        def _counting_init(self, *args, **kwargs):
            BUILT[0] += 1
            init(self, *args, **kwargs)

        cls.__init__ = _counting_init

    _substitute("NeighborLoader")
    _substitute("LinkNeighborLoader")
    # The generic loaders build the classes above (counted there); the sampler and the Lightning
    # data modules are Volley's too, so that the tests' isinstance checks see Volley's classes.
    for name in ("NodeLoader", "LinkLoader"):
        setattr(torch_geometric.loader, name, getattr(volley.loader, name))
    import torch_geometric.sampler
    import volley.generic_loader
    torch_geometric.sampler.NeighborSampler = volley.generic_loader.NeighborSampler
    try:
        import torch_geometric.data.lightning as pyg_lightning
        import volley.lightning
    except ImportError:
        pass
    else:
        pyg_lightning.LightningNodeData = volley.lightning.LightningNodeData
        pyg_lightning.LightningLinkData = volley.lightning.LightningLinkData
    # HeteroData goes to the heterogeneous loaders (NeighborLoader.__new__ dispatches): count them.
    for module, name in (("volley.hetero_loader", "HeteroNeighborLoader"),
                         ("volley.hetero_link_loader", "HeteroLinkNeighborLoader")):
        try:
            import importlib
            hetero = getattr(importlib.import_module(module), name)
        except (ImportError, AttributeError):
            continue
        hetero_init = hetero.__init__

        def _counting_hetero_init(self, *args, _init=hetero_init, **kwargs):
            BUILT[0] += 1
            _init(self, *args, **kwargs)

        hetero.__init__ = _counting_hetero_init

BACKEND_ONLY = ("No neighbor sampler installed", "Package pyg_lib not found",
                "'pyg-lib' does not support")

EMPTY = []

import pytest


@pytest.fixture(scope="session")
def get_dataset():
    """PyG's fixture, with Cora read from Volley's bundled copy instead of downloaded."""
    import importlib.util
    import pathlib
    import volley

    here = pathlib.Path(__file__).resolve().parent
    pyg_file = next(p / "conftest.py" for p in here.parents if (p / "conftest.py").exists())
    spec = importlib.util.spec_from_file_location("pyg_test_conftest", pyg_file)
    pyg_conftest = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(pyg_conftest)

    def load(name, *args, **kwargs):
        if name.lower() == "cora" and not args and not kwargs:
            return [volley.datasets.cora(mmap=False).to_pyg()]
        return pyg_conftest.load_dataset("memory://pyg_test_datasets", name, *args, **kwargs)

    yield load


def pytest_runtest_setup(item):
    item.built_before = BUILT[0]


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if VOLLEY and report.when == "call" and report.passed and BUILT[0] == item.built_before:
        EMPTY.append(item.nodeid)

def pytest_terminal_summary(terminalreporter):
    if VOLLEY:
        terminalreporter.write_line(
            f"passed without building a Volley loader (returned early): {len(EMPTY)}")
        for nodeid in EMPTY:
            terminalreporter.write_line(f"  early return: {nodeid}")

def pytest_collection_modifyitems(items):
    if not VOLLEY:
        return
    for item in items:
        item.own_markers = [
            m for m in item.own_markers
            if not (m.name == "skipif" and str(m.kwargs.get("reason", "")).startswith(BACKEND_ONLY))
        ]
        for flag in ("WITH_PYG_LIB", "WITH_TORCH_SPARSE", "WITH_WEIGHTED_NEIGHBOR_SAMPLE",
                     "WITH_EDGE_TIME_NEIGHBOR_SAMPLE"):
            if hasattr(item.module, flag):
                setattr(item.module, flag, True)
PY
for file in $test_files; do cp "$work/volley_conftest.py" "$work/test/$(dirname "$file")/conftest.py"; done

failed_runs=0
run() {  # run <label> <substitute 0|1> <test file>
  local log="$work/$1-$(basename "${3%.py}").log"
  (cd "$work" && VOLLEY_SUBSTITUTE=$2 timeout 900 "$python" -m pytest -q -p no:cacheprovider \
    -rfEs "test/$3" >"$log" 2>&1) || true
  if [ -n "${PYG_TESTS_VERBOSE:-}" ]; then grep -E '^(FAILED|ERROR|SKIPPED)' "$log" || true; fi
  if [ -n "${PYG_TESTS_LOGS:-}" ]; then mkdir -p "$PYG_TESTS_LOGS" && cp "$log" "$PYG_TESTS_LOGS/"; fi
  local summary
  summary=$(grep -E ' in [0-9.]+s' "$log" | tail -1)
  if [ -z "$summary" ]; then  # pytest never got to its summary: an import or collection error
    echo "pyg_tests.sh: the $1 run of $3 ended without a result; its last lines:" >&2
    tail -n 15 "$log" | sed 's/^/  /' >&2
    failed_runs=$((failed_runs + 1))
    return
  fi
  printf '%-7s PyG %s, %s: %s\n' "$1" "$tag" "$3" "$summary"
  grep -E '^passed without building' "$log" | sed 's/^/        /' || true
}
for file in $test_files; do
  if [ -z "${PYG_TESTS_SKIP_PYG:-}" ]; then run pyg 0 "$file"; fi
  run volley 1 "$file"
done
if [ "$failed_runs" -gt 0 ]; then exit 1; fi
