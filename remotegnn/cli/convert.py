"""`remotegnn convert SRC DST` (a public graph format -> a dataset) and `remotegnn export DATASET OUT.pt`
(a dataset -> PyG).

The PyG converter is imported only when used, so the other formats and commands do not pay for
(or need) torch.
"""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Callable
from dataclasses import dataclass
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


@dataclass(frozen=True)
class _Given:
    """What `convert` was given: the options each format reads, as typed, with the checks that
    hold for every format."""

    name: str | None
    self_loops: str | None
    duplicates: str | None
    undirected: bool | None
    dtype: str | None
    overwrite: bool
    split_index: int | None
    weight_attr: str | None
    split_ratios: str | None
    seed: int | None
    label_column: str | None
    split_dir: Path | None
    label_classes: int | None
    delimiter: str | None
    header: bool | None
    columns: str | None
    num_nodes: int | None
    features: Path | None
    labels: Path | None

    def check(self, fmt: str) -> None:
        """Refuse an option that ``fmt`` does not read, an unknown edge policy, and split ratios that
        do not parse, in that order, before anything is written."""
        for flag, formats in FORMAT_OPTIONS.items():
            if getattr(self, flag.removeprefix("--").replace("-", "_")) is not None and fmt not in formats:
                raise UsageError(f"{flag} does not apply to --format {fmt} (only {', '.join(sorted(formats))})")
        policy = self.policy()
        if fmt == "mag240m" and policy != PolicyOverrides():
            raise UsageError(
                "--self-loops, --duplicates and --undirected do not apply to --format mag240m: "
                "each edge type is stored as published, in its own range of edge ids"
            )
        self.split()

    def policy(self) -> PolicyOverrides:
        return PolicyOverrides(
            _choice(self.self_loops, "--self-loops"), _choice(self.duplicates, "--duplicates"), self.undirected
        )

    def common(self) -> _Common:
        return {"policy": self.policy(), "dtype": self.dtype, "overwrite": self.overwrite}

    def split(self) -> _SplitOptions:
        options: _SplitOptions = {"seed": self.seed or 0}
        if self.split_ratios is not None:
            options["split_ratios"] = parse_ratios(self.split_ratios)
        return options


def _from_pyg_partition(src: Path, dst: Path, given: _Given) -> ConvertResult:
    _pyg()  # a clear error where torch or PyG is missing
    return pyg_partition.from_pyg_partition(src, dst, name=given.name, **given.common())


def _from_edgelist(src: Path, dst: Path, given: _Given) -> ConvertResult:
    return from_edgelist(
        src,
        dst,
        name=given.name,
        delimiter=_delimiter(given.delimiter),
        header=given.header,
        columns=[c.strip() for c in given.columns.split(",")] if given.columns else (0, 1),
        num_nodes=given.num_nodes,
        features=given.features,
        labels=given.labels,
        **given.split(),
        **given.common(),
    )


# One converter per format, in the order --format's help lists them.
CONVERTERS: dict[str, Callable[[Path, Path, _Given], ConvertResult]] = {
    "pyg": lambda src, dst, given: _from_pyg_file(
        src, dst, given.name, given.split_index or 0, given.weight_attr, given.common()
    ),
    "pyg-partition": _from_pyg_partition,
    "planetoid": lambda src, dst, given: from_planetoid(src, dst, name=given.name, **given.common()),
    "musae": lambda src, dst, given: from_musae(
        src, dst, name=given.name, label_column=given.label_column, **given.split(), **given.common()
    ),
    "npz": lambda src, dst, given: from_npz(
        src, dst, name=given.name, split_index=given.split_index or 0, **given.split(), **given.common()
    ),
    "edgelist": _from_edgelist,
    "ogb": lambda src, dst, given: from_ogb(src, dst, name=given.name, split_dir=given.split_dir, **given.common()),
    "igb": lambda src, dst, given: from_igb(
        src, dst, name=given.name, label_classes=given.label_classes or 19, **given.common()
    ),
    "mag240m": lambda src, dst, given: from_mag240m(
        src, dst, name=given.name, split_dir=given.split_dir, dtype=given.dtype, overwrite=given.overwrite
    ),
}
FORMATS = tuple(CONVERTERS)


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
    """Convert a graph into a RemoteGNN dataset (atomically: on any error nothing is left at DST).\f

    Long because typer declares every option in the signature; the body checks them and hands
    them to the format's converter in CONVERTERS.
    """
    if order is not None:
        check_order(order)
        if dst.exists() and not overwrite:
            raise UsageError(f"{dst} already exists; pass --overwrite to replace it, or choose another path")
    fmt = detect_format(src) if fmt is None else fmt.lower()
    if fmt not in FORMATS:
        raise NotFoundError("format", fmt, FORMATS)
    given = _Given(
        name=name,
        self_loops=self_loops,
        duplicates=duplicates,
        undirected=undirected,
        dtype=dtype,
        overwrite=overwrite,
        split_index=split_index,
        weight_attr=weight_attr,
        split_ratios=split_ratios,
        seed=seed,
        label_column=label_column,
        split_dir=split_dir,
        label_classes=label_classes,
        delimiter=delimiter,
        header=header,
        columns=columns,
        num_nodes=num_nodes,
        features=features,
        labels=labels,
    )
    given.check(fmt)
    target = dst
    with contextlib.ExitStack() as cleanup:
        if order is not None:  # converted beside DST, then reordered into it
            dst = cleanup.enter_context(PartialDirectory(dst)).path / "data"
        cleanup.enter_context(warnings.catch_warnings())
        warnings.simplefilter("ignore", ConvertWarning)  # printed below from the result instead
        result = CONVERTERS[fmt](src, dst, given)
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
