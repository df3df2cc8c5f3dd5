"""benchmarks/convert_memory.py end to end on tiny inputs: both sizes convert in a child process
and the report carries each one's peak memory (the figures of so small a run mean nothing)."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # two conversions and two loader runs, each in a fresh interpreter

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "benchmarks" / "convert_memory.py"


def test_tiny_run_reports_both_sizes(tmp_path):
    output = tmp_path / "convert_memory.json"
    ogb = ["--ogb-loader"] if importlib.util.find_spec("ogb") else []
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--nodes", "2048,8192", "--degree", "4", "--dim", "8", *ogb, "--output", output],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert json.loads(output.read_text()) == report
    small, large = report["sizes"]
    assert (small["nodes"], large["nodes"]) == (2048, 8192) and large["edges"] == 4 * 8192
    for row in (small, large):
        assert row["convert_peak_rss_mib"] > 0 and row["output_bytes"] > 0 and row["input_bytes"] > 0
        assert row["profile_peak_rss_mib"] >= row["profile_peak_anon_mib"] > 0
        assert ("ogb_loader_peak_rss_mib" in row) == bool(ogb)
    assert report["figures"]["input_ratio"] == pytest.approx(large["input_bytes"] / small["input_bytes"], abs=0.01)


def test_bad_sizes_are_refused():
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--nodes", "1"], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 2 and "--nodes" in done.stderr
