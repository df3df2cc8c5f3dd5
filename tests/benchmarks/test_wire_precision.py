"""benchmarks/wire_precision.py: a short real run on the synthetic graph, and the skip reason for
the shared datasets where they are absent."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # whole training runs, seconds each

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "benchmarks" / "wire_precision.py"


def wire_precision(*args: str) -> dict:
    done = subprocess.run([sys.executable, str(SCRIPT), *args], cwd=ROOT, capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_half_precision_rounds_the_features_and_halves_the_rows_sent(tmp_path):
    report = wire_precision(
        "--datasets", "synthetic,cora", "--epochs", "1", "--seeds", "0",
        "--shared", str(tmp_path / "absent"), "--data-dir", str(tmp_path),
    )  # fmt: skip
    assert report["benchmark"] == "wire_precision" and "absent" in report["skipped"]["cora"]
    result = report["datasets"]["synthetic"]
    figures, [run] = result["figures"], result["runs"]
    for dtype in ("float32", "float16", "bfloat16"):
        assert 0 < run[dtype]["test_acc"] <= 1 and run[dtype]["final_loss"] > 0
        assert figures["mean_test_acc"][dtype] == run[dtype]["test_acc"]
    for dtype in ("float16", "bfloat16"):
        points = 100 * (run[dtype]["test_acc"] - run["float32"]["test_acc"])
        assert figures["difference_points"][dtype] == pytest.approx(points, abs=0.01)
        assert run[dtype]["mb_sent_last_epoch"] < 0.8 * run["float32"]["mb_sent_last_epoch"]  # the same batches
    error = figures["max_relative_rounding_error"]
    assert error["float32"] == 0 < error["float16"] < error["bfloat16"] < 2**-8  # 11 and 8 significant bits
