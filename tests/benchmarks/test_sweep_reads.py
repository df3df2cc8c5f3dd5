"""benchmarks/sweep_threads.py: a short real run on a small file, from a cold page cache."""

from __future__ import annotations

import os

from remotegnn.cache.gather import SWEEP_THREADS_MAX
from tests.benchmarks.script import run_benchmark


def test_a_short_run_reports_every_thread_count_against_one_thread(tmp_path):
    args = ("--gib", "0.25", "--repeats", "2", "--work-dir", tmp_path)
    report = run_benchmark("sweep_threads.py", *args, output=tmp_path / "sweep.json")
    counts = [int(c) for c in report["threads"]]
    assert counts == list(range(1, min(SWEEP_THREADS_MAX, len(os.sched_getaffinity(0))) + 1))
    assert report["threads"]["1"]["speedup_over_one_thread"] == [1.0, 1.0]
    for figures in report["threads"].values():
        assert len(figures["gb_per_s"]) == 2 and all(rate > 0 for rate in figures["gb_per_s"])
    assert [p.name for p in tmp_path.iterdir()] == ["sweep.json"]  # the feature file is removed
