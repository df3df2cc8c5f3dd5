"""A memory rank's start-up reads: its memory cache and its share of the learner's two caches,
in one sweep of its part of the feature file.

The learner's tiers (device and RAM) and the memory cache are disjoint sets of this rank's rows.
Read one after another, each would sweep the rank's whole part of the file (a fill reads whole
windows, and a few percent of the rows touch nearly every window), so start-up would read the
part two or three times. Merged in node order and cut into steps of one learner chunk each, they
are read together: each step reads its stretch of the file once, past the page cache
(``remotegnn.cache.direct``), into the memory cache's rows and the chunk it sends.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Literal

import numpy as np

from remotegnn.cache import FeatureCache
from remotegnn.cache.direct import DirectRows
from remotegnn.precision import to_wire
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
    """Each chunk's (tier, nodes, rows in ``wire_dtype``), in turn. A step reads together the
    chunks whose nodes interleave (a cut's two tiers) and the memory cache's rows up to the same
    node (all of them with the last step). Without chunks the memory cache is read in steps of
    about a chunk's bytes."""
    meta = dataset.meta
    steps = _steps(memory, chunks, meta.num_nodes, chunk_rows(meta.row_bytes))
    stored = np.dtype(meta.feature_dtype)
    with DirectRows.of(dataset) as reader:
        for stop, step_chunks in steps:
            rows = [np.empty((len(nodes), meta.feature_dim), dtype=stored) for _, nodes in step_chunks]
            reader.read(
                [memory.claim_unread(stop), *((nodes, out) for (_, nodes), out in zip(step_chunks, rows, strict=True))]
            )
            for (tier, nodes), out in zip(step_chunks, rows, strict=True):
                yield tier, nodes, _in_wire(out, wire_dtype)


def read_memory_cache(dataset: GraphDataset, memory: FeatureCache) -> None:
    """The memory cache read alone, in the sweep's steps: a rank that sends the learner no rows."""
    for _ in sweep(dataset, memory, [], np.dtype(dataset.meta.feature_dtype)):
        pass  # without chunks a sweep yields nothing


def _in_wire(rows: np.ndarray, wire_dtype: np.dtype) -> np.ndarray:
    """``rows`` (the stored dtype) as the wire sends them."""
    if rows.dtype == wire_dtype:
        return rows
    out = np.empty(rows.shape, dtype=wire_dtype)
    to_wire(rows, out)
    return out


_Step = tuple[int, list[tuple[Tier, np.ndarray]]]
"""Where a step of the sweep ends (the memory cache is read up to there) and the chunks it reads."""


def _steps(memory: FeatureCache, chunks: list[tuple[Tier, np.ndarray]], num_nodes: int, rows: int) -> list[_Step]:
    """The sweep's steps: a chunk each, or the chunks whose nodes interleave, the last step
    reading the rest of the memory cache; without chunks, the memory cache's unread nodes every
    ``rows``."""
    if not chunks:
        unread = memory.unread_below(num_nodes)
        ends = [int(unread[end - 1]) + 1 for end in range(rows, len(unread), rows)] + [num_nodes]
        return [(end, []) for end in ends]
    steps: list[_Step] = []
    for chunk in chunks:
        first, last = int(chunk[1][0]), int(chunk[1][-1]) + 1
        if steps and first < steps[-1][0]:
            steps[-1] = (max(steps[-1][0], last), [*steps[-1][1], chunk])
        else:
            steps.append((last, [chunk]))
    steps[-1] = (num_nodes, steps[-1][1])
    return steps
