"""Delimited text tables (edge lists, feature and label files) read in blocks.

A file is read in blocks of whole lines and each block is parsed by numpy's C ``loadtxt``,
so memory stays bounded by the block, a progress bar can follow the bytes, and a 10M-line
edge list parses in seconds. When numpy rejects a block, that block alone is scanned again in
Python to name the exact file, line and field, which numpy's own message (counting data rows,
not lines) cannot do. Lines starting with ``#`` (SNAP's comments) and blank lines are skipped.
"""

from __future__ import annotations

import gzip
import io
import math
import warnings
import zlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from foundation.errors import UsageError
from foundation.progress import track
from remotegnn.convert._common import FeatureSource, require_file
from remotegnn.errors import ConvertError

BLOCK_BYTES = 1 << 24
TextSource = gzip.GzipFile | io.BufferedReader  # a table file, gunzipped as it is read or not
COMMENT = "#"


@dataclass(frozen=True)
class TableFormat:
    """How a table file is laid out, as given or sniffed from its first data line."""

    delimiter: str | None  # None: runs of whitespace
    columns: list[str] | None  # the header's names, when the first data line is a header
    ncols: int  # fields on the first data row
    data_offset: int  # byte offset of the first line after the header
    data_line: int  # 1-based line number at data_offset


def sniff(path: Path, what: str, delimiter: str | None = None, header: bool | None = None) -> TableFormat:
    """Find the delimiter (comma, tab, else whitespace) and whether line one is a header (it is
    when a field is not a number), unless given."""
    require_file(path, what)
    offset = 0
    with open_text(path) as handle:
        for number, raw in enumerate(iter(lambda: _readline(handle, path), b""), start=1):
            line = _decode(raw, path, number)
            stripped = line.strip()
            if not stripped or stripped.startswith(COMMENT):
                offset += len(raw)
                continue
            if delimiter is None:
                delimiter = "," if "," in line else "\t" if "\t" in line else None
            fields = _split(line, delimiter)
            if header is None:
                header = not all(_is_number(f) for f in fields)
            if header:
                return TableFormat(delimiter, fields, len(fields), offset + len(raw), number + 1)
            return TableFormat(delimiter, None, len(fields), offset, number)
    raise ConvertError(f"{what} {path} holds no data lines")


def column_index(fmt: TableFormat, column: int | str, path: Path, flag: str) -> int:
    """A column given by 0-based position or, when the file has a header, by name."""
    if isinstance(column, str) and not column.lstrip("-").isdigit():
        if fmt.columns is None or column not in fmt.columns:
            known = ", ".join(fmt.columns) if fmt.columns else "none: the file has no header"
            raise UsageError(f"{flag}: {path} has no column {column!r} (columns: {known})")
        return fmt.columns.index(column)
    index = int(column)
    if not 0 <= index < fmt.ncols:
        raise UsageError(f"{flag}: column {index} is out of range; {path} has {fmt.ncols} columns (0..{fmt.ncols - 1})")
    return index


def read_blocks(
    path: Path, fmt: TableFormat, dtype, usecols: Sequence[int] | None, what: str, block_bytes: int = BLOCK_BYTES
) -> Iterator[np.ndarray]:
    """Parsed 2-D blocks of the table, in file order, with a progress bar over the bytes."""
    # a gzip file's text is larger than the file by a factor unknown before reading it
    total = None if _gzipped(path) else max(1, math.ceil((path.stat().st_size - fmt.data_offset) / block_bytes))
    for line, text in track(_text_blocks(path, fmt, block_bytes), f"reading {path.name}", total=total):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", UserWarning)  # a block of only comments is fine
                block = np.loadtxt(
                    io.StringIO(text), dtype=dtype, delimiter=fmt.delimiter, comments=COMMENT, usecols=usecols, ndmin=2
                )
        except ValueError as exc:
            raise _locate(text, line, path, fmt, dtype, usecols, what, exc) from None
        if usecols is None and len(block) and block.shape[1] != fmt.ncols:  # consistent within the block only
            raise _locate(text, line, path, fmt, dtype, usecols, what, ValueError("column count changed"))
        if len(block):
            yield block


def read_table(
    path: Path, fmt: TableFormat, dtype, usecols: Sequence[int] | None, what: str, block_bytes: int = BLOCK_BYTES
) -> np.ndarray:
    width = len(usecols) if usecols is not None else fmt.ncols
    parts = list(read_blocks(path, fmt, dtype, usecols, what, block_bytes))
    return np.concatenate(parts) if parts else np.empty((0, width), dtype=dtype)


class TableFeatures(FeatureSource):
    """Feature rows streamed from a text table straight into the dataset (row i = node i)."""

    def __init__(self, path: Path, fmt: TableFormat, what: str, hint: str = "", block_bytes: int = BLOCK_BYTES):
        self.path, self.fmt, self.what, self.hint, self.block_bytes = path, fmt, what, hint, block_bytes
        self.dim, self.dtype, self.rows = fmt.ncols, np.dtype(np.float32), None

    def blocks(self, max_rows: int) -> Iterator[np.ndarray]:
        yield from read_blocks(self.path, self.fmt, np.float32, None, self.what, self.block_bytes)


def _text_blocks(path: Path, fmt: TableFormat, block_bytes: int) -> Iterator[tuple[int, str]]:
    """(line number of the block's first line, text of whole lines), after the header."""
    line = fmt.data_line
    with open_text(path) as handle:
        handle.seek(fmt.data_offset)
        rest = b""
        while True:
            chunk = _read(handle, block_bytes, path)
            data = rest + chunk
            cut = len(data) if not chunk else data.rfind(b"\n") + 1
            if cut == 0 and chunk:  # a line longer than a block: keep reading
                rest = data
                continue
            body, rest = data[:cut], data[cut:]
            if body:
                yield line, _decode(body, path, line)
                line += body.count(b"\n")
            if not chunk:
                return


def open_text(path: Path) -> TextSource:
    """A table file's bytes, gunzipped when it ends in ``.gz`` (OGB ships its tables so)."""
    return gzip.open(path, "rb") if _gzipped(path) else open(path, "rb")


def _read(handle: TextSource, size: int, path: Path) -> bytes:
    try:
        return handle.read(size)
    except (OSError, EOFError, zlib.error) as exc:  # gzip.BadGzipFile is an OSError
        raise ConvertError(f"{path} is corrupt or truncated ({exc}); download it again") from None


def _readline(handle: TextSource, path: Path) -> bytes:
    try:
        return handle.readline()
    except (OSError, EOFError, zlib.error) as exc:
        raise ConvertError(f"{path} is corrupt or truncated ({exc}); download it again") from None


def _gzipped(path: Path) -> bool:
    return path.suffix.lower() == ".gz"


def _locate(
    text: str, first_line: int, path: Path, fmt: TableFormat, dtype, usecols, what: str, exc: ValueError
) -> ConvertError:
    """The first line of a rejected block that does not parse, as a file:line error."""
    parse = _parser(dtype)
    wanted = list(usecols) if usecols is not None else list(range(fmt.ncols))
    for offset, line in enumerate(text.splitlines()):
        stripped = line.strip()
        if not stripped or stripped.startswith(COMMENT):
            continue
        fields = _split(line, fmt.delimiter)
        where = f"{path}:{first_line + offset}"
        if usecols is None and len(fields) != fmt.ncols:
            return ConvertError(
                f"{where}: {len(fields)} fields where the first row has {fmt.ncols} ({what}): {_show(line)}"
            )
        if max(wanted) >= len(fields):
            return ConvertError(
                f"{where}: {len(fields)} fields, column {max(wanted)} is missing ({what}): {_show(line)}"
            )
        for col in wanted:
            try:
                parse(fields[col])
            except ValueError:
                kind = "an integer" if np.dtype(dtype).kind in "iu" else "a number"
                return ConvertError(f"{where}: field {col} is {fields[col]!r}, not {kind} ({what}): {_show(line)}")
    return ConvertError(f"{path}: lines {first_line}+ cannot be parsed ({what}): {exc}")


def _parser(dtype):
    kind = np.dtype(dtype).kind
    if kind in "iu":
        return int
    if kind == "f":
        return float
    return str


def _split(line: str, delimiter: str | None) -> list[str]:
    return [f.strip() for f in line.strip().split(delimiter)]


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _decode(raw: bytes, path: Path, line: int) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        bad_line = line + raw[: exc.start].count(b"\n")
        raise ConvertError(f"{path}:{bad_line}: not UTF-8 text; is this a text table?") from None


def _show(line: str, limit: int = 80) -> str:
    line = line.rstrip("\r\n")
    return repr(line if len(line) <= limit else line[:limit] + "...")
