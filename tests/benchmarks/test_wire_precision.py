"""benchmarks/wire_precision.py: a short real run on the synthetic graph with the skip reason for the
shared datasets where they are absent, and short runs on Cora (row-normalised and as stored) where
they exist."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # whole training runs, seconds each

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "benchmarks" / "wire_precision.py"
SHARED = ROOT.parent / "shared" / "datasets"
DTYPES = ("float32", "float16", "bfloat16")


def wire_precision(*args: str) -> dict:
    done = subprocess.run([sys.executable, str(SCRIPT), *args], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def check_figures(result: dict) -> None:
    """Accuracies in [0, 1], and the figures computed from the runs."""
    figures, runs = result["figures"], result["runs"]
    for run in runs:
        for dtype in DTYPES:
            assert 0 < run[dtype]["test_acc"] <= 1 and 0 < run[dtype]["test_acc_wire_inputs"] <= 1
            assert run[dtype]["final_loss"] > 0
        for dtype in DTYPES[1:]:  # the same batches, half the bytes per row
            assert run[dtype]["mb_sent_last_epoch"] < 0.8 * run["float32"]["mb_sent_last_epoch"]
    mean = {d: sum(run[d]["test_acc"] for run in runs) / len(runs) for d in DTYPES}
    assert figures["mean_test_acc"] == pytest.approx(mean, abs=1e-4)
    for dtype in DTYPES[1:]:
        points = 100 * (mean[dtype] - mean["float32"])
        assert figures["difference_points"][dtype] == pytest.approx(points, abs=0.01)
        assert figures["within_1_point"][dtype] == (abs(figures["difference_points"][dtype]) <= 1.0)
        assert figures["largest_seed_difference_points"][dtype] >= abs(figures["difference_points"][dtype]) - 0.01
    assert figures["float32_seed_spread_points"] >= 0


def test_synthetic_graph_and_the_skip_reason_without_the_shared_datasets(tmp_path):
    report = wire_precision(
        "--datasets", "synthetic,cora", "--epochs", "1", "--seeds", "0",
        "--shared", str(tmp_path / "absent"), "--data-dir", str(tmp_path),
    )  # fmt: skip
    assert report["benchmark"] == "wire_precision" and {"when", "parameters", "machine"} <= set(report)
    assert set(report["datasets"]) == {"synthetic"} and "absent" in report["skipped"]["cora"]
    result = report["datasets"]["synthetic"]
    assert result["epochs"] == 1 and [run["seed"] for run in result["runs"]] == [0]
    check_figures(result)
    error = result["figures"]["max_relative_rounding_error"]
    assert error["float32"] == 0 < error["float16"] < error["bfloat16"] < 2**-8  # 11 and 8 significant bits


def test_cora_row_normalised_rounds_and_stored_is_exact(tmp_path):
    if not (SHARED / "planetoid").is_dir():
        pytest.skip(f"needs the shared datasets at {SHARED} (absent on this checkout)")
    args = ("--datasets", "cora", "--epochs", "1", "--seeds", "0", "--data-dir", str(tmp_path))
    result = wire_precision(*args)["datasets"]["cora"]
    assert result["features"] == "row-normalised" and "140 train / 1000 test" in result["dataset"]
    check_figures(result)
    error = result["figures"]["max_relative_rounding_error"]
    assert error["float32"] == 0 < error["float16"] < error["bfloat16"] < 2**-8
    assert set(result["figures"]["stored_features_max_relative_rounding_error"].values()) == {0}

    # The stored 0/1 features cross the wire exactly: the three runs are the same run.
    result = wire_precision(*args, "--features", "stored")["datasets"]["cora"]
    assert set(result["figures"]["max_relative_rounding_error"].values()) == {0}
    [run] = result["runs"]
    for dtype in DTYPES[1:]:
        assert run[dtype]["test_acc"] == run["float32"]["test_acc"]
        assert run[dtype]["final_loss"] == run["float32"]["final_loss"]
