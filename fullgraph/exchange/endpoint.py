"""One rank's side of the exchange: the counted operations every transport shares.

A transport implements three primitives (post a send, take a receive into a buffer, complete
posted sends); :class:`Endpoint` builds the counted operations on them: ``send``, ``recv``,
``exchange`` between workers, the master's ``broadcast`` and ``reduce``, and the final report.
"""

from __future__ import annotations

import os
from abc import ABC, abstractmethod
from typing import Final

import numpy as np

from foundation.errors import MemoryBridgeError
from fullgraph.exchange.kinds import REPORT_TAG, TrafficKind, tag_of
from fullgraph.exchange.ledger import Stopwatch, TrafficLedger, TrafficReport, WireStats

ABORT_POLL_S: Final = 0.2  # how often a blocked receive looks whether another rank failed
RECEIVE_TIMEOUT_S: Final = 600.0  # a peer silent this long while awaited is reported dead


class CommError(MemoryBridgeError):
    """A peer failed or never answered."""


class Endpoint(ABC):
    """One rank's side of the fabric. Buffers are C-contiguous numpy arrays."""

    def __init__(self, rank: int, workers: int):
        self.rank = rank
        self.workers = workers
        self.master = workers
        self.ledger = TrafficLedger(rank)
        self.syscall_counter = None
        self._syscall_base = 0

    # -- transport, per fabric ------------------------------------------------------------------
    @abstractmethod
    def _post(self, dst: int, array: np.ndarray, tag: int) -> object:
        """Start sending; returns a handle for ``_complete``."""

    @abstractmethod
    def _take(self, src: int, out: np.ndarray, tag: int) -> None:
        """Receive into ``out`` (its size is agreed by both sides)."""

    @abstractmethod
    def _complete(self, handles: list[object]) -> None:
        """Wait until the posted sends may be reused."""

    # -- counted operations ---------------------------------------------------------------------
    def send(self, dst: int, array: np.ndarray, kind: TrafficKind) -> None:
        start = Stopwatch()
        array = np.ascontiguousarray(array)
        self._complete([self._post(dst, array, tag_of(kind))])
        self.ledger.add(kind, sent=array.nbytes, since=start)

    def recv(self, src: int, out: np.ndarray, kind: TrafficKind) -> np.ndarray:
        start = Stopwatch()
        self._take(src, out, tag_of(kind))
        self.ledger.add(kind, received=out.nbytes, since=start)
        return out

    def exchange(
        self, sends: list[np.ndarray], receives: list[np.ndarray], kind: TrafficKind, layer: int | None = None
    ) -> None:
        """Between workers: send ``sends[q]`` to every peer q and fill ``receives[q]`` from it
        (empty arrays are skipped on both sides, which know the sizes from the partition)."""
        start = Stopwatch()
        tag = tag_of(kind)
        handles, sent, received = [], 0, 0
        for q, array in enumerate(sends):
            if q != self.rank and array.size:
                array = np.ascontiguousarray(array)
                handles.append(self._post(q, array, tag))
                sent += array.nbytes
        for q, out in enumerate(receives):
            if q != self.rank and out.size:
                self._take(q, out, tag)
                received += out.nbytes
        self._complete(handles)
        self.ledger.add(kind, sent=sent, received=received, since=start, layer=layer)

    def broadcast(self, array: np.ndarray, kind: TrafficKind) -> None:
        """The master's one message to every worker (a fabric may send it once and clone it)."""
        for w in range(self.workers):
            self.send(w, array, kind)

    def reduce(self, out: np.ndarray, kind: TrafficKind) -> np.ndarray:
        """The master's sum of every worker's message, in ``out`` (added in worker order, so a
        fabric that moves bytes as they are gives the same float sum on every run)."""
        buffer = np.empty_like(out)
        out[...] = 0
        for w in range(self.workers):
            out += self.recv(w, buffer, kind)
        return out

    def close(self) -> None:  # noqa: B027 - most fabrics have nothing in flight at the end
        """Finish: a fabric with messages in flight delivers them before the rank exits."""

    def release(self) -> None:  # noqa: B027 - most fabrics hold nothing of their own
        """Free what the fabric holds (sockets, kernel programs), after close() or a failure."""

    # -- uncounted: the final report ------------------------------------------------------------
    def wire_stats(self) -> WireStats | None:
        """What the datagrams cost, on fabrics that count them."""
        return None

    def report(self) -> TrafficReport:
        return self.ledger.report().model_copy(
            update={"wire": self.wire_stats(), "pid": os.getpid(), "syscalls": self.syscalls()}
        )

    def syscalls(self) -> int | None:
        """System calls this process made since ``count_syscalls`` (None when not counting)."""
        if self.syscall_counter is None:
            return None
        return self.syscall_counter.count(os.getpid()) - self._syscall_base

    def count_syscalls(self, counter) -> None:
        """Count this process's system calls from now on with ``counter`` (a kernel counter)."""
        counter.watch(os.getpid())
        self.syscall_counter, self._syscall_base = counter, counter.count(os.getpid())

    def send_report(self) -> None:
        payload = np.frombuffer(self.report().model_dump_json().encode(), dtype=np.uint8)
        size = np.array([payload.size], dtype=np.int64)
        self._complete([self._post(self.master, size, REPORT_TAG)])
        self._complete([self._post(self.master, payload, REPORT_TAG)])

    def recv_report(self, src: int) -> TrafficReport:
        size = np.zeros(1, dtype=np.int64)
        self._take(src, size, REPORT_TAG)
        payload = np.zeros(int(size[0]), dtype=np.uint8)
        self._take(src, payload, REPORT_TAG)
        return TrafficReport.model_validate_json(payload.tobytes())
