"""benchmarks/reorder_memory.py end to end on tiny graphs: each size is reordered in a child
process for each order asked for, and the report carries each run's peak memory (the figures of
so small a run mean nothing)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # four reorders, each in a fresh interpreter

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "benchmarks" / "reorder_memory.py"


def test_tiny_run_reports_every_order_at_both_sizes(tmp_path):
    output = tmp_path / "reorder_memory.json"
    argv = [sys.executable, str(SCRIPT), "--nodes", "2048,8192", "--degree", "4", "--dim", "8"]
    done = subprocess.run(
        [*argv, "--orders", "degree,rcm", "--memory-mib", "1", "--output", output],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert json.loads(output.read_text()) == report
    small, large = report["sizes"]
    assert (small["nodes"], large["nodes"]) == (2048, 8192) and large["graph_bytes"] > small["graph_bytes"] > 0
    for row in (small, large):
        assert set(row["orders"]) == {"degree", "rcm"}
        for run in row["orders"].values():
            assert run["peak_rss_mib"] >= run["peak_anon_mib"] > 0 and run["seconds"] >= run["order_seconds"] >= 0
    assert report["figures"]["graph_ratio"] == pytest.approx(large["graph_bytes"] / small["graph_bytes"], abs=0.01)
    assert set(report["figures"]["peak_anon_ratio"]) == {"degree", "rcm"}


def test_bad_sizes_are_refused():
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--nodes", "1"], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 2 and "--nodes" in done.stderr
