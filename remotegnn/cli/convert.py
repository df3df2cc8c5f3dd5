"""`remotegnn convert SRC DST` (a public graph format -> a dataset) and `remotegnn export DATASET OUT.pt`
(a dataset -> PyG).

The PyG converter is imported only when used, so the other formats and commands do not pay for
(or need) torch.
"""

from __future__ import annotations

import contextlib
import warnings
from pathlib import Path
from typing import Annotated, NotRequired, Optional, TypedDict

import typer

from foundation.cli import emit_json, err, handle_errors, handle_interrupts, out
from foundation.errors import NotFoundError, UsageError
from foundation.partial import PartialDirectory
from remotegnn.cli.app import app
from remotegnn.cli.reorder import ORDER_HELP
from remotegnn.convert import (
    ConvertResult,
    ConvertWarning,
    PolicyOverrides,
    from_edgelist,
    from_igb,
    from_mag240m,
    from_musae,
    from_npz,
    from_ogb,
    from_planetoid,
    igb,
    mag240m,
    musae,
    ogb,
    planetoid,
    pyg_partition,
)
from remotegnn.convert._common import Choice, parse_ratios
from remotegnn.errors import ConvertError
from remotegnn.store import GraphDataset
from remotegnn.store.orders import ORDERS
from remotegnn.store.reorder import check_order, reorder

FORMATS = ("pyg", "pyg-partition", "planetoid", "musae", "npz", "edgelist", "ogb", "igb", "mag240m")
SUFFIX_FORMATS = {
    ".pt": "pyg",
    ".pth": "pyg",
    ".npz": "npz",
    ".csv": "edgelist",
    ".tsv": "edgelist",
    ".txt": "edgelist",
    ".edges": "edgelist",
    ".el": "edgelist",
}
# Options that only some formats read; giving one to another format is an error, not silently ignored.
FORMAT_OPTIONS = {
    "--split-index": {"pyg", "npz"},
    "--weight-attr": {"pyg"},
    "--split-ratios": {"musae", "npz", "edgelist"},
    "--seed": {"musae", "npz", "edgelist"},
    "--label-column": {"musae"},
    "--split-dir": {"ogb", "mag240m"},
    "--label-classes": {"igb"},
    **{
        flag: {"edgelist"} for flag in ("--delimiter", "--header", "--columns", "--num-nodes", "--features", "--labels")
    },
}
CHOICES: tuple[Choice, ...] = ("keep", "drop", "error")
DELIMITERS = {"tab": "\t", "\\t": "\t", "space": " ", "whitespace": None}


class _Common(TypedDict):
    """The options every converter takes."""

    policy: PolicyOverrides
    dtype: str | None
    overwrite: bool


class _SplitOptions(TypedDict):
    """The options of the converters that can draw a random split."""

    seed: int
    split_ratios: NotRequired[tuple[float, float, float] | None]  # only when given: musae has its own default


def detect_format(src: Path) -> str:
    """A folder in one of the published layouts (OGB, MAG240M, IGB, Planetoid, MUSAE), else the
    file's suffix."""
    if src.is_dir():
        for fmt, module in (
            ("ogb", ogb),
            ("mag240m", mag240m),
            ("igb", igb),
            ("planetoid", planetoid),
            ("musae", musae),
            ("pyg-partition", pyg_partition),
        ):
            if module.available(src):
                return fmt
        raise UsageError(
            f"{src}: no OGB (raw/data.npz, raw/edge.csv.gz), MAG240M, IGB (processed/paper), Planetoid "
            "(ind.NAME.*), MUSAE (*_edges.csv) or PyG partition (META.json, part_0/) files found; pass --format"
        )
    if not src.exists():
        raise ConvertError(f"{src} does not exist")
    if src.suffix.lower() not in SUFFIX_FORMATS:
        raise UsageError(f"cannot tell the format of {src} from its suffix; pass --format ({', '.join(FORMATS)})")
    return SUFFIX_FORMATS[src.suffix.lower()]


@app.command()
@handle_errors
@handle_interrupts
def convert(
    src: Annotated[
        Path,
        typer.Argument(
            help="a .pt (PyG), .npz or edge-list file, or an OGB, IGB, MAG240M, Planetoid or MUSAE dataset folder"
        ),
    ],
    dst: Annotated[Path, typer.Argument(help="the dataset directory to create")],
    fmt: Annotated[
        Optional[str], typer.Option("--format", "-f", help=f"{'|'.join(FORMATS)} (default: from SRC)")
    ] = None,
    name: Annotated[
        Optional[str],
        typer.Option(
            help="dataset name; in a Planetoid or MUSAE folder, which graph (cora, citeseer; facebook, musae_DE)"
        ),
    ] = None,
    self_loops: Annotated[
        Optional[str], typer.Option("--self-loops", help="keep|drop|error (default drop; pyg keep)")
    ] = None,
    duplicates: Annotated[Optional[str], typer.Option(help="keep|drop|error (default drop; pyg keep)")] = None,
    undirected: Annotated[
        Optional[bool],
        typer.Option(
            "--undirected/--directed",
            help="store each edge both ways (default: planetoid, musae and npz 'edges' yes; others as given)",
            show_default=False,
        ),
    ] = None,
    dtype: Annotated[
        Optional[str], typer.Option(help="feature dtype float32|float16 (default: the source's, else float32)")
    ] = None,
    split_index: Annotated[
        Optional[int], typer.Option(help="pyg, npz: which of several stored masks (default 0)")
    ] = None,
    split_ratios: Annotated[
        Optional[str],
        typer.Option(
            help="musae, npz, edgelist: random TRAIN,VAL,TEST split of "
            "the labelled nodes, or none (musae default 0.6,0.2,0.2; else none)"
        ),
    ] = None,
    seed: Annotated[Optional[int], typer.Option(help="seed of the random split (default 0)")] = None,
    weight_attr: Annotated[
        Optional[str],
        typer.Option(help="pyg: the edge attribute to keep as sampling weights (the loader's weight_attr)"),
    ] = None,
    label_column: Annotated[Optional[str], typer.Option(help="musae: the target file's label column")] = None,
    split_dir: Annotated[
        Optional[Path],
        typer.Option(
            help="ogb, mag240m: a folder of train/valid/test node ids (.csv.gz, .csv or .npy) to use as the split"
        ),
    ] = None,
    label_classes: Annotated[
        Optional[int], typer.Option(help="igb: label papers with 19 (default) or 2983 classes")
    ] = None,
    delimiter: Annotated[
        Optional[str], typer.Option(help="edgelist: field delimiter, e.g. ',' or tab (default: sniffed)")
    ] = None,
    header: Annotated[
        Optional[bool],
        typer.Option(
            "--header/--no-header", help="edgelist: whether line one is a header (default: sniffed)", show_default=False
        ),
    ] = None,
    columns: Annotated[
        Optional[str], typer.Option(help="edgelist: source,target columns by position or header name (default 0,1)")
    ] = None,
    num_nodes: Annotated[Optional[int], typer.Option(help="edgelist: node count (default max id + 1)")] = None,
    features: Annotated[
        Optional[Path], typer.Option(help="edgelist: features, .npy [N, F] or a text table, row i = node i")
    ] = None,
    labels: Annotated[Optional[Path], typer.Option(help="edgelist: labels, .npy [N] or one value per line")] = None,
    order: Annotated[
        Optional[str], typer.Option(help=f"store the nodes in a locality order: {'|'.join(ORDERS)}; {ORDER_HELP}")
    ] = None,
    overwrite: Annotated[bool, typer.Option("--overwrite", help="replace DST if it exists")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="print the result as JSON")] = False,
) -> None:
    """Convert a graph into a RemoteGNN dataset (atomically: on any error nothing is left at DST)."""
    if order is not None:
        check_order(order)
        if dst.exists() and not overwrite:
            raise UsageError(f"{dst} already exists; pass --overwrite to replace it, or choose another path")
    fmt = detect_format(src) if fmt is None else fmt.lower()
    if fmt not in FORMATS:
        raise NotFoundError("format", fmt, FORMATS)
    given = {
        "--split-index": split_index,
        "--weight-attr": weight_attr,
        "--split-ratios": split_ratios,
        "--seed": seed,
        "--label-column": label_column,
        "--split-dir": split_dir,
        "--label-classes": label_classes,
        "--delimiter": delimiter,
        "--header": header,
        "--columns": columns,
        "--num-nodes": num_nodes,
        "--features": features,
        "--labels": labels,
    }
    for flag, value in given.items():
        if value is not None and fmt not in FORMAT_OPTIONS[flag]:
            raise UsageError(
                f"{flag} does not apply to --format {fmt} (only {', '.join(sorted(FORMAT_OPTIONS[flag]))})"
            )
    policy = PolicyOverrides(_choice(self_loops, "--self-loops"), _choice(duplicates, "--duplicates"), undirected)
    if fmt == "mag240m" and policy != PolicyOverrides():
        raise UsageError(
            "--self-loops, --duplicates and --undirected do not apply to --format mag240m: "
            "each edge type is stored as published, in its own range of edge ids"
        )
    common: _Common = {"policy": policy, "dtype": dtype, "overwrite": overwrite}
    split_opts: _SplitOptions = {"seed": seed or 0}
    if split_ratios is not None:
        split_opts["split_ratios"] = parse_ratios(split_ratios)
    target = dst
    with contextlib.ExitStack() as cleanup:
        if order is not None:  # converted beside DST, then reordered into it
            dst = cleanup.enter_context(PartialDirectory(dst)).path / "data"
        cleanup.enter_context(warnings.catch_warnings())
        warnings.simplefilter("ignore", ConvertWarning)  # printed below from the result instead
        if fmt == "pyg":
            result = _from_pyg_file(src, dst, name, split_index or 0, weight_attr, common)
        elif fmt == "pyg-partition":
            _pyg()  # a clear error where torch or PyG is missing
            result = pyg_partition.from_pyg_partition(src, dst, name=name, **common)
        elif fmt == "planetoid":
            result = from_planetoid(src, dst, name=name, **common)
        elif fmt == "musae":
            result = from_musae(src, dst, name=name, label_column=label_column, **split_opts, **common)
        elif fmt == "ogb":
            result = from_ogb(src, dst, name=name, split_dir=split_dir, **common)
        elif fmt == "igb":
            result = from_igb(src, dst, name=name, label_classes=label_classes or 19, **common)
        elif fmt == "mag240m":
            result = from_mag240m(src, dst, name=name, split_dir=split_dir, dtype=dtype, overwrite=overwrite)
        elif fmt == "npz":
            result = from_npz(src, dst, name=name, split_index=split_index or 0, **split_opts, **common)
        else:
            result = from_edgelist(
                src,
                dst,
                name=name,
                delimiter=_delimiter(delimiter),
                header=header,
                columns=[c.strip() for c in columns.split(",")] if columns else (0, 1),
                num_nodes=num_nodes,
                features=features,
                labels=labels,
                **split_opts,
                **common,
            )
        if order is not None:
            meta = reorder(GraphDataset.open(dst), target, order, overwrite=overwrite).meta
            size = sum(entry.bytes for entry in meta.files.values())
            result = result.model_copy(update={"path": str(target), "meta": meta, "bytes": size})
    for note in result.warnings:
        err.print(f"[yellow]warning:[/] {note}", highlight=False, soft_wrap=True)
    if as_json:
        emit_json(result)
        return
    _print_summary(result)


@app.command()
@handle_errors
@handle_interrupts
def export(
    dataset: Annotated[Path, typer.Argument(help="a dataset directory")],
    dest: Annotated[Path, typer.Argument(metavar="OUT", help="the file to write, e.g. graph.pt")],
    fmt: Annotated[str, typer.Option("--format", "-f", help="pyg: a .pt file holding Data.to_dict()")] = "pyg",
    overwrite: Annotated[bool, typer.Option("--overwrite", help="replace OUT if it exists")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="print the result as JSON")] = False,
) -> None:
    """Write a dataset back out as a PyG graph (x, edge_index in original order, y, split masks).

    Load it with Data.from_dict(torch.load(OUT, weights_only=True)).
    """
    if fmt.lower() != "pyg":
        raise NotFoundError("export format", fmt, ["pyg"])
    save_pyg = _pyg().save_pyg
    result = save_pyg(dataset, dest, overwrite=overwrite)
    if as_json:
        emit_json(result)
        return
    out.print(
        f"Exported {dataset} -> {result.path} ({_size(result.bytes)}): {result.num_nodes:,} nodes, "
        f"{result.num_edges:,} edges; {', '.join(result.keys)}",
        highlight=False,
    )


def _from_pyg_file(
    src: Path, dst: Path, name: str | None, split_index: int, weight_attr: str | None, common: _Common
) -> ConvertResult:
    pyg = _pyg()
    data = pyg.load_pyg(src)
    return pyg.from_pyg(
        data, dst, name=name or src.stem, split_index=split_index, source=src.name, weight_attr=weight_attr, **common
    )


def _pyg():
    try:
        from remotegnn.convert import pyg
    except ImportError as exc:
        raise UsageError(
            f"the PyG format needs torch and torch_geometric ({exc}); install them with pip install 'memorybridge[pyg]'"
        ) from None
    return pyg


def _choice(value: str | None, flag: str) -> Choice | None:
    if value is None:
        return None
    for choice in CHOICES:
        if value == choice:
            return choice
    raise UsageError(f"{flag} {value!r}: use one of {', '.join(CHOICES)}")


def _delimiter(value: str | None) -> str | None:
    if value is None:
        return None
    return DELIMITERS.get(value.lower(), value)


def _size(n: int) -> str:
    units = ("B", "KiB", "MiB", "GiB", "TiB")
    size, i = float(n), 0
    while size >= 1024 and i < len(units) - 1:
        size, i = size / 1024, i + 1
    return f"{size:,.1f} {units[i]}"


def _print_summary(result: ConvertResult) -> None:
    meta = result.meta
    splits = ", ".join(f"{s} {meta.files[f'splits/{s}'].shape[0]:,}" for s in meta.splits) or "none"
    classes = f"{meta.num_classes}" + (f" ({', '.join(result.classes)})" if 0 < len(result.classes) <= 10 else "")
    rows = [
        ("nodes", f"{meta.num_nodes:,}"),
        ("edges", result.edges.summary() + (" (undirected)" if meta.undirected else "")),
        ("features", f"{meta.feature_dim:,} x {meta.feature_dtype}"),
        ("classes", classes if meta.num_classes else "none (unlabelled)"),
        ("splits", splits),
        ("order", meta.node_order or "as given (ids)"),
    ]
    out.print(f"Converted {meta.name} -> {result.path} ({_size(result.bytes)})", highlight=False)
    for key, value in rows:
        out.print(f"  {key:<9} {value}", highlight=False, soft_wrap=True)
