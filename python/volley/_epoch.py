"""One epoch of a native loader as a Python iterator (every loader over the C++ pipeline)."""

from __future__ import annotations

from typing import Any


class EpochIterator:
    """The batches of a native epoch, each turned into the loader's batch type by
    ``loader._to_batch(raw)``; ``loader._consumer_stream()`` names the CUDA stream device batches
    are handed to. The epoch's workers stop when the iterator ends, fails, is closed or is
    garbage-collected."""

    def __init__(self, loader: Any, epoch: Any):
        self._loader = loader
        self._epoch = epoch

    def __iter__(self) -> "EpochIterator":
        return self

    def __next__(self) -> Any:
        if self._epoch is None:
            raise StopIteration
        try:
            raw = self._epoch.next(self._loader._consumer_stream())
        except BaseException:
            self.close()
            raise
        if raw is None:
            self.close()
            raise StopIteration
        self._loader._took_batch()
        return self._loader._to_batch(raw)

    def __len__(self) -> int:
        return len(self._loader)

    def close(self) -> None:
        """Stops the epoch's workers (also done when the iterator is garbage-collected)."""
        if self._epoch is not None:
            self._epoch.stop()  # releases the GIL while joining
            self._epoch = None

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:
            pass
