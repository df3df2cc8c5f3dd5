"""The memory machine's static feature cache: hot rows in RAM, the rest from the volume.

``slot[v]`` is the row of node v in ``rows`` (-1: not cached), so a batch's gather is one pass
over its node ids. Building reads each chosen row once, in file order (the ids are sorted), so
the volume sees sequential reads rather than one random read per row.

A memory rank defers the reads (``fill=False``): its rows then live in shared memory, which the
pipeline's forked workers see, and the rank reads them in the same sweep of its part of the file
as the learner's share (``claim_unread``), so start-up reads that part once rather than twice.
"""

from __future__ import annotations

import mmap
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from foundation.errors import UsageError
from foundation.progress import track
from remotegnn.cache.gather import fill_threads, gather_rows_threaded
from remotegnn.cache.kernels import empty_slots, gather_cached, gather_rows, scatter_rows
from remotegnn.store import GraphDataset

if TYPE_CHECKING:
    from remotegnn.volume import FeatureVolume

BUILD_CHUNK_ROWS = 1 << 16


@dataclass
class CacheCounters:
    """Feature reads served by the cache (hits) and by the volume (misses)."""

    hits: int = 0
    misses: int = 0

    @property
    def hit_rate(self) -> float:
        total = self.hits + self.misses
        return self.hits / total if total else 0.0

    def add(self, other: CacheCounters) -> None:
        self.hits += other.hits
        self.misses += other.misses


@dataclass
class FeatureCache:
    """Static cache of feature rows chosen by a policy's ranking, within a byte budget."""

    dataset: GraphDataset
    policy: str
    slot: np.ndarray
    rows: np.ndarray
    totals: CacheCounters = field(default_factory=CacheCounters)
    # Reused per-batch scratch (measured: allocating per batch costs ~17x a copy; docs/remotegnn.md).
    _positions: np.ndarray = field(default_factory=lambda: np.empty(0, dtype=np.int64), init=False, repr=False)
    _rows_buffer: np.ndarray | None = field(default=None, init=False, repr=False)
    _unread: np.ndarray = field(default_factory=lambda: np.empty(0, dtype=np.int64), repr=False)
    """The chosen nodes not read yet, sorted (a deferred fill reads them by ``fill_until``)."""

    @classmethod
    def build(
        cls,
        dataset: GraphDataset,
        budget_bytes: int,
        ranking: np.ndarray,
        *,
        policy: str,
        progress: bool | None = None,
        fill: bool = True,
    ) -> FeatureCache:
        """Cache the first rows of ``ranking`` that fit in ``budget_bytes`` (rows only; the slot
        map adds 4 bytes per node). ``fill=False``: read nothing yet, the rows in shared memory
        (see the module docstring); nothing may be gathered before ``fill_until`` reads them all."""
        if budget_bytes < 0:
            raise UsageError("cache budget must be >= 0 bytes")
        meta = dataset.meta
        capacity = min(int(budget_bytes) // meta.row_bytes, len(ranking), meta.num_nodes)
        chosen = np.sort(np.asarray(ranking[:capacity], dtype=np.int64))
        slot = empty_slots(meta.num_nodes)
        slot[chosen] = np.arange(capacity, dtype=np.int32)
        shape, dtype = (capacity, meta.feature_dim), np.dtype(meta.feature_dtype)
        rows = np.empty(shape, dtype=dtype) if fill else _shared_rows(shape, dtype)
        cache = cls(dataset, policy, slot, rows, _unread=chosen)
        if fill:
            cache.fill_until(meta.num_nodes, progress)
        return cache

    def fill_until(self, stop: int, progress: bool | None = False) -> None:
        """Read, in file order, the rows of the chosen nodes below ``stop`` not read yet (on
        several threads: ``remotegnn.cache.gather``)."""
        nodes, rows = self.claim_unread(stop)
        chunks = range(0, len(nodes), BUILD_CHUNK_ROWS)
        threads = fill_threads()
        for start in track(chunks, f"filling {self.policy} cache", total=len(chunks), enabled=progress):
            end = start + BUILD_CHUNK_ROWS
            gather_rows_threaded(self.dataset.features, nodes[start:end], rows[start:end], threads)

    def claim_unread(self, stop: int) -> tuple[np.ndarray, np.ndarray]:
        """The chosen nodes below ``stop`` not read yet and the rows of ``rows`` they go to, from
        now on counted as read: the caller fills those rows before anything is gathered (a sweep
        reading them together with other rows: ``remotegnn.server.startup``)."""
        count = int(np.searchsorted(self._unread, stop))
        first = self.capacity - len(self._unread)  # the unread nodes' rows follow the read ones
        nodes, self._unread = self._unread[:count], self._unread[count:]
        return nodes, self.rows[first : first + count]

    def unread_below(self, stop: int) -> np.ndarray:
        """The chosen nodes below ``stop`` not read yet: what ``fill_until(stop)`` would read."""
        return self._unread[: int(np.searchsorted(self._unread, stop))]

    @property
    def filled(self) -> bool:
        return len(self._unread) == 0

    @classmethod
    def empty(cls, dataset: GraphDataset) -> FeatureCache:
        return cls.build(dataset, 0, np.empty(0, dtype=np.int64), policy="none")

    @property
    def capacity(self) -> int:
        return self.rows.shape[0]

    @property
    def nbytes(self) -> int:
        return self.rows.nbytes + self.slot.nbytes

    def gather(self, n_id: np.ndarray, out: np.ndarray, volume: FeatureVolume | None = None) -> CacheCounters:
        """Fill out[:len(n_id)] with the rows of n_id: cached rows from RAM, the rest read from
        ``volume`` (or, without one, from features.npy through the page cache)."""
        n = len(n_id)
        if out.shape[0] < n or out.shape[1:] != self.rows.shape[1:] or out.dtype != self.rows.dtype:
            raise UsageError(f"gather: out must be at least [{n}, {self.rows.shape[1]}] of {self.rows.dtype}")
        miss_pos = self._scratch_positions(n)
        misses = gather_cached(self.slot, self.rows, n_id, out, miss_pos)
        if misses:
            positions = miss_pos[:misses]
            nodes = n_id[positions]
            order = np.argsort(nodes, kind="stable")
            sorted_nodes = nodes[order]
            buffer = self._scratch_rows(misses)
            if volume is not None:
                unique, inverse = np.unique(sorted_nodes, return_inverse=True)
                volume.read_rows(unique, buffer[: len(unique)])
                if len(unique) != misses:
                    buffer[:misses] = buffer[inverse]
            else:
                gather_rows(self.dataset.features, sorted_nodes, buffer)
            scatter_rows(buffer[:misses], positions[order], out)
        counters = CacheCounters(n - misses, misses)
        self.totals.add(counters)
        return counters

    def _scratch_positions(self, n: int) -> np.ndarray:
        if self._positions.shape[0] < n:
            self._positions = np.empty(max(n, 1 << 16), dtype=np.int64)
        return self._positions

    def _scratch_rows(self, n: int) -> np.ndarray:
        if self._rows_buffer is None or self._rows_buffer.shape[0] < n:
            self._rows_buffer = np.empty((max(n, 1 << 14), self.rows.shape[1]), dtype=self.rows.dtype)
        return self._rows_buffer


def _shared_rows(shape: tuple[int, int], dtype: np.dtype) -> np.ndarray:
    """Zeroed rows in anonymous shared memory: written after a fork, read by the forked workers."""
    size = max(1, shape[0] * shape[1] * dtype.itemsize)
    return np.frombuffer(mmap.mmap(-1, size), dtype=dtype, count=shape[0] * shape[1]).reshape(shape)
