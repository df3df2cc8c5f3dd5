"""The runs file: one record per `testbed run`, what calibration reads (``planner calibrate --from``).

The records are :class:`contracts.runs.RunRecord` in a :class:`contracts.runs.RunsFile`. A record
holds the testbed the job ran on (link rates, volume limits, hosts), the commands,
the wall time and exit status, and the learner's output: the last JSON document its first rank
printed (``examples/train_graphsage.py --json`` prints one with each epoch's pipeline stats).
The file is rewritten atomically under a lock, so concurrent runs append without losing one.
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path
from typing import Any

from contracts.runs import RunRecord, RunsFile
from foundation.fileio import read_model, write_model
from foundation.jobtext import last_json

OUTPUT = "learner"  # the learner ranks' stdout copies: learner.RANK in the job's directory
NO_OUTPUT = "the learner printed no JSON document; give the training script its --json flag to record its stats"


def learner_capture(train: list[str], directory: Path) -> list[str]:
    """``train`` with its stdout also copied to ``directory/learner.RANK``; the exit status stays
    the training command's (pipefail). ``$0`` carries the file's stem into the shell."""
    return [
        "/bin/bash",
        "-c",
        'set -o pipefail; "$@" | tee -- "$0.${OMPI_COMM_WORLD_RANK:-$PMIX_RANK}"',
        str(directory / OUTPUT),
        *train,
    ]


def learner_output(directory: Path) -> tuple[dict[str, Any] | None, str]:
    """The first learner rank's last JSON document, or None and why."""
    copies = sorted(directory.glob(f"{OUTPUT}.*"), key=lambda p: int(p.suffix[1:]) if p.suffix[1:].isdigit() else 0)
    if not copies:
        return None, "the learner's output was not captured (it did not start?)"
    document = last_json(copies[0].read_text(errors="replace"))
    return (document, "") if document is not None else (None, NO_OUTPUT)


def append(path: Path, record: RunRecord) -> None:
    """Add ``record`` to the runs file at ``path`` (made if missing)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    lock = os.open(path.parent, os.O_RDONLY)  # the directory: the file itself is replaced on each write
    try:
        fcntl.flock(lock, fcntl.LOCK_EX)
        runs = read_model(path, RunsFile, "runs file") if path.exists() else RunsFile()
        write_model(path, runs.model_copy(update={"runs": [*runs.runs, record]}))
    finally:
        os.close(lock)
