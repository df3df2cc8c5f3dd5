"""benchmarks/fidelity.py's recompute path: the recorded testbed runs refitted and predicted again,
so the planner-accuracy figure the docs quote can always be recomputed from the shipped runs file."""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
from pathlib import Path

import pytest

from contracts.calibration import load_coefficients
from contracts.runs import RunsFile

ROOT = Path(__file__).resolve().parents[2]
RUNS = ROOT / "benchmarks" / "results" / "fidelity-runs.json"


def test_recorded_runs_are_refitted_and_predicted_again(tmp_path):
    runs = RunsFile.model_validate_json(RUNS.read_text())
    profile = tmp_path / "profile.json"  # the graph's profile as the runs recorded it: no graph to make
    profile.write_text(json.dumps(runs.runs[0].output["profile"]))
    calibration = tmp_path / "calibration.json"
    args = ["--runs", str(RUNS), "--profile", str(profile), "--calibration", str(calibration)]
    done = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "fidelity.py"), *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout)
    assert len(report["rows"]) == len(runs.runs) and not report["skipped"]
    held_out = [row for row in report["rows"] if not row["calibration"]]
    assert held_out and all(row["measured_s"] > 0 and row["pipeline_s"] > 0 for row in held_out)
    errors = report["errors"]["pipeline"]["held_out"]
    # The report rounds the median of the rounded rows to one decimal, as it rounds them.
    assert errors["median_ape"] == pytest.approx(round(statistics.median(r["pipeline_ape"] for r in held_out), 1))
    fitted = load_coefficients(calibration)
    assert fitted.calibrated and "batch shapes from" in fitted.source


def test_a_profile_without_recorded_runs_is_refused(tmp_path):
    done = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "fidelity.py"), "--profile", str(tmp_path / "p.json")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2 and "--profile goes with --runs" in done.stderr
