"""Labels and split files as public datasets publish them: float labels with NaN for unlabelled
nodes (OGB, MAG240M), and splits as lists of node ids in ``.csv(.gz)`` or ``.npy`` files."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from contracts.dataset import SPLITS
from remotegnn.convert._labels import labels_from_values
from remotegnn.convert._table import read_table, sniff
from remotegnn.errors import ConvertError
from remotegnn.store.npy import NpyReader

# The names each split goes by in the files publishers ship (OGB: valid; MAG240M: test-dev, whose
# labels are public, unlike test-challenge's).
SPLIT_NAMES = {"train": ("train",), "val": ("valid", "val"), "test": ("test", "test-dev")}
SPLIT_SUFFIXES = (".csv.gz", ".csv", ".npy")
ID_BLOCK = 1 << 22


def read_labels(reader: NpyReader) -> np.ndarray:
    """One class id per row of a labels array ([N] or [N, 1]), converted a block at a time, so
    only the result (8 bytes per node) is held whole."""
    labels = np.empty(reader.rows, dtype=np.int64)
    start = 0
    for block in reader.blocks(ID_BLOCK):
        labels[start : start + len(block)] = labels_from_values(block, reader.what, first_row=start)
        start += len(block)
    return labels


def read_split_dir(folder: Path, num_nodes: int) -> dict[str, np.ndarray]:
    """train/valid/test node ids from a folder of ``.csv(.gz)`` or ``.npy`` files."""
    if not folder.is_dir():
        raise ConvertError(f"split folder {folder} does not exist")
    splits = {}
    for split in SPLITS:
        path = _find(folder, split)
        if path is not None:
            splits[split] = read_ids(path, num_nodes)
    if not splits:
        names = ", ".join(f"{n}{s}" for n in ("train", "valid", "test") for s in SPLIT_SUFFIXES[:1])
        raise ConvertError(f"{folder} holds no split files (such as {names})")
    return splits


def _find(folder: Path, split: str) -> Path | None:
    for name in SPLIT_NAMES[split]:
        for suffix in SPLIT_SUFFIXES:
            if (path := folder / f"{name}{suffix}").is_file():
                return path
    return None


def read_ids(path: Path, num_nodes: int) -> np.ndarray:
    """Sorted node ids from a one-column table or a 1-D ``.npy``; an id outside the graph is an
    error naming its line (or position)."""
    if path.suffix == ".npy":
        reader = NpyReader(path)
        if len(reader.shape) != 1 or reader.dtype.kind not in "iu":
            raise ConvertError(f"{path} is {reader.dtype}{list(reader.shape)}; a split is a 1-D list of node ids")
        ids = np.concatenate([*reader.blocks(ID_BLOCK), np.empty(0, np.int64)]).astype(np.int64)
        where = "position"
    else:
        fmt = sniff(path, "split", header=False)
        ids = read_table(path, fmt, np.int64, [0], "split")[:, 0]
        where = "line"
    bad = np.flatnonzero((ids < 0) | (ids >= num_nodes))
    if len(bad):
        at = int(bad[0]) + (1 if where == "line" else 0)
        raise ConvertError(f"{path} {where} {at}: node {int(ids[bad[0]])} does not exist (the graph has {num_nodes:,})")
    return np.unique(ids)
