"""The learner's feature cache: hot rows kept where the model trains, which memory ranks never send.

The memory side chooses the rows (it holds the graph the rankings need) and knows them for the
whole session, so its vector loaders skip them; the learner fills its copy once per session (the
local transport reads the dataset, the MPI transport receives each memory rank's share when the
session opens) and assembles every batch's ``x`` from its rows and the rows that arrive.

Rows are kept in the wire dtype: they are the very values the wire would have brought, so a batch
is bit-identical with and without the cache, and at float16 the same bytes hold twice the rows.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass

import numpy as np

from remotegnn import wire
from remotegnn.cache.kernels import empty_slots, gather_cached, gather_rows, scatter_rows
from remotegnn.precision import to_wire
from remotegnn.store import GraphDataset

FILL_CHUNK_ROWS = 1 << 16
"""Rows read (and converted) per step of a fill, so a fill's scratch stays small."""


def _bits(rows: np.ndarray) -> np.ndarray:
    """The same bytes as unsigned integers of the same width (what the copy kernels move)."""
    return rows.view(f"u{rows.dtype.itemsize}")


def nodes_digest(nodes: np.ndarray) -> int:
    """CRC-32 of a sorted node set: memory ranks and learner check they mean the same rows."""
    return zlib.crc32(np.ascontiguousarray(nodes, dtype=np.int64).tobytes())


def read_rows(dataset: GraphDataset, nodes: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """Feature rows of sorted ``nodes`` from the dataset, in ``dtype`` (a wire dtype)."""
    meta = dataset.meta
    rows = np.empty((len(nodes), meta.feature_dim), dtype=dtype)
    scratch = np.empty((min(len(nodes), FILL_CHUNK_ROWS), meta.feature_dim), dtype=meta.feature_dtype)
    for start in range(0, len(nodes), FILL_CHUNK_ROWS):
        chunk = nodes[start : start + FILL_CHUNK_ROWS]
        gather_rows(dataset.features, chunk, scratch[: len(chunk)])
        to_wire(scratch[: len(chunk)], rows[start : start + len(chunk)])
    return rows


def held_mask(nodes: np.ndarray, num_nodes: int) -> np.ndarray:
    """A bool per node, set where the learner holds the row (empty when it holds none)."""
    if len(nodes) == 0:
        return np.zeros(0, dtype=np.bool_)
    mask = np.zeros(num_nodes, dtype=np.bool_)
    mask[nodes] = True
    return mask


@dataclass
class LearnerCache:
    """Rows of ``nodes`` (sorted) in the wire dtype; ``slot[v]`` is v's row (-1: not held)."""

    nodes: np.ndarray
    rows: np.ndarray
    slot: np.ndarray
    hits: int = 0  # rows this epoch's batches took from here

    @classmethod
    def from_parts(cls, num_nodes: int, parts: list[tuple[np.ndarray, np.ndarray]]) -> LearnerCache:
        """The cache from (nodes, rows) shares, e.g. one per memory rank (none: an empty cache)."""
        if not parts:
            return cls(np.empty(0, dtype=np.int64), np.empty((0, 0), dtype=np.float32), empty_slots(0))
        nodes = np.concatenate([p[0] for p in parts]).astype(np.int64, copy=False)
        rows = np.concatenate([p[1] for p in parts])
        order = np.argsort(nodes, kind="stable")
        nodes, rows = nodes[order], rows[order]
        slot = empty_slots(num_nodes) if len(nodes) else empty_slots(0)
        slot[nodes] = np.arange(len(nodes), dtype=np.int32)
        return cls(nodes, rows, slot)

    @property
    def size(self) -> int:
        return len(self.nodes)

    @property
    def nbytes(self) -> int:
        return self.rows.nbytes + self.slot.nbytes

    def assemble(self, n_id: np.ndarray, parts: list[np.ndarray], shard_count: int) -> np.ndarray:
        """A batch's ``x``: held rows from here, the rest from ``parts`` (memory rank r's rows of
        the nodes it owns, ``v % shard_count == r``, that are not held, in ``n_id`` order)."""
        if self.size == 0 and shard_count == 1:
            return parts[0]
        out = np.empty((len(n_id), parts[0].shape[1]), dtype=parts[0].dtype)
        if self.size:
            need = np.empty(len(n_id), dtype=np.int64)
            missing = gather_cached(self.slot, _bits(self.rows), n_id, _bits(out), need)
            need = need[:missing]
        else:
            need = np.arange(len(n_id), dtype=np.int64)
        self.hits += len(n_id) - len(need)
        owners = n_id[need] % shard_count
        for rank, part in enumerate(parts):
            positions = need if shard_count == 1 else need[owners == rank]
            if part.shape[0] != len(positions) or part.dtype != out.dtype:
                raise wire.FrameError(
                    f"memory rank {rank} sent {part.shape[0]} rows of {part.dtype}, the learner needs "
                    f"{len(positions)} of {out.dtype}: the ranks disagree on what the learner holds"
                )
            scatter_rows(_bits(part), positions, _bits(out))
        return out
