"""Reading a feature file's rows past the page cache, for a memory rank's start-up sweep.

Through the file's memory map, every 4 KiB page a sweep touches costs the core that faults on it
kernel work: reading it in, adding it to the page cache, mapping it, and later reclaiming it. One
core swept about 0.65-1 GB/s that way, below a fast volume's rate, and memory hosts sharing cores
swept slower still. Read with ``O_DIRECT``, the volume writes each read straight into this
process's buffer and the core only copies the wanted rows out of it: on a 2-core machine a cold
sweep of 30% of a 12 GiB file's rows cost the machine 0.12-0.13 CPU seconds per GB of file this
way against 0.78-0.89 through the memory map on one thread, and the disk bound it
(``benchmarks/sweep_reads.py``).

What is read is what the memory map's read-ahead would read: every window of ``WINDOW_BYTES``
holding a wanted row. Runs of adjacent windows are read in pieces of up to ``PIECE_BYTES``, the
next piece on a thread of the reader's while the rows of the one before are copied. Rows wanted
by several callers in one ``read`` share its reads, so a window is read once. Where the
filesystem refuses ``O_DIRECT`` (some RAM-backed ones), the same pieces are read through the page
cache.
"""

from __future__ import annotations

import errno
import mmap
import os
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

import numpy as np

from foundation.errors import UsageError
from remotegnn.cache.kernels import copy_rows_at
from remotegnn.errors import DatasetError
from remotegnn.store import GraphDataset

ALIGN = 4096
"""What ``O_DIRECT`` needs offsets, lengths and buffers aligned to: the device's logical block,
which is at most a page."""
WINDOW_BYTES = 1 << 20
"""The unit of what is read: every such window of the file holding a wanted row (small beside a
64 MiB stripe, so a rank reads little beyond its own rows)."""
PIECE_BYTES = 8 << 20
"""Most bytes in one read: large enough that the volume, not the number of requests, sets the
rate; two such buffers are all a reader holds."""


@dataclass(frozen=True)
class Piece:
    """One read: ``length`` bytes at ``offset`` (aligned), holding each part's rows ``[lo, hi)``,
    the last of which ends ``needed`` bytes in."""

    offset: int
    length: int
    needed: int
    bounds: tuple[tuple[int, int], ...]


class DirectRows:
    """Reads rows of a feature file past the page cache: rows of ``dim`` values of ``dtype``, row 0
    at byte ``offset``. A context manager that owns the open file, two buffers and the thread that
    reads ahead."""

    def __init__(self, path: Path, offset: int, dtype: np.dtype, dim: int) -> None:
        self.path, self.offset, self.dtype, self.dim = path, offset, np.dtype(dtype), dim
        self.row_bytes = dim * self.dtype.itemsize
        if offset % self.dtype.itemsize:
            raise DatasetError(f"{path}: row 0 at byte {offset} is not aligned to its dtype {self.dtype}")
        self.window = max(WINDOW_BYTES, -(-self.row_bytes // ALIGN) * ALIGN)
        self.piece = max(PIECE_BYTES, self.window)
        self.fd, self.direct = _open(path)
        size = -(-(self.piece + self.row_bytes) // ALIGN) * ALIGN
        self._buffers = [mmap.mmap(-1, size) for _ in range(2)]  # anonymous maps: page-aligned
        self._pool = ThreadPoolExecutor(1, thread_name_prefix="remotegnn direct read")
        self.bytes_read = 0

    @classmethod
    def of(cls, dataset: GraphDataset) -> DirectRows:
        """A reader of ``dataset``'s feature file."""
        meta = dataset.meta
        return cls(dataset.features_path, dataset.features_offset, np.dtype(meta.feature_dtype), meta.feature_dim)

    def __enter__(self) -> DirectRows:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self.close()

    def close(self) -> None:
        """Wait for a read in flight, then release the thread, the buffers and the file."""
        self._pool.shutdown(wait=True)
        for buffer in self._buffers:
            buffer.close()
        os.close(self.fd)

    def read(self, parts: Sequence[tuple[np.ndarray, np.ndarray]]) -> None:
        """For each ``(nodes, out)`` of ``parts``: ``out[i]`` = the stored row of ``nodes[i]``.
        Each part's nodes are sorted; ``out`` is ``[len(nodes), dim]`` of the stored dtype."""
        for nodes, out in parts:
            if out.shape != (len(nodes), self.dim) or out.dtype != self.dtype:
                raise UsageError(f"read: out must be [{len(nodes)}, dim] of {self.dtype}, got {out.shape} {out.dtype}")
        starts = [self.offset + np.asarray(nodes, dtype=np.int64) * self.row_bytes for nodes, _ in parts]
        pieces = self.pieces(starts)
        if not pieces:
            return
        pending = self._pool.submit(self._read_piece, pieces[0], 0)
        for i, piece in enumerate(pieces):
            got = pending.result()
            if i + 1 < len(pieces):
                pending = self._pool.submit(self._read_piece, pieces[i + 1], (i + 1) % 2)
            flat = np.frombuffer(self._buffers[i % 2], dtype=self.dtype, count=got // self.dtype.itemsize)
            for (lo, hi), part_starts, (_, out) in zip(piece.bounds, starts, parts, strict=True):
                copy_rows_at(flat, (part_starts[lo:hi] - piece.offset) // self.dtype.itemsize, out[lo:hi])
            del flat  # the buffer is read into again two pieces on

    def pieces(self, starts: Sequence[np.ndarray]) -> list[Piece]:
        """The reads that bring in the rows starting at the byte offsets ``starts`` (one sorted
        array per part): each run of adjacent windows holding a row, cut every ``piece`` bytes.
        A row belongs to the piece it starts in, which reads on to the row's end."""
        every = np.concatenate([np.empty(0, dtype=np.int64), *starts])
        if not len(every):
            return []
        windows = np.unique(np.concatenate([every // self.window, (every + self.row_bytes - 1) // self.window]))
        breaks = np.flatnonzero(np.diff(windows) != 1) + 1
        pieces = []
        for run in np.split(windows, breaks):
            run_start, run_end = int(run[0]) * self.window, (int(run[-1]) + 1) * self.window
            for offset in range(run_start, run_end, self.piece):
                end = min(offset + self.piece, run_end)
                bounds = tuple((int(np.searchsorted(s, offset)), int(np.searchsorted(s, end))) for s in starts)
                last = max((int(s[hi - 1]) for s, (lo, hi) in zip(starts, bounds, strict=True) if hi > lo), default=-1)
                if last < 0:
                    continue  # holds only the tails of rows the piece before reads
                needed = last + self.row_bytes - offset
                pieces.append(Piece(offset, -(-needed // ALIGN) * ALIGN, needed, bounds))
        return pieces

    def _read_piece(self, piece: Piece, which: int) -> int:
        """Read ``piece`` into buffer ``which``; the bytes read (short only at the file's end)."""
        view = memoryview(self._buffers[which])
        try:
            got = os.preadv(self.fd, [view[: piece.length]], piece.offset)
        finally:
            view.release()
        if got < piece.needed:
            raise DatasetError(
                f"{self.path} ends at byte {piece.offset + got}, before the rows its metadata says it holds: "
                "fetch or convert the dataset again"
            )
        self.bytes_read += got
        return got


def _open(path: Path) -> tuple[int, bool]:
    """The file opened for direct reads, or for plain reads where its filesystem refuses them."""
    direct = getattr(os, "O_DIRECT", 0)
    if direct:
        try:
            return os.open(path, os.O_RDONLY | direct), True
        except OSError as error:
            if error.errno != errno.EINVAL:
                raise
    return os.open(path, os.O_RDONLY), False
