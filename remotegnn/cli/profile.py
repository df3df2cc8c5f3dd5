"""`remotegnn profile`: degree skew and measured cache curves, as the planner's profile JSON."""

from __future__ import annotations

import io
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Optional

import typer
from rich.table import Table

from contracts.workload import DEFAULT_BATCH_SIZE, DEFAULT_FANOUTS
from foundation.cli import emit_json, handle_errors, handle_interrupts, int_list_option, out
from foundation.fileio import atomic_write_bytes, model_json
from foundation.partial import interrupts_held, note_kept
from remotegnn.cli.app import app
from remotegnn.store import GraphDataset

if TYPE_CHECKING:
    from remotegnn.profile import ProfileResult

SHOWN_FRACTIONS = (0.05, 0.1, 0.2, 0.3, 0.5)


@app.command()
@handle_errors
@handle_interrupts
def profile(
    dataset: Annotated[Path, typer.Argument(help="dataset directory")],
    fanout: Annotated[
        str, typer.Option(help="neighbours per hop, -1 = all (cache curves and a batch shape)")
    ] = ",".join(map(str, DEFAULT_FANOUTS)),
    shape_fanouts: Annotated[
        Optional[list[str]],
        typer.Option("--shape-fanouts", help="also measure the batch shape for these fanouts, e.g. 5,5; repeatable"),
    ] = None,
    split: Annotated[str, typer.Option(help="split whose nodes are the training seeds")] = "train",
    batch_size: Annotated[int, typer.Option(help="seeds per mini-batch")] = DEFAULT_BATCH_SIZE,
    epochs: Annotated[int, typer.Option(help="sampled epochs to measure hit rates on")] = 1,
    presample_epochs: Annotated[int, typer.Option(help="sampled epochs presampling learns from")] = 1,
    seed: Annotated[int, typer.Option(help="random seed")] = 0,
    output: Annotated[
        Optional[Path],
        typer.Option("--output", "-o", help="write the profile JSON (for planner recommend --dataset-file)"),
    ] = None,
    plot: Annotated[Optional[Path], typer.Option(help="write hit rate vs cache size as a PNG")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="print the profile JSON")] = False,
) -> None:
    """Measure degree skew, hit rate vs cache size per policy and mean batch shapes, and write the planner's profile."""
    from foundation.errors import UsageError
    from remotegnn.profile import profile_dataset

    if batch_size <= 0 or epochs <= 0 or presample_epochs <= 0:
        raise UsageError("--batch-size, --epochs and --presample-epochs must be positive")
    result = profile_dataset(
        GraphDataset.open(dataset),
        fanouts=int_list_option(fanout, "--fanout"),
        shape_fanouts=[int_list_option(f, "--shape-fanouts") for f in shape_fanouts or ()],
        split=split,
        batch_size=batch_size,
        epochs=epochs,
        presample_epochs=presample_epochs,
        seed=seed,
    )
    prof = result.profile
    files: dict[Path, bytes] = {}
    if output:
        files[output] = model_json(prof).encode()
    if plot:
        files[plot] = _plot_png(prof)  # drawn before either file is written
    # Both files or neither, so an interrupt's last line is true: it waits for these two small
    # writes, and one that comes after them says the files are kept.
    written = False
    try:
        with interrupts_held():
            for path, data in files.items():
                atomic_write_bytes(path, data)
            written = True
        if as_json:
            emit_json(prof)
        else:
            _show(result, fanout, batch_size, output)
    except KeyboardInterrupt as exc:
        if written:
            for path in files:
                note_kept(exc, path)
        raise


def _show(result: ProfileResult, fanout: str, batch_size: int, output: Path | None) -> None:
    """The profile as tables, and where it was written."""
    prof = result.profile
    skew = Table(title=f"{prof.name}: share of edge endpoints held by the top nodes by degree")
    for fraction in result.skew:
        skew.add_column(f"top {fraction:.0%}", justify="right")
    skew.add_row(*(f"{share:.1%}" for share in result.skew.values()))
    out.print(skew)
    hits = Table(title=f"hit rate vs cache size ({prof.num_train:,} seeds, fanout {fanout})")
    hits.add_column("cache (share of rows)", justify="right")
    for policy in prof.cache_curves:
        hits.add_column(policy, justify="right")
    curves = {policy: dict(points) for policy, points in prof.cache_curves.items()}
    for fraction in SHOWN_FRACTIONS:
        hits.add_row(f"{fraction:.0%}", *(f"{curves[p][fraction]:.1%}" for p in curves))
    out.print(hits)
    shapes = Table(title=f"mean batch shape (batch {batch_size}): distinct nodes per hop, sampled edges")
    for column in ("fanouts", "nodes per hop", "nodes", "edges"):
        shapes.add_column(column, justify="right")
    for m in prof.batch_shapes:
        shapes.add_row(
            "-".join(map(str, m.fanouts)),
            " + ".join(f"{n:,.0f}" for n in m.nodes_per_hop),
            f"{sum(m.nodes_per_hop):,.0f}",
            f"{sum(m.edges_per_hop):,.0f}",
        )
    out.print(shapes)
    if output:
        out.print(
            f"profile written to {output}; use it with `planner recommend --dataset-file {output}`", highlight=False
        )


def _plot_png(prof) -> bytes:
    """Hit rate vs cache size per policy, as a PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5.5, 4))
    for policy, points in prof.cache_curves.items():
        xs, ys = zip(*[(0.0, 0.0), *points])
        ax.plot([100 * x for x in xs], [100 * y for y in ys], marker="o", markersize=3, label=policy)
    ax.set_xlabel("cache size (% of feature rows)")
    ax.set_ylabel("hit rate (%)")
    ax.set_title(f"{prof.name}: feature-cache hit rate")
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    png = io.BytesIO()
    fig.savefig(png, format="png", dpi=120)
    plt.close(fig)
    return png.getvalue()
