"""A memory rank's start-up reads: its memory cache and its share of the learner's two caches,
in one sweep of its part of the feature file.

The learner's tiers (device and RAM) and the memory cache are disjoint sets of this rank's rows.
Read one after another, each would sweep the rank's whole part of the file (a fill reads whole
read-ahead windows, and a few percent of the rows touch nearly every window), so start-up would
read the part two or three times. Merged in node order and cut into chunks, they read each
stretch of the file once, while the page cache still holds it.

Each step's rows are gathered through the file's memory map, on a thread per core
(``remotegnn.cache.gather``: one thread's page faults can bind a fast disk). Before it gathers a
step, the sweep asks the kernel for the next step's pages (``posix_fadvise(WILLNEED)``: queued,
not waited for) in windows of ``PREFETCH_WINDOW_BYTES`` holding the step's rows, so the volume
reads ahead while the rank copies, and a fault finds its page cached instead of reading the
kernel's read-around window about it, which overhangs a stripe into other ranks' rows. Measured on a 35 GB graph (one
memory host of four, 125 MB/s): 3.8% fewer bytes read and a 4.6% shorter sweep.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Literal

import numpy as np

from remotegnn.cache import FeatureCache
from remotegnn.cache.learner import read_rows
from remotegnn.store import GraphDataset

Tier = Literal["ram", "device"]
"""The learner's two caches: its RAM, and its device's memory."""
FILL_CHUNK_BYTES = 64 << 20
"""Most bytes of learner-cache rows in one message: one chunk is in flight at a time, so a large
cache costs the memory rank no more than this in send buffers, and no message nears MPI's 2 GiB
count limit."""


PREFETCH_WINDOW_BYTES = 1 << 20
"""The unit the sweep asks the kernel to read ahead in: every such window of the file holding a
row of the next step (small beside a 64 MiB stripe, so a rank reads little beyond its rows)."""


def chunk_rows(row_bytes: int) -> int:
    """Rows of ``row_bytes`` (at the wire precision) in one chunk of the learner's rows."""
    return max(1, FILL_CHUNK_BYTES // row_bytes)


def fill_chunks(device: np.ndarray, ram: np.ndarray, chunk_rows: int) -> list[tuple[Tier, np.ndarray]]:
    """This rank's rows of the learner's tiers (``device``, ``ram``: sorted, disjoint) as the
    chunks it sends, in node order: the tiers merged, cut every ``chunk_rows``, each cut split by tier."""
    nodes = np.concatenate([device, ram])
    on_device = np.arange(len(nodes)) < len(device)
    order = np.argsort(nodes, kind="stable")
    nodes, on_device = nodes[order], on_device[order]
    chunks: list[tuple[Tier, np.ndarray]] = []
    for start in range(0, len(nodes), chunk_rows):
        part, here = nodes[start : start + chunk_rows], on_device[start : start + chunk_rows]
        split: tuple[tuple[Tier, np.ndarray], ...] = (("device", part[here]), ("ram", part[~here]))
        chunks += [(tier, rows) for tier, rows in split if len(rows)]
    return chunks


def sweep(
    dataset: GraphDataset, memory: FeatureCache, chunks: list[tuple[Tier, np.ndarray]], wire_dtype: np.dtype
) -> Iterator[tuple[Tier, np.ndarray, np.ndarray]]:
    """Each chunk's (tier, nodes, rows in ``wire_dtype``), read in turn; before each, the memory
    cache's rows up to the same node (all of them before the last). Without chunks the memory
    cache is read in steps of about a chunk's bytes. The next step's pages are read ahead while
    this step's rows are copied (the module docstring)."""
    num_nodes = dataset.meta.num_nodes
    steps = _steps(memory, chunks, num_nodes, chunk_rows(dataset.meta.row_bytes))
    fd = os.open(dataset.features_path, os.O_RDONLY)
    try:
        if steps:
            _read_ahead(fd, dataset, memory, steps[0], 0)
        for i, (stop, chunk) in enumerate(steps):
            if i + 1 < len(steps):
                _read_ahead(fd, dataset, memory, steps[i + 1], stop)
            memory.fill_until(stop)
            if chunk is not None:
                tier, nodes = chunk
                yield tier, nodes, read_rows(dataset, nodes, wire_dtype)
    finally:
        os.close(fd)


_Step = tuple[int, tuple[Tier, np.ndarray] | None]
"""Where a step of the sweep ends (the memory cache is read up to there) and the chunk it reads."""


def _steps(memory: FeatureCache, chunks: list[tuple[Tier, np.ndarray]], num_nodes: int, rows: int) -> list[_Step]:
    """The sweep's steps: one per chunk, the last reading the rest of the memory cache; without
    chunks, the memory cache's unread nodes every ``rows``."""
    if chunks:
        ends = [int(nodes[-1]) + 1 for _, nodes in chunks[:-1]] + [num_nodes]
        return list(zip(ends, chunks, strict=True))
    unread = memory.unread_below(num_nodes)
    ends = [int(unread[end - 1]) + 1 for end in range(rows, len(unread), rows)] + [num_nodes]
    return [(end, None) for end in ends]


def _read_ahead(fd: int, dataset: GraphDataset, memory: FeatureCache, step: _Step, start: int) -> None:
    """Ask the kernel to read every window of the file holding a row the step reads: its chunk's
    and the memory cache's unread rows from ``start`` to the step's end."""
    stop, chunk = step
    unread = memory.unread_below(stop)
    nodes = unread[np.searchsorted(unread, start) :]
    if chunk is not None:
        nodes = np.concatenate([nodes, chunk[1]])
    if not len(nodes):
        return
    row_bytes, window = dataset.meta.row_bytes, max(PREFETCH_WINDOW_BYTES, dataset.meta.row_bytes)
    first = (dataset.features_offset + nodes * row_bytes) // window
    last = (dataset.features_offset + (nodes + 1) * row_bytes - 1) // window
    windows = np.unique(np.concatenate([first, last]))
    breaks = np.flatnonzero(np.diff(windows) != 1) + 1
    for run in np.split(windows, breaks):
        os.posix_fadvise(fd, int(run[0]) * window, len(run) * window, os.POSIX_FADV_WILLNEED)
