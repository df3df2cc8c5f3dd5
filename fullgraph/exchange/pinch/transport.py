"""Reliable messages over UDP between the ranks of a training job, receiver-driven.

Every (sender, receiver) pair numbers its messages (epochs, from 1) in the order both sides
post and take them, as MPI orders a pair's messages. A message is cut into datagrams numbered
within its epoch. The receiver drives:

1. it arms the epoch (a buffer for RAW bytes; aggregates for FIXED records, in the kernel when
   its XDP program is attached) and sends READY - to one sender at a time, so a receiver is
   never the target of several full-rate senders at once (its link would drop the excess);
2. the sender transmits the message when READY arrives, then SENT, which follows the data down
   the same path: when SENT arrives, what has not is lost;
3. so on SENT the receiver NACKs exactly the missing sequence numbers, and the sender retransmits
   them, again followed by SENT. Only when a control datagram itself is lost does a timer act:
   after ``nack_after_s`` without news the receiver NACKs again, or READYs again if nothing came;
4. when every datagram has arrived it sends DONE, and the sender drops its copy. A datagram of an
   epoch already done is answered with DONE again (the first may have been lost).

Duplicates are dropped by sequence number before anything is added, so loss and duplication
leave the result exact.

A READY that finds its message not yet posted waits at the sender, so when nothing comes the
receiver asks again at growing intervals (``nack_after_s`` doubled up to ``MAX_READY_INTERVAL_S``):
a slow peer then costs a few wake-ups, not one every ``nack_after_s``. From its first call on, a
rank tells every peer it is alive (ALIVE, ``ALIVES_PER_TIMEOUT`` times per ``peer_timeout_s``)
from a thread of its own, computing or waiting, so a round of any length is not mistaken for a
death. A peer that sends nothing at all for ``peer_timeout_s`` while this rank waits on it has
died or lost its link, and is reported (:class:`~fullgraph.exchange.endpoint.CommError`) instead of
hanging. (A rank alive but stuck is not dead: as under MPI, the job waits.)
"""

from __future__ import annotations

import select
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Final

import numpy as np
from pydantic import Field

from foundation.models import StrictModel
from fullgraph.exchange.endpoint import CommError
from fullgraph.exchange.ledger import WireStats
from fullgraph.exchange.pinch.aggregate import Aggregation, ArmedSender, Fed
from fullgraph.exchange.pinch.fixedpoint import to_records
from fullgraph.exchange.pinch.wire import (
    AGGREGATE,
    F_BROADCAST,
    HEADER,
    RECORD,
    PacketType,
    WireError,
    pack_header,
    parse_header,
    raw_per_packet,
    records_per_packet,
)

RECEIVE_BUFFER: Final = 32 << 20  # bytes; a burst the application has not read yet waits here
MAX_DATAGRAM: Final = 65535
NACKS_PER_PACKET: Final = 256
SO_RCVBUFFORCE: Final = 33  # Linux's socket option (Python does not name it): root may pass rmem_max
MAX_READY_INTERVAL_S: Final = 3.2  # the longest a receiver waits before asking a silent sender again
ALIVES_PER_TIMEOUT: Final = 4  # a few may be lost before a live peer looks dead


class TransportOptions(StrictModel):
    mtu: int = Field(1500, ge=576, le=9001, description="the link's MTU: datagrams are cut to fit it")
    nack_after_s: float = Field(
        0.2,
        gt=0,
        le=10,
        description="quiet time after which a lost control datagram is assumed: missing data is NACKed "
        "again, or READY sent again when nothing came",
    )
    peer_timeout_s: float = Field(
        60.0, gt=0, le=86_400, description="silence from a peer this rank waits on before it is reported dead"
    )


@dataclass
class _Outgoing:
    dst: int
    epoch: int
    kind: int
    headers: list[bytes]
    bodies: list[memoryview]
    keep: object  # the buffer the bodies view
    broadcast_to: tuple[int, ...] = ()
    attempts: dict[int, int] = field(default_factory=dict)  # receiver -> last READY attempt served
    sent_at: dict[int, float] = field(default_factory=dict)  # receiver -> when it was last transmitted
    transmitted: set[int] = field(default_factory=set)
    done: set[int] = field(default_factory=set)

    def receivers(self) -> tuple[int, ...]:
        return self.broadcast_to or (self.dst,)


@dataclass
class _Incoming:
    """One epoch from one sender that this rank is taking."""

    src: int
    epoch: int
    kind: int
    packets: int
    out: memoryview | None = None  # RAW: where the bytes go
    got: np.ndarray | None = None  # RAW: which datagrams arrived
    remaining: int = 0
    ready: bool = False  # READY has been sent
    transmitted: bool = False  # the sender said SENT: everything is on its way
    attempt: int = 0
    heard: float = 0.0  # when this epoch last made progress (or was last prodded)
    missing: int = 0  # datagrams missing when last looked (all of them, until the first look)
    quiet: float = 0.0  # how long without news before the next prod (grows while nothing comes)

    def __post_init__(self) -> None:
        self.missing = self.packets

    def progressed(self, now: float, quiet: float) -> None:
        """News of this epoch: the next prod waits the shortest ``quiet`` again, however long the
        asks grew while nothing came."""
        self.heard, self.quiet = now, quiet

    complete: bool = False


class Transport:
    """One rank's socket, its messages in flight both ways, and the loop that moves them."""

    def __init__(
        self,
        rank: int,
        addresses: list[tuple[str, int]],
        options: TransportOptions | None = None,
        aggregation: Aggregation | None = None,
        *,
        kernel: bool = False,
        aborted: threading.Event | None = None,
    ):
        self.rank, self.addresses = rank, addresses
        self.options = options or TransportOptions()
        self.aggregation, self.kernel, self.aborted = aggregation, kernel, aborted
        self.stats = WireStats()
        self.raw_payload = raw_per_packet(self.options.mtu)
        self.records_per_packet = records_per_packet(self.options.mtu)
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self._grow_receive_buffer()
        self.sock.bind(addresses[rank])
        addresses[rank] = self.sock.getsockname()  # port 0 binds a free port: the peers share this list
        self._poll = select.poll()
        self._poll.register(self.sock, select.POLLIN)
        self._buffer = bytearray(MAX_DATAGRAM)
        self._send_epochs = [0] * len(addresses)
        self._recv_epochs = [0] * len(addresses)
        self._done_epochs = [0] * len(addresses)  # the newest epoch taken in full, per sender
        self._outgoing: dict[tuple[int, int], _Outgoing] = {}
        self._readies: dict[tuple[int, int], int] = {}  # READY that came before its message was posted
        self._incoming: dict[int, _Incoming] = {}
        self._fixed: list[ArmedSender] = []  # the senders of the armed FIXED take
        self._heard = dict.fromkeys(range(len(addresses)), time.monotonic())
        self._joined = threading.Event()  # set by the first call: from then on, ALIVE goes out
        self._closed = threading.Event()
        self._alive = threading.Thread(target=self._beat, name=f"pinch-alive-{rank}", daemon=True)
        self._alive.start()

    def _grow_receive_buffer(self) -> None:
        try:  # root may exceed net.core.rmem_max; others get what the kernel allows
            self.sock.setsockopt(socket.SOL_SOCKET, SO_RCVBUFFORCE, RECEIVE_BUFFER)
        except PermissionError:
            self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, RECEIVE_BUFFER)

    def close(self) -> None:
        self._closed.set()
        self._alive.join()
        self.sock.close()

    def _beat(self) -> None:
        """Tell every peer this process is running, from the first call until close: a peer's
        silence then means it died or lost its link, however long a round computes. Not counted
        in the stats (this thread must not race the rank's own counting)."""
        interval = self.options.peer_timeout_s / ALIVES_PER_TIMEOUT
        header = pack_header(PacketType.ALIVE, self.rank, 0)
        while not self._closed.wait(interval):
            if not self._joined.is_set():
                continue
            for peer, address in enumerate(self.addresses):
                if peer != self.rank:
                    try:
                        self.sock.sendto(header, address)
                    except OSError:  # the socket closed under us, or the route is gone: the peer will say
                        return

    # -- sending -----------------------------------------------------------------------------
    def post_raw(self, dst: int, data: np.ndarray, kind: int, broadcast_to: tuple[int, ...] = ()) -> tuple[int, int]:
        """Queue ``data``'s bytes for ``dst`` (or, cloned by the kernel, for every rank in
        ``broadcast_to``, whose epochs with this rank must agree); returns the handle."""
        self._joined.set()
        data = np.array(data, copy=True, order="C")  # the caller may reuse its array once this returns
        view = data.data.cast("B")
        size = view.nbytes
        step = self.raw_payload
        packets = max(1, -(-size // step))
        epoch = self._next_send_epoch(broadcast_to or (dst,))
        flags = F_BROADCAST if broadcast_to else 0
        headers, bodies = [], []
        for seq in range(packets):
            body = view[seq * step : (seq + 1) * step]
            headers.append(
                pack_header(
                    PacketType.RAW,
                    self.rank,
                    epoch,
                    seq=seq,
                    packets=packets,
                    count=body.nbytes,
                    kind=kind,
                    flags=flags,
                    offset=seq * step,
                    aux=size,
                )
            )
            bodies.append(body)
        return self._queue(_Outgoing(dst, epoch, kind, headers, bodies, data, broadcast_to))

    def post_fixed(self, dst: int, values: np.ndarray, kind: int, piece: int) -> list[tuple[int, int]]:
        """Queue ``values`` (read flat) as fixed-point records for ``dst`` to sum, in messages of at
        most ``piece`` records (the receiver takes them the same way: :meth:`take_fixed`)."""
        self._joined.set()
        recs = to_records(values)
        handles = []
        for first in range(0, len(recs), piece):
            part = recs[first : first + piece].copy()
            part["index"] -= first  # numbered within its message: the receiver adds its base
            handles.append(self._queue_fixed(dst, part, kind))
        return handles

    def _queue_fixed(self, dst: int, recs: np.ndarray, kind: int) -> tuple[int, int]:
        epoch = self._next_send_epoch((dst,))
        step = self.records_per_packet
        packets = max(1, -(-len(recs) // step))
        raw = recs.data.cast("B")
        headers, bodies = [], []
        for seq in range(packets):
            count = min(step, len(recs) - seq * step)
            headers.append(
                pack_header(PacketType.FIXED, self.rank, epoch, seq=seq, packets=packets, count=count, kind=kind)
            )
            start = seq * step * RECORD.itemsize
            bodies.append(raw[start : start + count * RECORD.itemsize])
        return self._queue(_Outgoing(dst, epoch, kind, headers, bodies, recs))

    def _next_send_epoch(self, receivers: tuple[int, ...]) -> int:
        epochs = {self._send_epochs[r] for r in receivers}
        if len(epochs) != 1:
            raise CommError(f"rank {self.rank}: a broadcast needs one epoch with every receiver, has {sorted(epochs)}")
        epoch = epochs.pop() + 1
        for r in receivers:
            self._send_epochs[r] = epoch
        return epoch

    def _queue(self, message: _Outgoing) -> tuple[int, int]:
        key = (message.dst, message.epoch)
        self._outgoing[key] = message
        for r in message.receivers():
            attempt = self._readies.pop((r, message.epoch), None)
            if attempt is not None:
                self._on_ready(r, message.epoch, attempt)
        return key

    def complete(self, handles: list[tuple[int, int]]) -> None:
        """Return once every message in ``handles`` has been transmitted to all its receivers."""

        def sent() -> bool:
            return all(
                h not in self._outgoing or set(self._outgoing[h].receivers()) <= self._outgoing[h].transmitted
                for h in handles
            )

        def waiting() -> list[int]:
            return sorted({r for h in handles if h in self._outgoing for r in self._outgoing[h].receivers()})

        self._progress(sent, waiting, "to become ready")

    def _transmit(self, message: _Outgoing, to: int, seqs: np.ndarray | None = None, broadcast: bool = False) -> None:
        """Send ``message`` (or the datagrams ``seqs``) to ``to``, then SENT (to every receiver of
        a broadcast): it follows the data down the same path, so when it arrives whatever has not
        is lost, and the receiver NACKs exactly that."""
        address = self.addresses[to]
        for seq in seqs if seqs is not None else range(len(message.headers)):
            header = message.headers[seq]
            if message.broadcast_to and not broadcast:  # a retransmission to one receiver only
                header = header[:23] + bytes([header[23] & ~F_BROADCAST]) + header[24:]
            self.sock.sendmsg([header, message.bodies[seq]], [], 0, address)
            self.stats.datagrams_sent += 1
            self.stats.socket_calls += 1
            self.stats.wire_bytes_sent += len(header) + message.bodies[seq].nbytes
        now = time.monotonic()
        for r in message.broadcast_to if broadcast else (to,):
            message.sent_at[r] = now
            self._send(pack_header(PacketType.SENT, self.rank, message.epoch, kind=message.kind), r)

    def _on_ready(self, sender: int, epoch: int, attempt: int) -> None:
        message = self._outgoing.get((sender, epoch)) or self._broadcast_for(sender, epoch)
        if message is None:
            if epoch > self._send_epochs[sender]:
                self._readies[(sender, epoch)] = attempt  # the message is not posted yet
            return
        if message.attempts.get(sender, -1) >= attempt:
            return  # a duplicated READY
        recent = time.monotonic() - message.sent_at.get(sender, -np.inf) < self.options.nack_after_s
        message.attempts[sender] = attempt
        if recent:
            return  # READYs that queued up while this rank was busy: the transmission is under way
        if sender in message.transmitted:
            self.stats.retransmitted += len(message.headers)
        if message.broadcast_to:
            if sender in message.transmitted:  # a re-READY: this receiver alone
                self._transmit(message, sender)
                return
            message.transmitted.add(sender)
            if set(message.broadcast_to) <= message.transmitted:  # every receiver is ready: send once
                self._transmit(message, message.dst, broadcast=True)
            return
        message.transmitted.add(sender)
        self._transmit(message, sender)

    def _broadcast_for(self, receiver: int, epoch: int) -> _Outgoing | None:
        for message in self._outgoing.values():
            if message.epoch == epoch and receiver in message.broadcast_to:
                return message
        return None

    # -- receiving ---------------------------------------------------------------------------
    def take_raw(self, src: int, out: np.ndarray, kind: int) -> None:
        """Fill ``out`` (whose size both sides know) with ``src``'s next message."""
        start = time.thread_time()
        epoch = self._recv_epochs[src] = self._recv_epochs[src] + 1
        view = out.reshape(-1).data.cast("B")
        packets = max(1, -(-view.nbytes // self.raw_payload))
        incoming = _Incoming(src, epoch, kind, packets, out=view, got=np.zeros(packets, dtype=bool), remaining=packets)
        self._incoming[src] = incoming
        self._progress(lambda: incoming.complete, lambda: [src], "for its message")
        self.stats.receive_cpu_s += time.thread_time() - start

    def take_fixed(self, sources: list[tuple[int, int]], kind: int, piece: int) -> np.ndarray:
        """Sum the next FIXED records of each (sender, records) in ``sources``, sent in messages
        of at most ``piece`` records; returns the aggregates, the senders' one after another (when
        every sender's records fit one message, a view of the receiver's own array, as they lie:
        read it before the next take)."""
        start = time.thread_time()
        if all(n <= piece for _, n in sources):
            armed, base = [], 0
            for src, n in sources:
                armed.append(self._arm_fixed(src, base, n, kind))
                base += n
            sums = self._await_fixed(armed, base)
            self.stats.receive_cpu_s += time.thread_time() - start
            return sums
        out = np.empty(sum(n for _, n in sources), dtype=AGGREGATE)
        offsets = np.concatenate([[0], np.cumsum([n for _, n in sources])]).astype(int)
        for first in range(0, max((n for _, n in sources), default=0), piece):
            group = [(i, src, min(piece, n - first)) for i, (src, n) in enumerate(sources) if n > first]
            bases = np.concatenate([[0], np.cumsum([m for _, _, m in group])]).astype(int)
            armed = [self._arm_fixed(src, int(bases[j]), m, kind) for j, (_, src, m) in enumerate(group)]
            sums = self._await_fixed(armed, int(bases[-1]))
            for j, (i, _, m) in enumerate(group):
                at = offsets[i] + first
                _copy(out[at : at + m], sums[bases[j] : bases[j] + m])
        self.stats.receive_cpu_s += time.thread_time() - start
        return out

    def take_sum(self, senders: list[int], records: int, kind: int, piece: int) -> np.ndarray:
        """Sum the next FIXED records of every sender in ``senders``, all ``records`` long, sent in
        messages of at most ``piece`` records: index by index, over the senders (in one message: a
        view of the receiver's own array, read it before the next take)."""
        start = time.thread_time()
        if records <= piece:
            sums = self._await_fixed([self._arm_fixed(src, 0, records, kind) for src in senders], records)
            self.stats.receive_cpu_s += time.thread_time() - start
            return sums
        out = np.empty(records, dtype=AGGREGATE)
        for first in range(0, records, piece):
            m = min(piece, records - first)
            _copy(out[first : first + m], self._await_fixed([self._arm_fixed(src, 0, m, kind) for src in senders], m))
        self.stats.receive_cpu_s += time.thread_time() - start
        return out

    def _arm_fixed(self, src: int, base: int, records: int, kind: int) -> ArmedSender:
        epoch = self._recv_epochs[src] = self._recv_epochs[src] + 1
        packets = max(1, -(-records // self.records_per_packet))
        self._incoming[src] = _Incoming(src, epoch, kind, packets)
        return ArmedSender(src, epoch, base, records, packets)

    def _await_fixed(self, armed: list[ArmedSender], records: int) -> np.ndarray:
        if self.aggregation is None:
            raise CommError(f"rank {self.rank}: FIXED messages need an aggregation (the pinch exchange)")
        self.aggregation.arm(armed)
        self._fixed = armed

        def complete() -> bool:
            if self.aggregation is not None and self.aggregation.complete():
                for s in armed:
                    self._incoming[s.sender].complete = True
                return True
            return False

        self._progress(complete, lambda: [s.sender for s in armed], "for its records")
        if self.kernel:
            self.stats.kernel_records += int(self.aggregation.arrays.state["received"][0])
        self.aggregation.disarm()
        self._fixed = []
        for s in armed:
            self._finish(s.sender)
        return self.aggregation.result(0, records)

    def _finish(self, src: int) -> None:
        incoming = self._incoming.pop(src)
        self._done_epochs[src] = incoming.epoch
        self._send(pack_header(PacketType.DONE, self.rank, incoming.epoch, kind=incoming.kind), src)

    # -- the loop ------------------------------------------------------------------------------
    def _progress(self, until: Callable[[], bool], peers: Callable[[], list[int]], what: str) -> None:
        """Move every message until ``until()``; a peer silent past the timeout is reported dead."""
        self._joined.set()
        tick_ms = max(1, int(self.options.nack_after_s * 1000))
        while not until():
            if self.aborted is not None and self.aborted.is_set():
                raise CommError(f"rank {self.rank}: another rank failed")
            self._prod()
            self.stats.socket_calls += 1
            if self._poll.poll(tick_ms):
                self._drain()
                continue
            now = time.monotonic()
            for peer in peers():
                if now - self._heard[peer] > self.options.peer_timeout_s:
                    raise CommError(
                        f"rank {self.rank}: nothing from rank {peer} in {self.options.peer_timeout_s:g} s while "
                        f"waiting {what}; it has died or lost its link (a live rank says ALIVE every "
                        f"{self.options.peer_timeout_s / ALIVES_PER_TIMEOUT:g} s)"
                    )

    def _prod(self) -> None:
        """READY the next sender once the one before has transmitted all; NACK what is missing from
        an epoch that has stopped making progress, or READY it again when nothing came at all."""
        now = time.monotonic()
        pending = [i for i in self._incoming.values() if not i.complete]
        if pending and not any(i.ready and not i.transmitted for i in pending):
            waiting = [i for i in pending if not i.ready]
            if waiting:
                first = min(waiting, key=lambda i: (i.src - self.rank) % len(self.addresses))
                first.ready = True
                first.progressed(now, self.options.nack_after_s)
                self._send_ready(first)
        for incoming in pending:
            if not incoming.ready or now - incoming.heard <= incoming.quiet:
                continue
            incoming.heard = now
            missing = self._missing(incoming)
            if not missing.size:  # all here (a FIXED sender among several): its SENT was lost, not sent
                incoming.transmitted = True  # so the next sender is READYed
            elif missing.size < incoming.missing:  # still arriving (records the kernel took count as word)
                incoming.missing = missing.size
                incoming.progressed(now, self.options.nack_after_s)
                self._heard[incoming.src] = now
            elif missing.size == incoming.packets:  # nothing yet: a lost READY, or a sender still computing
                incoming.attempt += 1
                incoming.quiet = min(2 * incoming.quiet, MAX_READY_INTERVAL_S)
                self._send_ready(incoming)
            elif missing.size:
                self._send_nacks(incoming, missing)

    def _missing(self, incoming: _Incoming) -> np.ndarray:
        if incoming.got is not None:
            return np.flatnonzero(~incoming.got).astype(np.uint32)
        assert self.aggregation is not None
        armed = next(s for s in self._fixed if s.sender == incoming.src)
        return self.aggregation.missing(armed)

    def _send_ready(self, incoming: _Incoming) -> None:
        self.stats.readies_sent += 1
        header = pack_header(PacketType.READY, self.rank, incoming.epoch, kind=incoming.kind, aux=incoming.attempt)
        self._send(header, incoming.src)

    def _send_nacks(self, incoming: _Incoming, missing: np.ndarray) -> None:
        for start in range(0, missing.size, NACKS_PER_PACKET):
            part = missing[start : start + NACKS_PER_PACKET]
            header = pack_header(PacketType.NACK, self.rank, incoming.epoch, count=part.size, kind=incoming.kind)
            self.stats.nacks_sent += 1
            self._send(header + part.astype("<u4").tobytes(), incoming.src)

    def _send(self, datagram: bytes, to: int) -> None:
        self.sock.sendto(datagram, self.addresses[to])
        self.stats.datagrams_sent += 1
        self.stats.socket_calls += 1
        self.stats.wire_bytes_sent += len(datagram)

    def _drain(self) -> None:
        """Handle every datagram waiting on the socket."""
        buffer = self._buffer
        while True:
            try:
                size = self.sock.recv_into(buffer, MAX_DATAGRAM, socket.MSG_DONTWAIT)
            except BlockingIOError:
                self.stats.socket_calls += 1
                return
            self.stats.socket_calls += 1
            self.stats.datagrams_received += 1
            self.stats.wire_bytes_received += size
            datagram = memoryview(buffer)[:size]
            try:
                header = parse_header(datagram)
            except WireError:
                continue  # not ours, or damaged: the sender's retransmission covers it
            self._heard[header.sender] = time.monotonic()
            self._dispatch(header, datagram)

    def _dispatch(self, h, datagram: memoryview) -> None:
        if h.type == PacketType.ALIVE:
            return  # hearing it was the point (_drain noted when)
        if h.type == PacketType.READY:
            self._on_ready(h.sender, h.epoch, h.aux)
        elif h.type == PacketType.DONE:
            self._on_done(h.sender, h.epoch)
        elif h.type == PacketType.SENT:
            self._on_sent(h.sender, h.epoch)
        elif h.type == PacketType.NACK:
            message = self._outgoing.get((h.sender, h.epoch)) or self._broadcast_for(h.sender, h.epoch)
            if message is not None:
                seqs = np.frombuffer(datagram, dtype="<u4", offset=HEADER.itemsize)
                seqs = seqs[seqs < len(message.headers)]
                self.stats.retransmitted += seqs.size
                self._transmit(message, h.sender, seqs)
        elif h.type == PacketType.RAW:
            self._on_raw(h, datagram)
        else:
            self._on_fixed(h, datagram)

    def _on_sent(self, sender: int, epoch: int) -> None:
        """All of ``sender``'s transmission has arrived or is lost: NACK what is missing."""
        incoming = self._incoming.get(sender)
        if incoming is None or incoming.epoch != epoch or incoming.complete:
            return
        incoming.transmitted = True
        incoming.progressed(time.monotonic(), self.options.nack_after_s)
        missing = self._missing(incoming)
        incoming.missing = missing.size
        if missing.size:
            self._send_nacks(incoming, missing)

    def _on_done(self, receiver: int, epoch: int) -> None:
        key = (receiver, epoch)
        message = self._outgoing.get(key) or self._broadcast_for(receiver, epoch)
        if message is None:
            return
        message.done.add(receiver)
        if set(message.receivers()) <= message.done:
            del self._outgoing[(message.dst, message.epoch)]

    def _on_raw(self, h, datagram: memoryview) -> None:
        incoming = self._incoming.get(h.sender)
        if incoming is None or incoming.epoch != h.epoch or incoming.got is None:
            self._stale(h)
            return
        if h.kind != incoming.kind or h.packets != incoming.packets or incoming.out is None:
            raise CommError(
                f"rank {self.rank}: rank {h.sender} sent kind {h.kind} in {h.packets} datagrams, kind {incoming.kind} "
                f"in {incoming.packets} expected: the ranks are out of step"
            )
        if incoming.got[h.seq]:
            self.stats.duplicates += 1
            return
        end = h.offset + h.count
        if end > incoming.out.nbytes:
            raise CommError(f"rank {self.rank}: rank {h.sender} sent bytes past the {incoming.out.nbytes}-byte message")
        incoming.out[h.offset : end] = datagram[HEADER.itemsize :]
        incoming.got[h.seq] = True
        incoming.remaining -= 1
        incoming.progressed(time.monotonic(), self.options.nack_after_s)
        if incoming.remaining == 0:
            incoming.complete = True
            self._finish(h.sender)

    def _on_fixed(self, h, datagram: memoryview) -> None:
        if self.kernel or self.aggregation is None:
            # With the XDP program attached only completions and unarmed epochs come up here.
            if not (h.sender in self._incoming and self._incoming[h.sender].epoch == h.epoch):
                self._stale(h)
            return
        fed = self.aggregation.feed(datagram)
        if fed is Fed.UNARMED:
            self._stale(h)
        elif fed is Fed.DUPLICATE:
            self.stats.duplicates += 1
        elif fed in (Fed.ADDED, Fed.COMPLETED) and h.sender in self._incoming:
            self._incoming[h.sender].progressed(time.monotonic(), self.options.nack_after_s)

    def _stale(self, h) -> None:
        """A datagram of an epoch already taken: say DONE again (the first DONE may be lost)."""
        if h.epoch <= self._done_epochs[h.sender]:
            self._send(pack_header(PacketType.DONE, self.rank, h.epoch, kind=h.kind), h.sender)

    # -- the end ------------------------------------------------------------------------------
    def drain(self, everyone_done: Callable[[], bool]) -> None:
        """Wait until every message this rank sent is DONE, then keep answering until
        ``everyone_done()`` (all ranks got here): a peer's lost DONE is re-sent while it waits."""
        asked = [time.monotonic()]

        def delivered() -> bool:
            # A DONE may be lost, and nothing else would make its receiver say it again: every
            # nack_after_s, re-send the last datagram of each message still not DONE; a receiver
            # that has taken it answers DONE again (``_stale``), one still taking it drops a copy.
            now = time.monotonic()
            if self._outgoing and now - asked[0] > self.options.nack_after_s:
                asked[0] = now
                for message in list(self._outgoing.values()):
                    for r in message.receivers():
                        if r in message.transmitted and r not in message.done:
                            self.stats.retransmitted += 1
                            self._transmit(message, r, np.array([len(message.headers) - 1]))
            return not self._outgoing

        self._progress(delivered, lambda: sorted({m.dst for m in self._outgoing.values()}), "for DONE")
        self._progress(everyone_done, lambda: [], "for the other ranks to finish")


def _copy(dst: np.ndarray, src: np.ndarray) -> None:
    """Aggregates from the (kernel's) array into ours, as bytes: 10x faster than by field."""
    dst.view(np.uint8)[:] = src.view(np.uint8)
