"""Training progress as events: one JSON object a line, appended by the learner as each epoch ends.

`remotegnn launch --progress FILE` names the file in the learner ranks' environment
(:data:`PROGRESS_ENV`); every `DistributedGraphLoader` on the first learner appends an
:class:`EpochEnded` event each time an epoch's last batch has been taken, so any training script
that uses the loader reports progress without printing anything. A script usually has several
loaders (training, validation, test), told apart by ``loader``, the order the script made them
in: `provision run` follows the first, the training loader of every PyG recipe, and shows each
of its epochs beside the plan's prediction. While an epoch runs, the same loader appends a
:class:`Heartbeat` at most every :data:`HEARTBEAT_S` of training, so `provision run` can tell a job
that is slow from one that has stopped making progress.

Lines are written whole with one ``write`` in append mode, so a reader sees complete lines,
and at worst a last line still being written, which :func:`read_events` leaves for later.
"""

from __future__ import annotations

import os
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Final, Literal

from pydantic import Field, TypeAdapter, ValidationError

from contracts.stats import PipelineStats
from foundation.errors import InputFileError, format_validation_error
from foundation.models import StrictModel

PROGRESS_ENV: Final = "MEMORYBRIDGE_PROGRESS"
PROGRESS_KIND: Final = "memorybridge.progress"
TRAINING_LOADER: Final = 0  # the loader a script makes first: the one whose epochs are the job's
HEARTBEAT_S: Final = 30.0
"""The most training time between two heartbeats of a loader (one a batch would flood the file)."""


class EpochEnded(StrictModel):
    """An epoch's last batch was taken by the training loop (schema ``memorybridge.progress`` v1)."""

    kind: Literal["memorybridge.progress"] = PROGRESS_KIND
    version: Literal[1] = 1
    event: Literal["epoch-ended"] = "epoch-ended"
    loader: int = Field(0, ge=0, description="which of the process's loaders: 0 for the first it made, and so on")
    epoch: int = Field(ge=0, description="from 0, in the order the loader ran them")
    seconds: float = Field(ge=0, description="the training loop's wall time for the epoch, its own work included")
    batches: int = Field(ge=0)
    batches_per_s: float = Field(ge=0)
    stall_s: float = Field(ge=0, description="seconds the training loop waited for a batch")
    at: datetime = Field(default_factory=lambda: datetime.now(UTC))
    stats: PipelineStats | None = Field(None, description="what the memory server's stages did in the epoch")


class Heartbeat(StrictModel):
    """The training loop took another batch: the job is alive and where it is in the epoch."""

    kind: Literal["memorybridge.progress"] = PROGRESS_KIND
    version: Literal[1] = 1
    event: Literal["heartbeat"] = "heartbeat"
    loader: int = Field(0, ge=0, description="which of the process's loaders: 0 for the first it made, and so on")
    epoch: int = Field(ge=0)
    batches: int = Field(ge=0, description="batches of the epoch taken so far")
    at: datetime = Field(default_factory=lambda: datetime.now(UTC))


ProgressEvent = Annotated[EpochEnded | Heartbeat, Field(discriminator="event")]
EVENT: Final[TypeAdapter[EpochEnded | Heartbeat]] = TypeAdapter(ProgressEvent)


def append_event(path: str | os.PathLike[str], event: EpochEnded | Heartbeat) -> None:
    """Add ``event`` to the file at ``path`` as one line (one ``write`` in append mode)."""
    line = (event.model_dump_json() + "\n").encode()
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, line)
    finally:
        os.close(fd)


def read_events(text: str, source: str | Path = "progress file") -> list[EpochEnded | Heartbeat]:
    """The events in ``text``, in order; a last line without its newline is still being written
    and is left out. A line that is not an event is an error naming its line number."""
    events = []
    for number, line in enumerate(text.split("\n")[:-1], start=1):
        if not line.strip():
            continue
        try:
            events.append(EVENT.validate_json(line))
        except ValidationError as exc:
            raise InputFileError(
                f"{source} line {number} is not a progress event: {format_validation_error(exc)}"
            ) from exc
    return events
