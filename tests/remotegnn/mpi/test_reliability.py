"""Over MPI too, neither side hangs the other: a failed server worker reaches the learner as a
clear error; a rank killed mid-epoch, and a learner that fails at start-up or mid-epoch, end the
whole job within seconds with that rank's error, and a learner that leaves mid-epoch ends it
cleanly."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.remotegnn.mpi.conftest import JOB_TIMEOUT_S, LEARNER, launch, rgnn_segments, run_learners

pytestmark = [pytest.mark.usefixtures("mpi"), pytest.mark.slow]

ENDS_WITHIN_S = 30  # from a rank's failure to mpiexec's exit
LAUNCH = [sys.executable, "-m", "remotegnn.cli.main", "launch"]


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


@contextmanager
def _holding_job(dataset: Path, out: Path) -> Iterator[tuple[subprocess.Popen, dict]]:
    """A job whose learner holds mid-epoch (learner.py's ``hold``) and its READY line, under a
    watchdog (a hang fails the test instead of blocking it); the job is gone afterwards."""
    job = subprocess.Popen(
        [*LAUNCH, "--memory", "1", "--", sys.executable, str(LEARNER), "hold", str(out), str(dataset)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    watchdog = threading.Timer(JOB_TIMEOUT_S, job.kill)
    watchdog.start()
    try:
        yield job, _ready_line(job)
    finally:
        watchdog.cancel()
        if job.poll() is None:
            job.kill()
            job.wait()


@pytest.mark.parametrize("victim", ["server", "learner"])
def test_a_rank_killed_mid_epoch_ends_the_job_at_once(victim, rmat, tmp_path):
    before = rgnn_segments()
    with _holding_job(rmat.path, tmp_path) as (job, ranks):
        os.kill(ranks[victim], signal.SIGKILL)
        started = time.monotonic()
        code = job.wait(timeout=ENDS_WITHIN_S)
    assert code != 0
    assert time.monotonic() - started < ENDS_WITHIN_S
    stderr = job.stderr.read()
    assert "signal 9 (Killed)" in stderr, stderr  # mpiexec names the rank that died
    assert rgnn_segments() <= before


def _job(scenario: str, dataset, out) -> tuple[subprocess.CompletedProcess, float | None]:
    """The job run to its end, and the seconds from its learner's FAILING line to that end."""
    job = launch("--memory", "1", "--", sys.executable, str(LEARNER), scenario, str(out), str(dataset))
    ended = time.monotonic()
    failed = [float(line.split()[1]) for line in job.stdout.splitlines() if line.startswith("FAILING ")]
    return job, (ended - failed[0]) if failed else None


@pytest.mark.parametrize(
    "scenario, message",
    [
        ("fail-at-start", "the training script failed before its first loader"),
        ("raise-mid-epoch", "RuntimeError: the training step failed mid-epoch"),
    ],
)
def test_a_learner_that_fails_ends_the_job_with_its_error(scenario, message, rmat, tmp_path):
    """A learner that initialised MPI and then failed waited in MPI_Finalize for the memory ranks,
    which waited for it: the job hung (at start-up) or the memory rank crashed (mid-epoch)."""
    before = rgnn_segments()
    job, seconds = _job(scenario, rmat.path, tmp_path)
    assert job.returncode == 1, job.stderr[-3000:]
    assert message in job.stderr
    assert "Segmentation fault" not in job.stderr
    assert seconds is not None and seconds < ENDS_WITHIN_S
    assert rgnn_segments() <= before


def test_a_learner_that_leaves_mid_epoch_ends_the_job_cleanly(rmat, tmp_path):
    """Its goodbye came while the memory rank was still sending it batches: the memory rank freed
    their memory and crashed in MPI_Finalize when MPI went on sending (exit 139, one run in three)."""
    job, _ = _job("leave-mid-epoch", rmat.path, tmp_path)
    assert job.returncode == 0, job.stderr[-3000:]
    assert "Segmentation fault" not in job.stderr


@pytest.mark.usefixtures("sighup_default")
@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGHUP])
def test_a_launch_stopped_by_a_signal_stops_every_rank(stop, rmat, tmp_path):
    """What `timeout`, systemd and schedulers send reaches launch alone (not mpiexec, as Ctrl-C
    from a terminal does): Python's default ended launch and left the job's ranks running."""
    before = rgnn_segments()
    with _holding_job(rmat.path, tmp_path) as (job, ranks):
        job.send_signal(stop)
        code = job.wait(timeout=ENDS_WITHIN_S)
    assert code == 128 + stop
    assert f"interrupted by {stop.name}" in job.stderr.read()
    for pid in (ranks["server"], ranks["learner"]):
        assert not Path(f"/proc/{pid}").exists() or "zombie" in Path(f"/proc/{pid}/status").read_text()
    assert rgnn_segments() <= before
