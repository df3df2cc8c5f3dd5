"""MUSAE graphs (Rozemberczki et al.): musae-facebook, the Twitch graphs, and others laid out alike.

A MUSAE folder holds ``PREFIX_edges.csv`` (two id columns, a header), a features JSON
``{node: [feature ids]}`` (``PREFIX.json`` or ``PREFIX_features.json``) and ``PREFIX_target.csv``.
The node id column of the target file is ``new_id`` when present (Twitch: ``id`` there is the
user's Twitch id), else ``id``; the label column is ``page_type`` (Facebook), ``mature``
(Twitch), ``ml_target`` (GitHub) or ``target``, or the one given. Features become dense
multi-hot rows (dimension = largest feature id + 1). The graphs are undirected (each pair is
listed once) and have no standard split, so a seeded random 60/20/20 split is made unless
turned off.
"""

from __future__ import annotations

import csv
import itertools
import json
import os
from pathlib import Path

import numpy as np

from remotegnn.convert._common import (
    ConvertResult,
    MultiHotFeatures,
    PolicyOverrides,
    choose_source,
    choose_splits,
    require_file,
    resolve_policy,
    write_dataset,
)
from remotegnn.convert._labels import class_ids
from remotegnn.convert._table import read_table, sniff
from remotegnn.errors import ConvertError
from remotegnn.store import EdgePolicy

DEFAULT_POLICY = EdgePolicy(self_loops="drop", duplicates="drop", undirected=True)
DEFAULT_RATIOS = (0.6, 0.2, 0.2)
LABEL_COLUMNS = ("page_type", "mature", "ml_target", "target")
ID_COLUMNS = ("new_id", "id")


def available(folder: Path) -> list[str]:
    return sorted(p.name[: -len("_edges.csv")] for p in folder.glob("*_edges.csv"))


def _pick_prefix(folder: Path, name: str | None) -> str:
    if not folder.is_dir():
        raise ConvertError(
            f"{folder} is not a folder; --format musae reads a folder with PREFIX_edges.csv, "
            "the features JSON and PREFIX_target.csv"
        )
    return choose_source(folder, name, available(folder), "MUSAE graph", "MUSAE graph (no PREFIX_edges.csv)")


def from_musae(
    folder: str | os.PathLike[str],
    dst: str | os.PathLike[str],
    *,
    name: str | None = None,
    label_column: str | None = None,
    split_ratios: tuple[float, float, float] | None = DEFAULT_RATIOS,
    seed: int = 0,
    policy: EdgePolicy | PolicyOverrides | None = None,
    dtype: str | None = None,
    overwrite: bool = False,
) -> ConvertResult:
    """Convert the MUSAE graph ``name`` (the file prefix, e.g. facebook or musae_DE) in ``folder``."""
    folder = Path(folder)
    prefix = _pick_prefix(folder, name)
    edges_path = folder / f"{prefix}_edges.csv"
    target_path = require_file(folder / f"{prefix}_target.csv", "MUSAE target file")
    features_path = next(
        (p for p in (folder / f"{prefix}_features.json", folder / f"{prefix}.json") if p.is_file()), None
    )
    if features_path is None:
        raise ConvertError(f"{folder}: features file {prefix}_features.json (or {prefix}.json) does not exist")

    node_ids, raw_labels, label_name = _read_target(target_path, label_column)
    num_nodes = len(node_ids)
    labels = np.empty(num_nodes, dtype=raw_labels.dtype)
    labels[node_ids] = raw_labels
    labels, classes = class_ids(labels, f"{target_path.name} column {label_name}")

    edges = read_table(edges_path, sniff(edges_path, "MUSAE edge list"), np.int64, (0, 1), "MUSAE edge list")
    features = _read_features(features_path, num_nodes)
    splits, split_text = choose_splits({}, labels, num_nodes, split_ratios, seed, "")
    return write_dataset(
        dst,
        name=prefix,
        edges=(edges[:, 0], edges[:, 1]),
        num_nodes=num_nodes,
        policy=resolve_policy(policy, DEFAULT_POLICY),
        features=features,
        labels=labels,
        classes=classes,
        splits=splits,
        dtype=dtype,
        overwrite=overwrite,
        source=f"musae {prefix} ({edges_path.name}, {features_path.name}, {target_path.name} column {label_name}), "
        f"multi-hot features, {split_text}",
    )


def _read_target(path: Path, label_column: str | None) -> tuple[np.ndarray, np.ndarray, str]:
    """Node ids (a permutation of 0..N-1, checked) and raw label strings, in file order."""
    with open(path, newline="", encoding="utf-8") as handle:
        reader = csv.reader(handle)
        header = next(reader, None)
        if not header:
            raise ConvertError(f"{path} is empty; expected a header such as id,...,page_type")
        id_col = next((c for c in ID_COLUMNS if c in header), None)
        label_col = label_column or next((c for c in LABEL_COLUMNS if c in header), None)
        if id_col is None:
            raise ConvertError(f"{path}: no node id column (new_id or id); columns are {', '.join(header)}")
        if label_col not in header:
            wanted = repr(label_col) if label_col else f"({', '.join(LABEL_COLUMNS)})"
            raise ConvertError(
                f"{path}: no label column {wanted}; columns are {', '.join(header)}; pass --label-column"
            )
        i_id, i_label = header.index(id_col), header.index(label_col)
        ids, values, lines = [], [], []
        for row in reader:
            if not row:
                continue
            try:
                ids.append(int(row[i_id]))
                values.append(row[i_label])
                lines.append(reader.line_num)
            except (ValueError, IndexError):
                raise ConvertError(
                    f"{path}:{reader.line_num}: expected {len(header)} fields with an integer {id_col}, got {row!r}"
                ) from None
    ids_arr = np.array(ids, dtype=np.int64)
    n = len(ids_arr)
    if n == 0:
        raise ConvertError(f"{path} lists no nodes")
    bad = (ids_arr < 0) | (ids_arr >= n)
    if bad.any():
        line = lines[int(np.flatnonzero(bad)[0])]
        raise ConvertError(
            f"{path}:{line}: {id_col} {int(ids_arr[bad][0])} is outside [0, {n:,}); "
            f"the {n:,} rows must number the nodes 0..{n - 1}"
        )
    seen = np.zeros(n, dtype=bool)
    seen[ids_arr] = True
    if not seen.all():
        raise ConvertError(
            f"{path}: node {int(np.flatnonzero(~seen)[0])} has no row (another is listed twice); "
            f"the {n:,} rows must number the nodes 0..{n - 1} once each"
        )
    return ids_arr, np.array(values), label_col


def _read_features(path: Path, num_nodes: int) -> MultiHotFeatures:
    """``{node: [feature ids]}`` -> multi-hot rows; nodes absent from the file get zero rows."""
    try:
        with open(path, encoding="utf-8") as handle:
            table = json.load(handle)
    except json.JSONDecodeError as exc:
        raise ConvertError(f"{path}:{exc.lineno}:{exc.colno}: invalid JSON ({exc.msg})") from None
    if not isinstance(table, dict):
        raise ConvertError(f"{path} holds a JSON {type(table).__name__}; expected an object {{node: [feature ids]}}")
    try:
        nodes = np.fromiter((int(k) for k in table), dtype=np.int64, count=len(table))
    except ValueError:
        key = next(k for k in table if not k.strip().lstrip("-").isdigit())
        raise ConvertError(f"{path}: key {key!r} is not a node id") from None
    if any(not isinstance(v, list) for v in table.values()):
        key = next(k for k, v in table.items() if not isinstance(v, list))
        raise ConvertError(f"{path}: node {key} maps to {type(table[key]).__name__}, expected a list of feature ids")
    counts = np.fromiter(map(len, table.values()), dtype=np.int64, count=len(table))
    cols = np.array(list(itertools.chain.from_iterable(table.values())))
    if len(cols) == 0:
        cols = np.empty(0, dtype=np.int64)
    if cols.dtype.kind not in "iu" or (len(cols) and cols.min() < 0):
        key = next(
            k for k, v in table.items() if any(not isinstance(f, int) or isinstance(f, bool) or f < 0 for f in v)
        )
        raise ConvertError(f"{path}: node {key} lists {table[key]!r}; feature ids must be non-negative integers")
    bad = (nodes < 0) | (nodes >= num_nodes)
    if bad.any():
        raise ConvertError(
            f"{path}: node {int(nodes[bad][0])} is outside [0, {num_nodes:,}), the nodes of the target file"
        )
    return MultiHotFeatures(nodes, counts, cols.astype(np.int64), num_nodes, path.name)
