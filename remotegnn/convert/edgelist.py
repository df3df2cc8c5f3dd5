"""A generic edge list in a delimited text file, with optional features and labels files.

The edge file is read in blocks (bounded memory, a progress bar, exact file:line errors; see
``_table``). The delimiter (comma, tab, else whitespace) and a header line are sniffed from the
first data line unless given; ``#`` lines are comments, as in SNAP's files. Two columns, by
position or header name, are the source and target ids (default the first two). Node ids are
0-based integers; the node count is max id + 1 unless given.

Features: a ``.npy`` [N, F] array (memory-mapped) or a text table with one row per node in
id order (streamed into the dataset). Labels: a ``.npy`` [N] array or a text file with one
value per line (the first column), integers taken as class ids, anything else numbered in
sorted order. Their delimiters and headers are sniffed on their own. Without
features, a constant column is stored (the format needs one). The default edge policy stores
the edges directed, dropping self loops and duplicates; pass ``undirected`` for a file that
lists each pair once.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from remotegnn.convert._common import (
    ConvertResult,
    DenseFeatures,
    FeatureSource,
    PolicyOverrides,
    choose_splits,
    constant_features,
    expect_rows,
    require_file,
    resolve_policy,
    write_dataset,
)
from remotegnn.convert._labels import class_ids
from remotegnn.convert._table import TableFeatures, column_index, read_table, sniff
from remotegnn.errors import ConvertError
from remotegnn.store import EdgePolicy

DEFAULT_POLICY = EdgePolicy(self_loops="drop", duplicates="drop", undirected=False)
NODES_HINT = "if the last nodes have no edges, pass --num-nodes"


def from_edgelist(
    path: str | os.PathLike[str],
    dst: str | os.PathLike[str],
    *,
    name: str | None = None,
    delimiter: str | None = None,
    header: bool | None = None,
    columns: Sequence[int | str] = (0, 1),
    num_nodes: int | None = None,
    features: str | os.PathLike[str] | None = None,
    labels: str | os.PathLike[str] | None = None,
    split_ratios: tuple[float, float, float] | None = None,
    seed: int = 0,
    policy: EdgePolicy | PolicyOverrides | None = None,
    dtype: str | None = None,
    overwrite: bool = False,
) -> ConvertResult:
    path = Path(path)
    fmt = sniff(path, "edge list", delimiter, header)
    if len(columns) != 2:
        raise ConvertError(f"--columns takes two columns (source, target), got {len(columns)}")
    usecols = [column_index(fmt, c, path, "--columns") for c in columns]
    edges = read_table(path, fmt, np.int64, usecols, "edge list")
    if num_nodes is None:
        num_nodes = int(edges.max(initial=-1)) + 1
    elif num_nodes <= 0:
        raise ConvertError(f"--num-nodes must be positive, got {num_nodes}")

    notes: list[str] = []
    feature_source = (
        _features(Path(features)) if features is not None else constant_features(num_nodes, notes, str(path))
    )
    label_ids: np.ndarray | None = None
    classes: list[str] = []
    if labels is not None:
        label_ids, classes = _labels(Path(labels))
        expect_rows(len(label_ids), num_nodes, f"labels file {labels}", NODES_HINT)
    splits, split_text = choose_splits({}, label_ids, num_nodes, split_ratios, seed, "")
    inputs = ", ".join(Path(p).name for p in (path, features, labels) if p is not None)
    return write_dataset(
        dst,
        name=name or path.stem,
        edges=(edges[:, 0], edges[:, 1]),
        num_nodes=num_nodes,
        policy=resolve_policy(policy, DEFAULT_POLICY),
        features=feature_source,
        labels=label_ids,
        classes=classes,
        splits=splits,
        dtype=dtype,
        overwrite=overwrite,
        notes=notes,
        source=f"edge list {inputs}, {split_text}",
    )


def _features(path: Path) -> FeatureSource:
    what = f"features file {path}"
    source: FeatureSource
    if path.suffix == ".npy":
        source = DenseFeatures(_load_npy(path, what), what)
    else:
        source = TableFeatures(path, sniff(path, what), what)
    source.hint = NODES_HINT
    return source


def _labels(path: Path) -> tuple[np.ndarray, list[str]]:
    """Labels from .npy, or one value per line; a first line that is not an integer over lines
    that all are is a header (string classes leave no way to tell, so they take no header)."""
    what = f"labels file {path}"
    if path.suffix == ".npy":
        return class_ids(_load_npy(path, what), what)
    values = read_table(path, sniff(path, what, header=False), str, [0], what)[:, 0]
    if len(values) > 1 and not _all_ints(values[:1]) and _all_ints(values[1:]):
        values = values[1:]
    return class_ids(values, what)


def _all_ints(values: np.ndarray) -> bool:
    try:
        values.astype(np.int64)
    except ValueError:
        return False
    return True


def _load_npy(path: Path, what: str) -> np.ndarray:
    require_file(path, what)
    try:
        return np.load(path, mmap_mode="r", allow_pickle=False)
    except (ValueError, OSError) as exc:
        raise ConvertError(f"{what} is not a readable .npy array ({exc})") from None
