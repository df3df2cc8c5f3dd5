"""A memory rank's start-up reads: its memory cache and its share of the learner's two caches,
in one sweep of its part of the feature file.

The learner's tiers (device and RAM) and the memory cache are disjoint sets of this rank's rows.
Read one after another, each would sweep the rank's whole part of the file (a fill reads whole
read-ahead windows, and a few percent of the rows touch nearly every window), so start-up would
read the part two or three times. Merged in node order and cut into chunks, they read each
stretch of the file once, while the page cache still holds it.
"""

from __future__ import annotations

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
    cache's rows up to the same node (all of them before the last, or at once with no chunks)."""
    num_nodes = dataset.meta.num_nodes
    if not chunks:
        memory.fill_until(num_nodes)
    for i, (tier, nodes) in enumerate(chunks):
        memory.fill_until(num_nodes if i == len(chunks) - 1 else int(nodes[-1]) + 1)
        yield tier, nodes, read_rows(dataset, nodes, wire_dtype)
