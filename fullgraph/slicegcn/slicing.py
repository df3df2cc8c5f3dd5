"""Which feature columns each of p ranks holds: the paper's Algorithm 1, and sliced datasets.

Algorithm 1: slices of ``s = ceil(d / p)`` columns (times ``scale``), slice i starting at i x s;
a slice that would run past the last column is moved left to end there, so the last slice
overlaps its neighbour rather than being short (every rank gets the same width). With scale 1 and
p dividing d the slices are disjoint. Eq. 3 of the paper states the same rule with 1-based
indices (and a typo, d for d'); Algorithm 1 is what is implemented and tested.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
from pydantic import Field

from foundation.errors import UsageError
from foundation.fileio import read_model, write_model
from foundation.models import StrictModel
from foundation.partial import PartialDirectory
from remotegnn.errors import DatasetError
from remotegnn.store import GraphDataset
from remotegnn.store.writer import DatasetWriter

SLICES_FILE = "slices.json"
ROWS_PER_BLOCK = 1 << 16  # feature rows copied at a time: bounded memory for any graph


def slice_plan(in_dim: int, parts: int, scale: float = 1.0) -> list[tuple[int, int]]:
    """[start, end) columns of each of ``parts`` slices of ``in_dim`` columns (Algorithm 1)."""
    if parts < 1:
        raise UsageError(f"--parts {parts}: give at least 1")
    if parts > in_dim:
        raise UsageError(f"--parts {parts}: the features have only {in_dim} columns; give at most {in_dim}")
    if not 0 < scale <= parts:
        raise UsageError(f"slice size scale {scale}: give a value in (0, {parts}]")
    size = math.ceil(in_dim / parts)
    width = max(1, int(size * scale))
    plan = []
    for i in range(parts):
        start, end = i * size, i * size + width
        if end > in_dim:
            start, end = max(0, start - (end - in_dim)), in_dim
        plan.append((start, end))
    return plan


class SliceSet(StrictModel):
    """``slices.json`` beside the parts: which columns of which dataset each part holds."""

    kind: str = "remotegnn.slices"
    version: int = 1
    source: str = Field(description="the dataset the slices were cut from")
    feature_dim: int
    columns: list[tuple[int, int]] = Field(description="[start, end) of each part, in rank order")

    @property
    def parts(self) -> int:
        return len(self.columns)


def part_dir(root: Path, index: int) -> Path:
    return root / f"part-{index}"


def write_slices(dataset: GraphDataset, dst: str | Path, parts: int, *, overwrite: bool = False) -> SliceSet:
    """Write ``parts`` datasets under ``dst``, each with the whole structure and one column slice.

    The set is built beside ``dst`` and renamed into place whole, as one dataset is: an error or
    an interruption leaves neither some of the parts nor a set without its ``slices.json``."""
    meta = dataset.meta
    if meta.hetero is not None:
        raise UsageError(f"{dataset.path} is a heterogeneous graph: SliceGCN slices one feature matrix")
    root = Path(dst)
    if root.exists() and not overwrite:
        raise UsageError(f"{root} exists; remove it or pass --overwrite")
    plan = slice_plan(meta.feature_dim, parts)
    with PartialDirectory(root) as partial:
        for index, (start, end) in enumerate(plan):
            with DatasetWriter(part_dir(partial.path, index), name=f"{meta.name}-slice{index}") as writer:
                writer.write_like(meta)
                for role, entry in meta.files.items():
                    if role != "features":
                        writer.put(role, np.load(dataset.path / entry.path, mmap_mode="r"))
                features = writer.array("features", (meta.num_nodes, end - start), meta.feature_dtype)
                for first in range(0, meta.num_nodes, ROWS_PER_BLOCK):
                    last = min(first + ROWS_PER_BLOCK, meta.num_nodes)
                    features[first:last] = dataset.features[first:last, start:end]
                features.flush()
                del features
                writer.commit(
                    source=f"{meta.source}; columns {start}:{end} of {meta.feature_dim} (slice {index} of {parts})"
                )
        slices = SliceSet(source=str(dataset.path), feature_dim=meta.feature_dim, columns=plan)
        write_model(partial.path / SLICES_FILE, slices)
        partial.commit()
    return slices


def open_slices(root: str | Path) -> SliceSet:
    path = Path(root) / SLICES_FILE
    if not path.is_file():
        raise DatasetError(f"{root} holds no {SLICES_FILE}: make it with `fullgraph slice DATASET {root} --parts P`")
    return read_model(path, SliceSet, "slice set")
