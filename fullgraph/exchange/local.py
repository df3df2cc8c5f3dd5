"""The exchange between threads of one process: buffers copied through queues.

The single-host default, for tests, accuracy benchmarks and graphs that fit one machine.
"""

from __future__ import annotations

import queue
import threading
from collections import defaultdict

import numpy as np

from fullgraph.exchange.endpoint import ABORT_POLL_S, RECEIVE_TIMEOUT_S, CommError, Endpoint


class LocalFabric:
    """Queues between the threads of one process: rank r's endpoint is ``fabric.endpoint(r)``.

    ``abort()`` (called when any rank fails) wakes every rank blocked in a receive with a
    CommError, so one failure never leaves the others waiting."""

    def __init__(self, workers: int):
        self.workers = workers
        self._queues: dict[tuple[int, int, int], queue.Queue] = defaultdict(queue.Queue)
        self._lock = threading.Lock()
        self.aborted = threading.Event()

    def channel(self, src: int, dst: int, tag: int) -> queue.Queue:
        with self._lock:
            return self._queues[(src, dst, tag)]

    def abort(self) -> None:
        self.aborted.set()

    def release(self) -> None:
        """Nothing to free: the queues go with the fabric."""

    def endpoint(self, rank: int) -> LocalEndpoint:
        return LocalEndpoint(self, rank)


class LocalEndpoint(Endpoint):
    def __init__(self, fabric: LocalFabric, rank: int):
        super().__init__(rank, fabric.workers)
        self.fabric = fabric

    def _post(self, dst: int, array: np.ndarray, tag: int) -> object:
        self.fabric.channel(self.rank, dst, tag).put(array.copy())
        return None

    def _take(self, src: int, out: np.ndarray, tag: int) -> None:
        channel = self.fabric.channel(src, self.rank, tag)
        waited = 0.0
        while True:
            if self.fabric.aborted.is_set():
                raise CommError(f"rank {self.rank}: another rank failed")
            try:
                array = channel.get(timeout=ABORT_POLL_S)
                break
            except queue.Empty:
                waited += ABORT_POLL_S
                if waited >= RECEIVE_TIMEOUT_S:
                    raise CommError(f"rank {self.rank}: nothing from rank {src} in {RECEIVE_TIMEOUT_S:.0f} s") from None
        if array.nbytes != out.nbytes:
            raise CommError(f"rank {self.rank}: rank {src} sent {array.nbytes} bytes, {out.nbytes} expected")
        out.reshape(-1).view(np.uint8)[:] = array.reshape(-1).view(np.uint8)

    def _complete(self, handles: list[object]) -> None:
        return None
