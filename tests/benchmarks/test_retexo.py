"""benchmarks/retexo_volume.py and retexo_accuracy.py: short real runs on Cora, figures checked
against the runs they summarise (skipped with the reason where the shared datasets are absent)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # whole training runs

ROOT = Path(__file__).resolve().parents[2]
SHARED = ROOT.parent / "shared" / "datasets"


def bench(script: str, *args: str) -> dict:
    path = ROOT / "benchmarks" / script
    done = subprocess.run([sys.executable, str(path), *args], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@pytest.fixture
def shared():
    if not SHARED.is_dir():
        pytest.skip(f"needs the shared datasets at {SHARED}")


def test_volume_measures_what_eq2_predicts_and_extrapolates(shared, tmp_path):
    report = bench(
        "retexo_volume.py", "--datasets", "cora", "--workers", "2,3", "--rounds", "2", "--data-dir", str(tmp_path)
    )
    rows = report["datasets"]["cora"]["runs"]
    assert [row["workers"] for row in rows] == [2, 3]
    for row in rows:
        measured = row["bytes"]["standard"]["message_passing"] + row["bytes"]["standard"]["aggregation"]
        assert measured == row["bytes"]["predicted_standard"]
        assert row["within_1_percent"] and row["measured_gamma"] > 1
        assert row["extrapolated_gamma_R200"] == pytest.approx(row["predicted_gamma_R200"], rel=1e-9)
    assert rows[0]["boundary_rows"] < rows[1]["boundary_rows"]  # more workers, more boundary


def test_accuracy_summarises_its_runs(shared, tmp_path):
    out = tmp_path / "acc.json"
    args = ("--datasets", "cora", "--models", "sage", "--runs", "2", "--rounds", "3", "--data-dir", str(tmp_path))
    report = bench("retexo_accuracy.py", *args, "--output", str(out))
    entries = report["datasets"]["cora"]["sage"]
    for method in ("standard", "retexo"):
        accs = [run["test_acc"] for run in entries[method]["runs"]]
        assert len(accs) == 2 and entries[method]["mean"] == pytest.approx(sum(accs) / 2)
    diff = 100 * (entries["retexo"]["mean"] - entries["standard"]["mean"])
    assert entries["figures"]["retexo_minus_standard_points"] == pytest.approx(diff, abs=0.01)
    resumed = bench("retexo_accuracy.py", *args, "--output", str(out), "--resume")  # nothing left to run
    assert resumed["datasets"]["cora"]["sage"]["standard"]["runs"] == entries["standard"]["runs"]


def test_time_predictions_fit_one_recorded_run_and_predict_the_others(tmp_path):
    """`retexo_time.py --predict` on the committed runs (no root): the fitted run is reproduced by
    construction, and every run is predicted with the same rates."""
    recorded = json.loads((ROOT / "benchmarks" / "results" / "retexo_time.json").read_text())
    report = bench(
        "retexo_time.py", "--predict", str(ROOT / "benchmarks/results/retexo_time.json"), "--data-dir", str(tmp_path)
    )
    planner = report["planner"]
    assert report["links"] == recorded["links"]  # measurements pass through untouched
    runs = planner["runs"]
    assert len(runs) == 2 * len(recorded["links"]) and sum(r["calibration_run"] for r in runs.values()) == 1
    cal = next(r for r in runs.values() if r["calibration_run"])
    link = planner["calibrated_on"].removesuffix(" standard")
    measured = recorded["links"][link]["standard"]
    compute = measured["seconds"] - measured["message_passing_seconds"] - measured["aggregation_seconds"]
    assert cal["predicted"]["compute_seconds"] == pytest.approx(compute, abs=0.02)
    for name, row in runs.items():
        link, method = name.rsplit(" ", 1)
        assert row["seconds_ape"] == pytest.approx(
            abs(row["predicted"]["seconds"] - recorded["links"][link][method]["seconds"])
            / recorded["links"][link][method]["seconds"],
            abs=1e-3,
        )
        # Fitted rates change compute only: what crosses the links is priced the same either way.
        assert row["predicted"]["message_passing_seconds"] == row["uncalibrated"]["message_passing_seconds"]


def test_accuracy_with_patience_records_the_rounds_each_stage_ran(shared, tmp_path):
    args = ("--datasets", "cora", "--models", "gcn", "--runs", "1", "--rounds", "8", "--data-dir", str(tmp_path))
    report = bench("retexo_accuracy.py", *args, "--patience", "1", "--min-rounds", "3")
    assert report["setting"]["patience"] == 1 and report["setting"]["min_rounds"] == 3
    for method, stages in (("standard", 1), ("retexo", 2)):
        (run,) = report["datasets"]["cora"]["gcn"][method]["runs"]
        assert len(run["rounds_run"]) == stages and all(3 <= r <= 8 for r in run["rounds_run"])
        assert all(best < ran for best, ran in zip(run["best_rounds"], run["rounds_run"]))


def test_aggregate_cache_changes_no_result(tmp_path):
    # Speed is the benchmark's to report; here its figures must describe the same training.
    report = bench(
        "retexo_aggregate_cache.py",
        *("--rounds", "2", "--repeats", "1", "--dropouts", "0,0.3", "--nodes", "8192", "--data-dir", str(tmp_path)),
    )
    assert set(report["runs"]) == {"gcn dropout 0", "gcn dropout 0.3", "sage dropout 0", "sage dropout 0.3"}
    for name, run in report["runs"].items():
        seconds = run["seconds_per_round"]
        assert run["speedup"] == pytest.approx(seconds["uncached"] / seconds["cached"], rel=0.01)
        if name.startswith("sage"):  # bit-identical
            assert run["max_loss_difference"] == 0.0
            assert run["test_acc"]["cached"] == run["test_acc"]["uncached"]
        else:  # GCN's weights applied after the sum: rounding only
            assert run["max_loss_difference"] < 1e-4
