"""Every public numeric parameter against the values users get wrong, in Python and on the
command line: negative, zero, NaN, infinity, 2**63, 2**64, a float where an integer is meant,
and a string. Each (parameter, value) is one test: the value is refused with the right error
class (``VolleyValueError`` / ``VolleyTypeError`` / ``VolleyIndexError``) and a message that
names the parameter and shows the value, or it is accepted with its documented meaning (0
workers: every core; a ``neg_sampling_ratio`` of 0: no negatives; ...).

Python: the loaders' own numbers (``num_neighbors``, ``batch_size``, ``num_workers``,
``prefetch``, ``seed``, ``rank`` / ``world_size`` for every kind of loader) are checked the same
everywhere by ``test_loader_arguments.py``, byte sizes by ``test_hostile_inputs.py``; this table
covers each parameter with the whole list of values. The command line (``VOLLEY_CLI``, default
the CLI installed beside the interpreter) must exit non-zero, without a signal or a hang, naming the option and the
value on stderr.
"""

from __future__ import annotations

import math
import os
import re
import select
import signal
import subprocess
import time
from typing import Any, Callable, NamedTuple, Optional, Tuple

import numpy as np
import pytest

import volley
from volley import loader

from conftest import volley_cli, same_in_every_torch, runs_other_interpreters

NAN, INF = float("nan"), float("inf")
VALUES = (-1, 0, NAN, INF, 2**63, 2**64, 1.5, "3")
INT64, UINT64, INT32 = 2**63 - 1, 2**64 - 1, 2**31 - 1
N = 20


# --- the Python table ---------------------------------------------------------------------


def integer(low: int, high: int, below: type = volley.VolleyValueError) -> Callable:
    """The error an integer parameter in [low, high] gives for a value (None: accepted)."""
    def expect(value: Any) -> Optional[type]:
        if isinstance(value, bool) or not isinstance(value, int):
            return volley.VolleyTypeError
        if value < low:
            return below
        return volley.VolleyValueError if value > high else None
    return expect


def real(low: float = -INF, high: float = INF, above: Optional[float] = None) -> Callable:
    """The error a finite real parameter in [low, high] (and > above) gives for a value."""
    def expect(value: Any) -> Optional[type]:
        if isinstance(value, str):
            return volley.VolleyTypeError
        number = float(value)
        if not math.isfinite(number) or (above is not None and number <= above):
            return volley.VolleyValueError
        return volley.VolleyValueError if not low <= number <= high else None
    return expect


class Param(NamedTuple):
    name: str  # how the test ids name it
    call: Callable[[Any, Any], Any]  # (value, context) -> result
    expect: Callable[[Any], Optional[type]]
    shows: Tuple[str, ...] = ()  # what the message calls the parameter (default: its last word)
    meaning: Optional[Callable[[Any, Any], bool]] = None  # (value, result): an accepted value


class Context(NamedTuple):
    tmp: Any
    dataset: volley.Dataset
    parts: str
    server: Any


def _dataset() -> volley.Dataset:
    src = np.arange(N)
    graph = volley.Graph.from_edge_index(np.stack([src, (src + 1) % N]), num_nodes=N)
    return volley.Dataset(graph, np.ones((N, 3), np.float32), np.arange(N) % 2,
                          train_idx=np.arange(0, N, 2), name="ring")


def _loader(c: Context, **kw: Any) -> Any:
    return loader.NeighborLoader(c.dataset, [2], **{"batch_size": 4, **kw})


def _link(c: Context, **kw: Any) -> Any:
    src = np.arange(8)
    return loader.LinkNeighborLoader(c.dataset, [2], edge_label_index=np.stack([src, src + 1]),
                                     **{"batch_size": 4, **kw})


def _out(c: Context) -> str:
    return str(c.tmp / f"out{time.monotonic_ns()}")


def _served(c: Context, **kw: Any) -> Any:
    server = volley.dist.serve(c.parts, kw.pop("part", 0), **kw)
    server.shutdown(0)
    return server


def _labels() -> np.ndarray:
    return np.arange(N) % 2


LOADER = [
    Param("NeighborLoader.batch_size", lambda v, c: _loader(c, batch_size=v), integer(1, INT32)),
    Param("NeighborLoader.num_workers", lambda v, c: _loader(c, num_workers=v),
          integer(0, 65536), meaning=lambda v, r: r._options.num_threads == os.cpu_count()),
    Param("NeighborLoader.prefetch", lambda v, c: _loader(c, prefetch=v), integer(0, 65536)),
    Param("NeighborLoader.seed", lambda v, c: _loader(c, seed=v), integer(0, UINT64),
          meaning=lambda v, r: r._options.seed == v),
    Param("NeighborLoader.lookahead", lambda v, c: _loader(c, lookahead=v), integer(0, 65536),
          meaning=lambda v, r: r._options.lookahead == v),
    Param("NeighborLoader.rank", lambda v, c: _loader(c, rank=v, world_size=2),
          integer(0, 1), shows=("rank",)),
    Param("NeighborLoader.world_size", lambda v, c: _loader(c, rank=0, world_size=v),
          integer(1, INT64), shows=("world_size",)),
    Param("NeighborLoader.cache_bytes", lambda v, c: _loader(c, cache_bytes=v),
          lambda v: None if v in (0, 1.5, "3") else
          volley.VolleyValueError if v in (-1, NAN, INF, 2**63, 2**64) else None),
    Param("NeighborLoader.set_epoch", lambda v, c: _loader(c).set_epoch(v), integer(0, INT64),
          shows=("epoch",)),
    Param("NeighborLoader.rank_positions", lambda v, c: _loader(c).rank_positions(v),
          integer(0, INT64), shows=("epoch",)),
    Param("LinkNeighborLoader.neg_sampling_ratio", lambda v, c: _link(c, neg_sampling_ratio=v),
          lambda v: None if v == 0 else real(above=0, high=INT32)(v), shows=("amount",),
          meaning=lambda v, r: v != 0 or r.neg_sampling is None),
    Param("LinkNeighborLoader.neg_sampling.amount",
          lambda v, c: _link(c, neg_sampling=dict(mode="binary", amount=v)),
          real(above=0, high=INT32), shows=("amount",)),
    Param("LinkNeighborLoader.max_draws",
          lambda v, c: _link(c, neg_sampling="binary", max_draws=v), integer(1, INT32)),
    Param("LinkNeighborLoader.neg_degree_power",
          lambda v, c: _link(c, neg_sampling="binary", neg_distribution="degree",
                             neg_degree_power=v), real()),
]

SAMPLERS = [
    Param("NeighborSampler.seed", lambda v, c: volley.NeighborSampler(c.dataset.graph, [2],
                                                                      seed=v), integer(0, UINT64)),
    Param("NeighborSampler.sample.batch_index",
          lambda v, c: volley.NeighborSampler(c.dataset.graph, [2]).sample([0], batch_index=v),
          integer(0, INT64)),
    Param("HeteroNeighborSampler.seed", lambda v, c: volley.HeteroNeighborSampler(
        volley.HeteroGraph.from_edge_index_dict({("a", "to", "a"): np.array([[0], [1]])}),
        [1], seed=v), integer(0, UINT64)),
    Param("NegativeSampler.degree_power",
          lambda v, c: volley.NegativeSampler(c.dataset.graph, "degree", degree_power=v), real()),
    Param("NegativeSampler.max_draws",
          lambda v, c: volley.NegativeSampler(c.dataset.graph, max_draws=v), integer(1, INT32)),
    Param("NegativeSampler.seed", lambda v, c: volley.NegativeSampler(c.dataset.graph, seed=v),
          integer(0, UINT64)),
    Param("NegativeSampler.sample_pairs.count",
          lambda v, c: volley.NegativeSampler(c.dataset.graph).sample_pairs(v),
          integer(0, INT64), meaning=lambda v, r: len(r[0]) == len(r[1]) == v),
    Param("NegativeSampler.sample_pairs.batch_index",
          lambda v, c: volley.NegativeSampler(c.dataset.graph).sample_pairs(2, v),
          integer(0, UINT64)),
    Param("NegativeSampler.sample_destinations.per_source",
          lambda v, c: volley.NegativeSampler(c.dataset.graph).sample_destinations([1, 2], v),
          integer(0, INT64), meaning=lambda v, r: len(r) == 2 * v),
    Param("hotness_by_sampling.batch_size",
          lambda v, c: volley.hotness_by_sampling(c.dataset.graph, [0, 1], [2], v),
          integer(1, INT32)),
    Param("hotness_by_sampling.max_batches",  # 0: the whole epoch
          lambda v, c: volley.hotness_by_sampling(c.dataset.graph, [0, 1], [2], 1, max_batches=v),
          integer(0, INT64)),
    Param("hotness_by_sampling.seed",
          lambda v, c: volley.hotness_by_sampling(c.dataset.graph, [0, 1], [2], 1, seed=v),
          integer(0, UINT64)),
    Param("hotness_by_sampling.num_neighbors",
          lambda v, c: volley.hotness_by_sampling(c.dataset.graph, [0, 1], [v], 1),
          integer(-1, INT32), shows=("num_neighbors[0]",)),
    Param("Feature.gather.threads",  # 0: Volley's thread pool
          lambda v, c: volley.Feature(np.eye(4, dtype=np.float32)).gather([2], threads=v),
          integer(0, 65536), meaning=lambda v, r: np.asarray(r).tolist() == [[0, 0, 1, 0]]),
    Param("set_num_threads", lambda v, c: volley.set_num_threads(v), integer(1, INT32),
          shows=("num_threads",)),
]

DATA = [
    Param("partition.num_parts", lambda v, c: volley.partition(c.dataset, _out(c), v,
                                                               method="random"),
          integer(1, 2**20), meaning=lambda v, r: r.book.num_parts == v),
    Param("partition.seed", lambda v, c: volley.partition(c.dataset, _out(c), 2, method="random",
                                                          seed=v), integer(0, UINT64)),
    Param("partition.balance_tolerance",
          lambda v, c: volley.partition(c.dataset, _out(c), 2, method="random",
                                        balance_tolerance=v), real(above=0, high=10)),
    Param("partition.batch_size",
          lambda v, c: volley.partition(c.dataset, _out(c), 2, method="random",
                                        simulate_epoch=True, batch_size=v), integer(1, INT32)),
    Param("partition.fanouts", lambda v, c: volley.partition(c.dataset, _out(c), 2,
                                                             method="hotness", fanouts=[v]),
          integer(-1, INT32), shows=("fanouts[0]",)),
    Param("partition.cache_bytes",
          lambda v, c: volley.partition(c.dataset, _out(c), 2, method="hotness", cache_bytes=v),
          lambda v: volley.VolleyValueError if v in (-1, NAN, INF, 2**63, 2**64) else None),
    Param("load_partition.part", lambda v, c: volley.load_partition(c.parts, v),
          integer(0, 0, below=volley.VolleyIndexError),
          shows=("part", "partition")),
    Param("split_edges.val", lambda v, c: volley.split_edges(c.dataset, _out(c), val=v),
          real(0, 0.999)),
    Param("split_edges.test", lambda v, c: volley.split_edges(c.dataset, _out(c), test=v),
          real(0, 0.999)),
    Param("split_edges.seed", lambda v, c: volley.split_edges(c.dataset, _out(c), seed=v),
          integer(0, UINT64)),
    Param("split_edges.neg_ratio", lambda v, c: volley.split_edges(c.dataset, _out(c),
                                                                   neg_ratio=v), real(0)),
    Param("random_split.num_nodes", lambda v, c: volley.random_split(v), integer(0, INT64),
          meaning=lambda v, r: sum(len(ids) for ids in r) == v),
    Param("random_split.train_fraction", lambda v, c: volley.random_split(N, train_fraction=v),
          real(0, 0.8)),
    Param("random_split.val_fraction", lambda v, c: volley.random_split(N, val_fraction=v),
          real(0, 0.4)),
    Param("random_split.seed", lambda v, c: volley.random_split(N, seed=v), integer(0, UINT64)),
    Param("planetoid_split.num_classes",
          lambda v, c: volley.planetoid_split(np.full(N, -1), v, num_val=0, num_test=0),
          integer(1, INT64)),
    Param("planetoid_split.per_class",
          lambda v, c: volley.planetoid_split(_labels(), per_class=v, num_val=2, num_test=2),
          integer(0, INT64)),
    Param("planetoid_split.num_val",
          lambda v, c: volley.planetoid_split(_labels(), per_class=1, num_val=v, num_test=2),
          integer(0, 0)),
    Param("planetoid_split.num_test",
          lambda v, c: volley.planetoid_split(_labels(), per_class=1, num_val=2, num_test=v),
          integer(0, 0)),
    Param("planetoid_split.seed", lambda v, c: volley.planetoid_split(
        _labels(), per_class=1, num_val=2, num_test=2, seed=v), integer(0, UINT64)),
]

# neg_ratio is a real number >= 0 and at most 2**31 negatives per edge (split_edges refuses more).
DATA[DATA.index(next(p for p in DATA if p.name == "split_edges.neg_ratio"))] = Param(
    "split_edges.neg_ratio", lambda v, c: volley.split_edges(c.dataset, _out(c), neg_ratio=v),
    lambda v: volley.VolleyValueError if v in (2**63, 2**64) else real(0)(v))


def _shutdown_after(server: Any, grace: Any) -> None:
    try:
        server.shutdown(grace)
    finally:
        server.shutdown(0)


def _serve_limit(name: str, low: int, high: int) -> Param:
    return Param(f"serve.{name}", lambda v, c: _served(c, **{name: v}), integer(low, high))


DIST = [
    Param("serve.part", lambda v, c: _served(c, part=v), integer(0, 0, volley.VolleyIndexError)),
    Param("serve.threads", lambda v, c: _served(c, threads=v), integer(0, INT32)),
    Param("serve.concurrency", lambda v, c: _served(c, concurrency=v), integer(0, INT32)),
    Param("serve.max_epoch_streams", lambda v, c: _served(c, max_epoch_streams=v),
          integer(0, INT32)),
    _serve_limit("max_request_bytes", 1 << 20, 1 << 30),
    _serve_limit("max_reply_bytes", 64 << 10, 1 << 30),
    _serve_limit("max_ids_per_call", 1, 1 << 26),
    _serve_limit("memory_limit_bytes", 64 << 20, INT64),
    _serve_limit("max_node_data_bytes", 0, INT64),
    Param("serve.peer_deadline", lambda v, c: _served(c, peer_deadline=v), real(above=0)),
    Param("Server.shutdown.grace", lambda v, c: _shutdown_after(volley.dist.serve(c.parts, 0), v),
          real(0)),
    Param("connect.deadline", lambda v, c: volley.dist.connect([c.server.address], deadline=v),
          real(above=0)),
    Param("connect.connect_timeout",
          lambda v, c: volley.dist.connect([c.server.address], connect_timeout=v), real(above=0)),
    Param("DistNeighborLoader.deadline", lambda v, c: volley.dist.DistNeighborLoader(
        [c.server.address], [2], batch_size=4, local=c.server, deadline=v), real(above=0)),
]

PYTHON = [(p, v) for p in LOADER + SAMPLERS + DATA + DIST for v in VALUES]


def shows_value(message: str, forms: Tuple[str, ...]) -> bool:
    """Whether ``message`` shows one of ``forms`` as a whole number (2**63 is not in -2**63)."""
    return any(re.search(rf"(?<![-\w.]){re.escape(form)}(?![\w.])", message) for form in forms)


def shown(value: Any) -> Tuple[str, ...]:
    """How a message may show a value: as given, or as a float (native checks of doubles)."""
    if isinstance(value, str):
        return (repr(value),)
    return (str(value), repr(float(value)))


@pytest.fixture(scope="module")
def context(tmp_path_factory) -> Context:
    tmp = tmp_path_factory.mktemp("numbers")
    dataset = _dataset()
    parts = str(tmp / "parts")
    volley.partition(dataset, parts, 1, method="random")
    return Context(tmp, dataset, parts, None)


@pytest.fixture(scope="module")
def server(context):
    if not volley._volley._has_dist:
        pytest.skip("built without the distributed service (gRPC)")
    running = volley.dist.serve(context.parts, 0)
    yield running
    running.shutdown(0)


def _python_case(param: Param, value: Any) -> Any:
    return pytest.param(param, value, id=f"{param.name}={value!r}")


@pytest.mark.parametrize("param, value", [_python_case(p, v) for p, v in PYTHON])
def test_python_parameter(request, context, param, value):
    if param in DIST:
        context = context._replace(server=request.getfixturevalue("server"))
    error = param.expect(value)
    if error is None:
        result = param.call(value, context)
        assert param.meaning is None or param.meaning(value, result), (param.name, value)
        return
    with pytest.raises(error) as caught:
        param.call(value, context)
    message = str(caught.value)
    names = param.shows or (param.name.rsplit(".", 1)[-1],)
    assert any(name in message for name in names), (names, message)
    assert shows_value(message, shown(value)), (shown(value), message)


# --- the command line ---------------------------------------------------------------------

CLI = volley_cli() or ""
CLI_VALUES = ("-1", "0", "nan", "inf", str(2**63), str(2**64), "1.5", "1e23", "abc")
BIG = (str(2**63), str(2**64))


class Option(NamedTuple):
    name: str  # the test id's prefix
    args: Tuple[str, ...]  # "{}": the value, "{out}": a fresh output path, "{g}" / "{parts}": data
    option: str  # what the message must name
    ok: Tuple[str, ...] = ()  # values accepted (exit 0; a server starts)
    values: Tuple[str, ...] = CLI_VALUES
    where: str = ""  # the C++ file that parses the option (named when a case fails)


GEN = ("generate", "--nodes", "50", "--edges", "100")
PART = ("partition", "{g}", "{out}", "-k", "2")
SAMPLE = ("bench", "sample", "--dataset", "{g}", "--fanout", "2", "--batches", "1",
          "--batch-size", "2")
LOAD = ("bench", "loader", "--dataset", "{g}", "--fanout", "2", "--batches", "1",
        "--batch-size", "2")
GATHER = ("bench", "gather", "--rows", "10", "--dim", "4", "--batch", "2", "--batches", "1")
CACHE = ("bench", "cache", "--dataset", "{g}", "--fanout", "2", "--batch-size", "2")
SERVE = ("serve", "{parts}", "--part", "0")
CONVERT = ("convert", "--format", "npy", "{edges}", "{out}")
NOT_ZERO = tuple(v for v in CLI_VALUES if v != "0")
T = "tools/volley/"

OPTIONS = [
    Option("threads", ("--threads", "{}", "info", "{g}"), "--threads", ok=("0",)),
    Option("generate.nodes", ("generate", "--nodes", "{}", "--edges", "10", "{out}"), "--nodes",
           where=T + "generate_command.cc"),
    Option("generate.edges", ("generate", "--nodes", "50", "--edges", "{}", "{out}"), "--edges",
           ok=("0",), where=T + "generate_command.cc"),
    Option("generate.feature-dim", GEN + ("--feature-dim", "{}", "{out}"), "--feature-dim",
           ok=("0",), where=T + "generate_command.cc"),
    Option("generate.classes", GEN + ("--classes", "{}", "{out}"), "--classes",
           where=T + "generate_command.cc"),
    Option("generate.seed", GEN + ("--seed", "{}", "{out}"), "--seed", ok=("0", str(2**63))),
    Option("generate.gamma", GEN + ("--gamma", "{}", "{out}"), "--gamma",
           ok=BIG + ("1.5", "1e23")),
    Option("generate.homophily", GEN + ("--homophily", "{}", "{out}"), "--homophily", ok=("0",)),
    Option("convert.num-nodes", CONVERT + ("--num-nodes", "{}"), "--num-nodes",
           where=T + "convert_command.cc"),
    Option("convert.seed", CONVERT + ("--split", "random", "--seed", "{}"), "--seed",
           ok=("0", str(2**63))),
    Option("convert.train-fraction", CONVERT + ("--split", "random", "--train-fraction", "{}"),
           "--train-fraction", ok=("0",), where=T + "convert_command.cc"),
    Option("convert.val-fraction", CONVERT + ("--split", "random", "--val-fraction", "{}"),
           "--val-fraction", ok=("0",), where=T + "convert_command.cc"),
    Option("partition.parts", ("partition", "{g}", "{out}", "-k", "{}"), "--parts",
           where=T + "partition_command.cc"),
    Option("partition.fanout", PART + ("-m", "hotness", "--fanout", "{}"), "--fanout",
           ok=("-1", "0"), where=T + "partition_command.cc"),
    Option("partition.cache-bytes", PART + ("-m", "hotness", "--cache-bytes", "{}"),
           "--cache-bytes", ok=("0", "1.5"), where=T + "partition_command.cc, its size parser"),
    Option("partition.batch-size", PART + ("-m", "random", "--simulate", "--batch-size", "{}"),
           "--batch-size", where=T + "partition_command.cc"),
    Option("partition.tolerance", PART + ("--tolerance", "{}"), "--tolerance", ok=("1.5",)),
    Option("partition.seed", PART + ("-m", "random", "--seed", "{}"), "--seed",
           ok=("0", str(2**63))),
    Option("split-edges.val", ("split-edges", "{g}", "{out}", "--val", "{}"), "--val",
           ok=("0",)),
    Option("split-edges.test", ("split-edges", "{g}", "{out}", "--test", "{}"), "--test",
           ok=("0",)),
    Option("split-edges.seed", ("split-edges", "{g}", "{out}", "--seed", "{}"), "--seed",
           ok=("0", str(2**63))),
    Option("split-edges.neg-ratio", ("split-edges", "{g}", "{out}", "--neg-ratio", "{}"),
           "--neg-ratio", ok=("0", "1.5"), where="src/volley/graph/edge_split.cc"),
    Option("serve.part", ("serve", "{parts}", "--part", "{}"), "--part", ok=("0",),
           where=T + "serve_command.cc"),
    Option("serve.threads", SERVE + ("--threads", "{}"), "--threads", ok=("0",)),
    Option("serve.max-epoch-streams", SERVE + ("--max-epoch-streams", "{}"),
           "--max-epoch-streams", ok=("0",), 
           where=T + "serve_command.cc"),
    Option("serve.max-reply-bytes", SERVE + ("--max-reply-bytes", "{}"), "--max-reply-bytes",
           ok=("0",), where=T + "serve_command.cc"),
    Option("serve.max-ids-per-call", SERVE + ("--max-ids-per-call", "{}"), "--max-ids-per-call",
           ok=("0",), where=T + "serve_command.cc"),
    Option("serve.max-node-data-bytes", SERVE + ("--max-node-data-bytes", "{}"),
           "--max-node-data-bytes", ok=("0",), where=T + "serve_command.cc"),
    Option("serve.deadline", SERVE + ("--deadline", "{}"), "--deadline",
           ok=BIG + ("1.5", "1e23")),
    Option("serve.grace", SERVE + ("--grace", "{}"), "--grace", ok=("0", "1.5", "1e23") + BIG),
    Option("serve.listen", SERVE + ("--listen", "127.0.0.1:{}"), "--listen", ok=("0",)),
    Option("serve.peers", SERVE + ("--peers", "{}"), "--peers",
           values=("garbage", "127.0.0.1:99999", ",,,")),
    Option("serve.peer-tls-ca", SERVE + ("--peers", ",127.0.0.1:1", "--peer-tls-ca", "{}"),
           "--peer-tls-ca", values=("/nonexistent/ca.pem",)),
    Option("bench-sample.batch-size", SAMPLE[:-2] + ("--batch-size", "{}"), "--batch-size",
           where=T + "bench_command.cc"),
    Option("bench-sample.threads", SAMPLE + ("--threads", "{}"), "--threads"),
    Option("bench-sample.batches", SAMPLE[:6] + ("--batch-size", "2", "--batches", "{}"),
           "--batches", where=T + "bench_command.cc"),
    Option("bench-sample.warmup", SAMPLE + ("--warmup", "{}"), "--warmup", ok=("0",),
           where=T + "bench_command.cc"),
    Option("bench-sample.seed", SAMPLE + ("--seed", "{}"), "--seed", ok=("0", str(2**63))),
    Option("bench-sample.fanout", SAMPLE[:4] + ("--batches", "1", "--batch-size", "2",
                                                "--fanout", "{}"), "--fanout",
           ok=("-1", "0"), values=CLI_VALUES + ("-2",), where=T + "bench_command.cc"),
    Option("bench-sample.cuda-device", SAMPLE + ("--cuda-device", "{}"), "--cuda-device",
           ok=("0",)),
    Option("bench-loader.lookahead", LOAD + ("--policy", "lookahead", "--lookahead", "{}"),
           "--lookahead", ok=("0",)),
    Option("bench-loader.cache-bytes", LOAD + ("--cache-bytes", "{}"), "--cache-bytes",
           ok=("0",), where=T + "bench_command.cc"),
    Option("bench-gather.rows", GATHER[:2] + ("--rows", "{}") + GATHER[4:], "--rows",
           where=T + "bench_gather.cc"),
    Option("bench-gather.dim", GATHER[:4] + ("--dim", "{}") + GATHER[6:], "--dim",
           where=T + "bench_gather.cc"),
    Option("bench-gather.cache-fraction", GATHER + ("--cache-fraction", "{}"),
           "--cache-fraction", ok=("0",), where=T + "bench_gather.cc"),
    Option("bench-gather.prefetch-bytes", GATHER + ("--prefetch-bytes", "{}"), "--prefetch-bytes",
           ok=("0",), where=T + "bench_gather.cc"),
    Option("bench-cache.batches", CACHE + ("--cache-bytes", "1K", "--batches", "{}"),
           "--batches", ok=("0",), where=T + "bench_disk.cc"),
    Option("bench-cache.cache-bytes", CACHE + ("--batches", "1", "--cache-bytes", "{}"),
           "--cache-bytes", ok=("0",), where=T + "bench_disk.cc"),
    Option("bench-cache.lookahead", CACHE + ("--batches", "1", "--cache-bytes", "1K",
                                             "--lookahead", "{}"), "--lookahead", ok=("0",),
           where=T + "bench_disk.cc"),
    Option("bench-disk.seconds", ("bench", "disk", "--file", "{g}/volley.json", "--seconds", "{}"),
           "--seconds", values=("-1", "0", "nan", "inf", "abc")),
    Option("bench-dist.nodes", ("bench", "dist", "--generate", "powerlaw", "--edges", "10",
                                "--batches", "1", "--nodes", "{}"), "--nodes",
           where=T + "bench_dist.cc"),
    Option("bench-dist.concurrency", ("bench", "dist", "--generate", "powerlaw", "--nodes", "50",
                                      "--concurrency", "{}"), "--concurrency", values=NOT_ZERO),
]


@pytest.fixture(scope="module")
def cli_data(tmp_path_factory):
    """A tiny generated dataset, its two-part partition and a [2, 3] edge array."""
    if not CLI:
        pytest.skip("no volley binary (set VOLLEY_CLI)")
    tmp = tmp_path_factory.mktemp("cli")
    data = {"g": str(tmp / "g"), "parts": str(tmp / "parts"), "edges": str(tmp / "edges.npy")}
    for args in (("generate", "--nodes", "50", "--edges", "200", "--feature-dim", "4",
                  "--classes", "3", data["g"]),
                 ("partition", data["g"], data["parts"], "-k", "2", "-m", "random")):
        subprocess.run([CLI, "-q", *args], check=True, capture_output=True, timeout=60)
    np.save(data["edges"], np.array([[0, 1, 2], [1, 2, 0]]))
    return data, tmp


def _command(option: Option, value: str, data: dict, tmp: Any) -> list:
    fill = dict(data, out=str(tmp / f"out{time.monotonic_ns()}"))
    return [CLI, "-q"] + [a.format(value, **fill) for a in option.args]


def _serves(command: list) -> Tuple[int, str]:
    """Runs ``volley serve`` until it listens (then SIGINT) or exits: (exit status, output)."""
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    fd, seen, deadline = process.stdout.fileno(), b"", time.monotonic() + 20
    try:
        while b"listening on" not in seen and time.monotonic() < deadline:
            if select.select([fd], [], [], 0.5)[0]:
                chunk = os.read(fd, 4096)
                if not chunk:
                    break
                seen += chunk
        if process.poll() is None:
            process.send_signal(signal.SIGINT)
        seen += process.communicate(timeout=20)[0]
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    return process.returncode, seen.decode(errors="replace")


def _cli_shown(value: str) -> Tuple[str, ...]:
    try:
        return (value, repr(float(value)))
    except ValueError:
        return (value,)


def _cli_case(option: Option, value: str) -> Any:
    return pytest.param(option, value, id=f"{option.name}={value}")


@pytest.mark.parametrize("option, value", [_cli_case(o, v) for o in OPTIONS for v in o.values])
@same_in_every_torch
@runs_other_interpreters
def test_command_line_option(cli_data, option, value):
    data, tmp = cli_data
    command = _command(option, value, data, tmp)
    if command[2] == "serve":  # a server that starts is stopped once it listens
        status, stderr = _serves(command)
        assert ("listening on" in stderr) == (value in option.ok), (command, status, stderr)
    else:
        run = subprocess.run(command, capture_output=True, text=True, timeout=60)
        status, stderr = run.returncode, run.stderr
    assert 0 <= status < 128, (option.where, command, status, stderr)  # no signal
    if value in option.ok:
        assert status == 0, (command, stderr)
        return
    assert status != 0, (option.where, command, "accepted", stderr)
    bare = option.option.lstrip("-").replace("-", "_")
    assert option.option in stderr or bare in stderr, (option.option, stderr)
    assert shows_value(stderr, _cli_shown(value)), (value, stderr)
