"""The API load benchmark runs against a real uvicorn process and reports every figure."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "benchmarks" / "api_load.py"


def test_a_short_run_reports_both_modes_and_new_workloads(tmp_path):
    output = tmp_path / "api_load.json"
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--clients", "2", "--duration", "1", "--new-workloads", "2", "--output", output],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert json.loads(output.read_text()) == report
    figures = report["figures"]
    for mode in ("identical", "distinct"):
        assert figures[mode]["ok"] > 0 and figures[mode]["errors"] == 0
        assert 0 < figures[mode]["latency_ms"]["p50"] <= figures[mode]["latency_ms"]["p99"]
    new = figures["new_workload_in_process"]
    assert new["requests"] == 2 and 0 < new["latency_ms"]["p50"] <= new["latency_ms"]["max"]
    assert isinstance(new["target_met"], bool)
