"""Read and write ``.npy`` arrays with plain file I/O, a block at a time.

Memory-mapping a file counts every page touched into the process's resident set until the
kernel reclaims it, so a conversion that maps a 50 GB feature file reports (and may briefly hold)
tens of GB of RSS. Reading and writing through a reused buffer keeps the resident set at the
size of one block whatever the file's size, which is what a conversion of a graph larger than
RAM needs. ``NpyReader`` reads a ``.npy`` file or a member of an ``.npz`` archive (compressed
or not) with ``allow_pickle`` never involved; ``NpyAppender`` writes an array whose length is
known only at the end.
"""

from __future__ import annotations

import mmap
import os
import zipfile
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO

import numpy as np
from numpy.lib import format as npy_format

from remotegnn.errors import ConvertError

# The appender's header is padded to this fixed size, so it can be rewritten in place with the
# final shape; a multiple of 64 keeps the data aligned as numpy's own writer does.
APPENDER_HEADER_BYTES = 128
_MAGIC_V1 = npy_format.magic(1, 0)
READ_BYTES = 1 << 24  # one read's size: a block is filled in a few reads of at most this
MAX_HEADER_BYTES = 100_000  # numpy's own limit on what it parses without being told it is safe


def scattered_map(path: Path) -> np.ndarray:
    """A ``.npy`` file mapped read-only for scattered reads (``madvise(MADV_RANDOM)``).

    A fault on a plain mapping reads the 32 pages around the one touched, which pays off when the
    next reads are its neighbours. A gather in a new node order touches pages at random, and under
    a memory limit each read-around window evicts pages the next gathers need. ``remotegnn reorder
    --order rcm`` of a 564 MB graph in a 141 MB memory group (a quarter of it) took 91 s mapped
    this way, and had not finished after 11 minutes with read-around (17 s without a limit)."""
    header = np.load(path, mmap_mode="r")  # the shape, dtype and data offset, read from the header
    with open(path, "rb") as handle:
        mapping = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)
    mapping.madvise(mmap.MADV_RANDOM)
    return np.ndarray(header.shape, header.dtype, buffer=mapping, offset=header.offset)


class NpyReader:
    """One ``.npy`` array, in a file or an ``.npz`` member, read a slice at a time.

    ``what`` names the array in errors (e.g. ``raw/data.npz[edge_index]``). Only numeric dtypes
    are accepted: an object array would need unpickling, which is refused.
    """

    def __init__(self, path: str | os.PathLike[str], member: str | None = None):
        self.path, self.member = Path(path), member
        self.what = f"{self.path}[{member}]" if member else str(self.path)
        with self._open() as handle:
            shape, self.fortran, dtype = self._header(handle)
            self._describe(shape, dtype, handle.tell())

    @classmethod
    def bare(cls, path: Path, dtype, row_shape: tuple[int, ...]) -> NpyReader:
        """A file of bare C-order rows without a header (IGB's large sizes ship such files under a
        ``.npy`` name); its row count follows from its size."""
        reader = cls.__new__(cls)
        reader.path, reader.member, reader.what, reader.fortran = path, None, str(path), False
        row_bytes = int(np.prod(row_shape, dtype=np.int64)) * np.dtype(dtype).itemsize
        size = path.stat().st_size
        if size % row_bytes:
            raise ConvertError(
                f"{path} has no .npy header and its {size:,} bytes are not whole rows of {row_shape} {np.dtype(dtype)}"
            )
        reader._describe((size // row_bytes, *row_shape), np.dtype(dtype), 0)
        return reader

    def _describe(self, shape: tuple[int, ...], dtype: np.dtype, offset: int) -> None:
        self.shape, self.dtype, self.offset = shape, dtype, offset
        if self.dtype.hasobject or self.dtype.kind not in "biuf":
            raise ConvertError(f"{self.what} has dtype {self.dtype}; only numeric arrays are read (no unpickling)")
        self.rows = self.shape[0] if self.shape else 1
        self.row_items = int(np.prod(self.shape[1:], dtype=np.int64)) if len(self.shape) > 1 else 1
        self.nbytes = int(np.prod(self.shape, dtype=np.int64)) * self.dtype.itemsize

    @contextmanager
    def _open(self) -> Iterator[IO[bytes]]:
        """The file, or the archive member, positioned at its start; a read that finds it corrupt
        or missing becomes a one-line error naming it."""
        try:
            if self.member is None:
                with open(self.path, "rb") as handle:
                    yield handle
                return
            with zipfile.ZipFile(self.path) as archive:
                name = self.member if self.member in archive.namelist() else f"{self.member}.npy"
                with archive.open(name) as member:
                    yield member
        except FileNotFoundError:
            raise ConvertError(f"{self.path} does not exist") from None
        except (zipfile.BadZipFile, KeyError, EOFError, OSError, zlib.error) as exc:
            raise ConvertError(f"{self.what} cannot be read: corrupt or truncated ({exc}); download it again") from None

    def _header(self, handle: IO[bytes]) -> tuple[tuple[int, ...], bool, np.dtype]:
        try:
            version = npy_format.read_magic(handle)
            read = npy_format.read_array_header_1_0 if version == (1, 0) else npy_format.read_array_header_2_0
            shape, fortran, dtype = read(handle, max_header_size=MAX_HEADER_BYTES)
        except (ValueError, OSError, EOFError, zipfile.BadZipFile, SyntaxError) as exc:
            raise ConvertError(f"{self.what} is not a readable .npy array ({exc})") from None
        return tuple(int(s) for s in shape), bool(fortran), np.dtype(dtype)

    def read(self, start: int, stop: int) -> np.ndarray:
        """Rows ``start:stop`` (seeks: use ``blocks`` to walk a compressed member)."""
        for block in self.blocks(stop - start, start=start, stop=stop):
            return block
        return np.empty((0, *self.shape[1:]), dtype=self.dtype)

    def blocks(self, rows: int, *, start: int = 0, stop: int | None = None) -> Iterator[np.ndarray]:
        """Consecutive blocks of at most ``rows`` rows of a C-order array, read through one
        handle (a compressed member is decompressed once, front to back)."""
        if self.fortran and len(self.shape) > 1:
            raise ConvertError(f"{self.what} is stored in Fortran order; save it in C order (np.ascontiguousarray)")
        stop = self.rows if stop is None else stop
        for block in self._flat(rows * self.row_items, start * self.row_items, (stop - start) * self.row_items):
            yield block.reshape((-1, *self.shape[1:]))

    @property
    def pair_count(self) -> int:
        """How many edges an edge array holds: [2, E] or [E, 2] (a 2 x 2 array is read as [E, 2])."""
        if len(self.shape) != 2 or 2 not in self.shape:
            raise ConvertError(f"{self.what} has shape {list(self.shape)}; edges are [2, E] or [E, 2]")
        return self.shape[1] if self._by_row else self.shape[0]

    @property
    def _by_row(self) -> bool:
        return self.shape[0] == 2 and self.shape[1] != 2

    def pairs(self, rows: int) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        """(sources, targets) blocks of an edge array, [2, E] or [E, 2], stored in C or Fortran
        order (numpy saves a transposed array in Fortran order, so both occur in the wild)."""
        count, by_row = self.pair_count, self._by_row
        if by_row != self.fortran:  # two runs of E ids: sources, then targets
            sources = self._flat(rows, 0, count)
            targets = self._flat(rows, count, count)
            yield from zip(sources, targets, strict=True)
        else:  # E (source, target) pairs
            for block in self._flat(rows * 2, 0, 2 * count):
                pairs = block.reshape(-1, 2)
                yield pairs[:, 0], pairs[:, 1]

    def _flat(self, items: int, first: int, count: int) -> Iterator[np.ndarray]:
        """``count`` items from item ``first`` on, in file order, ``items`` at a time."""
        with self._open() as handle:
            handle.seek(self.offset + first * self.dtype.itemsize)
            for at in range(0, count, items):
                out = np.empty(min(items, count - at), dtype=self.dtype)
                self._fill(handle, out.data.cast("B"), first + at)
                yield out

    def _fill(self, handle: IO[bytes], view: memoryview, first_item: int) -> None:
        """Fill ``view`` from ``handle``, which stands at item ``first_item`` of the data."""
        got = 0
        while got < len(view):
            data = handle.read(min(len(view) - got, READ_BYTES))
            if not data:
                present = first_item * self.dtype.itemsize + got
                raise ConvertError(
                    f"{self.what} is truncated: its data ends after {present:,} of the {self.nbytes:,} bytes "
                    "its header promises; download it again"
                )
            view[got : got + len(data)] = data
            got += len(data)


def archive_members(path: Path) -> list[str]:
    """The array names in an ``.npz`` archive (without ``.npy``)."""
    try:
        with zipfile.ZipFile(path) as archive:
            names = archive.namelist()
    except FileNotFoundError:
        raise ConvertError(f"{path} does not exist") from None
    except (zipfile.BadZipFile, OSError) as exc:
        raise ConvertError(f"{path} is not a readable .npz archive ({exc})") from None
    return [n[: -len(".npy")] if n.endswith(".npy") else n for n in names]


class NpyAppender:
    """Write a C-order ``.npy`` file block by block; its length is fixed when it is closed.

    The header is written with a fixed size and rewritten in place at ``close`` with the rows
    actually appended, so the array never needs to be held, or mapped, whole.
    """

    def __init__(self, path: Path, dtype, row_shape: tuple[int, ...] = ()):
        self.path, self.dtype, self.row_shape = path, np.dtype(dtype), tuple(row_shape)
        path.parent.mkdir(parents=True, exist_ok=True)
        self.handle = open(path, "wb")
        self.rows = 0
        self._write_header()

    def _write_header(self) -> None:
        fields = {"descr": npy_format.dtype_to_descr(self.dtype), "fortran_order": False}
        text = repr({**fields, "shape": (self.rows, *self.row_shape)})
        body = APPENDER_HEADER_BYTES - len(_MAGIC_V1) - 2 - 1  # magic, 2-byte length, final newline
        if len(text) > body:
            raise ValueError(f"{self.path}: the .npy header does not fit {APPENDER_HEADER_BYTES} bytes")
        header = text.ljust(body) + "\n"
        self.handle.seek(0)
        self.handle.write(_MAGIC_V1 + len(header).to_bytes(2, "little") + header.encode("latin1"))
        self.handle.seek(0, os.SEEK_END)

    def append(self, block: np.ndarray) -> None:
        block = np.ascontiguousarray(block, dtype=self.dtype)
        if block.shape[1:] != self.row_shape:
            raise ValueError(f"{self.path}: rows of shape {block.shape[1:]}, expected {self.row_shape}")
        self.handle.write(block.data)
        self.rows += len(block)

    def skip(self, rows: int) -> None:
        """Append ``rows`` rows of zeros without writing them: the file gets a hole, which
        reads back as zeros and takes no disk (a node type without features, say)."""
        self.handle.seek(rows * int(np.prod(self.row_shape, dtype=np.int64)) * self.dtype.itemsize, os.SEEK_CUR)
        self.rows += rows

    def close(self) -> None:
        if not self.handle.closed:
            self.handle.truncate()  # a trailing hole needs the length set
            self._write_header()
            self.handle.close()

    def __enter__(self) -> NpyAppender:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class NpyRows(NpyAppender):
    """Write a C-order ``.npy`` file of known ``shape`` front to back, with the header numpy's own
    writers give it (``np.save``, ``open_memmap``), so the file is byte for byte the one filling a
    memory map would give, without the map's pages entering the resident set. The rows appended
    must add up to ``shape[0]``."""

    def __init__(self, path: Path, dtype, shape: tuple[int, ...]):
        self.shape = tuple(int(s) for s in shape)
        super().__init__(path, dtype, self.shape[1:])

    def _write_header(self) -> None:
        self.handle.seek(0)
        fields = {"descr": npy_format.dtype_to_descr(self.dtype), "fortran_order": False, "shape": self.shape}
        npy_format.write_array_header_1_0(self.handle, fields)
        self.handle.seek(0, os.SEEK_END)

    def close(self) -> None:
        if not self.handle.closed and self.rows != self.shape[0]:
            self.handle.close()
            raise ValueError(f"{self.path}: {self.rows} rows were written of the {self.shape[0]} its header promises")
        super().close()

    def __exit__(self, exc_type, *exc) -> None:
        if exc_type is None:
            self.close()
        else:  # the error on its way out says what went wrong, not that rows are missing
            self.handle.close()
