"""The GPU data path's Python plumbing: ``device=`` / ``mode=`` arguments and CUDA streams.

``mode`` is what Quiver users know: ``"GPU"`` (the graph in device memory), ``"UVA"`` (the graph
in pinned host memory, read by the kernels over the host link; graphs larger than the GPU) and
``"CPU"`` (Volley's CPU path). ``device`` is ``None``/``"cpu"`` (the CPU path), ``"cuda"``,
``"cuda:N"``, an ordinal ``N`` or a ``torch.device``.

Streams: device arrays are handed to torch on torch's *current stream* of the device, read at
the call that returns them: that stream waits on an event recorded after the arrays were
written (no host wait), and their memory is freed in that stream's order when the last tensor
view goes. Work queued on the current stream afterwards sees complete data; to use the tensors
on another stream, make it wait on the current one (``stream.wait_stream``) and call
``tensor.record_stream`` as with any torch tensor.

Testing without a GPU: with the environment variable ``VOLLEY_HOST_EXECUTOR=1`` set before
``volley`` is imported (in a build with the host executor), a *host-executor device* stands in
for ``cuda:0``: the GPU and UVA paths run end to end — graph placement, the GPU feature tiers, the
CUDA loader's batch pipeline — with their kernels on host threads and every "device" array in
host memory, handed to torch as CPU tensors. Only the tests set it; a user never gets it by
default.
"""

from __future__ import annotations

import contextlib
import contextvars
from typing import Any, Iterator, List, Optional, Sequence, Tuple

from . import _tensor
from . import _volley

MODES = ("GPU", "UVA", "CPU")


def cuda_built() -> bool:
    """Whether this build of Volley has CUDA support."""
    return bool(_volley.cuda_built())


def emulated() -> bool:
    """Whether the host-executor device stands in for ``cuda:0`` (``VOLLEY_HOST_EXECUTOR=1``:
    tests of the GPU paths on a machine without a GPU; device arrays arrive as CPU tensors)."""
    return bool(_volley.cuda_emulated())


def torch_device(ordinal: int) -> Any:
    """The ``torch.device`` that device arrays of CUDA device ``ordinal`` arrive on: ``cuda:N``,
    or the CPU on the host-executor device (see :func:`emulated`)."""
    torch = _tensor.torch_module()
    return torch.device("cpu") if emulated() else torch.device("cuda", ordinal)


def parse_device(device: Any) -> Optional[int]:
    """The CUDA ordinal named by ``device``, or None for the CPU.

    Raises:
        ValueError: anything other than None, "cpu", "cuda", "cuda:N", N >= 0 or a torch.device.
    """
    if device is None:
        return None
    if isinstance(device, bool):
        raise _volley.VolleyValueError(f"device must be None, 'cpu', 'cuda', 'cuda:N' or an ordinal, got {device!r}")
    if isinstance(device, int):
        if device < 0:
            raise _volley.VolleyValueError(f"CUDA device ordinal must be >= 0, got {device}")
        return device
    torch = _tensor.torch_module()
    if torch is not None and isinstance(device, torch.device):
        if device.type == "cpu":
            return None
        if device.type == "cuda":
            return 0 if device.index is None else int(device.index)
        raise _volley.VolleyValueError(f"device must be a CPU or CUDA device, got {device}")
    if isinstance(device, str):
        text = device.strip().lower()
        if text == "cpu":
            return None
        if text == "cuda":
            return 0
        if text.startswith("cuda:") and text[5:].isdigit():
            return int(text[5:])
    raise _volley.VolleyValueError(f"device must be None, 'cpu', 'cuda', 'cuda:N' or an ordinal, got {device!r}")


def parse_device_list(devices: Optional[Sequence[Any]], device: Optional[int]) -> List[int]:
    """The CUDA ordinals of a ``devices=[...]`` argument ([] when None), each as ``parse_device``
    reads it, distinct and visible; ``device``, when given, must be one of them.

    Raises:
        TypeError: not a list or tuple. ValueError: empty, a device twice, a CPU device, an
        ordinal the machine does not have, ``device`` not listed (the message names the
        value). RuntimeError: no CUDA device is visible.
    """
    if devices is None:
        return []
    if isinstance(devices, (str, bytes)) or not isinstance(devices, Sequence):
        raise _volley.VolleyTypeError(
            f"devices must be a list of CUDA devices, got {type(devices).__name__} {devices!r}")
    if len(devices) == 0:
        raise _volley.VolleyValueError("devices must list at least one CUDA device, got []")
    ordinals = []
    for entry in devices:
        ordinal = parse_device(entry)
        if ordinal is None:
            raise _volley.VolleyValueError(f"devices must be CUDA devices, got {entry!r} in {list(devices)!r}")
        if ordinal in ordinals:
            raise _volley.VolleyValueError(f"devices lists cuda:{ordinal} twice: {list(devices)!r}")
        ordinals.append(ordinal)
    count = int(_volley.cuda_device_count())
    if count == 0:
        raise _volley.VolleyRuntimeError(
            f"devices={ordinals}: no CUDA device is visible (a build without CUDA, or no GPU)")
    for ordinal in ordinals:
        if ordinal >= count:
            raise _volley.VolleyValueError(
                f"devices lists cuda:{ordinal}, but {count} CUDA device(s) are visible "
                f"(ordinals 0..{count - 1})")
    if device is not None and device not in ordinals:
        raise _volley.VolleyValueError(f"device cuda:{device} is not one of devices {ordinals}")
    return ordinals


def resolve(device: Any, mode: Optional[str]) -> Tuple[Optional[int], str]:
    """(CUDA ordinal or None, mode) for a sampler's or loader's ``device`` and ``mode``.

    ``mode=None`` means ``"UVA"`` with a CUDA device (Quiver's default) and ``"CPU"`` without.

    Raises:
        ValueError: a bad device or mode, or GPU/UVA without a CUDA device.
    """
    ordinal = parse_device(device)
    if mode is None:
        return ordinal, "CPU" if ordinal is None else "UVA"
    if not isinstance(mode, str) or mode.upper() not in MODES:
        raise _volley.VolleyValueError(
            f"mode must be 'GPU' (graph in device memory), 'UVA' (graph in pinned host memory) "
            f"or 'CPU', got {mode!r}"
        )
    mode = mode.upper()
    if mode != "CPU" and ordinal is None:
        raise _volley.VolleyValueError(f"mode={mode!r} needs a CUDA device: pass device='cuda' (or 'cuda:N')")
    return ordinal, mode


def current_stream(device: int) -> int:
    """torch's current CUDA stream on ``device`` as an integer (0: the legacy default stream,
    also when torch or its CUDA support is absent)."""
    torch = _tensor.torch_module()
    if torch is None or not torch.cuda.is_available():
        return 0
    return int(torch.cuda.current_stream(device).cuda_stream)


_ADOPTED: contextvars.ContextVar = contextvars.ContextVar("volley_adopted_placements", default=())


@contextlib.contextmanager
def adopting(placed: Sequence[Any]) -> Iterator[None]:
    """Within it, ``place_graph`` returns a graph of ``placed`` (native ``CudaGraph``s, e.g.
    opened by handle) that matches the request (size, mode, device) instead of placing anew: an
    unpickled CUDA loader samples from its sender's placement."""
    token = _ADOPTED.set(tuple(placed))
    try:
        yield
    finally:
        _ADOPTED.reset(token)


def place_graph(graph: Any, mode: str, device: int, shareable: bool = False) -> Any:
    """The native ``CudaGraph`` of a ``volley.Graph``: copied to the device (GPU) or to pinned
    host memory (UVA).

    With ``shareable=True`` the arrays go to memory other processes of this machine open by
    handle (CUDA IPC for device memory, a memfd segment registered as pinned memory in each
    process for UVA): the placed graph then pickles by handle, and unpickling in another process
    (a DDP rank on the same GPU) opens the same memory instead of a second copy. Pickling a graph
    placed without it moves it to shareable memory first, in place (one copy; samplers built on
    it earlier keep the old arrays). See docs/guide/gpu.md, "Sharing placed objects between
    processes".

    Raises:
        VolleyRuntimeError: a build without CUDA, no such device, or a failed copy.
    """
    for placed in _ADOPTED.get():
        if (placed.num_nodes, placed.num_edges, placed.mode, placed.device) == (
                graph.num_nodes, graph.num_edges, mode, device):
            return placed
    return _volley.CudaGraph.place(graph._csr, mode, device, shareable)
