"""volley.numa on fake sysfs trees (2 and 4 nodes): the topology read back, the node a rank
gets, a real bind on this machine's own CPUs (threads started afterwards inherit it), errors."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

import volley
from conftest import runs_other_interpreters
from volley import numa


def _tree(root, cpulists, memory_kb=None):
    for node, cpus in enumerate(cpulists):
        folder = root / f"node{node}"
        folder.mkdir(parents=True)
        (folder / "cpulist").write_text(cpus + "\n")
        if memory_kb is not None:
            (folder / "meminfo").write_text(f"Node {node} MemTotal:   {memory_kb[node]} kB\n"
                                            f"Node {node} MemFree:    1 kB\n")
    (root / "possible").write_text("0-%d\n" % (len(cpulists) - 1))  # not a node: ignored
    return str(root)


def test_topologies_of_two_and_four_nodes_are_read(tmp_path):
    two = numa.topology(_tree(tmp_path / "two", ["0-3,8-11", "4-7,12-15"], [1024, 2048]))
    assert [n.id for n in two] == [0, 1]
    assert two[0].cpus == (0, 1, 2, 3, 8, 9, 10, 11) and two[1].memory_bytes == 2048 * 1024
    four = numa.topology(_tree(tmp_path / "four", ["0-1", "2-3", "", "4,5"]))
    assert [n.id for n in four] == [0, 1, 3]  # node 2 has memory only
    assert four[2].cpus == (4, 5) and four[0].memory_bytes == 0


def test_each_rank_gets_a_node_in_turn(tmp_path, monkeypatch):
    root = _tree(tmp_path / "four", ["0", "1", "2", "3"])
    picked = [numa._pick(numa.topology(root), rank, None).id for rank in range(6)]
    assert picked == [0, 1, 2, 3, 0, 1]
    monkeypatch.setenv("LOCAL_RANK", "3")
    assert numa._pick(numa.topology(root), None, None).id == 3
    assert numa._pick(numa.topology(root), 0, 2).id == 2


def test_a_machine_without_node_directories_is_one_node(tmp_path):
    nodes = numa.topology(str(tmp_path / "absent"))
    assert len(nodes) == 1 and set(nodes[0].cpus) == os.sched_getaffinity(0)
    assert numa.bind(root=str(tmp_path / "absent")) == nodes[0]  # nothing to do


@runs_other_interpreters
def test_bind_sets_every_thread_and_later_threads_inherit_it(tmp_path):
    """In a child process: two nodes made of this machine's first two CPUs (or one CPU twice)."""
    cpus = sorted(os.sched_getaffinity(0))
    second = cpus[1] if len(cpus) > 1 else cpus[0]
    root = _tree(tmp_path / "mine", [str(cpus[0]), str(second)])
    code = f"""
import os, threading, volley.numa as numa
early = threading.Event(); done = threading.Event(); seen = {{}}
def before():
    early.set(); done.wait(); seen['before'] = os.sched_getaffinity(0)
t = threading.Thread(target=before); t.start(); early.wait()
node = numa.bind(1, root={root!r}, memory=False)
after = threading.Thread(target=lambda: seen.__setitem__('after', os.sched_getaffinity(0)))
after.start(); after.join(); done.set(); t.join()
print(node.id, sorted(os.sched_getaffinity(0)), sorted(seen['before']), sorted(seen['after']))
"""
    import volley as package

    env = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(package.__file__)))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=env, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split(maxsplit=1)[0] == "1"
    assert out.stdout.count(f"[{second}]") == 3, out.stdout


def test_errors_name_the_value(tmp_path):
    root = _tree(tmp_path / "two", ["0", "1"])
    with pytest.raises(volley.VolleyValueError, match=r"no NUMA node 5 \(nodes: 0, 1\)"):
        numa.bind(node=5, root=root)
    with pytest.raises(volley.VolleyValueError, match="rank must be >= 0, got -1"):
        numa.bind(-1, root=root)
    bad = _tree(tmp_path / "bad", ["0-x"])
    with pytest.raises(volley.VolleyValueError, match="cannot read CPU list '0-x'"):
        numa.topology(bad)


@runs_other_interpreters
def test_memory_policy_is_set_or_refused_by_name():
    """In a child process: node 0 (which every Linux machine has) is accepted; a node the
    machine does not have is refused with the kernel's reason."""
    code = """
import volley, volley.numa as numa
numa._prefer_memory_of(0)
try:
    numa._prefer_memory_of(1000)
except volley.VolleyOSError as error:
    print("refused:", error)
"""
    import volley as package

    env = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(package.__file__)))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=env, timeout=60)
    assert out.returncode == 0, out.stderr
    assert "refused: set_mempolicy(MPOL_PREFERRED, node 1000) failed:" in out.stdout


# --- placing a host tier: interleaved over the nodes, or a replica on the process's node -----


def _recording(monkeypatch):
    """Replaces the mbind call by a recorder of (mode, nodes): the fake trees' nodes are not
    this machine's."""
    calls = []
    monkeypatch.setattr(numa, "_mbind", lambda address, length, mode, nodes, what:
                        calls.append((mode, list(nodes), length)))
    return calls


@pytest.mark.parametrize("cpulists", [["0", "1"], ["0", "1", "2", "3"]], ids=["2 nodes", "4 nodes"])
def test_place_interleaves_over_every_node_or_binds_to_one(tmp_path, monkeypatch, cpulists):
    import numpy as np

    root = _tree(tmp_path / "tree", cpulists)
    calls = _recording(monkeypatch)
    x = np.arange(6000, dtype=np.float32).reshape(1000, 6)
    spread = numa.place(x, root=root)
    assert calls[-1] == (numa.MPOL_INTERLEAVE, list(range(len(cpulists))), x.nbytes)
    assert spread is not x and np.array_equal(spread, x) and spread.dtype == x.dtype
    on_last = numa.place(x, node=len(cpulists) - 1, root=root)
    assert calls[-1] == (numa.MPOL_BIND, [len(cpulists) - 1], x.nbytes)
    assert np.array_equal(on_last, x)
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {1})  # bound to node 1
    local = numa.place(x, "local", root=root)
    assert calls[-1] == (numa.MPOL_BIND, [1], x.nbytes) and np.array_equal(local, x)


def test_place_keeps_torch_tensors_and_one_node_is_a_no_op(tmp_path, monkeypatch):
    torch = pytest.importorskip("torch")
    calls = _recording(monkeypatch)
    x = torch.randn(50, 3)
    assert numa.place(x, root=_tree(tmp_path / "one", ["0-3"])) is x
    assert calls == []
    copy = numa.place(x, root=_tree(tmp_path / "two", ["0", "1"]))
    assert isinstance(copy, torch.Tensor) and torch.equal(copy, x) and copy.data_ptr() != x.data_ptr()
    feature = volley.Feature(copy)  # a host tier over the placed pages
    assert torch.equal(torch.as_tensor(feature[torch.tensor([3, 1])]), x[[3, 1]])


def test_place_errors_name_the_value(tmp_path, monkeypatch):
    import numpy as np

    root = _tree(tmp_path / "two", ["0", "1"])
    _recording(monkeypatch)
    with pytest.raises(volley.VolleyValueError, match="policy must be one of .*got 'spread'"):
        numa.place(np.zeros(3), "spread", root=root)
    with pytest.raises(volley.VolleyValueError, match=r"no NUMA node 7 \(nodes: 0, 1\)"):
        numa.place(np.zeros(3), node=7, root=root)
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1})
    with pytest.raises(volley.VolleyValueError, match=r"CPUs of NUMA nodes \[0, 1\], not of one"):
        numa.place(np.zeros(3), "local", root=root)


def test_place_asks_the_kernel_for_real(tmp_path):
    """The real mbind: node 0 (every Linux machine has it) is granted and the copy holds the
    values; a node this machine lacks is refused with the kernel's reason, naming the call."""
    import numpy as np

    root = _tree(tmp_path / "two", ["0", "1"])  # node 1 of the tree does not exist here
    x = np.random.default_rng(0).normal(size=(2000, 8)).astype(np.float32)
    assert np.array_equal(numa.place(x, node=0, root=root), x)
    with pytest.raises(volley.VolleyOSError, match=r"mbind\(MPOL_BIND, nodes \[1\]\) failed: "):
        numa.place(x, node=1, root=root)
