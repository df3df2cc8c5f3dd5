"""Atomic file writes (a reader never sees a half-written plan, snapshot or profile) and model reads."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import TypeVar

from pydantic import BaseModel, ValidationError

from planner.errors import InputFileError, format_validation_error

ModelT = TypeVar("ModelT", bound=BaseModel)


def atomic_write_bytes(path: str | os.PathLike[str], data: bytes) -> Path:
    """Write ``data`` to ``path`` via a temp file in the same directory, fsync, then rename."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return target


def atomic_write_text(path: str | os.PathLike[str], text: str) -> Path:
    return atomic_write_bytes(path, text.encode("utf-8"))


def read_model(path: str | os.PathLike[str], model: type[ModelT], what: str) -> ModelT:
    """Read a user's JSON file into ``model``; errors name the file and the failing fields."""
    path = Path(path)
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise InputFileError(f"{what} {path} cannot be read: {exc.strerror}") from exc
    try:
        return model.model_validate_json(raw)
    except ValidationError as exc:
        raise InputFileError(f"{what} {path} is invalid: {format_validation_error(exc)}") from exc
