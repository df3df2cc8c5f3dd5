"""benchmarks/job_failures.py: each case ends the job as the rank that failed says, and the
report counts what it measured."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.mpi, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]


def test_a_killed_learner_and_a_failing_one_end_their_jobs_as_reported(mpi):
    done = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "job_failures.py"), "--runs", "1"]
        + ["--cases", "raise-mid-epoch,kill-learner"],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    cases = json.loads(done.stdout)["cases"]
    assert cases["raise-mid-epoch"]["exit_codes"] == [1] and cases["kill-learner"]["exit_codes"] == [137]
    for case in cases.values():
        assert case["runs"] == 1 and case["crashed"] == 0 and case["seconds_from_failure"]["max"] is not None
