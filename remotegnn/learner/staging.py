"""Pinned host memory the learner assembles batches in, reused batch after batch.

A copy to a CUDA device runs asynchronously only from page-locked (pinned) memory, and pinning a
buffer is slow (a system call and a page-table walk per call). So the learner keeps a small ring
of pinned buffers: a batch's ids, edges, labels and the feature rows its device lacks are written
straight into one slot, copied to the device on a side stream, and the slot is written again only
after that copy's event has completed. Buffers grow to the largest batch seen (with headroom),
so after the first few batches nothing is allocated or pinned at all.
"""

from __future__ import annotations

import numpy as np
import torch

GROWTH = 1.25
"""A buffer that must grow takes this much more than asked, so a slightly larger batch later
does not pin again."""


class StagingSlot:
    """One batch's pinned buffers, by name, and the event after which they may be rewritten."""

    def __init__(self, pinned: bool):
        self.pinned = pinned
        self._buffers: dict[str, torch.Tensor] = {}
        self.done: torch.cuda.Event | None = None  # the copy out of this slot (None: none in flight)

    def take(self, name: str, shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
        """A writable array of ``shape`` and ``dtype`` in this slot's buffer ``name``."""
        nbytes = int(np.prod(shape, dtype=np.int64)) * np.dtype(dtype).itemsize
        buffer = self._buffers.get(name)
        if buffer is None or buffer.numel() < nbytes:
            buffer = torch.empty(int(nbytes * GROWTH) + 1, dtype=torch.uint8, pin_memory=self.pinned)
            self._buffers[name] = buffer
        return buffer.numpy()[:nbytes].view(dtype).reshape(shape)

    def put(self, name: str, array: np.ndarray) -> np.ndarray:
        """``array`` copied into buffer ``name``."""
        out = self.take(name, array.shape, array.dtype)
        np.copyto(out, array)
        return out


class Staging:
    """A ring of ``slots`` staging slots; ``next()`` is the next one, free to write."""

    def __init__(self, slots: int, pinned: bool):
        self._slots = [StagingSlot(pinned) for _ in range(slots)]
        self._next = 0

    def next(self) -> StagingSlot:
        slot = self._slots[self._next]
        self._next = (self._next + 1) % len(self._slots)
        if slot.done is not None:
            slot.done.synchronize()  # its last batch's copy must be out before it is rewritten
            slot.done = None
        return slot
