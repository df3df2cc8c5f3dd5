"""`remotegnn info`: what a dataset holds, and (with --verify) whether its files are intact."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from foundation.cli import emit_json, handle_errors, out
from remotegnn.cli.app import app
from remotegnn.store import GraphDataset


@app.command()
@handle_errors
def info(
    dataset: Annotated[Path, typer.Argument(help="dataset directory")],
    verify: Annotated[
        bool, typer.Option("--verify", help="recompute every file's checksum (reads the whole dataset)")
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="print meta.json")] = False,
) -> None:
    """Show a dataset's sizes, splits and files; --verify checks every checksum."""
    ds = GraphDataset.open(dataset, verify=verify)
    meta = ds.meta
    if as_json:
        emit_json(meta)
        return
    table = Table(title=f"{meta.name} ({dataset})", show_header=False)
    rows = [
        ("nodes", f"{meta.num_nodes:,}"),
        ("edges (directed, stored)", f"{meta.num_edges:,}"),
        ("undirected", str(meta.undirected)),
        ("features", f"{meta.feature_dim} x {meta.feature_dtype}"),
        ("classes", str(meta.num_classes)),
        ("index dtype", meta.index_dtype),
        ("node order", meta.node_order or "id order"),
        ("splits", ", ".join(f"{s} {len(ds.split(s)):,}" for s in meta.splits) or "none"),
        ("copy", _copy(ds)),
        ("bytes on disk", f"{_held_bytes(ds):,}"),
        ("checksums", "verified" if verify else "not checked (--verify)"),
        ("source", meta.source),
    ]
    for key, value in rows:
        table.add_row(key, value)
    out.print(table)


def _copy(ds: GraphDataset) -> str:
    """Whole, or which part a staged copy holds (``remotegnn fetch --shard``, ``shard.json``)."""
    manifest = ds.shard_manifest()
    if manifest is None:
        return "whole"
    if manifest.index is None:
        return "the structure alone: no feature rows (they read as zeros)"
    entry = manifest.shards[manifest.index]
    return (
        f"part {manifest.index} of {manifest.layout.count} ({manifest.layout.layout}): {entry.rows:,} feature rows "
        "in their places, the others read as zeros"
    )


def _held_bytes(ds: GraphDataset) -> int:
    """What the copy holds: every file, or for a part the structure and its bytes of the features."""
    from remotegnn.store.part import held_ranges, structure_bytes, total

    manifest = ds.shard_manifest()
    if manifest is None:
        return sum(f.bytes for f in ds.meta.files.values())
    return structure_bytes(ds.meta) + total(held_ranges(manifest, ds.features_offset))
