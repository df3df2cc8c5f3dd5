"""The options every full-graph training command shares: where the ranks run and what carries their
exchanges, spelled the same for RETEXO, standard training and SliceGCN.

Ranks are threads of this process unless ``--mpi`` makes them one ``mpiexec`` job;
``--exchange mpi|udp|pinch`` picks the transport (with threads, ``mpi`` means in-process queues).
Defaults and help come from :class:`~fullgraph.exchange.options.ExchangeOptions`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer
from pydantic import ValidationError
from rich.table import Table

from foundation.cli import usage_from_validation
from foundation.errors import UsageError
from fullgraph.exchange.ledger import TrafficReport
from fullgraph.exchange.options import ExchangeOptions

DEFAULTS = ExchangeOptions()
FLAGS = {"peer_timeout_s": "--peer-timeout"}


def _help(field: str) -> str:
    return ExchangeOptions.model_fields[field].description or ""


Mpi = Annotated[
    bool, typer.Option("--mpi", help="run the ranks as one mpiexec job (workers first, the master last), not threads")
]
Hostfile = Annotated[Optional[Path], typer.Option(help="with --mpi: Open MPI hostfile, workers first, the master last")]
Exchange = Annotated[str, typer.Option(help=_help("exchange"))]
Port = Annotated[int, typer.Option(help=_help("port"))]
Interface = Annotated[Optional[str], typer.Option(help=_help("interface"))]
PeerTimeout = Annotated[float, typer.Option("--peer-timeout", help=_help("peer_timeout_s"))]


def exchange_options(
    *, mpi: bool, hostfile: Path | None, exchange: str, port: int, interface: str | None, peer_timeout: float
) -> ExchangeOptions:
    """The options as a model; an error names the flag to fix."""
    if hostfile is not None and not mpi:
        raise UsageError("--hostfile places the ranks of an MPI job: add --mpi")
    try:
        return ExchangeOptions(exchange=exchange, port=port, interface=interface, peer_timeout_s=peer_timeout)
    except ValidationError as exc:
        raise usage_from_validation(exc, FLAGS) from None


def wire_table(exchange: str, traffic: list[TrafficReport], master: int, master_name: str = "master") -> Table:
    """What the udp or pinch datagrams cost, rank by rank (rank ``master`` shown as ``master_name``)."""
    table = Table(title=f"the {exchange} exchange, per rank")
    for column in (
        "rank",
        "datagrams out",
        "datagrams in",
        "wire MB out",
        "retransmitted",
        "duplicates",
        "kernel records",
        "receive CPU s",
    ):
        table.add_column(column, justify="right")
    for t in traffic:
        w = t.wire
        if w is None:
            continue
        table.add_row(
            master_name if t.rank == master else str(t.rank),
            f"{w.datagrams_sent:,}",
            f"{w.datagrams_received:,}",
            f"{w.wire_bytes_sent / 1e6:,.2f}",
            f"{w.retransmitted:,}",
            f"{w.duplicates:,}",
            f"{w.kernel_records:,}",
            f"{w.receive_cpu_s:.3f}",
        )
    return table
