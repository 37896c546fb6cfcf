"""Every Volley loader is a ``torch.utils.data.DataLoader`` (internal): the attributes PyG's
loaders have, a custom ``sampler`` / ``batch_sampler`` honoured, and pickling by arguments.

PyG's ``NodeLoader`` and ``LinkLoader`` are ``DataLoader`` subclasses over ``range(len(input))``
whose ``collate_fn`` builds the batch of some input positions. Volley's loaders keep that
surface while their batches still come from the C++ pipeline:

- ``dataset`` is ``range(number of inputs)`` (input nodes, or supervision edges for a link
  loader); ``sampler`` and ``batch_sampler`` are the ``DataLoader``'s over it; ``collate_fn(index)``
  returns the batch of the input positions ``index``; ``batch_size``, ``drop_last``,
  ``generator``, ``pin_memory`` and ``num_workers`` (C++ threads) mean what they mean there.
- Without a ``sampler`` or ``batch_sampler`` argument, the epoch order is the native loader's
  (seeded, split over ranks; ``sampler`` is then a stand-in of the same length: a
  ``DistributedSampler`` of this rank's share when ``world_size > 1``). A framework that
  passes its own (Lightning's ``DistributedSampler``) gets its order: one native epoch over the
  reordered inputs where the loader can build one (homogeneous node loaders on the CPU), else
  each batch of positions it yields is built by ``collate_fn``.
- ``pickle`` and ``copy.deepcopy`` rebuild the loader from its constructor arguments with its
  seed fixed (a base seed drawn from torch is kept), so the copy yields the same batches; the
  graph and features travel as their own pickles do (Volley's objects by shared-memory handle).
- ``state_dict()`` / ``load_state_dict()`` (torchdata's ``StatefulDataLoader`` convention): the
  epoch under way and the batches taken from it. A loader given that state (same arguments and
  seed) continues with exactly the batches not yet taken: batch b of an epoch is a function of
  the seed, the epoch and b, so the native epoch simply starts at the first one left.
"""

from __future__ import annotations

import functools
import inspect
import itertools
from typing import Any, Iterator, Optional

import numpy as np

from . import _volley

try:
    from torch.utils.data import DataLoader as _TorchDataLoader
except Exception:  # torch absent: the same attributes on a plain object
    _TorchDataLoader = object  # type: ignore[assignment,misc]

#: Attributes ``DataLoader`` forbids setting once it is initialised.
_FROZEN = ("batch_size", "batch_sampler", "sampler", "drop_last", "dataset", "persistent_workers")


class _Reordered:
    """A loader's batches over a framework sampler's order (``EpochIterator``'s view of it):
    ``input_id`` maps back from positions in the order to input positions."""

    def __init__(self, loader: Any, order: np.ndarray):
        self._loader, self._order = loader, order

    def __len__(self) -> int:
        return len(self._loader)

    def _consumer_stream(self) -> int:
        return self._loader._consumer_stream()

    def _took_batch(self) -> None:
        self._loader._took_batch()

    def _to_batch(self, raw: dict) -> Any:
        raw = dict(raw)
        raw["input_id"] = self._order[np.asarray(raw["input_id"], dtype=np.int64)]
        return self._loader._to_batch(raw)


def _rebuild(cls: type, args: tuple, kwargs: dict, epoch: int, placed: tuple = ()) -> Any:
    """Unpickles a loader: a new one from the same arguments, at the same epoch; a CUDA loader
    opens the sender's placed graph (``placed``, by handle) instead of placing its own."""
    from . import _cuda

    with _cuda.adopting(placed):
        loader = cls(*args, **kwargs)
    loader._epoch = epoch
    return loader


class LoaderBase(_TorchDataLoader):
    """The ``DataLoader`` side of every Volley loader (``volley.loader.NeighborLoader`` and its
    subclasses). A subclass's outermost ``__init__`` records its arguments and, once it returns,
    initialises the ``DataLoader`` over ``range(self._num_inputs())``."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        init = cls.__dict__.get("__init__")
        if init is None or getattr(init, "_volley_records", False):
            return

        @functools.wraps(init)
        def recording_init(self: Any, *args: Any, **kw: Any) -> None:
            outermost = "_arguments" not in self.__dict__
            if outermost:
                self.__dict__["_arguments"] = (args, dict(kw))
            init(self, *args, **kw)
            if outermost:
                self._become_data_loader()

        recording_init._volley_records = True  # type: ignore[attr-defined]
        cls.__init__ = recording_init  # type: ignore[misc]

    # --- the DataLoader ----------------------------------------------------------------------
    def _num_inputs(self) -> int:
        """How many inputs an epoch covers: supervision edges of a link loader, else input nodes
        (every node when there are none)."""
        edges = getattr(self, "edge_label_index", None)
        if edges is not None:
            return int(edges.shape[-1])
        nodes = getattr(self, "input_nodes", None)
        return self._num_nodes if nodes is None else len(nodes)

    def _become_data_loader(self) -> None:
        """``DataLoader.__init__`` with the loader's checked options and the user's sampler or
        batch sampler (VolleyValueError when they clash with ``shuffle`` / ``batch_size`` /
        ``drop_last``, as ``DataLoader`` would refuse them)."""
        kwargs = self.__dict__["_arguments"][1]
        sampler, batch_sampler = kwargs.get("sampler"), kwargs.get("batch_sampler")
        count = self._num_inputs()
        settings = dict(batch_size=self._options.batch_size, shuffle=bool(self.shuffle) and count > 0,
                        drop_last=bool(self._options.drop_last))
        if sampler is not None and self.shuffle:
            raise _volley.VolleyValueError("sampler is mutually exclusive with shuffle=True")
        if batch_sampler is not None:
            if sampler is not None or self.shuffle or self._options.drop_last or \
                    self._options.batch_size != 1:
                raise _volley.VolleyValueError(
                    "batch_sampler is mutually exclusive with batch_size, shuffle, sampler and "
                    "drop_last")
            settings = dict(batch_size=1, shuffle=False, drop_last=False)
        self._custom_order = sampler is not None or batch_sampler is not None
        if not self._custom_order and self.world_size > 1 and _TorchDataLoader is not object:
            # The stand-in of the native rank split: this rank's share, padded alike.
            from torch.utils.data import DistributedSampler

            sampler = DistributedSampler(range(count), num_replicas=self.world_size,
                                         rank=self.rank, shuffle=settings["shuffle"],
                                         drop_last=settings["drop_last"])
            settings["shuffle"] = False
        threads, generator = self.num_workers, kwargs.get("generator")
        for name in _FROZEN:  # set by the options; DataLoader sets them again
            self.__dict__.pop(name, None)
        if _TorchDataLoader is object:
            self.dataset, self.sampler, self.batch_sampler = range(count), sampler, batch_sampler
            self.batch_size = None if batch_sampler is not None else settings["batch_size"]
            self.drop_last, self.generator = settings["drop_last"], generator
            self.collate_fn = self.collate_fn
        else:
            _TorchDataLoader.__init__(self, range(count), sampler=sampler,
                                      batch_sampler=batch_sampler, collate_fn=self.collate_fn,
                                      pin_memory=bool(getattr(self, "pin_memory", False)),
                                      generator=generator, **settings)
        self.num_workers = threads  # C++ threads, not processes

    def collate_fn(self, index: Any) -> Any:  # pylint: disable=method-hidden
        """The batch of the input positions ``index`` (what PyG's ``collate_fn`` builds)."""
        return self(index)

    def _custom_epoch(self) -> Optional[Iterator[Any]]:
        """With a user's sampler or batch sampler: the epoch's batches in its order; else None
        (the native epoch). A sampler's order is one native epoch where the loader can build one
        over reordered inputs (``_sampler_native``: the homogeneous node loaders on the CPU), so
        its batches come at the pipeline's speed; otherwise each batch is built by
        ``collate_fn``."""
        if not getattr(self, "_custom_order", False):
            return None
        first, epoch = self._begin_epoch(), self._epoch
        self._epoch += 1
        if self.__dict__["_arguments"][1].get("sampler") is not None:
            order = np.fromiter(iter(self.sampler), dtype=np.int64)
            native = self._sampler_native(order)
            if native is not None:
                from ._epoch import EpochIterator

                return EpochIterator(_Reordered(self, order),
                                     self._start_native(epoch, first, native))
        batches = itertools.islice(iter(self.batch_sampler), first, None)
        return self._counted(self.collate_fn(list(positions)) for positions in batches)

    def _sampler_native(self, order: np.ndarray) -> Any:
        """A native loader whose one unshuffled epoch visits the inputs at positions ``order`` in
        that order, or None where the loader cannot build one (then ``collate_fn`` builds each
        batch)."""
        return None

    def _custom_len(self) -> Optional[int]:
        return len(self.batch_sampler) if getattr(self, "_custom_order", False) else None

    # --- attributes ---------------------------------------------------------------------------
    def _refresh_attributes(self) -> None:
        """PyG reads ``data``'s attributes per batch: after ``loader.data.foo = t`` batches carry
        ``foo``, after ``del loader.data.x`` none carries ``x``. Checked when an epoch starts (and
        by ``loader(index)``): when ``_pyg_compat.attribute_key`` changed, ``_reread_attributes``
        reads them again. A loader sets ``_attribute_key`` when it reads a PyG ``Data`` /
        ``HeteroData``; other data (a ``volley.Dataset``, a service's graph) does not change."""
        from ._pyg_compat import attribute_key

        key = getattr(self, "_attribute_key", None)
        current = None if key is None else attribute_key(self.data)
        if current != key:
            self._attribute_key = current
            self._reread_attributes()

    def _reread_attributes(self) -> None:
        """Reads ``self.data``'s attributes again and rebuilds the native loader over them (the
        loader classes that set ``_attribute_key`` define it)."""

    # --- resuming -----------------------------------------------------------------------------
    def state_dict(self) -> dict:
        """Where the loader stands: ``epoch`` (the one under way, or the next between epochs),
        ``batches_taken`` from it, and what a loader must share to resume it (``seed``,
        ``num_batches`` per epoch)."""
        epoch, taken = self.__dict__.get("_progress", (self._epoch, 0))
        return {"epoch": int(epoch), "batches_taken": int(taken), "seed": int(self.seed),
                "num_batches": len(self)}

    def load_state_dict(self, state: dict) -> None:
        """Continues from ``state`` (``state_dict()`` of a loader with the same arguments): the
        next iteration yields the rest of its epoch, then the epochs after it. VolleyValueError
        when the state does not fit this loader (another seed or number of batches, a position
        past the epoch's end, missing keys)."""
        missing = [k for k in ("epoch", "batches_taken", "seed", "num_batches") if k not in state]
        if missing:
            raise _volley.VolleyValueError(f"state_dict lacks {', '.join(missing)}: got {state!r}")
        if int(state["seed"]) != int(self.seed):
            raise _volley.VolleyValueError(
                f"the state was saved by a loader with seed {state['seed']}, this one has seed "
                f"{self.seed}: its batches would differ (pass seed={state['seed']})")
        if int(state["num_batches"]) != len(self):
            raise _volley.VolleyValueError(
                f"the state was saved by a loader with {state['num_batches']} batches per epoch, "
                f"this one has {len(self)}: its inputs or batch size differ")
        epoch, taken = int(state["epoch"]), int(state["batches_taken"])
        if epoch < 0 or not 0 <= taken <= len(self):
            raise _volley.VolleyValueError(
                f"epoch {epoch}, batches_taken {taken}: not a position of an epoch of "
                f"{len(self)} batches")
        self._epoch = epoch
        self.__dict__["_resume_at"] = taken
        self.__dict__["_progress"] = (epoch, taken)

    def _begin_epoch(self) -> int:
        """For an epoch starting now (``self._epoch``): its first batch (a loaded state's
        position, else 0), recorded as the progress."""
        first = int(self.__dict__.pop("_resume_at", 0))
        self.__dict__["_progress"] = (self._epoch, first)
        return first

    def _took_batch(self) -> None:
        """One more batch of the epoch under way was handed out."""
        epoch, taken = self.__dict__.get("_progress", (self._epoch, 0))
        taken += 1
        self.__dict__["_progress"] = (epoch + 1, 0) if taken >= len(self) else (epoch, taken)

    def _counted(self, batches: Iterator[Any]) -> Iterator[Any]:
        """``batches`` with each one counted (``_took_batch``)."""
        for batch in batches:
            self._took_batch()
            yield batch

    def _start_native(self, epoch: int, first: int, native: Any = None) -> Any:
        """The native epoch ``epoch`` from batch ``first`` (of ``native``, by default the
        loader's)."""
        return (self._native if native is None else native).start_epoch(epoch, first)

    # --- copies -------------------------------------------------------------------------------
    def __reduce__(self) -> tuple:
        """Pickled as its constructor arguments with the resolved seed (the copy yields the same
        batches) and the current epoch."""
        args, kwargs = self.__dict__["_arguments"]
        args, kwargs = list(args), dict(kwargs)
        names = list(inspect.signature(type(self).__init__).parameters)[1:]
        if "seed" in names[: len(args)]:
            args[names.index("seed")] = self.seed
        else:
            kwargs["seed"] = self.seed
        kwargs.pop("generator", None)  # the seed it gave is fixed above
        return (_rebuild, (type(self), tuple(args), kwargs, self._epoch, self._shared_placement()))

    def _shared_placement(self) -> tuple:
        """The graph a CUDA loader placed, for a copy to open by handle (moved, once, to memory
        other processes open, and the native loader rebuilt over it); () on the CPU."""
        rows = getattr(self, "_cuda_rows", None)
        if rows is None:
            return ()
        if not rows[0].shareable:
            rows[0].share_memory_()  # in place: one copy, the old arrays freed with the old loader
            self._native = self._create_native(self.input_nodes)
        return (rows[0],)
