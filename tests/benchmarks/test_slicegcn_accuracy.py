"""benchmarks/slicegcn_accuracy.py, small: two runs of two variants on Cora, resumed from its own output."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # whole training runs

ROOT = Path(__file__).resolve().parents[2]


def test_accuracy_resumes_from_its_output_and_summarises_every_run(tmp_path):
    """benchmarks/slicegcn_accuracy.py on Cora, two epochs: a second call with --resume runs nothing
    new and summarises the runs already in the output (its recompute path)."""
    shared = ROOT.parent / "shared" / "datasets"
    if not shared.is_dir():
        pytest.skip(f"needs the shared datasets at {shared}")
    out = tmp_path / "acc.json"
    args = ["--datasets", "cora", "--variants", "GCN,SliceGCN", "--parts", "2", "--runs", "2", "--epochs", "2"]
    args += ["--data-dir", str(tmp_path / "data"), "--output", str(out)]
    script = [sys.executable, str(ROOT / "benchmarks" / "slicegcn_accuracy.py"), *args]
    first = subprocess.run(script, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert first.returncode == 0, first.stderr[-3000:]
    runs = json.loads(out.read_text())["runs"]
    assert sorted((r["variant"], r["parts"], r["run"]) for r in runs) == [
        ("GCN", 1, 0), ("GCN", 1, 1), ("SliceGCN", 2, 0), ("SliceGCN", 2, 1)
    ]  # fmt: skip
    again = subprocess.run([*script, "--resume"], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, again.stderr[-3000:]
    resumed = json.loads(out.read_text())
    assert resumed["runs"] == runs
    summary = {(row["variant"], row["parts"]): row for row in resumed["summary"]}
    for (variant, parts), row in summary.items():
        tests = [r["test"] for r in runs if (r["variant"], r["parts"]) == (variant, parts)]
        assert row["runs"] == 2 and row["mean"] == pytest.approx(100 * sum(tests) / 2, abs=0.01)
