"""Atomic file writes and pydantic-model reads.

A reader never sees a half-written plan, snapshot, profile, state or dataset meta: every write
goes to a temp file in the same directory, is fsynced, then renamed over the target. Reads of
user files validate into a model and fail with an error naming the file and the failing fields.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO, TypeVar

from pydantic import BaseModel, ValidationError

from foundation.errors import InputFileError, format_validation_error

ModelT = TypeVar("ModelT", bound=BaseModel)
JSON_INDENT = 2  # model files are read by people too


@contextmanager
def atomic_writer(path: str | os.PathLike[str]) -> Iterator[BinaryIO]:
    """A binary handle on a temp file in ``path``'s directory, fsynced and renamed over ``path``
    when the block ends; removed, leaving ``path`` as it was, when the block raises."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def atomic_write_bytes(path: str | os.PathLike[str], data: bytes) -> Path:
    """Write ``data`` to ``path`` via a temp file in the same directory, fsync, then rename."""
    with atomic_writer(path) as handle:
        handle.write(data)
    return Path(path)


def atomic_write_text(path: str | os.PathLike[str], text: str) -> Path:
    return atomic_write_bytes(path, text.encode("utf-8"))


def model_json(model: BaseModel) -> str:
    """A model as the indented JSON document (with a final newline) that files and ``--json`` share."""
    return model.model_dump_json(indent=JSON_INDENT) + "\n"


def write_model(path: str | os.PathLike[str], model: BaseModel) -> Path:
    """Write ``model`` as indented JSON, atomically."""
    return atomic_write_text(path, model_json(model))


def read_model(path: str | os.PathLike[str], model: type[ModelT], what: str) -> ModelT:
    """Read a user's JSON file into ``model``; errors name ``what`` it is, the file and the failing fields."""
    path = Path(path)
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise InputFileError(f"{what} {path} cannot be read: {exc.strerror}") from exc
    try:
        return model.model_validate_json(raw)
    except ValidationError as exc:
        raise InputFileError(f"{what} {path} is invalid: {format_validation_error(exc)}") from exc
