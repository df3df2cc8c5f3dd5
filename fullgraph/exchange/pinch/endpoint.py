"""The ``udp`` and ``pinch`` exchanges of distributed training, as endpoints.

- ``udp``: every message as RAW bytes over the reliable UDP layer, received in user space: the
  same bytes as MPI, so the same training to the bit.
- ``pinch``: the exchanges that sum or land rows (boundary rows and their gradients, features,
  the master's gradient sum) travel as fixed-point records that the receiver's XDP program adds
  into memory-mapped aggregates as they arrive - the process wakes once per message, not per
  datagram; the master's weights leave once and its TC program clones them to every worker.
  Everything else (weights, flags, metrics) is RAW. Without the kernel programs (no root, no
  libbpf, or ranks sharing a network interface) the same records are summed in user space, to
  the same integers.

The ledger counts the same payload bytes as the MPI exchange; :class:`WireStats` adds what the
datagrams cost. :mod:`fullgraph.exchange.fabrics` builds these endpoints from the user's options.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final

import numpy as np

from fullgraph.exchange.endpoint import CommError, Endpoint
from fullgraph.exchange.kinds import KINDS, TrafficKind, tag_of
from fullgraph.exchange.ledger import Stopwatch, WireStats
from fullgraph.exchange.pinch.fixedpoint import chunks, dequantize
from fullgraph.exchange.pinch.transport import Transport
from fullgraph.exchange.pinch.wire import R_OVERFLOW, R_SATURATED, WINDOW

# What travels as fixed point under pinch: rows that land once per index, and the gradient sum.
FIXED_KINDS: Final = frozenset(
    {"features", "representations", "representation_gradients", "evaluation", "model_gradients"}
)
BROADCAST_MARK: Final = 0x50424354  # "PBCT": the TC program's clones carry it and pass untouched
DEFAULT_CAPACITY: Final = 1 << 18  # aggregates the kernel map holds: 36 MB, 4M floats per take


class UdpEndpoint(Endpoint):
    """A rank over the reliable UDP layer, every message RAW."""

    def __init__(self, rank: int, workers: int, transport: Transport, everyone_done: Callable[[], bool], cleanup=()):
        super().__init__(rank, workers)
        self.transport = transport
        self._everyone_done = everyone_done
        self._cleanup = list(cleanup)

    def _post(self, dst: int, array: np.ndarray, tag: int) -> object:
        return self.transport.post_raw(dst, array, tag)

    def _take(self, src: int, out: np.ndarray, tag: int) -> None:
        self.transport.take_raw(src, out, tag)

    def _complete(self, handles: list[object]) -> None:
        # _post returns one handle, or a list of them for a message split into pieces
        flat = [h for item in handles for h in (item if isinstance(item, list) else [item])]
        self.transport.complete(flat)  # type: ignore[arg-type]  # the handles _post returned

    def wire_stats(self) -> WireStats:
        return self.transport.stats

    def close(self) -> None:
        """Deliver what is in flight, wait for every rank to get here, then free the socket and
        any kernel programs (whatever happens on the way)."""
        try:
            self.transport.drain(self._everyone_done)
        finally:
            self.release()

    def release(self) -> None:
        self.transport.close()
        for release in reversed(self._cleanup):
            release()
        self._cleanup = []


class PinchEndpoint(UdpEndpoint):
    """A rank whose summed and row exchanges are fixed-point records (see the module doc)."""

    def __init__(
        self,
        *args,
        capacity: int,
        broadcast: bool = False,
        program_stats: Callable[[], tuple[int, int]] | None = None,
        **kwargs,
    ):
        super().__init__(*args, **kwargs)
        # Records per message: every rank splits alike, so that a receiver's takes from all its
        # senders (at most the workers) fit its aggregates, and one sender's fit the dedup window.
        self.piece = max(1, min(capacity // self.workers, WINDOW * self.transport.records_per_packet))
        self.kernel_broadcast = broadcast
        self.program_stats = program_stats

    def wire_stats(self) -> WireStats:
        stats = self.transport.stats
        if self.program_stats is not None:
            stats.kernel_ns, stats.kernel_runs = self.program_stats()
        return stats

    def _post(self, dst: int, array: np.ndarray, tag: int) -> object:
        if _fixed(tag):
            return self.transport.post_fixed(dst, _floats(array, KINDS[tag]), tag, self.piece)
        return self.transport.post_raw(dst, array, tag)

    def _take(self, src: int, out: np.ndarray, tag: int) -> None:
        if not _fixed(tag):
            self.transport.take_raw(src, out, tag)
            return
        aggregates = self.transport.take_fixed([(src, chunks(out.size))], tag, self.piece)
        _decode(aggregates, 1, out, self.rank, KINDS[tag])

    def exchange(
        self, sends: list[np.ndarray], receives: list[np.ndarray], kind: TrafficKind, layer: int | None = None
    ) -> None:
        """All peers' rows in one armed take: the process wakes once when the last has landed."""
        if kind not in FIXED_KINDS:
            super().exchange(sends, receives, kind, layer)
            return
        start = Stopwatch()
        tag = tag_of(kind)
        handles, sent = [], 0
        for q, array in enumerate(sends):
            if q != self.rank and array.size:
                handles.extend(self.transport.post_fixed(q, _floats(array, kind), tag, self.piece))
                sent += array.nbytes
        sources = [(q, chunks(out.size)) for q, out in enumerate(receives) if q != self.rank and out.size]
        aggregates = self.transport.take_fixed(sources, tag, self.piece) if sources else None
        received, base = 0, 0
        for q, out in enumerate(receives):
            if q != self.rank and out.size:
                n = chunks(out.size)
                assert aggregates is not None
                _decode(aggregates[base : base + n], 1, out, self.rank, kind)
                base += n
                received += out.nbytes
        self.transport.complete(handles)
        self.ledger.add(kind, sent=sent, received=received, since=start, layer=layer)

    def reduce(self, out: np.ndarray, kind: TrafficKind) -> np.ndarray:
        if kind not in FIXED_KINDS:
            return super().reduce(out, kind)
        start = Stopwatch()
        aggregates = self.transport.take_sum(list(range(self.workers)), chunks(out.size), tag_of(kind), self.piece)
        _decode(aggregates, self.workers, out, self.rank, kind)
        self.ledger.add(kind, received=out.nbytes * self.workers, since=start)
        return out

    def broadcast(self, array: np.ndarray, kind: TrafficKind) -> None:
        if not self.kernel_broadcast:
            super().broadcast(array, kind)
            return
        start = Stopwatch()
        array = np.ascontiguousarray(array)
        workers = tuple(range(self.workers))
        self.transport.complete([self.transport.post_raw(0, array, tag_of(kind), broadcast_to=workers)])
        self.ledger.add(kind, sent=array.nbytes * self.workers, since=start)


def _fixed(tag: int) -> bool:
    """Whether messages of this tag travel as fixed point (the report's tag is past the kinds)."""
    return tag < len(KINDS) and KINDS[tag] in FIXED_KINDS


def _floats(array: np.ndarray, kind: str) -> np.ndarray:
    if array.dtype != np.float32:
        raise CommError(f"the pinch exchange carries float32 {kind}, not {array.dtype}")
    return array


def _decode(aggregates: np.ndarray, contributions: int, out: np.ndarray, rank: int, kind: str) -> None:
    """Sums back to floats in ``out``; a flagged or short sum is an error, never a silent value."""
    flags = np.bitwise_or.reduce(aggregates["flags"]) if aggregates.size else 0
    if flags & R_SATURATED:
        raise CommError(
            f"rank {rank}: {kind} held values beyond the fixed-point range (|x| <= 4,194,304, or not finite); "
            "train with --exchange udp or mpi"
        )
    if flags & R_OVERFLOW:
        raise CommError(f"rank {rank}: more than 256 contributions to one sum of {kind}")
    counts = aggregates["count"]
    if aggregates.size and (counts.min() != contributions or counts.max() != contributions):
        raise CommError(
            f"rank {rank}: {kind} sums have {int(counts.min())}-{int(counts.max())} contributions, "
            f"{contributions} expected"
        )
    flat = out.reshape(-1)
    flat[:] = dequantize(aggregates["sum"].reshape(-1)[: flat.size]).astype(out.dtype)
