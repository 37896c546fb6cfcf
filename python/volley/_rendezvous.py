"""Finding the servers through torch.distributed's key-value store (c10d), as torchrun sets it up.

A server registers its part's address under a service name; a loader, a ``DistGraph`` or a
server that needs its peers reads every part's address from the same store, so nobody writes an
address list by hand::

    # every trainer, under torchrun (worker topology: each serves its own part)
    server = volley.dist.serve(parts, part=rank, listen="0.0.0.0:0", rendezvous="env")
    loader = volley.dist.DistNeighborLoader(None, [10, 5], batch_size=512, local=server,
                                            rendezvous="env", input_nodes=train_ids)

``rendezvous`` is a ``torch.distributed.Store``, ``"host:port"`` of a c10d ``TCPStore`` (e.g.
``torchrun --rdzv-endpoint``'s), or ``"env"``: the store torch.distributed uses when it is
initialised, else the one at ``MASTER_ADDR:MASTER_PORT`` (torchrun sets both). Keys live under
``volley/<service>/``: the number of parts, and each part's address and dataset fingerprint. A
restarted server overwrites its part's entry; a replica (``serve(..., replica=True)``) adds its
address to the part's replicas. ``python -m volley serve --part auto`` (``volley._serve``) claims
its part under ``volley/<service>/claim/`` first, and gives the claim up when it stops.
"""

from __future__ import annotations

import datetime
import os
import socket
from typing import Any, List, Optional, Tuple

from ._volley import VolleyConnectionError, VolleyValueError


def init_process_group(backend: Optional[str] = None, **kwargs: Any) -> None:
    """``torch.distributed.init_process_group(backend, **kwargs)`` that survives torchrun's
    restarts (``volley.dist.init_process_group``).

    Under torchrun the workers share the agent's store (``TORCHELASTIC_USE_AGENT_STORE``), which
    outlives a restart. Newer torch no longer gives each attempt a prefix of its own there
    (torch 1.13 did), so a restarted group would read the killed attempt's keys, its ranks' gloo
    addresses among them, and connect to a dead rank; Volley's registrations (``rendezvous=``)
    would carry over as well. Here the group's store is prefixed with the attempt
    (``TORCHELASTIC_RESTART_COUNT``). Outside torchrun, or given ``store`` / ``init_method``, it
    is torch's call unchanged.
    """
    import torch.distributed as dist

    if (os.environ.get("TORCHELASTIC_USE_AGENT_STORE") != "True" or "store" in kwargs
            or "init_method" in kwargs):
        dist.init_process_group(backend, **kwargs)
        return
    timeout = kwargs.pop("timeout", datetime.timedelta(minutes=5))
    store = dist.TCPStore(os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"]),
                          is_master=False, timeout=timeout)
    attempt = os.environ.get("TORCHELASTIC_RESTART_COUNT", "0")
    kwargs.setdefault("rank", int(os.environ["RANK"]))
    kwargs.setdefault("world_size", int(os.environ["WORLD_SIZE"]))
    dist.init_process_group(backend, store=dist.PrefixStore(f"attempt{attempt}", store),
                            timeout=timeout, **kwargs)


def store_of(rendezvous: Any, timeout: float) -> Any:
    """The c10d store ``rendezvous`` names (see the module docstring)."""
    import torch.distributed as dist

    if isinstance(rendezvous, dist.Store):
        return rendezvous
    wait = datetime.timedelta(seconds=timeout)
    if rendezvous == "env":
        if dist.is_available() and dist.is_initialized():
            from torch.distributed import distributed_c10d

            return distributed_c10d._get_default_store()
        host, port = os.environ.get("MASTER_ADDR"), os.environ.get("MASTER_PORT")
        if not host or not port:
            raise VolleyValueError("rendezvous='env' needs torch.distributed initialised or "
                                   "MASTER_ADDR and MASTER_PORT set (torchrun sets them)")
        rendezvous = f"{host}:{port}"
    host, port = _host_port(str(rendezvous))
    try:
        return dist.TCPStore(host, port, is_master=False, timeout=wait)
    except (RuntimeError, OSError) as error:  # torch 1.13 and newer raise TimeoutError too
        raise VolleyConnectionError(f"no c10d store answered at {host}:{port} within "
                                    f"{timeout} s ({error})") from None


def _host_port(text: str) -> Tuple[str, int]:
    host, _, port = text.rpartition(":")
    if not host or not port.isdigit():
        raise VolleyValueError(f"rendezvous must be 'host:port', 'env' or a "
                               f"torch.distributed.Store, got {text!r}")
    return host.strip("[]"), int(port)


def _key(service: str, *parts: Any) -> str:
    return "/".join(["volley", service] + [str(p) for p in parts])


def advertised_address(listen: str, port: int, rendezvous_host: Optional[str]) -> str:
    """The address other machines reach a server listening at ``listen`` on: its host, or for a
    wildcard host this machine's address on the route to the rendezvous host."""
    host = listen.rpartition(":")[0].strip("[]")
    if host not in ("", "0.0.0.0", "::"):
        return f"{host}:{port}"
    target = rendezvous_host or os.environ.get("MASTER_ADDR") or "127.0.0.1"
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
            probe.connect((target, 9))  # no packet is sent: only the route is looked up
            host = probe.getsockname()[0]
    except OSError:
        host = socket.gethostbyname(socket.gethostname())
    return f"{host}:{port}"


def register(store: Any, service: str, part: int, num_parts: int, address: str,
             fingerprint: str, replica: bool = False) -> None:
    """Publishes part ``part``'s address (and the dataset's fingerprint and part count); with
    ``replica`` the address joins the part's replicas ("a|b", appended atomically with the
    store's compare-and-set) instead of replacing its entry."""
    store.set(_key(service, "num_parts"), str(num_parts))
    store.set(_key(service, "fingerprint", part), fingerprint)
    key = _key(service, "part", part)
    if not replica:
        store.set(key, address)
        return
    current = ""  # compare_set answers the entry as it is when it was not `current`
    while True:
        listed = [a for a in current.split("|") if a]
        if address in listed:
            return
        desired = "|".join(listed + [address])
        current = store.compare_set(key, current, desired).decode()
        if current == desired:
            return


def discover(store: Any, service: str, timeout: float) -> List[str]:
    """Every part's address in part order, waiting up to ``timeout`` s for parts still starting.

    Raises:
        VolleyConnectionError: a part not registered in time (named).
        VolleyValueError: parts of different datasets (fingerprints) under one service name.
    """
    wait = datetime.timedelta(seconds=timeout)
    count_key = _key(service, "num_parts")
    if not _wait(store, [count_key], wait):
        raise VolleyConnectionError(f"no server registered under rendezvous service "
                                    f"{service!r} within {timeout} s")
    num_parts = int(store.get(count_key))
    addresses, fingerprints = [], []
    for part in range(num_parts):
        key = _key(service, "part", part)
        if not _wait(store, [key], wait):
            raise VolleyConnectionError(f"part {part} of {num_parts} did not register under "
                                        f"rendezvous service {service!r} within {timeout} s")
        addresses.append(store.get(key).decode())
        fingerprints.append(store.get(_key(service, "fingerprint", part)).decode())
    for part, fingerprint in enumerate(fingerprints):
        if fingerprint != fingerprints[0]:
            raise VolleyValueError(f"rendezvous service {service!r}: part {part} at "
                                   f"{addresses[part]} serves dataset {fingerprint}, part 0 "
                                   f"{fingerprints[0]}: parts of two datasets under one name")
    return addresses


def _wait(store: Any, keys: List[str], timeout: datetime.timedelta) -> bool:
    try:
        store.wait(keys, timeout)
        return True
    except RuntimeError:  # torch 1.13: RuntimeError; newer: DistStoreError (a RuntimeError)
        return False


def claim_part(store: Any, service: str, num_parts: int, owner: str,
               replica: bool = False) -> Tuple[int, str]:
    """The first part of ``num_parts`` no other server of ``service`` has claimed, claimed for
    ``owner`` with the store's compare-and-set (so servers starting together get distinct
    parts), and its claim's key. With ``replica``, once every part is claimed the parts are
    claimed again, in order (a second replica of each, then a third, ...).

    Raises:
        VolleyValueError: every part is claimed and ``replica`` is False.
    """
    replica_index = 0
    while True:
        for part in range(num_parts):
            key = _key(service, "claim", part, replica_index)
            if store.compare_set(key, "", owner).decode() == owner:
                return part, key
        if not replica:
            raise VolleyValueError(
                f"part 'auto': all {num_parts} parts are claimed under rendezvous service "
                f"{service!r}; restart a part's server with its number, or add servers of a "
                f"part as replicas")
        replica_index += 1


def release(store: Any, service: str, part: int, address: str, claim: Optional[str],
            owner: str) -> None:
    """Undoes what a stopping server registered: its claim (``claim_part``) is given up, so that
    a server started later with part 'auto' takes its part, and its address leaves its part's
    replicas (the last one stays: loaders then fail to connect to it and say so)."""
    if claim is not None:
        store.compare_set(claim, owner, "")
    key = _key(service, "part", part)
    current = store.get(key).decode()
    while True:
        listed = current.split("|")
        if address not in listed or len(listed) == 1:
            return
        desired = "|".join(a for a in listed if a != address)
        answer = store.compare_set(key, current, desired).decode()
        if answer == desired:
            return
        current = answer
