"""Bounded queues of batch indices in shared memory, for handing work between processes.

``multiprocessing.Queue`` pickles every item; these carry only int64s in a shared array guarded
by a lock and two counting semaphores, so a full queue blocks its producer (backpressure) and
nothing is ever unpickled. Waits take a timeout so a caller can notice a dead peer instead of
blocking for ever.
"""

from __future__ import annotations

import multiprocessing as mp


class IndexQueue:
    """A bounded multi-producer, multi-consumer FIFO of int64 values."""

    def __init__(self, ctx: mp.context.BaseContext, capacity: int):
        self.capacity = capacity
        self._items = ctx.Array("q", capacity, lock=False)
        self._ends = ctx.Array("q", 2, lock=False)  # head (next get), tail (next put)
        self._lock = ctx.Lock()
        self._filled = ctx.Semaphore(0)
        self._free = ctx.Semaphore(capacity)

    def put(self, value: int, timeout: float | None = None) -> bool:
        """Append ``value``; False if no room appeared within ``timeout`` seconds."""
        if not self._free.acquire(timeout=timeout):
            return False
        with self._lock:
            self._items[self._ends[1] % self.capacity] = value
            self._ends[1] += 1
        self._filled.release()
        return True

    def get(self, timeout: float | None = None) -> int | None:
        """The oldest value, or None if none arrived within ``timeout`` seconds."""
        if not self._filled.acquire(timeout=timeout):
            return None
        with self._lock:
            value = self._items[self._ends[0] % self.capacity]
            self._ends[0] += 1
        self._free.release()
        return value

    def depth(self) -> int:
        return self._ends[1] - self._ends[0]
