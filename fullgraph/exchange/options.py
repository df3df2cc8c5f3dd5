"""The user's choice of exchange for a full-graph job, and the settings of the udp and pinch exchanges.

The same model for every method (RETEXO, standard training, SliceGCN), for ranks that are threads
of this process and for ranks of an ``mpiexec`` job; it travels to each rank as JSON.
"""

from __future__ import annotations

from typing import Final, Literal

from pydantic import Field

from foundation.models import StrictModel
from fullgraph.exchange.pinch.endpoint import DEFAULT_CAPACITY
from fullgraph.exchange.pinch.transport import TransportOptions
from fullgraph.exchange.pinch.wire import MAX_SENDERS

ExchangeName = Literal["mpi", "udp", "pinch"]
DEFAULT_PORT: Final = 47000


class ExchangeOptions(StrictModel):
    """What carries a job's exchanges: MPI (in-process queues when the ranks are threads), or
    UDP with or without the kernel's help."""

    exchange: ExchangeName = Field(
        "mpi",
        description="mpi (threads: in-process queues), udp (reliable UDP, the same bytes), or pinch (fixed-point "
        "rows and gradient sums added by an XDP program as they arrive, weights cloned by TC; in user space where "
        "the kernel programs cannot load)",
    )
    port: int = Field(
        DEFAULT_PORT, ge=1024, le=65535 - MAX_SENDERS, description="udp/pinch: rank r listens on UDP port + r"
    )
    interface: str | None = Field(
        None,
        description="udp/pinch over MPI: the network interface to use (default: the first with an IPv4 address)",
    )
    mtu: int = Field(1500, ge=576, le=9001, description="udp/pinch: the links' MTU; datagrams are cut to fit")
    peer_timeout_s: float = Field(
        60.0,
        gt=0,
        le=86_400,
        description="udp/pinch: seconds of silence from an awaited rank before it is reported dead",
    )
    capacity: int = Field(DEFAULT_CAPACITY, ge=1, le=1 << 24, description="pinch: aggregates the kernel map holds")
    xdp_mode: Literal["generic", "native"] = Field("generic", description="pinch: XDP in the stack or the driver")
    kernel: bool = Field(True, description="pinch: use the kernel programs when they load (else user space)")
    count_syscalls: bool = Field(False, description="benchmarks: count each rank's system calls while training (root)")

    def transport(self) -> TransportOptions:
        return TransportOptions(mtu=self.mtu, peer_timeout_s=self.peer_timeout_s)
