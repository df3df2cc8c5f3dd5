"""`fullgraph retexo volume|train`: distributed full-graph training over a partition, the standard
way or with RETEXO's lazy message passing, and the data volume each moves."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer
from pydantic import ValidationError
from rich.table import Table

from foundation.cli import emit_json, handle_errors, model_option, out, report_result, usage_from_validation
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
from fullgraph.retexo.config import TrainConfig

retexo_app = typer.Typer(
    help="Distributed full-graph training over a partition (`fullgraph partition`): standard or RETEXO.",
    no_args_is_help=True,
)
app.add_typer(retexo_app, name="retexo")

Partition = Annotated[Path, typer.Argument(help="partition directory (from `fullgraph partition`)")]
AsJson = Annotated[bool, typer.Option("--json", help="print the result as JSON")]


def _config(**fields) -> TrainConfig:
    try:
        return TrainConfig(**fields)
    except ValidationError as exc:
        raise usage_from_validation(exc) from None


def _gb(value: int) -> str:
    return f"{value / 1e9:,.3f} GB"


@retexo_app.command()
@handle_errors
def volume(
    partition: Partition,
    model: str = model_option(TrainConfig, "model"),
    hidden: int = model_option(TrainConfig, "hidden"),
    layers: int = model_option(TrainConfig, "layers"),
    heads: int = model_option(TrainConfig, "heads"),
    rounds: int = model_option(TrainConfig, "rounds"),
    as_json: AsJson = False,
) -> None:
    """Predict, before training, the bytes each procedure moves and their ratio gamma (RETEXO's Eq. 2)."""
    from contracts.datavolume import data_volume
    from fullgraph.partitioner import open_partition
    from fullgraph.retexo.volume import volume_inputs

    config = _config(model=model, hidden=hidden, layers=layers, heads=heads, rounds=rounds)
    meta = open_partition(partition)
    result = data_volume(
        volume_inputs(meta, config.model, hidden=config.hidden, layers=config.layers, heads=config.heads, rounds=rounds)
    )
    if as_json:
        emit_json(result)
        return
    table = Table(title=f"{meta.dataset}, {meta.parts} workers ({meta.method}), {model}, R = {rounds}")
    for column in ("procedure", "message passing", "gradient aggregation", "total"):
        table.add_column(column, justify="right")
    for name, v in (("standard", result.standard), ("RETEXO (lazy)", result.lazy)):
        table.add_row(name, _gb(v.message_passing), _gb(v.aggregation), _gb(v.total))
    out.print(table)
    i = result.inputs
    out.print(
        f"gamma = {result.gamma:.2f}  (B = {i.boundary_rows:,} halo rows, H_0 = {i.feature_bytes:,} B, "
        f"M = {i.model_bytes:,} B, C = {sum(i.classifier_bytes):,} B)"
    )


@retexo_app.command()
@handle_errors
def train(
    partition: Partition,
    method: str = model_option(TrainConfig, "method"),
    model: str = model_option(TrainConfig, "model"),
    hidden: int = model_option(TrainConfig, "hidden"),
    layers: int = model_option(TrainConfig, "layers"),
    heads: int = model_option(TrainConfig, "heads"),
    rounds: int = model_option(TrainConfig, "rounds"),
    patience: Optional[int] = model_option(TrainConfig, "patience"),
    min_rounds: int = model_option(TrainConfig, "min_rounds"),
    lr: float = model_option(TrainConfig, "lr"),
    dropout: float = model_option(TrainConfig, "dropout"),
    seed: int = model_option(TrainConfig, "seed"),
    normalize: bool = model_option(TrainConfig, "normalize", "--normalize"),
    aggregate_cache: bool = model_option(TrainConfig, "aggregate_cache", "--aggregate-cache/--no-aggregate-cache"),
    split: str = model_option(TrainConfig, "split"),
    train_fraction: float = model_option(TrainConfig, "train_fraction"),
    val_fraction: float = model_option(TrainConfig, "val_fraction"),
    mpi: Mpi = False,
    hostfile: Hostfile = None,
    exchange: Exchange = DEFAULTS.exchange,
    port: Port = DEFAULTS.port,
    interface: Interface = DEFAULTS.interface,
    peer_timeout: PeerTimeout = DEFAULTS.peer_timeout_s,
    output: Annotated[Optional[Path], typer.Option("--output", "-o", help="write the result JSON")] = None,
    as_json: AsJson = False,
) -> None:
    """Train on a partition: every worker a full-batch pass over its part per round, a master
    averaging gradients. Reports accuracy, the bytes each rank sent and received by kind, and
    Eq. 2's prediction beside them.

    Example: fullgraph partition data/cora parts/cora -n 2 && fullgraph retexo train parts/cora --model sage
    """
    config = _config(
        method=method,
        model=model,
        hidden=hidden,
        layers=layers,
        heads=heads,
        rounds=rounds,
        patience=patience,
        min_rounds=min_rounds,
        lr=lr,
        dropout=dropout,
        seed=seed,
        normalize=normalize,
        aggregate_cache=aggregate_cache,
        split=split,
        train_fraction=train_fraction,
        val_fraction=val_fraction,
    )
    options = exchange_options(
        mpi=mpi, hostfile=hostfile, exchange=exchange, port=port, interface=interface, peer_timeout=peer_timeout
    )
    from foundation.progress import track  # torch loads only once the request is known to be good
    from fullgraph.partitioner import open_partition
    from fullgraph.retexo.mpi import train_mpi
    from fullgraph.retexo.training import train_local

    if mpi:
        result = train_mpi(partition, config, hostfile=hostfile, exchange=options)
    else:
        open_partition(partition)  # a bad path fails before any thread starts
        stages = 1 if config.method == "standard" else config.layers
        bar = iter(track(range(stages * config.rounds), "training rounds", enabled=False if as_json else None))
        result = train_local(partition, config, on_round=lambda _stage, _round: next(bar, None), exchange=options)
    report_result(result, output, as_json, _render)


def _render(result) -> None:
    from fullgraph.exchange.kinds import KINDS

    c = result.config
    patience = f", patience {c.patience} after {c.min_rounds}" if c.patience else ""
    cached = ", frozen aggregates cached" if c.caches_aggregates else ""
    stages = Table(
        title=f"{c.method} {c.model} on {result.dataset}, {result.workers} workers, R = {c.rounds}{patience}{cached}"
    )
    for column in ("stage", "rounds", "best round", "val acc", "test acc", "seconds"):
        stages.add_column(column, justify="right")
    for s in result.stages:
        name = "all layers" if s.stage == 0 else f"layer {s.stage}"
        stages.add_row(
            name,
            str(len(s.rounds)),
            str(s.best_round),
            f"{s.best_val_acc:.4f}",
            f"{s.test_acc:.4f}",
            f"{s.seconds:.1f}",
        )
    rounds_run = {s.stage: len(s.rounds) for s in result.stages}
    out.print(stages)
    kinds = Table(title="bytes sent + received, summed over workers, by stage, layer and kind")
    for column in ("stage", "layer", "kind", "bytes", "per round"):
        kinds.add_column(column, justify="left" if column == "kind" else "right")
    totals: dict[tuple[int, int, str], int] = {}
    for t in result.traffic[: result.workers]:
        for e in t.entries:
            key = (e.stage, e.layer, e.kind)
            totals[key] = totals.get(key, 0) + e.sent + e.received
    for (stage, layer, kind), total in sorted(
        totals.items(), key=lambda item: (item[0][0], item[0][1], KINDS.index(item[0][2]))
    ):
        once = kind == "features" or (kind == "representations" and c.method == "retexo")
        per_round = "once" if once else f"{total // rounds_run[stage]:,}"
        kinds.add_row(
            "all" if stage == 0 else str(stage), str(layer) if layer else "model", kind, f"{total:,}", per_round
        )
    out.print(kinds)
    expected = result.predicted.standard if c.method == "standard" else result.predicted.lazy
    out.print(
        f"test accuracy {result.test_acc:.4f}; measured {_gb(result.measured.total)} vs Eq. 2's "
        f"{_gb(expected.total)} (x{result.measured_over_predicted:.4f}); gamma (standard / RETEXO) "
        f"{result.predicted.gamma:.2f}; {result.seconds:.1f} s, {result.message_passing_seconds:.2f} s in exchanges"
    )
    if result.exchange != "mpi":
        out.print(wire_table(result.exchange, result.traffic, master=result.workers))
