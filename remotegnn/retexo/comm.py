"""The exchanges of distributed full-graph training (RETEXO, standard, SliceGCN), with every byte counted by kind.

n workers (ranks ``0..n-1``) and one master (rank ``n``) pass raw float32/float64 buffers:
boundary rows between workers, gradients up to the master, weights down from it. Two fabrics
carry them, behind one interface (:class:`Endpoint`):

- :class:`LocalFabric`: every rank a thread of one process, buffers copied through queues (the
  single-host default; tests and accuracy benchmarks);
- :class:`MpiEndpoint`: one MPI rank per worker and one for the master (``mpiexec``), buffers
  sent straight from numpy memory, never pickled.

The byte counts are the payload bytes each rank sends and receives (headers of the transport are
not counted), as the RETEXO paper's instrumentation counts them. What each rank counts lands in
its :class:`TrafficLedger`, keyed by (stage, layer, kind).
"""

from __future__ import annotations

import os
import queue
import threading
import time
from abc import ABC, abstractmethod
from collections import defaultdict
from typing import Final, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from foundation.errors import MemoryBridgeError
from remotegnn.pinch.stats import WireStats

# What crosses the network, by kind. The first five are the terms of the paper's Eq. 2.
TrafficKind = Literal[
    "features",  # raw feature rows of boundary nodes (once per run)
    "representations",  # a layer's boundary rows, forward
    "representation_gradients",  # their gradients, backward (standard training only)
    "model_gradients",  # worker -> master, every round
    "weights",  # master -> worker, every round
    "evaluation",  # rows of the no-dropout forward that scores a round (standard, SliceGCN)
    "control",  # metrics and flags: a few dozen bytes a round
    "fused_slices",  # SliceGCN with feature fusion: the learner's fused columns for a slice
    "slice_outputs",  # SliceGCN: a slice's output rows for the training nodes, to the learner
    "slice_gradients",  # SliceGCN: their gradients, back to the slice
    "fused_gradients",  # SliceGCN with feature fusion: the gradient of a fused slice, back to the learner
]
KINDS: Final[tuple[str, ...]] = (
    "features",
    "representations",
    "representation_gradients",
    "model_gradients",
    "weights",
    "evaluation",
    "control",
    "fused_slices",
    "slice_outputs",
    "slice_gradients",
    "fused_gradients",
)
TRAINING_KINDS: Final = KINDS[:5]
_REPORT_TAG = len(KINDS)  # uncounted: each worker's ledger, sent to the master at the end
ABORT_POLL_S = 0.2
RECEIVE_TIMEOUT_S = 600.0


class CommError(MemoryBridgeError):
    """A peer failed or never answered."""


class TrafficEntry(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    stage: int = Field(ge=0, description="0: standard training; m: RETEXO training layer m")
    layer: int = Field(
        ge=0, description="rows: the layer (from 1) whose input moved; gradients and weights: the layer trained, 0 all"
    )
    kind: TrafficKind
    sent: int = Field(ge=0)
    received: int = Field(ge=0)
    seconds: float = Field(ge=0, description="time spent in these transfers, waiting for peers included")
    cpu_seconds: float = Field(0.0, ge=0, description="this rank's thread CPU time in them (user + system)")


class TrafficReport(BaseModel):
    """One rank's counts: what ``TrafficLedger.report`` returns and a worker sends its master."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    rank: int = Field(ge=0)
    entries: list[TrafficEntry]
    round_bytes: dict[int, list[int]] = Field(description="stage -> bytes sent + received in each of its rounds")
    wire: WireStats | None = Field(None, description="the udp and pinch exchanges: what the datagrams cost")
    pid: int = Field(0, description="the rank's process")
    syscalls: int | None = Field(None, description="system calls the rank's process made while training, if counted")

    def total(self, kinds: tuple[str, ...] = KINDS, stage: int | None = None) -> int:
        """Bytes sent plus received over ``kinds`` (in ``stage``, or all stages)."""
        return sum(e.sent + e.received for e in self._select(kinds, stage))

    def seconds(self, kinds: tuple[str, ...] = KINDS, stage: int | None = None) -> float:
        return sum(e.seconds for e in self._select(kinds, stage))

    def cpu_seconds(self, kinds: tuple[str, ...] = KINDS, stage: int | None = None) -> float:
        return sum(e.cpu_seconds for e in self._select(kinds, stage))

    def _select(self, kinds: tuple[str, ...], stage: int | None) -> list[TrafficEntry]:
        return [e for e in self.entries if e.kind in kinds and (stage is None or e.stage == stage)]


class Stopwatch:
    """When a transfer began, in wall time and in this thread's CPU time."""

    def __init__(self) -> None:
        self.wall = time.perf_counter()
        self.cpu = time.thread_time()


class TrafficLedger:
    """Counts one rank's bytes. The trainer says where it is (``at``); the endpoint counts."""

    def __init__(self, rank: int):
        self.rank = rank
        self.stage = 0
        self.layer = 0
        self._counts: dict[tuple[int, int, str], list[float]] = defaultdict(lambda: [0, 0, 0.0, 0.0])
        self._rounds: dict[int, list[int]] = defaultdict(list)

    def at(self, stage: int, layer: int) -> None:
        self.stage, self.layer = stage, layer

    def begin_round(self) -> None:
        self._rounds[self.stage].append(0)

    def add(
        self, kind: str, sent: int = 0, received: int = 0, since: Stopwatch | None = None, layer: int | None = None
    ) -> None:
        """Count a transfer at the current stage, under ``layer`` (default: the current layer), and
        the wall and CPU time ``since`` it began."""
        cell = self._counts[(self.stage, self.layer if layer is None else layer, kind)]
        cell[0] += sent
        cell[1] += received
        if since is not None:
            cell[2] += time.perf_counter() - since.wall
            cell[3] += time.thread_time() - since.cpu
        rounds = self._rounds.get(self.stage)
        if rounds:
            rounds[-1] += sent + received

    def report(self) -> TrafficReport:
        entries = [
            TrafficEntry(
                stage=s, layer=layer, kind=k, sent=int(v[0]), received=int(v[1]), seconds=v[2], cpu_seconds=v[3]
            )  # type: ignore[arg-type]  # k is a TrafficKind
            for (s, layer, k), v in sorted(self._counts.items())
        ]
        return TrafficReport(rank=self.rank, entries=entries, round_bytes=dict(self._rounds))


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
    def send(self, dst: int, array: np.ndarray, kind: str) -> None:
        start = Stopwatch()
        array = np.ascontiguousarray(array)
        self._complete([self._post(dst, array, KINDS.index(kind))])
        self.ledger.add(kind, sent=array.nbytes, since=start)

    def recv(self, src: int, out: np.ndarray, kind: str) -> np.ndarray:
        start = Stopwatch()
        self._take(src, out, KINDS.index(kind))
        self.ledger.add(kind, received=out.nbytes, since=start)
        return out

    def exchange(
        self, sends: list[np.ndarray], receives: list[np.ndarray], kind: str, layer: int | None = None
    ) -> None:
        """Between workers: send ``sends[q]`` to every peer q and fill ``receives[q]`` from it
        (empty arrays are skipped on both sides, which know the sizes from the partition)."""
        start = Stopwatch()
        tag = KINDS.index(kind)
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

    def broadcast(self, array: np.ndarray, kind: str) -> None:
        """The master's one message to every worker (a fabric may send it once and clone it)."""
        for w in range(self.workers):
            self.send(w, array, kind)

    def reduce(self, out: np.ndarray, kind: str) -> np.ndarray:
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
        self._complete([self._post(self.master, size, _REPORT_TAG)])
        self._complete([self._post(self.master, payload, _REPORT_TAG)])

    def recv_report(self, src: int) -> TrafficReport:
        size = np.zeros(1, dtype=np.int64)
        self._take(src, size, _REPORT_TAG)
        payload = np.zeros(int(size[0]), dtype=np.uint8)
        self._take(src, payload, _REPORT_TAG)
        return TrafficReport.model_validate_json(payload.tobytes())


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


class MpiEndpoint(Endpoint):
    """This process's rank of an ``mpiexec`` job of workers + 1 ranks (the master is the last)."""

    def __init__(self, comm):
        super().__init__(comm.Get_rank(), comm.Get_size() - 1)
        self.comm = comm

    def _post(self, dst: int, array: np.ndarray, tag: int) -> object:
        return self.comm.Isend(array.reshape(-1).view(np.uint8), dest=dst, tag=tag)

    def _take(self, src: int, out: np.ndarray, tag: int) -> None:
        from mpi4py import MPI

        status = MPI.Status()
        self.comm.Recv(out.reshape(-1).view(np.uint8), source=src, tag=tag, status=status)
        if status.Get_count(MPI.BYTE) != out.nbytes:
            raise CommError(
                f"rank {self.rank}: rank {src} sent {status.Get_count(MPI.BYTE)} bytes, {out.nbytes} expected"
            )

    def _complete(self, handles: list[object]) -> None:
        from mpi4py import MPI

        MPI.Request.Waitall(handles)  # type: ignore[arg-type]  # mpi4py Requests
