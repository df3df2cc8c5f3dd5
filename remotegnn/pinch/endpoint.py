"""The ``udp`` and ``pinch`` exchanges of distributed training, as fabric endpoints.

- ``udp``: every message as RAW bytes over the reliable UDP layer, received in user space: the
  same bytes as MPI, so the same training to the bit.
- ``pinch``: the exchanges that sum or land rows (boundary rows and their gradients, features,
  the master's gradient sum) travel as fixed-point records that the receiver's XDP program adds
  into memory-mapped aggregates as they arrive - the process wakes once per message, not per
  datagram; the master's weights leave once and its TC program clones them to every worker.
  Everything else (weights, flags, metrics) is RAW. Without the kernel programs (no root, no
  libbpf, or ranks sharing a network interface) the same records are summed in user space, to
  the same integers.

The ledger counts the same payload bytes as the MPI fabric; :class:`WireStats` adds what the
datagrams cost.
"""

from __future__ import annotations

import fcntl
import socket
import struct
import sys
import threading
from collections.abc import Callable
from typing import Final, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from remotegnn.pinch.aggregate import AggregateArrays, Aggregation
from remotegnn.pinch.fixedpoint import chunks, dequantize
from remotegnn.pinch.stats import WireStats
from remotegnn.pinch.transport import Transport, TransportOptions
from remotegnn.pinch.wire import CHUNK, MAX_SENDERS, R_OVERFLOW, R_SATURATED, WINDOW
from remotegnn.retexo.comm import KINDS, CommError, Endpoint, Stopwatch

ExchangeName = Literal["mpi", "udp", "pinch"]
# What travels as fixed point under pinch: rows that land once per index, and the gradient sum.
FIXED_KINDS: Final = frozenset(
    {"features", "representations", "representation_gradients", "evaluation", "model_gradients"}
)
DEFAULT_PORT: Final = 47000
BROADCAST_MARK: Final = 0x50424354  # "PBCT": the TC program's clones carry it and pass untouched
DEFAULT_CAPACITY: Final = 1 << 18  # aggregates the kernel map holds: 36 MB, 4M floats per take


class ExchangeOptions(BaseModel):
    """How a training job's ranks exchange: MPI, or UDP with or without the kernel's help."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    exchange: ExchangeName = "mpi"
    port: int = Field(DEFAULT_PORT, ge=1024, le=65535 - MAX_SENDERS, description="rank r listens on port + r")
    interface: str | None = Field(
        None, description="pinch: the network interface to attach to (default: the one with this host's address)"
    )
    mtu: int = Field(1500, ge=576, le=9001, description="the links' MTU; datagrams are cut to fit")
    peer_timeout_s: float = Field(60.0, gt=0, le=86_400, description="silence from an awaited peer that means dead")
    capacity: int = Field(DEFAULT_CAPACITY, ge=1, le=1 << 24, description="pinch: aggregates the kernel map holds")
    xdp_mode: Literal["generic", "native"] = Field("generic", description="pinch: XDP in the stack or the driver")
    kernel: bool = Field(True, description="pinch: use the kernel programs when they load (else user space)")
    count_syscalls: bool = Field(False, description="benchmarks: count each rank's system calls while training (root)")

    def transport(self) -> TransportOptions:
        return TransportOptions(mtu=self.mtu, peer_timeout_s=self.peer_timeout_s)


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
        self, sends: list[np.ndarray], receives: list[np.ndarray], kind: str, layer: int | None = None
    ) -> None:
        """All peers' rows in one armed take: the process wakes once when the last has landed."""
        if kind not in FIXED_KINDS:
            super().exchange(sends, receives, kind, layer)
            return
        start = Stopwatch()
        tag = KINDS.index(kind)
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

    def reduce(self, out: np.ndarray, kind: str) -> np.ndarray:
        if kind not in FIXED_KINDS:
            return super().reduce(out, kind)
        start = Stopwatch()
        aggregates = self.transport.take_sum(list(range(self.workers)), chunks(out.size), KINDS.index(kind), self.piece)
        _decode(aggregates, self.workers, out, self.rank, kind)
        self.ledger.add(kind, received=out.nbytes * self.workers, since=start)
        return out

    def broadcast(self, array: np.ndarray, kind: str) -> None:
        if not self.kernel_broadcast:
            super().broadcast(array, kind)
            return
        start = Stopwatch()
        array = np.ascontiguousarray(array)
        workers = tuple(range(self.workers))
        self.transport.complete([self.transport.post_raw(0, array, KINDS.index(kind), broadcast_to=workers)])
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


# -- building the endpoints ---------------------------------------------------------------------
class _Arrivals:
    """Ranks that have finished (threads of one process share it)."""

    def __init__(self, ranks: int):
        self.ranks, self.count, self.lock = ranks, 0, threading.Lock()

    def arrive(self) -> Callable[[], bool]:
        with self.lock:
            self.count += 1
        return lambda: self.count >= self.ranks


class ThreadFabric:
    """Every rank a thread of this process, each with its own socket on a free loopback port
    (aggregation in user space: one loopback cannot carry one XDP program per rank)."""

    def __init__(self, workers: int, options: ExchangeOptions):
        self.workers, self.options = workers, options
        self.aborted = threading.Event()
        addresses = [("127.0.0.1", 0)] * (workers + 1)
        arrivals = _Arrivals(workers + 1)
        self._endpoints: list[UdpEndpoint] = []
        try:
            for rank in range(workers + 1):
                self._endpoints.append(self._build(rank, addresses, arrivals))
        except BaseException:
            self.release()
            raise

    def abort(self) -> None:
        self.aborted.set()

    def endpoint(self, rank: int) -> UdpEndpoint:
        return self._endpoints[rank]

    def _build(self, rank: int, addresses: list, arrivals: _Arrivals) -> UdpEndpoint:
        pinch = self.options.exchange == "pinch"
        aggregation = Aggregation(AggregateArrays.in_memory(CHUNK), growable=True) if pinch else None
        transport = Transport(rank, addresses, self.options.transport(), aggregation, aborted=self.aborted)
        if pinch:
            return PinchEndpoint(rank, self.workers, transport, _ArrivalGate(arrivals), capacity=self.options.capacity)
        return UdpEndpoint(rank, self.workers, transport, _ArrivalGate(arrivals))

    def release(self) -> None:
        for endpoint in self._endpoints:
            endpoint.release()


class _ArrivalGate:
    """``everyone_done`` for a thread: arrive once (the first call), then report."""

    def __init__(self, arrivals: _Arrivals):
        self.arrivals = arrivals
        self.check: Callable[[], bool] | None = None

    def __call__(self) -> bool:
        if self.check is None:
            self.check = self.arrivals.arrive()
        return self.check()


def warn(message: str) -> None:
    sys.stderr.write(f"memorybridge: {message}\n")


# -- one rank per process (mpiexec) -------------------------------------------------------------
ADDRESS_BYTES: Final = 256  # one rank's JSON address card, padded, for a fixed-size Allgather
SIOCGIFADDR: Final = 0x8915
SIOCGIFHWADDR: Final = 0x8927


class _Card(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    host: str
    port: int
    interface: str
    mac: str


def _interface_ioctl(interface: str, request: int) -> bytes:
    """One SIOCGIF* answer for ``interface`` in this process's network namespace (sysfs may show
    another namespace's devices)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        try:
            return fcntl.ioctl(s.fileno(), request, struct.pack("256s", interface.encode()[:15]))
        except OSError as exc:
            raise CommError(f"interface {interface}: {exc.strerror}; name one with an IPv4 address") from None


def _interface_address(interface: str) -> str:
    return socket.inet_ntoa(_interface_ioctl(interface, SIOCGIFADDR)[20:24])


def _interface_mac(interface: str) -> str:
    return _interface_ioctl(interface, SIOCGIFHWADDR)[18:24].hex(":")


def _default_interface() -> str:
    """The first interface other than loopback that has an IPv4 address (else ``lo``)."""
    for _, name in socket.if_nameindex():
        if name == "lo":
            continue
        try:
            _interface_address(name)
            return name
        except CommError:
            continue
    return "lo"


def _card(rank: int, options: ExchangeOptions) -> _Card:
    interface = options.interface or _default_interface()
    return _Card(
        host=_interface_address(interface), port=options.port + rank, interface=interface, mac=_interface_mac(interface)
    )


def _allgather_cards(comm, card: _Card) -> list[_Card]:
    """Every rank's card, through a fixed-size byte Allgather (nothing unpickled)."""
    mine = np.zeros(ADDRESS_BYTES, dtype=np.uint8)
    raw = card.model_dump_json().encode()
    mine[: len(raw)] = np.frombuffer(raw, dtype=np.uint8)
    everyone = np.zeros((comm.Get_size(), ADDRESS_BYTES), dtype=np.uint8)
    comm.Allgather(mine, everyone)
    return [_Card.model_validate_json(row.tobytes().rstrip(b"\0")) for row in everyone]


def mpi_endpoint(comm, options: ExchangeOptions):
    """This ``mpiexec`` rank's endpoint for ``options.exchange`` (the master is the last rank)."""
    from remotegnn.retexo.comm import MpiEndpoint

    if options.exchange == "mpi":
        return MpiEndpoint(comm)
    rank, size = comm.Get_rank(), comm.Get_size()
    if size > MAX_SENDERS:
        raise CommError(f"the {options.exchange} exchange takes at most {MAX_SENDERS} ranks, this job has {size}")
    cards = _allgather_cards(comm, _card(rank, options))
    addresses = [(c.host, c.port) for c in cards]
    barrier: list = []

    def everyone_done() -> bool:
        if not barrier:
            barrier.append(comm.Ibarrier())
        return bool(barrier[0].Test())

    if options.exchange == "udp":
        transport = Transport(rank, addresses, options.transport())
        return UdpEndpoint(rank, size - 1, transport, everyone_done)
    return _pinch_endpoint(rank, size, cards, addresses, options, everyone_done)


def _pinch_endpoint(rank, size, cards, addresses, options: ExchangeOptions, everyone_done) -> PinchEndpoint:
    from remotegnn.pinch import kernel

    mine = cards[rank]
    shared = sum(1 for c in cards if c.host == mine.host) > 1
    reason = (
        "the exchange's options turn it off"
        if not options.kernel
        else f"another rank of this job shares {mine.interface}"
        if shared
        else kernel.bpf_available()
    )
    cleanup: list[Callable[[], None]] = []
    broadcast = False
    program_stats = None
    if reason is None:
        ports = (options.port, options.port + size)
        aggregator = kernel.KernelAggregator(mine.interface, options.capacity, ports, mode=options.xdp_mode)
        cleanup.append(aggregator.close)
        program_stats = aggregator.program_stats
        arrays = AggregateArrays(aggregator.aggregates, aggregator.arms, aggregator.seen, aggregator.state)
        aggregation = Aggregation(arrays)
        if rank == size - 1 and size > 2:  # the master's weights, cloned by TC to every worker
            ifindex = socket.if_nametoindex(mine.interface)
            peers = [(ifindex, c.host, c.port, bytes.fromhex(c.mac.replace(":", ""))) for c in cards[:-1]]
            broadcaster = kernel.Broadcaster(mine.interface, peers, BROADCAST_MARK)
            cleanup.append(broadcaster.close)
            broadcast = True
    else:
        warn(f"rank {rank}: pinch sums in user space: {reason}")
        aggregation = Aggregation(AggregateArrays.in_memory(CHUNK), growable=True)
    transport = Transport(rank, addresses, options.transport(), aggregation, kernel=reason is None)
    return PinchEndpoint(
        rank,
        size - 1,
        transport,
        everyone_done,
        cleanup,
        capacity=options.capacity,
        broadcast=broadcast,
        program_stats=program_stats,
    )
