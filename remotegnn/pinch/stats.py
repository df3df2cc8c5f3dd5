"""What a rank's datagrams cost, beside the payload bytes its ledger counts (its own module: the
training fabric's reports carry it, and the fabric must not import the transport)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class WireStats(BaseModel):
    """One rank's datagrams and the CPU its receives took, beside the ledger's payload bytes."""

    model_config = ConfigDict(extra="forbid")

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
