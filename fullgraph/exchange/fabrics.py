"""The endpoints a job's ranks exchange through, built from the user's :class:`ExchangeOptions`.

- ranks that are threads of this process: :func:`thread_fabric` gives in-process queues
  (``mpi``) or one loopback UDP socket per rank (``udp``, ``pinch`` summed in user space);
- ranks of an ``mpiexec`` job: :func:`mpi_endpoint` gives MPI itself, or UDP between the
  ranks' addresses, with PINCH's kernel programs attached where they load.
"""

from __future__ import annotations

import logging
import socket
import threading
from collections.abc import Callable

from fullgraph.exchange.endpoint import CommError, Endpoint
from fullgraph.exchange.local import LocalFabric
from fullgraph.exchange.mpi import MpiEndpoint
from fullgraph.exchange.options import ExchangeOptions
from fullgraph.exchange.pinch import kernel
from fullgraph.exchange.pinch.addresses import AddressCard, allgather_cards, card
from fullgraph.exchange.pinch.aggregate import AggregateArrays, Aggregation
from fullgraph.exchange.pinch.endpoint import BROADCAST_MARK, PinchEndpoint, UdpEndpoint
from fullgraph.exchange.pinch.transport import Transport
from fullgraph.exchange.pinch.wire import CHUNK, MAX_SENDERS

log = logging.getLogger(__name__)


def thread_fabric(workers: int, options: ExchangeOptions | None = None) -> LocalFabric | UdpThreadFabric:
    """The fabric for ``workers`` + 1 ranks that are threads of this process."""
    if options is None or options.exchange == "mpi":
        return LocalFabric(workers)
    return UdpThreadFabric(workers, options)


class _Arrivals:
    """Ranks that have finished (threads of one process share it)."""

    def __init__(self, ranks: int):
        self.ranks, self.count, self.lock = ranks, 0, threading.Lock()

    def arrive(self) -> Callable[[], bool]:
        with self.lock:
            self.count += 1
        return lambda: self.count >= self.ranks


class UdpThreadFabric:
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


def mpi_endpoint(comm, options: ExchangeOptions) -> Endpoint:
    """This ``mpiexec`` rank's endpoint for ``options.exchange`` (the master is the last rank)."""
    if options.exchange == "mpi":
        return MpiEndpoint(comm)
    rank, size = comm.Get_rank(), comm.Get_size()
    if size > MAX_SENDERS:
        raise CommError(f"the {options.exchange} exchange takes at most {MAX_SENDERS} ranks, this job has {size}")
    cards = allgather_cards(comm, card(options.port + rank, options.interface))
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


def _pinch_endpoint(
    rank: int,
    size: int,
    cards: list[AddressCard],
    addresses: list[tuple[str, int]],
    options: ExchangeOptions,
    everyone_done: Callable[[], bool],
) -> PinchEndpoint:
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
        log.warning("rank %d: pinch sums in user space: %s", rank, reason)
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
