"""The receiver's aggregation state, and what the XDP program does to it for each packet.

Four arrays hold it (:class:`AggregateArrays`): the aggregates (sum, count, flags per index), one
arm per sender (the epoch it may send, and where its records land), the dedup window (per sender
and sequence number, the newest epoch that claimed it) and the counters. With the kernel program
attached they are the BPF maps themselves, memory-mapped (:mod:`fullgraph.exchange.pinch.kernel`), and
:class:`Aggregation` only arms them and reads the result; without it, :meth:`Aggregation.feed`
does in user space exactly what ``bpf/aggregate.bpf.c`` does, so both give the same integers.

Dedup comes before the add: a sequence slot is claimed by raising it to the packet's epoch, so a
retransmitted or duplicated packet, or a stale one from an older epoch, never adds twice.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

import numpy as np

from fullgraph.exchange.pinch.fixedpoint import MAX_CONTRIBUTIONS, MAX_SHIFT, contributions
from fullgraph.exchange.pinch.wire import (
    AGGREGATE,
    ARM,
    MAX_SENDERS,
    R_OVERFLOW,
    STATE,
    WINDOW,
    PacketType,
    WireError,
    parse_header,
    records,
)


@dataclass
class AggregateArrays:
    aggregates: np.ndarray  # (capacity,) AGGREGATE
    arms: np.ndarray  # (MAX_SENDERS,) ARM
    seen: np.ndarray  # (MAX_SENDERS, WINDOW) uint32
    state: np.ndarray  # (1,) STATE

    @classmethod
    def in_memory(cls, capacity: int) -> AggregateArrays:
        return cls(
            aggregates=np.zeros(capacity, dtype=AGGREGATE),
            arms=np.zeros(MAX_SENDERS, dtype=ARM),
            seen=np.zeros((MAX_SENDERS, WINDOW), dtype=np.uint32),
            state=np.zeros(1, dtype=STATE),
        )


class Fed(Enum):
    """What one FIXED packet did."""

    ADDED = "added"
    COMPLETED = "completed"  # added, and it was the last the armed epochs expected
    DUPLICATE = "duplicate"
    UNARMED = "unarmed"  # not the sender's armed epoch: stale, or early
    MALFORMED = "malformed"


@dataclass(frozen=True)
class ArmedSender:
    sender: int
    epoch: int
    base: int
    records: int
    packets: int


class Aggregation:
    """One receiver's aggregation: arm some senders, wait for completion, read the sums."""

    def __init__(self, arrays: AggregateArrays, *, growable: bool = False):
        """``growable``: user-space arrays that may grow; the kernel's are sized at load."""
        self.arrays = arrays
        self.growable = growable
        self.armed: list[ArmedSender] = []

    @property
    def capacity(self) -> int:
        return self.arrays.aggregates.shape[0]

    def arm(self, senders: list[ArmedSender]) -> None:
        """Take ``senders``' epochs next. The aggregates they land on are zeroed and the counters
        reset before any arm is written, so nothing of an older epoch can be counted."""
        end = max((s.base + s.records for s in senders), default=0)
        if end > self.capacity and self.growable:
            self.arrays.aggregates = np.zeros(max(end, 2 * self.capacity), dtype=AGGREGATE)
        if end > self.capacity:
            raise WireError(
                f"this exchange needs {end:,} aggregates and the receiver holds {self.capacity:,}: "
                "raise the exchange's capacity"
            )
        a = self.arrays
        a.aggregates[:end].view(np.uint8)[:] = 0  # a byte view: 4x faster than zeroing the fields
        a.state["received"] = 0
        a.state["expected"] = sum(s.records for s in senders)
        shared = len({s.base for s in senders}) < len(senders)  # a sum: the ranges coincide
        for s in senders:
            a.arms[s.sender] = (s.epoch, s.base, s.base + s.records, int(shared))
        self.armed = senders

    def complete(self) -> bool:
        state = self.arrays.state[0]
        return int(state["received"]) == int(state["expected"])

    def missing(self, sender: ArmedSender) -> np.ndarray:
        """Sequence numbers of ``sender``'s armed epoch that have not arrived."""
        return np.flatnonzero(self.arrays.seen[sender.sender, : sender.packets] < sender.epoch).astype(np.uint32)

    def disarm(self) -> None:
        for s in self.armed:
            self.arrays.arms[s.sender]["epoch"] = 0
        self.armed = []

    def result(self, start: int, stop: int) -> np.ndarray:
        """The aggregates ``[start, stop)`` (a view: copy it before the next ``arm``)."""
        return self.arrays.aggregates[start:stop]

    def feed(self, datagram: bytes | memoryview) -> Fed:
        """The XDP program's work on one FIXED datagram, in user space."""
        try:
            h = parse_header(datagram)
        except WireError:
            self.arrays.state["errors"] += 1
            return Fed.MALFORMED
        if h.type != PacketType.FIXED:
            raise ValueError("feed takes FIXED packets only")
        sender, epoch, seq = h.sender, h.epoch, h.seq
        arm = self.arrays.arms[sender]
        if arm["epoch"] == 0 or epoch != arm["epoch"]:
            self.arrays.state["passed"] += 1
            return Fed.UNARMED
        if seq >= WINDOW:
            self.arrays.state["errors"] += 1
            return Fed.MALFORMED
        if self.arrays.seen[sender, seq] >= epoch:
            self.arrays.state["duplicates"] += 1
            return Fed.DUPLICATE
        self.arrays.seen[sender, seq] = epoch
        recs = records(datagram)
        idx = recs["index"].astype(np.int64) + int(arm["base"])
        inside = (recs["index"] < int(arm["limit"]) - int(arm["base"])) & (recs["shift"] <= MAX_SHIFT)
        self.arrays.state["errors"] += int((~inside).sum())
        recs, idx = recs[inside], idx[inside]
        agg = self.arrays.aggregates
        # Indices are distinct within one packet (a sender numbers its records once).
        agg["sum"][idx] += contributions(recs)
        agg["count"][idx] += 1
        agg["flags"][idx] |= recs["flags"].astype(np.uint32)
        agg["flags"][idx[agg["count"][idx] > MAX_CONTRIBUTIONS]] |= R_OVERFLOW
        state = self.arrays.state
        state["packets"] += 1
        state["received"] += h.count
        return Fed.COMPLETED if int(state["received"][0]) == int(state["expected"][0]) else Fed.ADDED
