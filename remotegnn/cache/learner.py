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

from contracts.shards import owners
from remotegnn import compact, wire
from remotegnn.cache.gather import fill_threads, gather_rows_threaded
from remotegnn.cache.kernels import empty_slots, gather_cached, scatter_rows
from remotegnn.precision import to_wire
from remotegnn.store import GraphDataset

FILL_CHUNK_ROWS = 1 << 16
"""Rows read (and converted) per step of a fill, so a fill's scratch stays small."""


def bits(rows: np.ndarray) -> np.ndarray:
    """The same bytes as unsigned integers of the same width (what the copy kernels move)."""
    return rows.view(f"u{rows.dtype.itemsize}")


def nodes_digest(nodes: np.ndarray) -> int:
    """CRC-32 of a sorted node set: memory ranks and learner check they mean the same rows."""
    return zlib.crc32(np.ascontiguousarray(nodes, dtype=np.int64).tobytes())


def read_rows(dataset: GraphDataset, nodes: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """Feature rows of sorted ``nodes`` from the dataset, in ``dtype`` (a wire dtype), read on
    several threads (``remotegnn.cache.gather``)."""
    meta = dataset.meta
    rows = np.empty((len(nodes), meta.feature_dim), dtype=dtype)
    scratch = np.empty((min(len(nodes), FILL_CHUNK_ROWS), meta.feature_dim), dtype=meta.feature_dtype)
    threads = fill_threads()
    for start in range(0, len(nodes), FILL_CHUNK_ROWS):
        chunk = nodes[start : start + FILL_CHUNK_ROWS]
        gather_rows_threaded(dataset.features, chunk, scratch[: len(chunk)], threads)
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
    """Rows of ``nodes`` in the wire dtype, in the order they arrived; ``slot[v]`` is v's row
    (-1: not held).

    Rows are written where they land and never reordered: a fill of several GiB then holds one
    copy of the cache, not the three that concatenating and sorting the shares would.
    """

    nodes: np.ndarray
    rows: np.ndarray
    slot: np.ndarray
    filled: int = 0  # rows written so far
    hits: int = 0  # rows this epoch's batches took from here

    @classmethod
    def empty(cls) -> LearnerCache:
        return cls(np.empty(0, dtype=np.int64), np.empty((0, 0), dtype=np.float32), empty_slots(0))

    @classmethod
    def allocate(cls, num_nodes: int, count: int, dim: int, dtype: np.dtype) -> LearnerCache:
        """An unfilled cache for ``count`` rows of ``dim`` values of ``dtype``; ``add`` fills it."""
        if count == 0:
            return cls.empty()
        return cls(np.empty(count, dtype=np.int64), np.empty((count, dim), dtype=dtype), empty_slots(num_nodes))

    @classmethod
    def from_parts(cls, num_nodes: int, parts: list[tuple[np.ndarray, np.ndarray]]) -> LearnerCache:
        """The cache from (nodes, rows) shares, e.g. one per memory rank (none: an empty cache)."""
        count = sum(len(nodes) for nodes, _ in parts)
        if count == 0:
            return cls.empty()
        rows = parts[0][1]
        cache = cls.allocate(num_nodes, count, rows.shape[1], rows.dtype)
        for nodes, share in parts:
            cache.add(nodes, share)
        return cache

    def add(self, nodes: np.ndarray, rows: np.ndarray) -> None:
        """Write a share's rows after those already here; ``nodes`` must be new to the cache."""
        stop = self.filled + len(nodes)
        if stop > len(self.nodes) or rows.shape != (len(nodes), *self.rows.shape[1:]) or rows.dtype != self.rows.dtype:
            raise wire.FrameError(
                f"a learner-cache share of {rows.shape[0]} rows {rows.shape[1:]} of {rows.dtype} does not fit "
                f"the {len(self.nodes) - self.filled} rows {self.rows.shape[1:]} of {self.rows.dtype} still expected"
            )
        if len(nodes) and (int(nodes.min()) < 0 or int(nodes.max()) >= len(self.slot)):
            raise wire.FrameError(f"a learner-cache share names nodes outside [0, {len(self.slot)})")
        self.nodes[self.filled : stop] = nodes
        self.rows[self.filled : stop] = rows
        self.slot[nodes] = np.arange(self.filled, stop, dtype=np.int32)
        self.filled = stop

    def digest(self) -> int:
        """``nodes_digest`` of the rows written so far (the node set, whatever order they came in)."""
        return nodes_digest(np.sort(self.nodes[: self.filled]))

    @property
    def size(self) -> int:
        return len(self.nodes)

    @property
    def nbytes(self) -> int:
        return self.rows.nbytes + self.slot.nbytes

    def assemble(
        self, n_id: np.ndarray, parts: list[np.ndarray], out: np.ndarray | None = None, block_rows: int = 1
    ) -> np.ndarray:
        """The rows of ``n_id`` (into ``out`` when given): held rows from here, the rest from
        ``parts``, memory rank r's rows of the nodes it owns (``(v // block_rows) % len(parts) == r``,
        ``contracts.shards``) that are not held, in ``n_id`` order. Without ``out``, one rank's rows
        come back as they are when nothing is held here."""
        if self.size == 0 and len(parts) == 1 and out is None:
            return parts[0]
        if out is None:
            out = np.empty((len(n_id), parts[0].shape[1]), dtype=parts[0].dtype)
        if self.size:
            need = np.empty(len(n_id), dtype=np.int64)
            missing = gather_cached(self.slot, bits(self.rows), n_id, bits(out), need)
            need = need[:missing]
        else:
            need = np.arange(len(n_id), dtype=np.int64)
        self.hits += len(n_id) - len(need)
        owner = owners(n_id[need], block_rows, len(parts))
        for rank, part in enumerate(parts):
            positions = need if len(parts) == 1 else need[owner == rank]
            if part.shape[0] != len(positions) or part.dtype != out.dtype:
                raise wire.FrameError(
                    f"memory rank {rank} sent {part.shape[0]} rows of {part.dtype}, the learner needs "
                    f"{len(positions)} of {out.dtype}: the ranks disagree on what the learner holds"
                )
            scatter_rows(bits(part), positions, bits(out))
        return out


@dataclass
class Received:
    """One batch as it reached the learner: the owning memory rank's frame (ids, edges, labels)
    and every memory rank's feature rows, which leave out the rows the learner holds (in RAM,
    ``cache``, or on its device). The learner's feed stage assembles ``x`` from the three."""

    frame: wire.Frame
    parts: list[np.ndarray]
    cache: LearnerCache
    block_rows: int = 1  # how the memory ranks deal rows (contracts.shards)

    def __post_init__(self) -> None:
        """Widen the compact structure to PyG's int64 tensors, checking it on the way."""
        self.frame = compact.expand(self.frame, len(self.cache.slot) or None)

    def rows(self, nodes: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
        """The rows of ``nodes`` (the batch's nodes the device does not hold, in ``n_id`` order)."""
        return self.cache.assemble(nodes, self.parts, out, self.block_rows)

    def assembled(self) -> wire.Frame:
        """The frame with ``x`` whole (for a learner with nothing on its device)."""
        frame = self.frame
        x = self.rows(frame["n_id"])
        return wire.Frame(frame.kind, frame.epoch, frame.batch, frame.seq, {**frame.tensors, "x": x}, frame.nbytes)
