"""The Python package's own shape: its modules import each other without a circle, and every
error it raises on purpose is a ``Volley*Error`` (read from the sources with ``ast``)."""

from __future__ import annotations

import ast
import builtins
import os
import subprocess
import sys
from typing import Dict, List, Set

import pytest

import volley
from conftest import runs_other_interpreters, same_in_every_torch

PACKAGE_DIR = os.path.dirname(os.path.abspath(volley.__file__))
NATIVE = "_volley"  # the compiled core: imports nothing of the package


def _sources() -> Dict[str, ast.Module]:
    """Module name (``graph``, ``_share``, ``__init__``) -> its parsed source."""
    modules = {}
    for name in sorted(os.listdir(PACKAGE_DIR)):
        if name.endswith(".py"):
            with open(os.path.join(PACKAGE_DIR, name), encoding="utf-8") as source:
                modules[name[:-3]] = ast.parse(source.read(), filename=name)
    return modules


def import_graph(modules: Dict[str, ast.Module]) -> Dict[str, Set[str]]:
    """Module -> the package modules it imports, at the top or inside a function.

    ``from .graph import Graph`` and ``from . import graph`` name ``graph``; ``from . import X``
    where X is not a module names the package (``__init__``); absolute ``volley.x`` imports
    count too. The native ``_volley`` is a leaf and left out."""
    edges: Dict[str, Set[str]] = {name: set() for name in modules}
    for name, tree in modules.items():
        for node in ast.walk(tree):
            targets: List[str] = []
            if isinstance(node, ast.ImportFrom):
                if node.level == 1 and node.module:
                    targets.append(node.module.split(".")[0])
                elif node.level == 1:
                    targets += [
                        a.name if a.name in modules else "__init__"
                        for a in node.names
                        if a.name != NATIVE
                    ]
                elif node.level == 0 and node.module and node.module.split(".")[0] == "volley":
                    parts = node.module.split(".")
                    targets.append(parts[1] if len(parts) > 1 else "__init__")
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    parts = alias.name.split(".")
                    if parts[0] == "volley":
                        targets.append(parts[1] if len(parts) > 1 else "__init__")
            edges[name].update(t for t in targets if t in modules and t != name)
    return edges


def find_cycle(edges: Dict[str, Set[str]]) -> List[str]:
    """One import circle as [a, b, ..., a], or [] when the graph has none (depth-first)."""
    state: Dict[str, int] = {}  # 1: on the current path, 2: done
    path: List[str] = []

    def visit(node: str) -> List[str]:
        state[node] = 1
        path.append(node)
        for target in sorted(edges[node]):
            if state.get(target) == 1:
                return path[path.index(target):] + [target]
            if target not in state:
                cycle = visit(target)
                if cycle:
                    return cycle
        path.pop()
        state[node] = 2
        return []

    for start in sorted(edges):
        if start not in state:
            cycle = visit(start)
            if cycle:
                return cycle
    return []


def test_cycle_finder_sees_circles():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set(), "c": {"a", "b"}}) == []
    # A function-level import closes a circle as much as a top-level one does.
    modules = {
        "graph": ast.parse("from . import _share\n"),
        "_share": ast.parse("def f():\n    from .graph import Graph\n"),
    }
    assert find_cycle(import_graph(modules)) == ["_share", "graph", "_share"]


def test_package_has_no_import_cycle():
    edges = import_graph(_sources())
    assert edges["graph"] >= {"_share"}  # the walk reads the real imports
    cycle = find_cycle(edges)
    assert not cycle, "import circle in volley: " + " -> ".join(cycle)


def test_share_imports_only_the_native_core():
    assert import_graph(_sources())["_share"] == set()


_SUBMODULES = sorted(name for name in _sources() if name != "__init__")


def test_each_submodule_imports_first():
    # For each submodule, a package whose Python modules are all unloaded imports it before
    # anything else of the package: the package object is a bare one over the same folder, so
    # volley/__init__.py does not run first and the submodule's own imports must resolve in
    # whatever order they come. One interpreter for all of them (the native core, which imports
    # nothing of the package, and torch stay loaded between rounds).
    code = (
        "import importlib, sys, traceback, types\n"
        "failed = []\n"
        f"for name in {_SUBMODULES!r}:\n"
        "    for key in [k for k in sys.modules if k == 'volley' or (k.startswith('volley.')\n"
        "                and k != 'volley._volley')]:\n"
        "        del sys.modules[key]\n"
        "    package = types.ModuleType('volley')\n"
        f"    package.__path__ = [{PACKAGE_DIR!r}]\n"
        "    sys.modules['volley'] = package\n"
        "    if 'volley._volley' in sys.modules:\n"
        "        package._volley = sys.modules['volley._volley']\n"
        "    try:\n"
        "        importlib.import_module('volley.' + name)\n"
        "    except sys.modules['volley._volley'].VolleyImportError:\n"
        "        pass  # an optional dependency missing (volley.lightning without PyG): said clearly\n"
        "    except Exception:\n"
        "        failed.append(name + ':\\n' + traceback.format_exc())\n"
        "print('\\n'.join(failed))\n"
        "sys.exit(1 if failed else 0)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
    assert len(_SUBMODULES) > 20  # every submodule was tried


# --- errors raised on purpose ---------------------------------------------------------------

# Builtin exceptions that are protocol, not errors: raising them is not a user error.
_PROTOCOL = {"StopIteration", "StopAsyncIteration", "GeneratorExit", "KeyboardInterrupt",
             "SystemExit", "NotImplementedError"}


def builtin_raises(tree: ast.Module) -> List[int]:
    """Lines of ``raise X`` / ``raise X(...)`` where X is a builtin exception class (a module's
    or class's ``__getattr__`` raises AttributeError by protocol)."""
    getattr_raises = {
        id(raise_node)
        for function in ast.walk(tree)
        if isinstance(function, ast.FunctionDef) and function.name == "__getattr__"
        for raise_node in ast.walk(function)
    }
    lines = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Raise) or node.exc is None:
            continue
        target = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
        if id(node) in getattr_raises and getattr(target, "id", "") == "AttributeError":
            continue
        if isinstance(target, ast.Name) and target.id not in _PROTOCOL:
            value = getattr(builtins, target.id, None)
            if isinstance(value, type) and issubclass(value, BaseException):
                lines.append(node.lineno)
    return sorted(lines)


def test_builtin_raise_finder():
    tree = ast.parse(
        "def f(x):\n"
        "    if x: raise ValueError(f'bad {x}')\n"
        "    if not x: raise TypeError\n"
        "    raise VolleyValueError('fine')\n"
        "def g():\n"
        "    raise StopIteration\n"
        "def h():\n"
        "    try: pass\n"
        "    except OSError: raise\n"
        "def __getattr__(name):\n"
        "    raise AttributeError(name)\n"
        "def k(name):\n"
        "    raise AttributeError(name)\n"
    )
    assert builtin_raises(tree) == [2, 3, 13]


def test_package_raises_only_volley_errors():
    found = [
        f"volley/{name}.py:{line}"
        for name, tree in _sources().items()
        for line in builtin_raises(tree)
    ]
    assert not found, "builtin exceptions raised (use the Volley*Error class): " + ", ".join(found)


def test_every_volley_error_class_is_exported_and_derives_from_a_builtin():
    classes = {name: getattr(volley, name) for name in volley.__all__ if name.startswith("Volley")}
    assert {"VolleyTypeError", "VolleyImportError", "VolleyValueError"} <= set(classes)
    for name, cls in classes.items():
        assert issubclass(cls, volley.VolleyError) and cls.__module__ == "volley", name
        if cls is not volley.VolleyError:
            builtin_bases = [b for b in cls.__mro__ if b.__module__ == "builtins"]
            assert builtin_bases[0] not in (Exception, BaseException, object), name


@runs_other_interpreters
@same_in_every_torch
def test_objects_alive_at_exit_are_reported_only_when_asked():
    # A framework may keep a loader until the interpreter exits (Lightning's ddp_spawn children
    # do); nanobind's "leaked instances" report is then noise, printed only with
    # VOLLEY_LEAK_WARNINGS=1 (the bindings' reference-count check while developing them).
    code = ("import ctypes, volley\n"
            "g = volley.Graph.from_edge_index([[0, 1], [1, 0]], num_nodes=2)\n"
            "ctypes.pythonapi.Py_IncRef(ctypes.py_object(g))  # alive at exit\n")
    environment = {key: value for key, value in os.environ.items()
                   if key != "VOLLEY_LEAK_WARNINGS"}
    quiet = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                           env=environment)
    asked = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                           env=dict(environment, VOLLEY_LEAK_WARNINGS="1"))
    assert quiet.returncode == 0 and asked.returncode == 0, quiet.stderr + asked.stderr
    assert "leaked" not in quiet.stderr
    assert "nanobind: leaked 1 instances" in asked.stderr
