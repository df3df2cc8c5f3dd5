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


@pytest.mark.root
def test_quarter_group_runs_each_reorder_under_the_limit_and_reports_how_it_ended(tmp_path):
    """A tiny graph's quarter cannot hold the interpreter: the child is killed for memory, and the
    report says so rather than failing the benchmark or claiming equal files."""
    if not Path("/sys/fs/cgroup/memory/memory.limit_in_bytes").exists():
        pytest.skip("needs a cgroup v1 memory hierarchy")
    argv = [sys.executable, str(SCRIPT), "--nodes", "2048,4096", "--degree", "4", "--dim", "8", "--orders", "rcm"]
    done = subprocess.run(
        [*argv, "--memory-mib", "1", "--quarter-group"], cwd=ROOT, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    for row in json.loads(done.stdout)["sizes"]:
        bounded = row["orders"]["rcm"]["quarter_group"]
        assert bounded["limit_mib"] == pytest.approx(row["graph_bytes"] / 4 / 2**20, abs=0.1)
        assert bounded["exit"] == -9 and bounded["times_at_limit"] > 0 and bounded["same_files"] is False
    assert not list(Path("/sys/fs/cgroup/memory").glob("mbbench-reorder-*"))
