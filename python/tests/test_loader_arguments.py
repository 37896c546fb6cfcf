"""One set of argument checks for every loader: the same bad value gives the same error class and
message whether the graph is a ``Data`` or a ``HeteroData``, local or served by
``volley.dist`` (``volley/_policy.py`` checks the numbers, C++'s ``check_loader_options`` the
policy). Also: the heterogeneous loader splits epochs over data-parallel ranks by the
homogeneous loader's policy (``rank`` / ``world_size``, and ``torch.distributed`` under
``torchrun``)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import volley
from volley.loader import NeighborLoader

torch = pytest.importorskip("torch")
pytest.importorskip("torch_geometric")
from torch_geometric.data import Data, HeteroData  # noqa: E402
from conftest import free_port, gloo_env, run_gloo_group, runs_other_interpreters

PAPERS, AUTHORS = 120, 40
WRITES = ("author", "writes", "paper")
CITES = ("paper", "cites", "paper")


def _edges(rng, sources: int, targets: int, count: int) -> np.ndarray:
    return np.stack([rng.integers(0, sources, count), rng.integers(0, targets, count)])


def _hetero() -> HeteroData:
    rng = np.random.default_rng(7)
    data = HeteroData()
    data["paper"].x = torch.from_numpy(rng.normal(size=(PAPERS, 4)).astype(np.float32))
    data["paper"].y = torch.from_numpy(rng.integers(0, 3, PAPERS))
    data["author"].x = torch.from_numpy(rng.normal(size=(AUTHORS, 2)).astype(np.float32))
    data[CITES].edge_index = torch.from_numpy(_edges(rng, PAPERS, PAPERS, 600))
    data[WRITES].edge_index = torch.from_numpy(_edges(rng, AUTHORS, PAPERS, 300))
    return data


def _homogeneous() -> Data:
    rng = np.random.default_rng(3)
    return Data(edge_index=torch.from_numpy(_edges(rng, PAPERS, PAPERS, 600)),
                x=torch.from_numpy(rng.normal(size=(PAPERS, 4)).astype(np.float32)),
                num_nodes=PAPERS)


def _local_loader(kind: str):
    if kind == "Data":
        data = _homogeneous()
        return lambda **kw: NeighborLoader(data, **{"input_nodes": torch.arange(PAPERS), **kw})
    data = _hetero()
    return lambda **kw: NeighborLoader(data, **{"input_nodes": ("paper", torch.arange(PAPERS)),
                                                **kw})


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """One in-process server per kind, over a one-part partition of the same graphs."""
    if not volley._volley._has_dist:
        pytest.skip("built without the distributed service (gRPC)")
    import volley.dist as vd

    root = tmp_path_factory.mktemp("arguments")
    data = _hetero()
    graph = volley.HeteroGraph.from_pyg(data)
    typed = volley.HeteroDataset(graph, {t: data[t].x.numpy() for t in ("paper", "author")},
                                 {"paper": data["paper"].y.numpy()}, name="typed")
    plain = _homogeneous()
    dataset = volley.Dataset(volley.Graph.from_edge_index(plain.edge_index.numpy(), PAPERS),
                             plain.x.numpy(), name="plain")
    servers = {}
    for name, source in (("Data", dataset), ("HeteroData", typed)):
        volley.partition(source, str(root / name), 1, method="random")
        servers[name] = vd.serve(str(root / name), 0)
    yield servers
    for server in servers.values():
        server.shutdown()


def _dist_loader(kind: str, served):
    import volley.dist as vd

    address = [served[kind].address]
    inputs = torch.arange(PAPERS) if kind == "Data" else ("paper", torch.arange(PAPERS))
    return lambda **kw: vd.DistNeighborLoader(address, **{"input_nodes": inputs,
                                                          "local": served[kind], **kw})


BAD = [  # (arguments, error class, message): the same for every loader
    (dict(num_neighbors=[2.5]), "VolleyTypeError", "num_neighbors[0] must be an integer, got 2.5"),
    (dict(num_neighbors=["3"]), "VolleyTypeError", "num_neighbors[0] must be an integer, got '3'"),
    (dict(num_neighbors=[3, -2]), "VolleyValueError", "num_neighbors[1] must be >= -1, got -2"),
    (dict(num_neighbors=5), "VolleyTypeError", "num_neighbors must be a list of integers"),
    (dict(batch_size=2.5), "VolleyTypeError", "batch_size must be an integer, got 2.5"),
    (dict(batch_size=0), "VolleyValueError", "batch_size must be >= 1, got 0"),
    (dict(num_workers=-1), "VolleyValueError", "num_workers must be >= 0, got -1"),
    (dict(prefetch=-3), "VolleyValueError", "prefetch must be >= 0, got -3"),
    (dict(seed=-1), "VolleyValueError", "seed must be >= 0, got -1"),
    (dict(seed=2**64), "VolleyValueError", f"seed must be <= {2**64 - 1}, got {2**64}"),
    (dict(rank=2, world_size=2), "VolleyValueError",
     "rank must be in [0, world_size), got rank=2, world_size=2"),
    (dict(rank=1), "VolleyValueError", "pass both rank and world_size"),
    (dict(rank=0, world_size=PAPERS + 1, drop_last=True), "VolleyValueError",
     f"{PAPERS} input nodes cannot be split over {PAPERS + 1} ranks with drop_last"),
]
LOCAL_BAD = BAD + [  # options of the local loaders only
    (dict(time_attr="when"), "VolleyValueError", "time_attr='when': data has no attribute 'when'"),
    (dict(input_time=torch.zeros(PAPERS, dtype=torch.long)), "VolleyValueError",
     "input_time was given without time_attr"),
    (dict(temporal_strategy="first"), "VolleyValueError",
     "temporal_strategy must be 'uniform' or 'last', got 'first'"),
    (dict(subgraph_type="weird"), "VolleyValueError", "subgraph_type must be one of"),
    (dict(weight_attr="w"), "VolleyValueError", "weighted sampling needs data"),
    (dict(device="tpu"), "VolleyValueError", "device must be None, 'cpu', 'cuda'"),
    (dict(bogus=1), "VolleyTypeError", "NeighborLoader got an unexpected keyword argument 'bogus'"),
    (dict(subgraph_type="induced", disjoint=True), "VolleyValueError",
     "disjoint sampling does not support subgraph_type='induced'"),
    (dict(neighbor_sampler=object()), "VolleyNotImplementedError",
     "neighbor_sampler=object: a custom PyG sampler cannot drive Volley's C++ pipeline"),
]


def _error_of(make, arguments):
    arguments = {"num_neighbors": [2, 2], "batch_size": 16, **arguments}
    with pytest.raises(Exception) as caught:
        make(**arguments)
    return type(caught.value).__name__, str(caught.value)


@pytest.mark.parametrize("arguments, error, message", LOCAL_BAD, ids=[str(b[0]) for b in LOCAL_BAD])
def test_the_same_bad_argument_gives_the_same_error_everywhere(arguments, error, message):
    for kind in ("Data", "HeteroData"):
        got = _error_of(_local_loader(kind), arguments)
        assert got[0] == error and message in got[1], (kind, got)


@pytest.mark.parametrize("arguments, error, message", BAD, ids=[str(b[0]) for b in BAD])
def test_distributed_loaders_check_arguments_as_the_local_ones(served, arguments, error, message):
    for kind in ("Data", "HeteroData"):
        got = _error_of(_dist_loader(kind, served), arguments)
        assert got[0] == error and message in got[1], (kind, got)


DIST_BAD = [  # where a distributed loader's batches come from: checked once for both kinds
    (dict(topology="ring"), "VolleyValueError",
     "topology must be 'worker' or 'server-client', got 'ring'"),
    (dict(server="127.0.0.1:1"), "VolleyValueError", "server= is for topology='server-client'"),
    (dict(topology="server-client"), "VolleyValueError",
     "local= is for topology='worker'; server-client trainers hold no data"),
    (dict(deadline=-1), "VolleyValueError", "deadline"),
]


@pytest.mark.parametrize("arguments, error, message", DIST_BAD, ids=[str(b[0]) for b in DIST_BAD])
def test_distributed_loaders_check_their_endpoints_once(served, arguments, error, message):
    for kind in ("Data", "HeteroData"):
        got = _error_of(_dist_loader(kind, served), arguments)
        assert got[0] == error and message in got[1], (kind, got)


def test_typed_fanouts_are_checked_per_edge_type():
    make = _local_loader("HeteroData")
    with pytest.raises(volley.VolleyValueError, match="names no edge type"):
        make(num_neighbors={}, batch_size=4)
    with pytest.raises(volley.VolleyTypeError, match=r"num_neighbors\[.*cites.*\]\[1\] must be an "
                                                     r"integer, got 1.5"):
        make(num_neighbors={CITES: [2, 1.5], WRITES: [1, 1]}, batch_size=4)
    with pytest.raises(volley.VolleyTypeError, match=r"default\[0\] must be an integer"):
        make(num_neighbors={CITES: [2]}, default=["2"], batch_size=4)
    # A dict of fanouts is for typed graphs only.
    with pytest.raises(volley.VolleyTypeError, match="needs a heterogeneous graph"):
        _local_loader("Data")(num_neighbors={CITES: [2]}, batch_size=4)


# --- the data-parallel split ------------------------------------------------------------------


@pytest.mark.parametrize("world_size", [2, 3])
@pytest.mark.parametrize("drop_last", [False, True])
@pytest.mark.parametrize("shuffle", [False, True])
def test_hetero_ranks_split_as_the_homogeneous_loader(world_size, drop_last, shuffle):
    options = dict(num_neighbors=[2, 2], batch_size=16, shuffle=shuffle, drop_last=drop_last,
                   seed=9, num_workers=1)
    ids = torch.arange(1, PAPERS - 2, 2)  # 59 inputs: uneven over 2 and 3 ranks
    data = _hetero()
    shares = []
    for rank in range(world_size):
        split = dict(options, rank=rank, world_size=world_size)
        typed = NeighborLoader(data, input_nodes=("paper", ids), **split)
        homogeneous = NeighborLoader(_homogeneous(), input_nodes=ids, **split)
        assert len(typed) == len(homogeneous)
        for epoch in range(2):  # one policy: the same positions as the homogeneous loader
            np.testing.assert_array_equal(typed.rank_positions(epoch),
                                          homogeneous.rank_positions(epoch))
        got = [b["paper"].input_id for b in typed]
        assert len(got) == len(typed)
        shares.append(torch.cat(got).numpy())
    lengths = {len(share) for share in shares}
    assert len(lengths) == 1  # equally long
    union = np.concatenate(shares)
    if drop_last:  # disjoint; the inputs that do not divide, then each rank's last batch, cut
        per_rank = (59 // world_size) // 16 * 16
        assert len(set(union.tolist())) == len(union) == per_rank * world_size
    else:  # every input, padding repeats at most world_size - 1
        assert set(union.tolist()) == set(range(59))
        assert len(union) - 59 < world_size


TORCHRUN_SCRIPT = textwrap.dedent("""
    import sys
    import numpy as np
    import torch
    import torch.distributed as dist
    sys.path.insert(0, sys.argv[2])
    import test_loader_arguments as t
    from volley.loader import NeighborLoader

    dist.init_process_group("gloo")
    loader = NeighborLoader(t._hetero(), [2, 2], input_nodes=("paper", torch.arange(1, 120, 2)),
                            batch_size=16, shuffle=True, seed=4, num_workers=1)
    ids, digest = t.shares_and_digest(loader)
    np.save(f"{sys.argv[1]}/rank{dist.get_rank()}.npy", ids)
    open(f"{sys.argv[1]}/rank{dist.get_rank()}.sha", "w").write(digest)
    dist.destroy_process_group()
""")


def shares_and_digest(loader):
    """The input ids of an epoch, and a SHA-256 over every field of its batches."""
    import hashlib

    import golden_batches

    digest, ids = hashlib.sha256(), []
    for batch in loader:
        golden_batches.hetero_digest_update(digest, batch)
        ids.append(batch["paper"].input_id)
    return torch.cat(ids).numpy(), digest.hexdigest()


@runs_other_interpreters
def test_hetero_loader_reads_torch_distributed_under_torchrun(tmp_path):
    """Two processes under torchrun: each takes its rank's share by itself, and that share is
    what ``rank=r, world_size=2`` gives in a single process."""
    script = tmp_path / "ranks.py"
    script.write_text(TORCHRUN_SCRIPT)
    def start():
        run = subprocess.run(
            [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2",
             "--redirects", "1", "--tee", "1",  # (a torch 1.13 bug on Python 3.11 needs both)
             "--master_addr", "127.0.0.1", "--master_port", str(free_port()), str(script),
             str(tmp_path), os.path.dirname(__file__)],
            env=gloo_env(), capture_output=True, text=True, timeout=120)
        return run.returncode, run.stderr

    returncode, stderr = run_gloo_group(start)
    assert returncode == 0, stderr[-3000:]
    shares = [np.load(tmp_path / f"rank{r}.npy") for r in range(2)]
    assert len(shares[0]) == len(shares[1]) == 30  # 60 inputs over 2 ranks
    assert not set(shares[0].tolist()) & set(shares[1].tolist())
    assert set(np.concatenate(shares).tolist()) == set(range(60))
    for rank in range(2):
        alone = NeighborLoader(_hetero(), [2, 2], input_nodes=("paper", torch.arange(1, 120, 2)),
                               batch_size=16, shuffle=True, seed=4, num_workers=1, rank=rank,
                               world_size=2)
        ids, digest = shares_and_digest(alone)
        np.testing.assert_array_equal(ids, shares[rank])
        assert digest == (tmp_path / f"rank{rank}.sha").read_text()
