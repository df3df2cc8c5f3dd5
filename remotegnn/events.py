"""The learner's progress events: the loader appends one as each epoch ends, and a heartbeat at
most every ``HEARTBEAT_S`` while it runs, to the file that `remotegnn launch --progress FILE`
names (``MEMORYBRIDGE_PROGRESS``); see :mod:`contracts.progress`.

Only the first learner reports (the others train the same epochs in step); each loader of the
process says which it is (the order they were made in), and a file that cannot be written is
warned about once and then left alone: progress never stops training.
"""

from __future__ import annotations

import itertools
import logging
import os
import time
from pathlib import Path

from contracts.progress import HEARTBEAT_S, PROGRESS_ENV, EpochEnded, Heartbeat, append_event
from contracts.stats import PipelineStats

log = logging.getLogger(__name__)


_LOADERS_MADE = itertools.count()  # this process's loaders, numbered in the order they are made


class ProgressEvents:
    """Where one loader reports its epochs, if anywhere."""

    def __init__(self, learner_index: int, heartbeat_s: float | None = None):
        named = os.environ.get(PROGRESS_ENV)
        self.path: Path | None = Path(named) if named and learner_index == 0 else None
        self.loader = next(_LOADERS_MADE)
        self.heartbeat_s = HEARTBEAT_S if heartbeat_s is None else heartbeat_s
        self._beat_at = time.monotonic()

    def batch_taken(self, epoch: int, batches: int) -> None:
        """The training loop came back for another batch: a heartbeat when one is due."""
        if self.path is None or time.monotonic() - self._beat_at < self.heartbeat_s:
            return
        self._append(Heartbeat(loader=self.loader, epoch=epoch, batches=batches))

    def epoch_ended(self, epoch: int, seconds: float, batches: int, stall_s: float, stats: PipelineStats) -> None:
        if self.path is None:
            return
        self._append(
            EpochEnded(
                loader=self.loader,
                epoch=epoch,
                seconds=seconds,
                batches=batches,
                batches_per_s=batches / seconds if seconds > 0 else 0.0,
                stall_s=stall_s,
                stats=stats,
            )
        )

    def _append(self, event: EpochEnded | Heartbeat) -> None:
        assert self.path is not None
        self._beat_at = time.monotonic()  # an epoch's end says the job is alive as well as a heartbeat
        try:
            append_event(self.path, event)
        except OSError as exc:
            log.warning("progress events cannot be written to %s (%s); training goes on without them", self.path, exc)
            self.path = None
