"""`remotegnn slice` and `remotegnn slicegcn train`: feature-sliced training (SliceGCN)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer
from pydantic import ValidationError
from rich.table import Table

from foundation.cli import emit_json, handle_errors, out, usage_from_validation
from remotegnn.cli.app import app, report_result

slicegcn_app = typer.Typer(
    help="Feature-sliced full-graph training: each rank one column slice and the whole graph (SliceGCN).",
    no_args_is_help=True,
)
app.add_typer(slicegcn_app, name="slicegcn")

Dataset = Annotated[Path, typer.Argument(help="dataset directory (labels and train/val/test splits)")]
Parts = Annotated[int, typer.Option("--parts", "-p", help="p: column slices, one rank (memory machine) each")]


@app.command(name="slice")
@handle_errors
def slice_dataset(
    dataset: Dataset,
    dst: Annotated[Path, typer.Argument(help="directory to write part-0 .. part-(p-1) and slices.json into")],
    parts: Parts = 2,
    overwrite: Annotated[bool, typer.Option("--overwrite", help="replace DST if it exists")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="print slices.json")] = False,
) -> None:
    """Cut the features into p column slices (the SliceGCN paper's Algorithm 1): each part is a
    dataset with the whole graph and its columns; the last slice overlaps its neighbour rather
    than being short.

    Example: remotegnn slice data/tolokers slices/tolokers --parts 3
    """
    from remotegnn.slicegcn.slicing import write_slices
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
    parts: Parts = 2,
    epochs: Annotated[int, typer.Option(help="full-batch epochs")] = 500,
    hidden: Annotated[int, typer.Option(help="total width; each slice's GCN gets ceil(hidden / p)")] = 128,
    layers: Annotated[int, typer.Option(help="L: layers of each slice's GCN")] = 4,
    lr: Annotated[float, typer.Option(help="Adam's learning rate (cosine annealing over the epochs)")] = 1e-3,
    dropout: Annotated[float, typer.Option(help="dropout between layers and in the classifier")] = 0.5,
    encoding: Annotated[bool, typer.Option("--encoding", help="slice encoding (the paper's -SE)")] = False,
    fusion: Annotated[bool, typer.Option("--fusion", help="feature fusion (the paper's -FF)")] = False,
    seed: Annotated[int, typer.Option(help="initial weights and dropout")] = 0,
    slices: Annotated[
        Optional[Path], typer.Option(help="sliced dataset from `remotegnn slice` (default: cut the columns on the fly)")
    ] = None,
    mode: Annotated[
        str,
        typer.Option(
            help="reference (one process, no exchange), threads (ranks as threads, bytes counted) or mpi "
            "(one mpiexec job: p ranks and the learner)"
        ),
    ] = "threads",
    hostfile: Annotated[
        Optional[Path], typer.Option(help="with --mode mpi: Open MPI hostfile, slice ranks first, the learner last")
    ] = None,
    output: Annotated[Optional[Path], typer.Option("--output", "-o", help="write the result JSON")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="print the result as JSON")] = False,
) -> None:
    """Train SliceGCN: p ranks each run a GCN over the whole graph on their columns; the learner
    concatenates their outputs, classifies, and sends each its gradient. Reports the test metric at
    the best validation epoch (ROC-AUC for two classes, else accuracy), and per rank the bytes each
    way per epoch and where the time went.

    Example: remotegnn slicegcn train data/tolokers --parts 3 --encoding --epochs 500
    """
    from remotegnn.progress import track
    from remotegnn.slicegcn.mpi import train_mpi
    from remotegnn.slicegcn.training import SliceConfig, train_local, train_reference

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
    if mode not in ("reference", "threads", "mpi"):
        raise typer.BadParameter(f"{mode}: choose reference, threads or mpi", param_hint="--mode")
    if mode == "mpi":
        result = train_mpi(dataset, config, slices, hostfile=hostfile)
    else:
        bar = iter(track(range(config.epochs), "epochs", enabled=False if as_json else None))
        step = lambda _score: next(bar, None)  # noqa: E731 - the progress callback, nothing more
        result = (
            train_reference(dataset, config, on_epoch=step)
            if mode == "reference"
            else train_local(dataset, config, slices, on_epoch=step)
        )
    report_result(result, output, as_json, _render)


def _render(result) -> None:
    c = result.config
    metric = "ROC-AUC" if result.metric == "roc_auc" else "accuracy"
    out.print(
        f"{result.variant}, p = {c.parts}, {c.layers} layers, hidden {c.hidden}, {c.epochs} epochs: test {metric} "
        f"{result.test:.4f} at the best validation epoch {result.best_epoch} (val {result.val:.4f}); "
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
