"""`fullgraph slice` and `fullgraph slicegcn train`: feature-sliced training (SliceGCN)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer
from pydantic import ValidationError
from rich.table import Table

from foundation.cli import (
    emit_json,
    handle_errors,
    handle_interrupts,
    model_option,
    out,
    report_result,
    usage_from_validation,
)
from foundation.errors import UsageError
from fullgraph.cli.app import app
from fullgraph.cli.exchange import (
    DEFAULTS,
    Exchange,
    Hostfile,
    Interface,
    Mpi,
    PeerTimeout,
    Port,
    exchange_options,
    wire_table,
)
from fullgraph.slicegcn.config import SliceConfig

slicegcn_app = typer.Typer(
    help="Feature-sliced full-graph training: each rank one column slice and the whole graph (SliceGCN).",
    no_args_is_help=True,
)
app.add_typer(slicegcn_app, name="slicegcn")

Dataset = Annotated[Path, typer.Argument(help="dataset directory (labels and train/val/test splits)")]


@app.command(name="slice")
@handle_errors
@handle_interrupts
def slice_dataset(
    dataset: Dataset,
    dst: Annotated[Path, typer.Argument(help="directory to write part-0 .. part-(p-1) and slices.json into")],
    parts: int = model_option(SliceConfig, "parts", "--parts", "-p"),
    overwrite: Annotated[bool, typer.Option("--overwrite", help="replace DST if it exists")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="print slices.json")] = False,
) -> None:
    """Cut the features into p column slices (the SliceGCN paper's Algorithm 1): each part is a
    dataset with the whole graph and its columns; the last slice overlaps its neighbour rather
    than being short.

    Example: fullgraph slice data/tolokers slices/tolokers --parts 3
    """
    from fullgraph.slicegcn.slicing import write_slices
    from remotegnn.store import GraphDataset

    slices = write_slices(GraphDataset.open(dataset), dst, parts, overwrite=overwrite)
    if as_json:
        emit_json(slices)
        return
    columns = ", ".join(f"part-{i}: {a}:{b}" for i, (a, b) in enumerate(slices.columns))
    out.print(f"{slices.parts} slices of {slices.feature_dim} columns in {dst} ({columns})")


@slicegcn_app.command()
@handle_errors
def train(
    dataset: Dataset,
    parts: int = model_option(SliceConfig, "parts", "--parts", "-p"),
    epochs: int = model_option(SliceConfig, "epochs"),
    hidden: int = model_option(SliceConfig, "hidden"),
    layers: int = model_option(SliceConfig, "layers"),
    lr: float = model_option(SliceConfig, "lr"),
    dropout: float = model_option(SliceConfig, "dropout"),
    encoding: bool = model_option(SliceConfig, "encoding", "--encoding"),
    fusion: bool = model_option(SliceConfig, "fusion", "--fusion"),
    seed: int = model_option(SliceConfig, "seed"),
    slices: Annotated[
        Optional[Path], typer.Option(help="sliced dataset from `fullgraph slice` (default: cut the columns on the fly)")
    ] = None,
    reference: Annotated[
        bool,
        typer.Option(
            "--reference", help="every slice in this process with no exchange: the fast path for small graphs"
        ),
    ] = False,
    mpi: Mpi = False,
    hostfile: Hostfile = None,
    exchange: Exchange = DEFAULTS.exchange,
    port: Port = DEFAULTS.port,
    interface: Interface = DEFAULTS.interface,
    peer_timeout: PeerTimeout = DEFAULTS.peer_timeout_s,
    output: Annotated[Optional[Path], typer.Option("--output", "-o", help="write the result JSON")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="print the result as JSON")] = False,
) -> None:
    """Train SliceGCN: p ranks each run a GCN over the whole graph on their columns; the learner
    concatenates their outputs, classifies, and sends each its gradient. Reports the test metric at
    the best validation epoch (ROC-AUC for two classes, else accuracy), and per rank the bytes each
    way per epoch and where the time went.

    Example: fullgraph slicegcn train data/tolokers --parts 3 --encoding --epochs 500
    """
    try:
        config = SliceConfig(
            parts=parts,
            epochs=epochs,
            hidden=hidden,
            layers=layers,
            lr=lr,
            dropout=dropout,
            encoding=encoding,
            fusion=fusion,
            seed=seed,
        )
    except ValidationError as exc:
        raise usage_from_validation(exc) from None
    options = exchange_options(
        mpi=mpi, hostfile=hostfile, exchange=exchange, port=port, interface=interface, peer_timeout=peer_timeout
    )
    if reference and (mpi or options.exchange != DEFAULTS.exchange or slices is not None):
        raise UsageError("--reference runs every slice in this process: drop --mpi, --exchange and --slices")
    from foundation.progress import track  # torch loads only once the request is known to be good
    from fullgraph.slicegcn.mpi import train_mpi
    from fullgraph.slicegcn.training import EpochScore, train_local, train_reference

    if mpi:
        result = train_mpi(dataset, config, slices, hostfile=hostfile, exchange=options)
    else:
        bar = iter(track(range(config.epochs), "epochs", enabled=False if as_json else None))

        def step(_score: EpochScore) -> None:
            next(bar, None)

        result = (
            train_reference(dataset, config, on_epoch=step)
            if reference
            else train_local(dataset, config, slices, on_epoch=step, exchange=options)
        )
    report_result(result, output, as_json, _render)


def _render(result) -> None:
    c = result.config
    metric = "ROC-AUC" if result.metric == "roc_auc" else "accuracy"
    over = f" over {result.exchange}" if result.exchange != "mpi" else ""
    out.print(
        f"{result.variant}{over}, p = {c.parts}, {c.layers} layers, hidden {c.hidden}, {c.epochs} epochs: "
        f"test {metric} {result.test:.4f} at the best validation epoch {result.best_epoch} (val {result.val:.4f}); "
        f"{result.parameters:,} parameters; {result.seconds:.1f} s"
    )
    if not result.traffic:
        return
    table = Table(title="per rank, per epoch")
    for column in ("rank", "sent", "received", "compute s", "exchange s"):
        table.add_column(column, justify="right")
    times = {t.rank: t for t in result.times}
    for report in result.traffic:
        t = times.get(report.rank)
        name = "learner" if report.rank == c.parts else str(report.rank)
        table.add_row(
            name,
            f"{result.bytes_per_epoch(report.rank, 'sent') / 1e6:,.3f} MB",
            f"{result.bytes_per_epoch(report.rank, 'received') / 1e6:,.3f} MB",
            f"{t.compute_s / c.epochs:.4f}" if t else "-",
            f"{t.exchange_s / c.epochs:.4f}" if t else "-",
        )
    out.print(table)
    if result.exchange != "mpi":
        out.print(wire_table(result.exchange, result.traffic, master=c.parts, master_name="learner"))
