"""Running `remotegnn launch` jobs for the MPI tests: real mpiexec, real ranks on this host."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

LEARNER = Path(__file__).with_name("learner.py")
JOB_TIMEOUT_S = 180


def launch(*args: str, timeout: float = JOB_TIMEOUT_S, **kwargs) -> subprocess.CompletedProcess:
    """Run `remotegnn launch ARGS` to the end."""
    return subprocess.run(
        [sys.executable, "-m", "remotegnn.cli.main", "launch", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        **kwargs,
    )


def run_learners(
    scenario: str,
    dataset: Path,
    out: Path,
    *,
    memory: int = 1,
    learners: int = 1,
    options: dict | None = None,
    launch_args: tuple[str, ...] = (),
) -> list[dict]:
    """A job whose learners run one scenario of learner.py (``options``: the MPI loader's extra
    options; ``launch_args``: more `remotegnn launch` options); their JSON results."""
    out.mkdir(parents=True, exist_ok=True)
    job = launch(
        "--memory",
        str(memory),
        "--learners",
        str(learners),
        *launch_args,
        "--",
        sys.executable,
        str(LEARNER),
        scenario,
        str(out),
        str(dataset),
        *([json.dumps(options)] if options else []),
    )
    assert job.returncode == 0, job.stdout[-3000:] + job.stderr[-3000:]
    return [json.loads((out / f"learner{i}.json").read_text()) for i in range(learners)]


def rgnn_segments() -> set[str]:
    return {name for name in os.listdir("/dev/shm") if name.startswith("rgnn_")}
