"""benchmarks/sweep_threads.py: a short real run on a small file, from a cold page cache."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from contracts.calibration import SWEEP_THREADS_MAX

ROOT = Path(__file__).resolve().parents[2]


def test_a_short_run_reports_every_thread_count_against_one_thread(tmp_path):
    out = tmp_path / "sweep.json"
    done = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "sweep_threads.py"), "--gib", "0.25", "--repeats", "2"]
        + ["--work-dir", str(tmp_path), "--output", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert json.loads(out.read_text()) == report
    counts = [int(c) for c in report["threads"]]
    assert counts == list(range(1, min(SWEEP_THREADS_MAX, len(os.sched_getaffinity(0))) + 1))
    assert report["threads"]["1"]["speedup_over_one_thread"] == [1.0, 1.0]
    for figures in report["threads"].values():
        assert len(figures["gb_per_s"]) == 2 and all(rate > 0 for rate in figures["gb_per_s"])
    assert [p.name for p in tmp_path.iterdir()] == ["sweep.json"]  # the feature file is removed
