"""Train GraphSAGE with DDP on a partitioned graph served over gRPC (volley.dist).

    torchrun --nproc_per_node 2 examples/dist_train_sage.py --topology worker
    torchrun --nproc_per_node 2 examples/dist_train_sage.py --topology server-client
    torchrun --nproc_per_node 4 examples/dist_train_sage.py --replicas 2   # 2 parts, 2 servers each

(With Debian's torch 1.13 on Python 3.11 add ``--redirects 1 --tee 1`` after ``torchrun``, and
``torchrun`` is ``.venv/bin/python -m torch.distributed.run`` where it is not on PATH.)

Rank 0 partitions the bundled Cora into one random partition per rank (or ``--partitions DIR``
names a partitioned dataset), then:

* ``--topology worker``: each trainer serves its partition in-process (``volley.dist.serve``) and
  holds it: its own nodes are sampled and gathered locally, the others' by RPC.
* ``--topology server-client``: each rank starts a separate ``volley serve`` process for one
  partition (the servers know each other: ``--peers``); trainers hold no data and receive
  whole epochs of batches streamed from a server.

On several machines, start the servers yourself and pass their addresses (see
docs/guide/distributed.md, "Several machines"): ``--servers host0:5000,host1:5000 --token-file F``.
``--replicas 2`` (with twice the ranks) gives every partition two servers, listed as one part's
replicas (``"a|b"``): the calls are spread over them, and a call to one that is lost is made again
on the other. All servers check a token (rank 0 draws one when none is given). The trainers' gradients are
all-reduced by DDP (gloo on CPU); the batches equal those of ``volley.loader.NeighborLoader``
over the whole graph, so accuracy matches ``examples/train_sage_ddp.py``-style training.
Evaluation runs on rank 0 with all neighbors (fanout -1): exact 2-layer inference, fetched
through the same service.
"""

from __future__ import annotations

import argparse
import copy
import os
import re
import secrets
import select
import shutil
import socket
import subprocess
import sys
import tempfile
import time

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

import volley
import volley.dist
from volley.partition import read_partition_manifest, split_ids

# The model and training loop the examples share (examples/ is on sys.path).
from _common import GraphSAGE, epoch_line, train_epoch, training_parser  # noqa: E402

_PYTHON_SERVER = (
    "import sys, volley.dist as d\n"
    "s = d.serve(sys.argv[1], int(sys.argv[2]), listen=sys.argv[3], "
    "token=d.read_token(sys.argv[4]), peers=sys.argv[5].split(','))\n"
    "print(f'volley serve: part {s.part} listening on {s.address}', flush=True)\n"
    "s.wait()\n"
)


def free_ports(count: int) -> list:
    """Ports free right now on loopback (the servers bind them a moment later)."""
    sockets = [socket.socket() for _ in range(count)]
    for sock in sockets:
        sock.bind(("127.0.0.1", 0))
    ports = [sock.getsockname()[1] for sock in sockets]
    for sock in sockets:
        sock.close()
    return ports


def volley_cli() -> list:
    """The command that starts a server: the `volley` CLI of this installation when it has
    `serve`, else the same service started by Python."""
    for path in (os.environ.get("VOLLEY_CLI"), os.path.join(sys.prefix, "bin", "volley"),
                 shutil.which("volley")):
        if path and os.path.exists(path):
            usage = subprocess.run([path, "serve", "--help"], capture_output=True, text=True)
            if usage.returncode == 0 and "--peers" in usage.stdout:  # a CLI with `serve`
                return [path, "serve"]
    return [sys.executable, "-c", _PYTHON_SERVER]


def start_server_process(directory: str, part: int, listen: str, token_file: str,
                         peers: list) -> subprocess.Popen:
    command = volley_cli()
    if command[-1] == "serve":
        command += [directory, "--part", str(part), "--listen", listen, "--token-file",
                    token_file, "--peers", ",".join(peers)]
    else:
        command += [directory, str(part), listen, token_file, ",".join(peers)]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
    ready, _, _ = select.select([process.stdout], [], [], 60)
    line = process.stdout.readline() if ready else ""
    if not re.search(r"listening on \S+", line):
        process.kill()
        raise RuntimeError(f"volley serve for part {part} did not start: {line!r}")
    return process


def parse_args() -> argparse.Namespace:
    parser = training_parser(__doc__.splitlines()[0], epochs=20, batch_size=32, fanouts=[10, 10],
                             hidden=64, lr=0.01, workers=4,
                             workers_help="batches in flight per trainer")
    parser.add_argument("--topology", choices=volley.dist.TOPOLOGIES, default="worker")
    parser.add_argument("--mode", dest="topology", choices=volley.dist.TOPOLOGIES,
                        help=argparse.SUPPRESS)  # the name before --topology
    parser.add_argument("--partitions", help="a partitioned dataset (default: partition Cora)")
    parser.add_argument("--servers", help="comma-separated addresses of running servers, one "
                                          "per partition in part order (default: start them)")
    parser.add_argument("--token-file", help="the servers' access token (first line)")
    parser.add_argument("--deadline", type=float, default=30.0, help="seconds per call")
    parser.add_argument("--listen", default="127.0.0.1",
                        help="worker topology: the host each trainer's server listens on "
                             "(0.0.0.0 on several machines)")
    parser.add_argument("--replicas", type=int, default=1,
                        help="servers per partition (ranks r and r + parts serve the same one; "
                             "calls are spread over them and fail over between them)")
    parser.add_argument("--min-test-accuracy", type=float, default=0.70)
    return parser.parse_args()


def agree_on_data(args: argparse.Namespace, rank: int, world_size: int) -> tuple:
    """Rank 0 partitions Cora (unless --partitions), draws a token (unless given) and plans the
    server addresses (server-client without --servers); every rank gets
    ``(directory, token, planned addresses, scratch directory to remove or None)``."""
    shared = [args.partitions, None, None, None]
    if rank == 0:
        if args.token_file:
            shared[1] = volley.dist.read_token(args.token_file)
        elif not args.servers:
            shared[1] = secrets.token_hex(16)
        if not shared[0]:
            shared[3] = tempfile.mkdtemp(prefix="volley-dist-example-")
            shared[0] = os.path.join(shared[3], "cora")
            result = volley.partition(volley.datasets.bundled_dir("cora"), shared[0],
                                      world_size // args.replicas, method="random",
                                      seed=args.seed)
            print(f"partitioned cora into {world_size // args.replicas} parts: edge cut "
                  f"{result.quality['edge_cut_fraction']:.2f}", flush=True)
        if args.topology == "server-client" and not args.servers:
            shared[2] = [f"127.0.0.1:{port}" for port in free_ports(world_size)]  # one per rank
    dist.broadcast_object_list(shared, src=0)
    return tuple(shared)


class Servers:
    """The servers' addresses: given (--servers), or started here, one per rank for partition
    ``rank`` (in-process for the worker topology, a ``volley serve`` process otherwise)."""

    def __init__(self, args: argparse.Namespace, directory: str, token: str, planned: list,
                 part: int, num_parts: int, world_size: int):
        self.server = self.process = self.token_file = None
        if args.servers:
            self.addresses = [a.strip() for a in args.servers.split(",")]
            return
        if world_size != num_parts * args.replicas:
            raise SystemExit(f"without --servers, run {args.replicas} rank(s) per partition")
        if args.topology == "worker":
            # Registered in torchrun's store (the address on the route to MASTER_ADDR when
            # listening on every interface), each as one of its part's replicas.
            self.server = volley.dist.serve(directory, part, listen=f"{args.listen}:0",
                                            token=token, rendezvous="env",
                                            service="dist_train_sage",
                                            replica=args.replicas > 1)
            dist.barrier()  # every rank registered
            self.addresses = volley.dist.DistGraph(None, token=token, rendezvous="env",
                                                   service="dist_train_sage").addresses
            return
        # Part p's servers, those of ranks p, p + parts, ...: "a|b" when replicated.
        self.addresses = ["|".join(planned[p::num_parts]) for p in range(num_parts)]
        with tempfile.NamedTemporaryFile("w", suffix=".token", delete=False) as stream:
            stream.write(token + "\n")
            self.token_file = stream.name
        self.process = start_server_process(directory, part, planned[dist.get_rank()],
                                            self.token_file, self.addresses)

    def stop(self) -> None:
        if self.server is not None:
            self.server.shutdown()
        if self.process is not None:
            self.process.terminate()
            self.process.wait(timeout=30)
            os.unlink(self.token_file)


@torch.no_grad()
def accuracy(model: torch.nn.Module, loader: volley.dist.DistNeighborLoader) -> float:
    """The share of the loader's seed nodes the model classifies right."""
    model.eval()
    correct = seen = 0
    for batch in loader:
        out = model(batch.x, batch.edge_index)[: batch.batch_size]
        correct += int((out.argmax(dim=1) == batch.y[: batch.batch_size]).sum())
        seen += batch.batch_size
    return correct / seen


def main() -> int:
    args = parse_args()
    volley.dist.init_process_group("gloo")  # restart-safe under torchrun (its store per attempt)
    rank, world_size = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(args.seed)

    directory, token, planned, scratch = agree_on_data(args, rank, world_size)
    num_parts = len(read_partition_manifest(directory)["offsets"]) - 1
    part = rank % num_parts
    servers = Servers(args, directory, token, planned, part, num_parts, world_size)
    addresses = servers.addresses
    dist.barrier()
    if rank == 0:
        print(f"topology {args.topology}: servers {', '.join(addresses)}", flush=True)

    where = (dict(local=servers.server or (directory, part)) if args.topology == "worker"
             else {})
    common = dict(topology=args.topology, token=token, deadline=args.deadline, **where)
    train = volley.dist.DistNeighborLoader(
        addresses, args.fanouts, batch_size=args.batch_size,
        input_nodes=split_ids(directory, "train"), shuffle=True, num_workers=args.workers,
        seed=args.seed, **common)  # rank and world size come from torch.distributed
    if rank == 0:
        print(repr(train), flush=True)
    if args.topology == "worker":
        info = train.graph.info
    else:
        info = volley.dist.connect(addresses, token=token).info

    model = GraphSAGE(info["feature_dim"], args.hidden, info["num_classes"])
    model = DistributedDataParallel(model)
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr, weight_decay=5e-4)
    evaluation = {}  # rank 0: every neighbor, exact inference for a 2-layer model
    for split in ("val", "test") if rank == 0 else ():
        evaluation[split] = volley.dist.DistNeighborLoader(
            addresses, [-1] * len(args.fanouts), batch_size=256,
            input_nodes=split_ids(directory, split), num_workers=args.workers,
            rank=0, world_size=1, **common)

    best_val, best_state = -1.0, None
    for epoch in range(1, args.epochs + 1):
        start = time.perf_counter()
        totals = train_epoch(model, optimizer, train)
        seconds = time.perf_counter() - start
        dist.all_reduce(totals)
        if rank == 0:
            val = accuracy(model.module, evaluation["val"])
            if val > best_val:  # model selection on the validation split
                best_val, best_state = val, copy.deepcopy(model.module.state_dict())
            print(f"{epoch_line(epoch, totals)}  val acc {val:.3f}  {int(totals[2])} seeds over "
                  f"{world_size} trainers  {seconds:.2f}s", flush=True)
        dist.barrier()

    status = 0
    if rank == 0:
        model.module.load_state_dict(best_state)
        test = accuracy(model.module, evaluation["test"])
        print(f"test accuracy {test:.3f} (model of the epoch with the best val accuracy, "
              f"{best_val:.3f}); topology {args.topology}", flush=True)
        if test < args.min_test_accuracy:
            print(f"test accuracy {test:.3f} is below {args.min_test_accuracy}", file=sys.stderr)
            status = 1
    dist.barrier()  # every trainer is done with every server
    servers.stop()
    dist.barrier()
    if scratch:
        shutil.rmtree(scratch, ignore_errors=True)
    dist.destroy_process_group()
    return status


if __name__ == "__main__":
    sys.exit(main())
