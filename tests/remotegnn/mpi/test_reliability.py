"""Over MPI too, neither side hangs the other: a failed server worker reaches the learner as a
clear error, and a dead memory rank ends the whole job (mpiexec tears it down) instead of
leaving the learner waiting."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time

import pytest

from tests.remotegnn.mpi.conftest import JOB_TIMEOUT_S, LEARNER, rgnn_segments, run_learners

pytestmark = [pytest.mark.usefixtures("mpi"), pytest.mark.slow]


def test_killed_server_worker_is_a_clear_error_on_the_learner(rmat, tmp_path):
    before = rgnn_segments()
    (result,) = run_learners("kill-worker", rmat.path, tmp_path)
    assert result["error"] is not None
    assert "memory rank 0" in result["error"] and "exited with code -9" in result["error"]
    assert rgnn_segments() <= before


def _ready_line(job: subprocess.Popen) -> dict:
    """The learner's READY line (read as it comes; EOF means the job ended first)."""
    for line in job.stdout:
        if line.startswith("READY "):
            return json.loads(line[len("READY ") :])
    raise AssertionError(f"the job ended before the learner was ready: {job.stderr.read()[-3000:]}")


def test_dead_memory_rank_ends_the_job(rmat, tmp_path):
    before = rgnn_segments()
    job = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "remotegnn.cli.main",
            "launch",
            "--memory",
            "1",
            "--",
            sys.executable,
            str(LEARNER),
            "hold",
            str(tmp_path),
            str(rmat.path),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    watchdog = threading.Timer(JOB_TIMEOUT_S, job.kill)  # a hang fails the test instead of blocking it
    watchdog.start()
    try:
        os.kill(_ready_line(job)["server"], signal.SIGKILL)
        started = time.monotonic()
        code = job.wait(timeout=60)
    finally:
        watchdog.cancel()
        if job.poll() is None:
            job.kill()
            job.wait()
    assert code != 0
    assert time.monotonic() - started < 60
    assert rgnn_segments() <= before
