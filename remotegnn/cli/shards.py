"""`remotegnn shards`: which feature rows each memory machine serves, and what each one's copy holds."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Final, cast

import typer
from rich.table import Table

from contracts.shards import DEFAULT_LAYOUT, SHARD_LAYOUTS, ShardLayoutName
from foundation.cli import emit_json, handle_errors, out
from foundation.errors import UsageError
from foundation.fileio import read_model
from remotegnn.cli.app import app

GB: Final = 1e9


def gb(size: int) -> str:
    """Bytes in GB: two decimals, or two significant digits below 0.01 GB (a small test graph)."""
    value = size / GB
    return f"{value:,.2f}" if value >= 0.01 or value == 0 else f"{value:.2g}"


@app.command()
@handle_errors
def shards(
    dataset: Annotated[Path, typer.Argument(help="dataset directory (only its meta.json is read)")],
    memory_hosts: Annotated[
        int, typer.Option("--memory-hosts", help="memory machines K the rows are dealt to (`launch --memory`)")
    ],
    layout: Annotated[
        str,
        typer.Option(
            help="striped: blocks of about 64 MiB of the feature file dealt in turn (hot rows spread over every "
            "machine, each reads only its own runs); range: one contiguous block each; modulo: row v on v % K"
        ),
    ] = DEFAULT_LAYOUT,
    as_json: Annotated[bool, typer.Option("--json", help="print the manifest (memorybridge.shards) as JSON")] = False,
) -> None:
    """Show how a dataset's feature rows are dealt to K memory machines: each machine's rows, the
    runs of the feature file they make, and what its copy holds (the structure files whole, its
    rows of the features), which `remotegnn fetch --shard I --shards K` copies and `remotegnn serve
    --layout` serves.

    Example: remotegnn shards data/papers100M --memory-hosts 4
    """
    from contracts.dataset import DatasetMeta
    from remotegnn.store.part import manifest_of

    if memory_hosts < 1:
        raise UsageError(f"--memory-hosts: give the number of memory machines, at least 1 (got {memory_hosts})")
    if layout not in SHARD_LAYOUTS:
        raise UsageError(f"--layout: {layout!r} is not a layout; give one of {', '.join(SHARD_LAYOUTS)}")
    meta = read_model(dataset / "meta.json", DatasetMeta, "the dataset's meta.json")
    manifest = manifest_of(meta, cast(ShardLayoutName, layout), memory_hosts)
    if as_json:
        emit_json(manifest)
        return
    block = manifest.layout.block_rows
    table = Table(title=f"{meta.name}: {layout} over {memory_hosts} memory machine{'s' if memory_hosts > 1 else ''}")
    for name in ("machine", "rows", "runs", "features GB", "holds GB"):
        table.add_column(name, justify="right")
    for entry in manifest.shards:
        table.add_row(
            str(entry.index),
            f"{entry.rows:,}",
            f"{entry.runs:,}",
            gb(entry.feature_bytes),
            gb(entry.feature_bytes + manifest.structure_bytes),
        )
    out.print(table)
    out.print(
        f"{meta.num_nodes:,} rows of {meta.row_bytes:,} bytes, dealt in blocks of {block:,} rows "
        f"({block * meta.row_bytes / 2**10:,.1f} KiB), block b to machine b % {memory_hosts}",
        soft_wrap=True,
    )
    out.print(
        f"each holds the structure whole ({gb(manifest.structure_bytes)} GB) and its rows of the features; "
        f"a whole copy is {gb(manifest.structure_bytes + meta.num_nodes * meta.row_bytes)} GB",
        soft_wrap=True,
    )
