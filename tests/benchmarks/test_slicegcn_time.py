"""benchmarks/slicegcn_time.py: a two-epoch run at p = 2 on the testbed, its figures checked
against each other (skipped with the reason without root, Open MPI or the shared datasets)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.root, pytest.mark.mpi]  # testbeds and whole training runs

ROOT = Path(__file__).resolve().parents[2]


def test_time_reports_measured_and_predicted_figures_per_run(tmp_path):
    out = tmp_path / "time.json"
    script = ROOT / "benchmarks" / "slicegcn_time.py"
    args = ("--parts", "2", "--epochs", "2", "--hidden", "32", "--data-dir", str(tmp_path), "--output", str(out))
    done = subprocess.run([sys.executable, str(script), *args], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    if "skipped" in report:
        pytest.skip(report["skipped"])
    assert json.loads(out.read_text()) == report
    assert [(run["parts"], run["fusion"]) for run in report["runs"]] == [(2, False), (2, True)]
    for run in report["runs"]:
        assert [r["rank"] for r in run["ranks"]] == [0, 1]
        ranks = run["bytes_per_epoch"]
        slices = [ranks["slice 0"], ranks["slice 1"]]
        # Slices talk to the learner only: what it receives is what they send, and back.
        assert ranks["learner"]["received"] == pytest.approx(sum(s["sent"] for s in slices), abs=2)
        assert ranks["learner"]["sent"] == pytest.approx(sum(s["received"] for s in slices), abs=2)
        # The planner's bytes per worker are the measured ones, less a few bytes of message headers.
        for s in slices:
            assert s["sent"] + s["received"] == pytest.approx(run["planner"]["bytes_per_epoch_per_worker"], rel=1e-3)
        busiest = max(max(r["sent"], r["received"]) for r in ranks.values())
        floor = busiest * 8 / (report["setting"]["link_gbit"] * 1e9)
        assert run["bandwidth_floor_s_per_epoch"] == pytest.approx(floor, abs=2e-3)
        assert run["seconds_per_epoch"] > 0 and run["reference_seconds_per_epoch"] > 0
        assert run["planner"]["seconds_per_epoch"] == pytest.approx(
            sum(run["planner"]["stages_s_per_epoch"].values()), abs=3e-3
        )
    assert report["notes"]
