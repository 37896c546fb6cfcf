"""Array plumbing between Volley's native arrays and Python frameworks.

Volley hands out its arrays zero-copy: as ``torch.Tensor`` when torch is importable, as
``numpy.ndarray`` otherwise. Inputs may be torch tensors, numpy arrays or anything
``numpy.asarray`` accepts; contiguous CPU inputs are not copied.

Read-only memory. Arrays Volley holds read-only — memory-mapped dataset files
(``load_dataset(..., mmap=True)``, the default) and arrays borrowed from Python — come out of
the native module as numpy arrays whose ``writeable`` flag is False, so numpy refuses writes.
torch has no read-only tensors: such arrays still reach torch zero-copy (copying a memory-mapped
feature matrix would defeat the mapping), and torch's one-time "The given NumPy array is not
writable" UserWarning is silenced because the behaviour is intended and documented here:
**do not write into tensors of a memory-mapped dataset in place** (``x.add_(1)``, ``x[0] = 0``);
the mapping is read-only and such a write faults. Use ``tensor.clone()``, or load with
``mmap=False`` to get private, writable heap arrays.
"""

from __future__ import annotations

import math
import re
import warnings
from typing import Any, Optional, Tuple

import numpy as np

from ._volley import VolleyTypeError, VolleyValueError

_UNSET = object()
# The torch module once imported, None when torch is absent; tests set it to None to exercise
# the numpy fallback.
_torch: Any = _UNSET

_NOT_WRITABLE_WARNING = "The given NumPy array is not writable"


def torch_module() -> Optional[Any]:
    """Returns the ``torch`` module, or None when torch cannot be imported (checked once)."""
    global _torch
    if _torch is _UNSET:
        try:
            import torch
        except ImportError:
            torch = None
        _torch = torch
    return _torch


def using_torch() -> bool:
    """Whether Volley returns torch tensors (True) or numpy arrays (False)."""
    return torch_module() is not None


def to_output(array: Any) -> Any:
    """Turns an array from the native module into the output framework, zero-copy.

    Args:
        array: a numpy array, a DLPack-capable nanobind array (bfloat16 or device memory), or
            None.

    Returns:
        A ``torch.Tensor`` sharing the memory when torch is importable, else a
        ``numpy.ndarray``; None for None.

    Raises:
        VolleyTypeError: the array cannot be represented without torch (bfloat16, device memory).
    """
    if array is None:
        return None
    torch = torch_module()
    if torch is None:
        if isinstance(array, np.ndarray):
            return array
        raise VolleyTypeError(
            "this Volley array (bfloat16 or device memory) cannot be represented in numpy; "
            "install torch to receive it as a tensor"
        )
    if isinstance(array, np.ndarray):
        if array.flags.writeable:
            return torch.from_numpy(array)
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=_NOT_WRITABLE_WARNING)
            return torch.from_numpy(array)
    if isinstance(array, torch.Tensor):
        return array
    return torch.utils.dlpack.from_dlpack(array)


def to_output_copy(array: Any) -> Any:
    """``to_output(array)`` copied out of the array's memory (a loader's ``copy=True``: batch
    memory the pipeline reuses); None stays None."""
    value = to_output(array)
    if value is None:
        return None
    return value.clone() if hasattr(value, "clone") else value.copy()


def to_input(value: Any) -> Any:
    """Prepares a user-supplied array for the native module (no copy when possible).

    Args:
        value: a torch tensor (any device; moved to the CPU when elsewhere, detached), a numpy
            array, or anything ``numpy.asarray`` accepts (lists, tuples). None passes through.

    Returns:
        An object the native module accepts: a CPU torch tensor or a numpy array.
    """
    if value is None:
        return None
    if isinstance(value, np.ndarray):
        return value
    torch = torch_module()
    if torch is not None and isinstance(value, torch.Tensor):
        value = value.detach()
        if value.device.type != "cpu":
            value = value.cpu()
        return value
    return np.asarray(value)


def to_numpy(value: Any) -> np.ndarray:
    """A numpy view of an array (torch CPU tensors share memory; others copy to the CPU).

    Args:
        value: a torch tensor, numpy array, or anything ``numpy.asarray`` accepts.

    Returns:
        A ``numpy.ndarray``.
    """
    torch = torch_module()
    if torch is not None and isinstance(value, torch.Tensor):
        return value.detach().cpu().numpy()
    return np.asarray(value)


SIZE_UNITS = {"": 1, "B": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}


def byte_size(value: Any, what: str) -> int:
    """Bytes from an int or a size like "4G", "200MB", "1.5 GiB" (binary units); None is 0.
    VolleyValueError (VolleyTypeError for a bool) naming ``what`` and the value for anything
    else: a negative or non-finite size, or text that is not a size."""
    if value is None:
        return 0
    if isinstance(value, (bool, np.bool_)):
        raise VolleyTypeError(f"{what} must be a size in bytes, got the bool {value!r}")
    if isinstance(value, (int, np.integer)):
        if value < 0:
            raise VolleyValueError(f"{what} must be a size in bytes >= 0, got {value}")
        return _at_most_int64(int(value), value, what)
    if isinstance(value, (float, np.floating)):
        if not np.isfinite(value) or value < 0:
            raise VolleyValueError(f"{what} must be a finite size in bytes >= 0, got {value!r}")
        return _at_most_int64(int(value), value, what)
    match = re.fullmatch(r"\s*([0-9]+(?:\.[0-9]*)?|\.[0-9]+)\s*([KMGT]?)(I?B)?\s*", str(value).upper())
    if match is None:
        raise VolleyValueError(
            f"cannot read {what}={value!r} as a size in bytes (e.g. 4G, 200M, 1048576)"
        )
    return _at_most_int64(int(float(match.group(1)) * SIZE_UNITS[match.group(2)]), value, what)


def _at_most_int64(size: int, value: Any, what: str) -> int:
    """``size``, or VolleyValueError naming ``what`` and ``value`` past 2**63 - 1 bytes."""
    if size > 2**63 - 1:
        raise VolleyValueError(f"{what} must be a size in bytes <= 2**63 - 1, got {value!r}")
    return size


def int64_times(times: np.ndarray, what: str) -> np.ndarray:
    """Integer timestamps ``times`` as a contiguous int64 array: the one rule for every time
    input (node and edge times, ``input_time``, ``edge_label_time``, seed times).
    VolleyValueError naming ``what`` for a non-integer dtype, or for an unsigned value past
    2**63 - 1 (with the value and its position: cast to int64 it would wrap around to a
    negative time and empty the batch)."""
    if times.dtype.kind not in "iu":
        raise VolleyValueError(f"{what} must hold integer timestamps, got dtype {times.dtype}")
    if times.dtype.kind == "u" and times.dtype.itemsize == 8 and times.size:
        past = np.flatnonzero(times.reshape(-1) > np.iinfo(np.int64).max)
        if past.size:
            position = int(past[0])
            raise VolleyValueError(
                f"{what} holds {int(times.reshape(-1)[position])} at position {position}: "
                "timestamps must fit in int64 (at most 2**63 - 1)"
            )
    return np.ascontiguousarray(times, dtype=np.int64)


def dtype_name(value: Any) -> str:
    """The element type of a torch tensor or numpy array as Volley names it ("int64")."""
    torch = torch_module()
    if torch is not None and isinstance(value, torch.Tensor):
        return str(value.dtype).replace("torch.", "")
    return str(np.asarray(value).dtype)


def to_dtype(value: Any, name: str) -> Any:
    """A torch tensor or numpy array converted to the dtype named ``name`` (a name the native
    loader options accept: float32, float16, bfloat16, uint8, ...); itself when already so."""
    torch = torch_module()
    if torch is not None and isinstance(value, torch.Tensor):
        return value.to(getattr(torch, name))
    return value.astype(name, copy=False)


def shape_of(value: Any) -> tuple:
    """The shape of a torch tensor or numpy array as a tuple of ints."""
    return tuple(int(n) for n in value.shape)


def default_seed() -> int:
    """A loader seed when none is given: torch's initial seed, else fresh entropy."""
    torch = torch_module()
    if torch is not None:
        return int(torch.initial_seed()) & 0x7FFFFFFFFFFFFFFF
    return int(np.random.SeedSequence().entropy) & 0x7FFFFFFFFFFFFFFF


def rank_and_world_size(rank: Optional[int], world_size: Optional[int]) -> Tuple[int, int]:
    """(rank, world_size): as given, else from an initialised torch.distributed, else (0, 1)."""
    if rank is None and world_size is None:
        torch = torch_module()
        distributed = getattr(torch, "distributed", None) if torch is not None else None
        if distributed is not None and distributed.is_available() and distributed.is_initialized():
            return int(distributed.get_rank()), int(distributed.get_world_size())
        return 0, 1
    if rank is None or world_size is None:
        raise VolleyValueError("pass both rank and world_size, or neither (torch.distributed decides)")
    rank = check_int(rank, "rank", -(2**63), 2**63 - 1)
    world_size = check_int(world_size, "world_size", -(2**63), 2**63 - 1)
    if world_size < 1 or not 0 <= rank < world_size:
        raise VolleyValueError(
            f"rank must be in [0, world_size), got rank={rank}, world_size={world_size}"
        )
    return rank, world_size


def _describe(value: Any) -> str:
    """A short description of a value for an error message: its repr (cut) and type."""
    text = repr(value)
    if len(text) > 60:
        text = text[:57] + "..."
    return f"{text} ({type(value).__name__})"


def check_int(value: Any, what: str, minimum: int, maximum: int) -> int:
    """Checks that ``value`` is an integer (Python or numpy/torch scalar, not a bool, not a float)
    in ``[minimum, maximum]`` and returns it as an int.

    Raises:
        VolleyTypeError: not an integer (a float, a bool, a string, None, ...), naming the value.
        VolleyValueError: out of range, naming the value and the range.
    """
    from ._volley import VolleyValueError

    if isinstance(value, (bool, np.bool_)) or not _is_integer_scalar(value):
        raise VolleyTypeError(f"{what} must be an integer, got {_describe(value)}")
    number = int(value)
    if number < minimum:
        raise VolleyValueError(f"{what} must be >= {minimum}, got {number}")
    if number > maximum:
        raise VolleyValueError(f"{what} must be <= {maximum}, got {number}")
    return number


def check_real(value: Any, what: str, minimum: float = -math.inf, maximum: float = math.inf,
               *, above: Optional[float] = None) -> float:
    """Checks that ``value`` is a finite real number (Python or numpy, not a bool or a string)
    in ``[minimum, maximum]`` (and greater than ``above``) and returns it as a float. Where the
    native code checks the range itself and names the value, only the type is checked here.

    Raises:
        VolleyTypeError: not a number (a string, a bool, None, ...), naming the value.
        VolleyValueError: NaN, an infinity, or below the bound, naming the value.
    """
    if isinstance(value, (bool, np.bool_)) or not isinstance(
            value, (int, float, np.integer, np.floating)):
        raise VolleyTypeError(f"{what} must be a number, got {_describe(value)}")
    number = float(value)
    if not math.isfinite(number):
        raise VolleyValueError(f"{what} must be a finite number, got {value!r}")
    if above is not None and not number > above:
        raise VolleyValueError(f"{what} must be > {above:g}, got {value!r}")
    if number < minimum:
        raise VolleyValueError(f"{what} must be >= {minimum:g}, got {value!r}")
    if number > maximum:
        raise VolleyValueError(f"{what} must be <= {maximum:g}, got {value!r}")
    return number


def check_seconds(value: Any, what: str) -> float:
    """A duration in seconds: a finite number > 0 (as ``volley serve --deadline``)."""
    return check_real(value, what, above=0)


def _is_integer_scalar(value: Any) -> bool:
    if isinstance(value, (int, np.integer)):
        return True
    torch = torch_module()
    if torch is not None and isinstance(value, torch.Tensor):
        return value.dim() == 0 and not value.is_floating_point() and not value.is_complex() \
            and value.dtype != torch.bool
    return False


def check_choice(value: Any, what: str, choices: tuple) -> str:
    """Checks that ``value`` is one of the strings ``choices`` and returns it.

    Raises:
        VolleyTypeError: not a string, naming the value.
        VolleyValueError: a string not among ``choices``.
    """
    from ._volley import VolleyValueError

    if not isinstance(value, str):
        raise VolleyTypeError(f"{what} must be one of {', '.join(map(repr, choices))}, "
                              f"got {_describe(value)}")
    if value not in choices:
        raise VolleyValueError(f"{what} must be one of {', '.join(map(repr, choices))}, "
                               f'got "{value}"')
    return value


def as_ids(value: Any, what: str, *, mask_length: Optional[int] = None) -> np.ndarray:
    """Node ids as a contiguous 1-d int64 numpy array, refusing what is not integer ids.

    Args:
        value: a torch tensor, numpy array, list or tuple of integers. An empty list (``[]``,
            which numpy would make float64) is an empty id array, as in torch and PyG.
        what: the argument's name, for error messages.
        mask_length: when given, a boolean array of exactly this length is a mask and gives the
            positions of its True entries (an all-False mask gives no ids).

    Raises:
        VolleyTypeError: floats, bools (other than an accepted mask), strings, objects, NaN:
            the message names the dtype or value.
        VolleyValueError: a boolean mask of the wrong length.
    """
    from ._volley import VolleyValueError

    if isinstance(value, (str, bytes)) or value is None or isinstance(value, (int, float, bool)):
        raise VolleyTypeError(
            f"{what} must be a 1-d array of integer node ids, got {_describe(value)}")
    if isinstance(value, (list, tuple)) and len(value) == 0:
        return np.zeros(0, dtype=np.int64)
    array = to_numpy(value)
    if array.dtype == np.bool_:
        if mask_length is not None:
            if array.shape != (mask_length,):
                raise VolleyValueError(
                    f"a boolean {what} mask must have shape ({mask_length},), got {array.shape}")
            return np.flatnonzero(array).astype(np.int64)
        raise VolleyTypeError(f"{what} must hold integer node ids, got a bool array "
                              f"(a mask is not accepted here)")
    if array.size == 0 and array.dtype.kind == "f" and not isinstance(value, np.ndarray) \
            and not _is_tensor(value):
        return np.zeros(0, dtype=np.int64)  # e.g. [[]]: numpy's float64 for empty nests
    if not np.issubdtype(array.dtype, np.integer):
        raise VolleyTypeError(f"{what} must hold integer node ids, got dtype {array.dtype}"
                              + _first_non_integer(array))
    return np.ascontiguousarray(array, dtype=np.int64).reshape(-1)


def _is_tensor(value: Any) -> bool:
    torch = torch_module()
    return torch is not None and isinstance(value, torch.Tensor)


def _first_non_integer(array: np.ndarray) -> str:
    """" (first value 1.5)" for a non-empty float array, "" otherwise."""
    if array.size == 0 or array.dtype.kind not in "fc":
        return ""
    return f" (first value {array.reshape(-1)[0]!r})"
