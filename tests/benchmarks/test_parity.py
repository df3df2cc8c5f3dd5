"""benchmarks/parity.py: a short real run on Cora where the shared datasets exist, and the skip
message where they do not."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # whole training runs or MPI jobs, seconds each

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "benchmarks" / "parity.py"
SHARED = ROOT.parent / "shared" / "datasets"


def parity(*args: str) -> dict:
    done = subprocess.run([sys.executable, str(SCRIPT), *args], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_skips_with_a_reason_without_the_shared_datasets(tmp_path):
    report = parity("--shared", str(tmp_path / "absent"), "--data-dir", str(tmp_path))
    assert report["benchmark"] == "parity" and "absent" in report["skipped"] and "figures" not in report


def test_one_seed_one_epoch_on_cora(tmp_path):
    if not (SHARED / "planetoid").is_dir():
        pytest.skip(f"needs the shared datasets at {SHARED} (absent on this checkout)")
    report = parity("--epochs", "1", "--seeds", "0", "--data-dir", str(tmp_path))
    assert "skipped" not in report
    [run] = report["runs"]
    variants = ("remotegnn", "inprocess", "inprocess_same_draws")
    for variant in variants:
        assert 0 < run[variant]["test_acc"] <= 1 and run[variant]["final_loss"] > 0
    # The same draws and initial weights: the pipeline delivered exactly the in-process batches.
    assert run["remotegnn"]["final_loss"] == pytest.approx(run["inprocess_same_draws"]["final_loss"], abs=1e-3)
    figures = report["figures"]
    assert set(figures["mean_test_acc"]) == set(variants)
    assert figures["difference_points"] == pytest.approx(
        100 * (run["remotegnn"]["test_acc"] - run["inprocess"]["test_acc"]), abs=0.01
    )
    assert figures["within_tolerance"] == (abs(figures["difference_points"]) <= 1.0)
