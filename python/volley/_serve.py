"""``python -m volley serve``: a partition's server that registers in torch.distributed's store.

A separate group of sampling servers, started on any machines in any order, that trainers find
through the same c10d store as their own rendezvous (a ``TCPStore``, such as the one at
``torchrun --rdzv-endpoint`` or ``MASTER_ADDR:MASTER_PORT``)::

    python -m volley serve /shared/products-4 --part auto --rendezvous host0:29400 \\
        --listen 0.0.0.0:0 --peers rendezvous --token-file token

``--part auto`` claims the first part no other server of the service has claimed (with the
store's compare-and-set: servers starting together get distinct parts); ``--replica`` adds the
server to its part's replicas, and with ``--part auto`` claims the parts again once each has a
server. ``--peers rendezvous`` reads every part's address from the store, so the server also
streams whole epochs (server-client topology). It is the server of ``volley serve`` (the C++
command, which takes an address list in ``--peers`` and does not speak c10d's protocol), started
with ``volley.dist.serve``: it prints the same first line and serves until SIGINT or SIGTERM,
when it gives up its claim and leaves its part's replicas.
"""

from __future__ import annotations

import argparse
import os
import signal
import socket
import sys
import threading
import uuid
from typing import Any, NoReturn, Optional, Sequence, Tuple

from ._tensor import check_seconds
from ._volley import VolleyError, VolleyIndexError, VolleyTypeError, VolleyValueError

USAGE_ERROR = 2


def parse_part(text: str) -> Any:
    """``--part``: ``"auto"`` or a partition number (VolleyValueError naming anything else)."""
    if text == "auto":
        return "auto"
    if text.isdigit():
        return int(text)
    raise VolleyValueError(f"--part must be a partition number (0, 1, ...) or 'auto', "
                           f"got {text!r}")


def parser() -> argparse.ArgumentParser:
    """The command's arguments (``python -m volley serve --help``)."""
    command = argparse.ArgumentParser(
        prog="python -m volley serve",
        description="Serve one partition and register it in torch.distributed's key-value store "
                    "(until SIGINT/SIGTERM)")
    command.add_argument("dataset", help="partitioned dataset directory")
    command.add_argument("-p", "--part", required=True,
                         help="the partition to serve, or 'auto': the first one not yet claimed")
    command.add_argument("--rendezvous", required=True,
                         help="HOST:PORT of a c10d TCPStore, or 'env' (MASTER_ADDR:MASTER_PORT)")
    command.add_argument("--service", default="default",
                         help="the name the parts register under (one per dataset served)")
    command.add_argument("--replica", action="store_true",
                         help="join the part's replicas instead of replacing its entry")
    command.add_argument("--listen", default="127.0.0.1:0",
                         help="HOST:PORT to listen on (port 0: any free port; 0.0.0.0 for all "
                              "interfaces)")
    command.add_argument("--advertise", help="HOST:PORT to register (default: the listen host, "
                                             "or this machine's address toward the store)")
    command.add_argument("--peers", help="'rendezvous' (every part's address from the store) or "
                                         "A0,A1,...: sample across all parts (server-client)")
    command.add_argument("--token-file", help="file whose first line is the access token")
    command.add_argument("--threads", type=int, default=0, help="RPC handler threads at most")
    command.add_argument("--deadline", type=float, default=30.0,
                         help="seconds per call to peers, and to wait for the store and for parts "
                              "still registering")
    command.add_argument("--grace", type=float, default=2.0,
                         help="seconds calls in flight get at shutdown")
    for name, what in (("tls-cert", "serve over TLS with this certificate (PEM)"),
                       ("tls-key", "the private key of --tls-cert (PEM)"),
                       ("tls-client-ca", "mutual TLS: clients' certificates' CA (PEM)"),
                       ("peer-tls-ca", "call --peers over TLS, verifying them against this CA")):
        command.add_argument(f"--{name}", help=what)
    return command


def start(args: argparse.Namespace, owner: str) -> Tuple[Any, int, Optional[str], Any, dict]:
    """The running server, its part, its claim's key (None for a numbered part), the store and
    the dataset's ``partition.json``."""
    from . import _rendezvous
    from ._dist_service import partition_manifest, read_token, serve

    part = parse_part(args.part)
    check_seconds(args.deadline, "--deadline")
    manifest = partition_manifest(args.dataset)
    num_parts, claim = int(manifest["num_parts"]), None
    if part != "auto" and part >= num_parts:
        raise VolleyIndexError(f"--part {part} out of range: {args.dataset!r} has {num_parts} "
                               f"partitions (0..{num_parts - 1})")
    store = _rendezvous.store_of(args.rendezvous, args.deadline)
    if part == "auto":
        part, claim = _rendezvous.claim_part(store, args.service, num_parts, owner, args.replica)
    peers = args.peers
    if peers is not None and peers != "rendezvous":
        peers = peers.split(",")
    try:
        server = serve(args.dataset, part, listen=args.listen, threads=args.threads,
                       token=read_token(args.token_file) if args.token_file else None,
                       peers=peers, peer_deadline=args.deadline, rendezvous=args.rendezvous,
                       service=args.service, advertise=args.advertise, replica=args.replica,
                       tls_cert=args.tls_cert, tls_key=args.tls_key,
                       tls_client_ca=args.tls_client_ca, peer_tls_ca=args.peer_tls_ca)
    except BaseException:
        if claim is not None:  # the part is free for another server
            store.compare_set(claim, owner, "")
        raise
    return server, part, claim, store, manifest


def serve_until_signal(args: argparse.Namespace) -> NoReturn:
    """Starts the server, prints its first line, serves until SIGINT / SIGTERM, then ends the
    process (status 0); raises what ``start`` raises."""
    from . import _rendezvous

    owner = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
    server, part, claim, store, manifest = start(args, owner)
    stop = threading.Event()
    previous = {number: signal.signal(number, lambda received, frame: stop.set())
                for number in (signal.SIGINT, signal.SIGTERM)}
    rendezvous_host = None if args.rendezvous == "env" else args.rendezvous.rpartition(":")[0]
    address = args.advertise or _rendezvous.advertised_address(server.address, server.port,
                                                               rendezvous_host)
    if not server.authenticated:
        print(f"volley serve: warning: no --token-file: serving unauthenticated; anyone who can "
              f"reach {server.address} can read this partition", file=sys.stderr, flush=True)
    print(f"volley serve: part {part} of '{manifest.get('name', '')}' "
          f"({manifest['num_parts']} parts) listening on {server.address}, registered as "
          f"{address} under rendezvous service '{args.service}'", flush=True)
    try:
        while not stop.wait(0.5) and not server.wait(0):
            pass
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)
    print("volley serve: stopping", file=sys.stderr, flush=True)
    try:
        _rendezvous.release(store, args.service, part, address, claim, owner)
    except (RuntimeError, OSError) as error:  # the store is gone (its job ended): nothing to undo
        print(f"volley serve: left the store as it was ({error})", file=sys.stderr, flush=True)
    server.shutdown(args.grace)
    stats = server.stats()
    print(f"volley serve: stopped after {stats['requests']:,} requests "
          f"({stats['failed_requests']:,} refused or failed)", file=sys.stderr, flush=True)
    # Leave without destructors: torch 1.13's TCPStore client aborts the process (terminate)
    # when it is destroyed after its store went away, as when the trainers' job has ended.
    sys.stdout.flush()
    os._exit(0)


def main(argv: Optional[Sequence[str]] = None) -> int:
    """``python -m volley serve ...``; the exit status (2 for a usage mistake)."""
    args = parser().parse_args(argv)
    try:
        return serve_until_signal(args)
    except (VolleyValueError, VolleyIndexError, VolleyTypeError) as error:
        print(f"python -m volley serve: error: {error}", file=sys.stderr)
        return USAGE_ERROR
    except VolleyError as error:  # unreadable files, no store, no gRPC in this build, ...
        print(f"python -m volley serve: error: {error}", file=sys.stderr)
        return 1

