"""`fullgraph partition`: split a dataset into workers' parts for distributed full-graph training."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from foundation.cli import emit_json, handle_errors, handle_interrupts, out
from fullgraph.cli.app import app
from remotegnn.store import GraphDataset


@app.command()
@handle_errors
@handle_interrupts
def partition(
    dataset: Annotated[Path, typer.Argument(help="dataset directory to split")],
    dst: Annotated[Path, typer.Argument(help="partition directory to write (part-P/ datasets, boundary files)")],
    parts: Annotated[int, typer.Option("--parts", "-n", help="workers, one part each")] = 2,
    method: Annotated[
        str,
        typer.Option(
            help="random: a seeded balanced deal (placement imposed, the RETEXO paper's setting); "
            "metis: METIS's balanced min-cut partition (placement chosen, fewer boundary nodes)"
        ),
    ] = "random",
    seed: Annotated[int, typer.Option(help="seed of the random deal, and METIS's")] = 0,
    overwrite: Annotated[bool, typer.Option("--overwrite", help="replace DST if it exists")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="print partition.json")] = False,
) -> None:
    """Split DATASET into --parts workers' parts: inner nodes, their in-edges, and the boundary lists.

    Each part is a dataset (DST/part-P) holding only what its worker may see; boundary nodes'
    rows arrive in training's exchanges. Prints each part's size and what it exchanges.
    Train on it with `fullgraph retexo train DST`.
    """
    from foundation.errors import UsageError
    from fullgraph.partitioner import write_partition

    if method not in ("random", "metis"):
        raise UsageError(f"--method {method!r}: use random or metis")
    meta = write_partition(GraphDataset.open(dataset), dst, parts, method, seed=seed, overwrite=overwrite)  # type: ignore[arg-type]  # checked above
    if as_json:
        emit_json(meta)
        return
    table = Table(title=f"{meta.dataset} in {meta.parts} parts ({meta.method}) -> {dst}")
    for column in ("part", "inner nodes", "halo nodes (B)", "shared nodes", "in-edges", "cut in-edges", "splits"):
        table.add_column(column, justify="left" if column == "splits" else "right")
    for q in meta.quality:
        splits = ", ".join(f"{name} {count:,}" for name, count in q.split_nodes.items()) or "none"
        table.add_row(
            str(q.part),
            f"{q.inner_nodes:,}",
            f"{q.halo_nodes:,}",
            f"{q.shared_nodes:,}",
            f"{q.edges:,}",
            f"{q.cut_edges:,}",
            splits,
        )
    out.print(table)
    out.print(
        f"cut edges: {meta.cut_edges:,} of {meta.num_edges:,} ({meta.cut_fraction:.1%}); "
        f"one exchange moves {meta.boundary_rows:,} boundary rows"
    )
