"""A staged copy of part of a dataset: every structure file whole, and of the feature file only
the rows one memory machine serves (``contracts.shards``), or none of them.

The feature file keeps its full length, with each row it holds at its own offset and holes
elsewhere (a sparse file), so readers index rows by id as in a whole copy and the disk holds only
the part. ``shard.json`` beside ``meta.json`` says which part (a :class:`ShardManifest` with
``index`` set, or ``structure_only``) and the BLAKE2b of the feature bytes held: the .npy
header, then the rows in file order. ``meta.json``'s digest covers the whole file, which a part
never holds, so that digest is what `remotegnn info --verify` and a re-fetch check the part by.
A copy without ``shard.json`` is whole.

Byte ranges here are ``[start, stop)`` pairs of the feature file, int64 of shape ``[r, 2]``,
sorted and disjoint.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import numpy as np
from pydantic import ValidationError

from contracts.dataset import DatasetMeta
from contracts.shards import ShardLayout, ShardLayoutName, ShardManifest
from foundation.errors import format_validation_error
from remotegnn.errors import DatasetError

SHARD_FILE: Final = "shard.json"
FEATURES: Final = "features"
BLOCK_BYTES: Final = 8 * 2**20
"""One read of the feature file (a ranged GET, or a read of the copy on disk): the transfer
manager's part size."""
DIGEST_SIZE: Final = 32  # as meta.json's file digests


def structure_bytes(meta: DatasetMeta) -> int:
    """Every file but the features: what each machine's copy holds whole."""
    return sum(entry.bytes for role, entry in meta.files.items() if role != FEATURES)


def manifest_of(meta: DatasetMeta, layout: ShardLayoutName, count: int) -> ShardManifest:
    """How ``meta``'s rows are dealt to ``count`` memory machines in ``layout``."""
    shards = ShardLayout.of(layout, count, meta.num_nodes, meta.row_bytes)
    return ShardManifest.of(shards, meta.row_bytes, structure_bytes(meta))


def coalesce(ranges: np.ndarray, gap: int) -> np.ndarray:
    """``ranges`` with neighbours at most ``gap`` bytes apart merged into one range."""
    if len(ranges) < 2:
        return ranges.copy()
    breaks = np.flatnonzero(ranges[1:, 0] - ranges[:-1, 1] > gap)
    first = np.concatenate([[0], breaks + 1])
    last = np.concatenate([breaks, [len(ranges) - 1]])
    return np.stack([ranges[first, 0], ranges[last, 1]], axis=1)


def held_ranges(manifest: ShardManifest, header_bytes: int) -> np.ndarray:
    """The bytes of the feature file a copy described by ``manifest`` holds: the .npy header, then
    its rows (all of them when ``manifest`` is no staged copy's)."""
    header = np.array([[0, header_bytes]], dtype=np.int64)
    layout, row = manifest.layout, manifest.row_bytes
    if manifest.structure_only:
        rows = np.empty((0, 2), dtype=np.int64)
    elif manifest.index is None:
        rows = np.array([[0, layout.num_nodes]], dtype=np.int64)
    else:
        rows = layout.ranges(manifest.index)
    rows = rows[rows[:, 1] > rows[:, 0]]
    return coalesce(np.concatenate([header, header_bytes + rows * row]), 0)


def total(ranges: np.ndarray) -> int:
    return int((ranges[:, 1] - ranges[:, 0]).sum())


@dataclass(frozen=True)
class Block:
    """One read of the feature file, ``[start, stop)``, and the held ranges within it (clipped)."""

    start: int
    stop: int
    held: np.ndarray

    def mask(self) -> np.ndarray:
        """A bool per byte of the block: set where it is held."""
        rel = self.held - self.start
        gaps = rel[:, 0] - np.concatenate([[0], rel[:-1, 1]])
        counts = np.empty(2 * len(rel) + 1, dtype=np.int64)
        counts[0:-1:2], counts[1::2], counts[-1] = gaps, rel[:, 1] - rel[:, 0], self.stop - self.start - rel[-1, 1]
        values = np.zeros(len(counts), dtype=np.bool_)
        values[1::2] = True
        return np.repeat(values, counts)

    @property
    def whole(self) -> bool:
        """The block is all held."""
        return len(self.held) == 1 and int(self.held[0, 0]) == self.start and int(self.held[0, 1]) == self.stop


def blocks(ranges: np.ndarray, gap: int, block_bytes: int | None = None) -> Iterator[Block]:
    """Reads that cover ``ranges``: neighbours at most ``gap`` apart read together (the bytes
    between them read and dropped), each read at most ``block_bytes`` (BLOCK_BYTES)."""
    block_bytes = block_bytes or BLOCK_BYTES
    for start, stop in coalesce(ranges, gap).tolist():
        for lo in range(start, stop, block_bytes):
            hi = min(lo + block_bytes, stop)
            first = int(np.searchsorted(ranges[:, 1], lo, side="right"))
            last = int(np.searchsorted(ranges[:, 0], hi, side="left"))
            held = np.clip(ranges[first:last], lo, hi)
            held = held[held[:, 1] > held[:, 0]]
            if len(held):
                yield Block(lo, hi, held)


def held_digest(path: Path, ranges: np.ndarray) -> str:
    """BLAKE2b of the bytes of ``path`` in ``ranges``, in order (a part's ``features_blake2b``)."""
    digest = hashlib.blake2b(digest_size=DIGEST_SIZE)
    fd = os.open(path, os.O_RDONLY)
    try:
        buffer = memoryview(bytearray(BLOCK_BYTES))
        for block in blocks(ranges, gap=BLOCK_BYTES // 8, block_bytes=len(buffer)):
            view = buffer[: block.stop - block.start]
            got = os.preadv(fd, [view], block.start)
            if got != len(view):
                raise DatasetError(f"{path} ends at {block.start + got:,} bytes, inside the rows it should hold")
            digest.update(view if block.whole else np.frombuffer(view, dtype=np.uint8)[block.mask()].data)
    finally:
        os.close(fd)
    return digest.hexdigest()


def read_manifest(directory: Path, meta: DatasetMeta) -> ShardManifest | None:
    """The staged copy's ``shard.json`` in ``directory``, checked against the dataset's ``meta``;
    None when there is none (the copy is whole)."""
    path = directory / SHARD_FILE
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise DatasetError(f"{path} cannot be read ({exc.strerror})") from None
    try:
        manifest = ShardManifest.model_validate_json(raw)
    except ValidationError as exc:
        raise DatasetError(f"{path} is not a staged part's record: {format_validation_error(exc)}") from None
    layout = manifest.layout
    if (layout.num_nodes, manifest.row_bytes, manifest.structure_bytes) != (
        meta.num_nodes,
        meta.row_bytes,
        structure_bytes(meta),
    ):
        raise DatasetError(
            f"{path} describes a part of another dataset ({layout.num_nodes:,} rows of {manifest.row_bytes} bytes, "
            f"{manifest.structure_bytes:,} bytes of structure) than meta.json's ({meta.num_nodes:,} rows of "
            f"{meta.row_bytes} bytes, {structure_bytes(meta):,}); fetch the dataset again"
        )
    if manifest != manifest_of(meta, layout.layout, layout.count).model_copy(
        update={
            "index": manifest.index,
            "structure_only": manifest.structure_only,
            "features_blake2b": manifest.features_blake2b,
        }
    ):
        raise DatasetError(
            f"{path}: its rows per machine are not how {layout.layout} deals them; fetch the dataset again"
        )
    if not manifest.staged or manifest.features_blake2b is None:
        raise DatasetError(
            f"{path} names no part (no index, not structure_only) or no digest of the rows it holds; fetch the "
            "dataset again"
        )
    return manifest
