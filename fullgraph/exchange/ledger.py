"""One rank's counts: payload bytes and time by (stage, layer, kind), and what its datagrams cost.

The byte counts are the payload bytes each rank sends and receives (a transport's own headers are
not counted), as the RETEXO paper's instrumentation counts them. The trainer says where it is
(:meth:`TrafficLedger.at`); the endpoint counts. At the end each worker sends its
:class:`TrafficReport` to the master, as JSON bytes (never pickled).
"""

from __future__ import annotations

import time
from collections import defaultdict

from pydantic import Field

from foundation.models import StrictModel, StrictMutableModel
from fullgraph.exchange.kinds import KINDS, TrafficKind


class WireStats(StrictMutableModel):
    """One rank's datagrams and the CPU its receives took, beside the ledger's payload bytes."""

    datagrams_sent: int = 0
    datagrams_received: int = Field(0, description="datagrams this process read (kernel-summed ones never are)")
    wire_bytes_sent: int = Field(0, description="UDP payload bytes sent, headers and retransmissions included")
    wire_bytes_received: int = 0
    retransmitted: int = 0
    duplicates: int = Field(0, description="datagrams dropped as already received (user space)")
    nacks_sent: int = 0
    readies_sent: int = 0
    socket_calls: int = Field(0, description="sendmsg, recv and poll calls this rank made")
    receive_cpu_s: float = Field(0.0, description="this thread's CPU time inside receives (user + system)")
    kernel_records: int = Field(0, description="records the XDP program summed into this rank's aggregates")
    kernel_ns: int = Field(0, description="the XDP program's run time on this rank's interface (while stats are on)")
    kernel_runs: int = Field(0, description="packets the XDP program ran on (while stats are on)")


class TrafficEntry(StrictModel):
    stage: int = Field(ge=0, description="0: standard training; m: RETEXO training layer m")
    layer: int = Field(
        ge=0, description="rows: the layer (from 1) whose input moved; gradients and weights: the layer trained, 0 all"
    )
    kind: TrafficKind
    sent: int = Field(ge=0)
    received: int = Field(ge=0)
    seconds: float = Field(ge=0, description="time spent in these transfers, waiting for peers included")
    cpu_seconds: float = Field(0.0, ge=0, description="this rank's thread CPU time in them (user + system)")


class TrafficReport(StrictModel):
    """One rank's counts: what ``TrafficLedger.report`` returns and a worker sends its master."""

    rank: int = Field(ge=0)
    entries: list[TrafficEntry]
    round_bytes: dict[int, list[int]] = Field(description="stage -> bytes sent + received in each of its rounds")
    wire: WireStats | None = Field(None, description="the udp and pinch exchanges: what the datagrams cost")
    pid: int = Field(0, description="the rank's process")
    syscalls: int | None = Field(None, description="system calls the rank's process made while training, if counted")

    def total(self, kinds: tuple[TrafficKind, ...] = KINDS, stage: int | None = None) -> int:
        """Bytes sent plus received over ``kinds`` (in ``stage``, or all stages)."""
        return sum(e.sent + e.received for e in self._select(kinds, stage))

    def seconds(self, kinds: tuple[TrafficKind, ...] = KINDS, stage: int | None = None) -> float:
        return sum(e.seconds for e in self._select(kinds, stage))

    def cpu_seconds(self, kinds: tuple[TrafficKind, ...] = KINDS, stage: int | None = None) -> float:
        return sum(e.cpu_seconds for e in self._select(kinds, stage))

    def _select(self, kinds: tuple[TrafficKind, ...], stage: int | None) -> list[TrafficEntry]:
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
        self._counts: dict[tuple[int, int, TrafficKind], list[float]] = defaultdict(lambda: [0, 0, 0.0, 0.0])
        self._rounds: dict[int, list[int]] = defaultdict(list)

    def at(self, stage: int, layer: int) -> None:
        self.stage, self.layer = stage, layer

    def begin_round(self) -> None:
        self._rounds[self.stage].append(0)

    def add(
        self,
        kind: TrafficKind,
        sent: int = 0,
        received: int = 0,
        since: Stopwatch | None = None,
        layer: int | None = None,
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
            )
            for (s, layer, k), v in sorted(self._counts.items())
        ]
        return TrafficReport(rank=self.rank, entries=entries, round_bytes=dict(self._rounds))
