"""Per-node arrays of any length in a fixed amount of RAM: the building blocks of ``remotegnn reorder``.

A graph larger than RAM has per-node arrays (an order, its inverse) that may not fit either:
ogbn-papers100M's 111M nodes take 0.9 GB per int64 array, and an order needs several. Here they
are ``.npy`` files in a scratch folder. A pass reads them front to back through plain file reads
(which leave nothing in the resident set) or gathers from them through a read-only memory map
(whose pages the kernel lends and takes back), and writes them front to back: scattering into a
file at random would, under memory pressure, write each page back many times (the one exception
is a search's bitmap of visited nodes, one bit per node, 32,768 nodes a page).
Where a pass must scatter (sorting nodes by a key, inverting an order), it appends records to a
few files by destination range first and scatters one range at a time in RAM: an external
bucket sort, as the structure builder (:mod:`remotegnn.store.build`) does with edges.
"""

from __future__ import annotations

import math
import os
import shutil
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from numpy.lib.format import open_memmap

from remotegnn.errors import DatasetError
from remotegnn.store.npy import NpyAppender, NpyReader, scattered_map

MAX_SPILL_FILES = 256  # files a sort appends to at once (well under the usual 1,024 descriptors)
RECORD = np.dtype([("key", "<i8"), ("value", "<i8")])
SORT_BYTES_PER_RECORD = 48  # a record (16 B), the sort's order (8 B), the sorted values and a copy
INVERT_BYTES_PER_NODE = 40  # a record (16 B), the range's slot (8 B) and the comparison's temporaries


@dataclass(frozen=True)
class Scratch:
    """A folder for per-node arrays, and the RAM a pass may hold for its blocks (``memory`` bytes)."""

    folder: Path
    memory: int

    def path(self, name: str) -> Path:
        return self.folder / f"{name}.npy"

    def rows(self, bytes_per_row: int) -> int:
        """How many rows of ``bytes_per_row`` a block holds within the budget (at least one)."""
        return max(1, self.memory // max(1, bytes_per_row))

    def load(self, name: str) -> np.ndarray:
        """A scratch array, read-only and mapped for scattered reads (the passes gather from it)."""
        return scattered_map(self.path(name))

    def create(self, name: str, length: int, dtype) -> np.memmap:
        """A new scratch array of zeros, memory-mapped for writing. Its disk is reserved now, so a
        full disk is an OSError here rather than a SIGBUS when a page is first written."""
        array = open_memmap(self.path(name), mode="w+", dtype=np.dtype(dtype), shape=(length,))
        if array.nbytes:
            with open(self.path(name), "r+b") as handle:
                os.posix_fallocate(handle.fileno(), 0, array.offset + array.nbytes)
        return array


def spans(count: int, step: int) -> Iterator[tuple[int, int]]:
    """``(start, stop)`` of consecutive blocks of at most ``step`` covering ``range(count)``."""
    for start in range(0, count, step):
        yield start, min(start + step, count)


class _Spill:
    """Records appended to one file per group in the order they come, read back a group at a time."""

    def __init__(self, folder: Path, groups: int):
        folder.mkdir(parents=True)
        self.folder = folder
        self.handles = [open(folder / f"{g}.bin", "wb") for g in range(groups)]

    def add(self, group: np.ndarray, keys: np.ndarray, values: np.ndarray) -> None:
        order = np.argsort(group, kind="stable")
        records = np.empty(len(order), dtype=RECORD)
        records["key"], records["value"] = keys[order], values[order]
        ends = np.cumsum(np.bincount(group, minlength=len(self.handles)))
        start = 0
        for handle, end in zip(self.handles, ends, strict=True):
            if end > start:
                handle.write(records[start:end].data)
            start = end

    def groups(self) -> Iterator[Path]:
        """Each group's file in turn, removed once the next is asked for (and the folder at the end)."""
        for handle in self.handles:
            handle.close()
        for g in range(len(self.handles)):
            path = self.folder / f"{g}.bin"
            yield path
            path.unlink()
        shutil.rmtree(self.folder)


def _records(path: Path, count: int) -> Iterator[np.ndarray]:
    with open(path, "rb") as handle:
        while len(block := np.fromfile(handle, dtype=RECORD, count=count)):
            yield block


def sort_by_key(
    chunks: Callable[[], Iterable[tuple[np.ndarray, np.ndarray]]], count: int, out: Path, scratch: Scratch
) -> None:
    """Write to ``out`` (int64 ``.npy``) the ``count`` values ``chunks()`` yields as ``(values,
    keys)`` blocks, sorted by key, equal keys in the order they came: ``np.argsort(keys,
    kind="stable")`` applied to the values, in about ``scratch.memory`` bytes.

    ``chunks`` is called twice. The first pass counts each distinct key (a node order's keys are
    degrees, degree classes or node types: few distinct values); consecutive keys are then grouped
    so that a group holds at most a block's worth of values, or one key alone. The second pass
    appends each value to its group's file; a group is then sorted in RAM, or copied through in
    blocks when it holds one key (its values are already in input order)."""
    keys, counts = _key_counts(chunks())
    cap = max(scratch.rows(SORT_BYTES_PER_RECORD), math.ceil(2 * count / (MAX_SPILL_FILES - 1)))
    group_of_key = _group_keys(counts, cap)
    spill = _Spill(scratch.folder / f"{out.stem}.spill", int(group_of_key[-1]) + 1 if len(keys) else 0)
    for values, block_keys in chunks():
        block_keys = np.asarray(block_keys, dtype=np.int64)
        spill.add(group_of_key[np.searchsorted(keys, block_keys)], block_keys, np.asarray(values, dtype=np.int64))
    keys_per_group = np.bincount(group_of_key, minlength=len(spill.handles))
    with NpyAppender(out, np.int64) as sorted_out:
        for group, path in enumerate(spill.groups()):
            if keys_per_group[group] == 1:
                for block in _records(path, cap):
                    sorted_out.append(block["value"])
            else:
                records = np.fromfile(path, dtype=RECORD)
                sorted_out.append(records["value"][np.argsort(records["key"], kind="stable")])


def _key_counts(chunks: Iterable[tuple[np.ndarray, np.ndarray]]) -> tuple[np.ndarray, np.ndarray]:
    """The distinct keys, ascending, and how many values have each."""
    keys, counts = np.empty(0, np.int64), np.empty(0, np.int64)
    for _, block_keys in chunks:
        new_keys, new_counts = np.unique(np.asarray(block_keys, dtype=np.int64), return_counts=True)
        keys, where = np.unique(np.concatenate([keys, new_keys]), return_inverse=True)
        counts = np.bincount(where, weights=np.concatenate([counts, new_counts]), minlength=len(keys))
        counts = counts.astype(np.int64)
    return keys, counts


def _group_keys(counts: np.ndarray, cap: int) -> np.ndarray:
    """Each key's group: consecutive keys together while they hold at most ``cap`` values (a key
    with more is a group of its own). Two consecutive groups hold more than ``cap``, so there are
    at most ``2 * total / cap + 1`` groups."""
    group = np.empty(len(counts), dtype=np.int64)
    current = held = 0
    for i, held_by_key in enumerate(counts.tolist()):
        if held and held + held_by_key > cap:
            current, held = current + 1, 0
        group[i] = current
        held += held_by_key
    return group


def invert(order: Path, out: Path, scratch: Scratch, what: str) -> None:
    """Write ``out`` (int64 ``.npy``) with ``out[order[i]] = i``, or raise a DatasetError naming
    ``what`` if ``order`` is not a permutation.

    Each ``(node, position)`` record goes to the file of its node's range; each range is then
    scattered into a block in RAM and appended, so only about ``scratch.memory`` bytes are held."""
    reader = NpyReader(order)
    n = reader.rows
    span = max(scratch.rows(INVERT_BYTES_PER_NODE), math.ceil(n / MAX_SPILL_FILES))
    spill = _Spill(scratch.folder / f"{out.stem}.spill", math.ceil(n / span))
    at = 0
    for block in reader.blocks(scratch.rows(SORT_BYTES_PER_RECORD)):
        nodes = block.astype(np.int64, copy=False)
        if len(nodes) and (nodes.min() < 0 or nodes.max() >= n):
            raise DatasetError(f"{what} holds ids outside [0, {n}); the dataset is corrupt")
        spill.add(nodes // span, nodes, np.arange(at, at + len(nodes), dtype=np.int64))
        at += len(nodes)
    with NpyAppender(out, np.int64) as inverse:
        for lo, path in zip(range(0, n, span), spill.groups(), strict=True):
            slot = np.full(min(span, n - lo), -1, dtype=np.int64)
            records = np.fromfile(path, dtype=RECORD)
            slot[records["key"] - lo] = records["value"]
            if len(records) != len(slot) or (slot < 0).any():
                raise DatasetError(
                    f"{what} repeats node ids, so it is not an order of the nodes; the dataset is corrupt"
                )
            inverse.append(slot)
