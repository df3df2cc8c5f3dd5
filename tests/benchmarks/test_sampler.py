"""benchmarks/sampler.py: a short real run on a small R-MAT graph, in every node order, with PyG's
loader side by side where torch-sparse or pyg-lib is installed (the reason is reported otherwise)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.pyg_samplers import PYG_SAMPLERS, with_pyg_samplers

pytestmark = pytest.mark.slow  # a graph, four reorderings and numba compiles: about a minute

ROOT = Path(__file__).resolve().parents[2]
ORDERS = ("degree", "dbg", "bfs", "rcm")


def test_a_short_run_reports_every_order_and_the_pyg_baseline(tmp_path):
    args = ["--scale", "13", "--pairs", "60000", "--batches", "4", "--pyg-batches", "2", "--repeats", "1"]
    done = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "sampler.py"), *args, "--batch-size", "256", "--data-dir", tmp_path],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        env=with_pyg_samplers(),
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    base = report["figures"]["fanout_15_10_5"]
    assert base["sampling_and_gather"]["batches_per_s"] > 0 and 0 < base["cache_hit_rate"] < 1
    assert set(report["orders"]) == set(ORDERS)
    for result in report["orders"].values():
        # the same seeds in the user's ids: the same batches, so the same rows and cache hits
        assert result["nodes_per_batch"] == base["nodes_per_batch"]
        assert result["cache_hit_rate"] == pytest.approx(base["cache_hit_rate"], abs=0.02)
        assert result["reorder_cost"]["seconds_per_million_edges"] > 0 and result["speedup_vs_id_order"] > 0
    # hot rows stored together: a degree cache's misses spread over fewer pages than with random ids
    assert report["orders"]["degree"]["miss_pages_per_batch"] <= base["miss_pages_per_batch"]
    # read together, batches in flight share some pages: never more pages than read one by one
    assert 0 < base["miss_pages_per_batch_merged_4"] <= base["miss_pages_per_batch"]
    pyg = report["pyg"]
    assert ("skipped" in pyg) != ("batches_per_s" in pyg)
    assert "batches_per_s" in pyg or not PYG_SAMPLERS.is_dir(), pyg  # installed, the baseline runs
    if "batches_per_s" in pyg:
        assert report["summary"]["best_speedup_vs_pyg"] > 0 and "target_met" in report["summary"]
