"""benchmarks/device_cache.py on the CPU (its CUDA part runs on a GPU machine): every cache size
asked for is measured, the bytes fall with the hit rate, and the planner's figures are beside."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def test_the_benchmark_counts_what_each_cache_size_saves(tmp_path):
    command = [sys.executable, str(ROOT / "benchmarks" / "device_cache.py"), "--scale", "13", "--pairs", "60000"]
    command += ["--shares", "0,0.2", "--data-dir", str(tmp_path / "data")]
    done = subprocess.run(command, capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout)
    off, on = report["sizes"]
    assert (off["share"], on["share"]) == (0.0, 0.2) and off["device_cache_hit_rate"] == 0.0
    assert on["device_cache_hit_rate"] > 0.2  # the hottest fifth serves more than a fifth of the reads
    fell = 1 - on["host_to_device_bytes_per_batch"] / off["host_to_device_bytes_per_batch"]
    assert fell == pytest.approx(on["device_cache_hit_rate"], abs=0.02)
    for size in (off, on):
        assert size["planner"]["host_to_device_bytes_per_batch"] > 0 and size["copy_hidden_share"] is None
