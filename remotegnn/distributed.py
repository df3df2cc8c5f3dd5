"""Data-parallel learners: ``torch.distributed`` over the learner ranks of a `remotegnn launch` job.

    learners = init_learners(device="cuda")          # rank, world size and device, from the launch
    model = DistributedDataParallel(model, device_ids=...) if learners.distributed else model

`remotegnn launch --learners N` starts N learner ranks; each one's loader takes an equal, disjoint
share of every epoch's seeds (``remotegnn.server.seeds.epoch_order``). ``init_learners`` joins
them in one process group, with no flag or environment variable from the user: the rank and the
world size are the learner's index and count in the MPI job, and the rendezvous is a
``TCPStore`` that the first learner opens on a free port, whose address it sends to the others
over MPI. Memory ranks are not part of the group and take no part in the exchange, because they
are busy serving. NCCL is used on GPUs and gloo on the CPU. Each learner trains on GPU
``index % GPUs on its machine``, so ranks placed a machine at a time (Open MPI's default) get one
GPU each.

The address: the first learner sends every IPv4 address of its machine (loopback last), and each
other learner takes the first it can connect to. That is the private address between EC2
machines and loopback on one machine, with nothing to configure; ``MEMORYBRIDGE_LEARNER_ADDRESS``
names the one to use instead.
"""

from __future__ import annotations

import datetime as dt
import fcntl
import os
import socket
import struct
from dataclasses import dataclass
from typing import Final

import numpy as np
import torch
import torch.distributed as dist
from pydantic import Field, ValidationError

from foundation.errors import UsageError
from foundation.models import StrictModel
from remotegnn.mpi.world import under_launch, world

RENDEZVOUS_TAG: Final = 7090  # below the loader's tags (remotegnn.mpi.messages.BASE_TAG)
ADDRESS_ENV: Final = "MEMORYBRIDGE_LEARNER_ADDRESS"
LOOPBACK: Final = "127.0.0.1"
CONNECT_TIMEOUT_S: Final = 2.0  # per address the other learners try
SIOCGIFADDR: Final = 0x8915  # Linux: an interface's IPv4 address
TIMEOUT_S: Final = 600.0  # the group's collectives, and the rendezvous, give up after this


class Rendezvous(StrictModel):
    """What the first learner tells the others: where its TCPStore listens."""

    addresses: list[str] = Field(min_length=1, description="its machine's IPv4 addresses, to try in order")
    port: int = Field(ge=1, le=65535)


@dataclass(frozen=True)
class Learners:
    """This process's place among the job's learners, and the device it trains on.

    Args:
        rank: This learner's index among the job's learners, from 0.
        size: How many learners the job has.
        device: The device this learner trains on (under `remotegnn launch`, a CUDA learner's
            own GPU: its rank modulo the machine's GPUs).
    """

    rank: int
    size: int
    device: torch.device

    @property
    def distributed(self) -> bool:
        """Several learners: gradients must be all-reduced (``DistributedDataParallel``)."""
        return self.size > 1

    @property
    def device_ids(self) -> list[int] | None:
        """What ``DistributedDataParallel(device_ids=)`` wants: the GPU, or None on the CPU."""
        return [self.device.index or 0] if self.device.type == "cuda" else None


def init_learners(device: str = "cpu", backend: str | None = None, timeout_s: float = TIMEOUT_S) -> Learners:
    """Join this job's learners in one ``torch.distributed`` process group (a no-op for a single
    learner, or outside `remotegnn launch`); returns the rank, world size and device.

    Args:
        device: A torch device string ("cpu", "cuda"); when a job has several CUDA learners,
            each takes the GPU its rank picks (rank modulo the machine's GPUs).
        backend: The process group's backend; None picks nccl on CUDA, else gloo.
        timeout_s: Seconds after which the rendezvous and the group's collectives give up.
    """
    wanted = torch.device(device)
    if wanted.type == "cuda" and not torch.cuda.is_available():
        raise UsageError(f"device {device}: CUDA is not available on this machine")
    if not under_launch() or world().learners == 1:
        return Learners(rank=0, size=1, device=wanted)
    here = world()
    rank, size = here.learner_index, here.learners
    if wanted.type == "cuda":
        wanted = torch.device("cuda", rank % torch.cuda.device_count())
        torch.cuda.set_device(wanted)
    timeout = dt.timedelta(seconds=timeout_s)
    backend = backend or ("nccl" if wanted.type == "cuda" else "gloo")
    if dist.is_initialized():
        raise UsageError("torch.distributed is initialised already: call init_learners once, before anything else")
    own = _own_addresses()
    if rank == 0:  # the store listens on every address of this machine
        store = dist.TCPStore(LOOPBACK, 0, size, is_master=True, timeout=timeout, wait_for_workers=False)
        named = os.environ.get(ADDRESS_ENV)
        meeting = Rendezvous(addresses=[named] if named else list(own), port=store.port)
        for index in range(1, size):
            _send(here.comm, meeting, here.learner_rank(index))
        local = meeting.addresses[0]
    else:
        meeting = _receive(here.comm, here.learner_rank(0))
        address, local = _reachable(meeting)
        store = dist.TCPStore(address, meeting.port, size, is_master=False, timeout=timeout)
    _use_interface(own.get(local))
    dist.init_process_group(backend, store=store, rank=rank, world_size=size, timeout=timeout)
    return Learners(rank=rank, size=size, device=wanted)


def _own_addresses() -> dict[str, str]:
    """This machine's IPv4 addresses (of its network namespace) -> their interfaces, loopback last."""
    found: dict[str, str] = {}
    loopback: dict[str, str] = {}
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        for _, name in socket.if_nameindex():
            try:
                packed = fcntl.ioctl(probe.fileno(), SIOCGIFADDR, struct.pack("256s", name.encode()[:15]))
            except OSError:
                continue  # no IPv4 address on this interface
            address = socket.inet_ntoa(packed[20:24])
            (loopback if address.startswith("127.") else found)[address] = name
    return found | loopback


def _reachable(meeting: Rendezvous) -> tuple[str, str]:
    """The first of the first learner's addresses this learner can connect to, and this learner's
    own address on that connection."""
    for address in meeting.addresses:
        try:
            with socket.create_connection((address, meeting.port), timeout=CONNECT_TIMEOUT_S) as connection:
                return address, connection.getsockname()[0]
        except OSError:
            continue
    raise UsageError(
        f"learner rendezvous: none of the first learner's addresses ({', '.join(meeting.addresses)}) answers on port "
        f"{meeting.port} from this machine; set {ADDRESS_ENV} to one that does, on every learner"
    )


def _use_interface(interface: str | None) -> None:
    """Have gloo and NCCL's own connections leave by ``interface`` (the one the rendezvous went
    over; None: not one of this machine's), unless the user named one: left to themselves they
    take the interface of the host name's address, which on machines that share a host name is
    not this one's."""
    if interface is not None:
        os.environ.setdefault("GLOO_SOCKET_IFNAME", interface)
        os.environ.setdefault("NCCL_SOCKET_IFNAME", interface)


def _send(comm, message: Rendezvous, dest: int) -> None:
    comm.Send(np.frombuffer(message.model_dump_json().encode(), dtype=np.uint8), dest=dest, tag=RENDEZVOUS_TAG)


def _receive(comm, source: int) -> Rendezvous:
    """The first learner's rendezvous, as JSON (validated, never unpickled)."""
    from mpi4py import MPI

    status = MPI.Status()
    comm.Probe(source=source, tag=RENDEZVOUS_TAG, status=status)
    buffer = np.empty(status.Get_count(MPI.BYTE), dtype=np.uint8)
    comm.Recv(buffer, source=source, tag=RENDEZVOUS_TAG)
    try:
        return Rendezvous.model_validate_json(buffer.tobytes())
    except ValidationError as exc:
        raise UsageError(f"learner rendezvous: rank {source} sent no rendezvous ({exc.error_count()} errors)") from None
