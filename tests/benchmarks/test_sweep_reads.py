"""benchmarks/sweep_reads.py: a short real run on a small file, from a cold page cache."""

from __future__ import annotations

import os

from remotegnn.cache.gather import FILL_THREADS_MAX
from tests.benchmarks.script import run_benchmark


def test_a_short_run_reports_every_way_against_one_thread_through_the_map(tmp_path):
    args = ("--gib", "0.25", "--repeats", "2", "--work-dir", tmp_path)
    report = run_benchmark("sweep_reads.py", *args, output=tmp_path / "sweep.json")
    threads = min(FILL_THREADS_MAX, len(os.sched_getaffinity(0)))
    expected = [f"map, {n} thread{'s' * (n > 1)}" for n in range(1, threads + 1)] + ["past the page cache"]
    assert list(report["ways"]) == expected
    assert report["ways"]["map, 1 thread"]["against_one_thread_through_the_map"] == [1.0, 1.0]
    for figures in report["ways"].values():
        assert len(figures["gb_per_s"]) == 2 and all(rate > 0 for rate in figures["gb_per_s"])
        assert all(cpu > 0 for cpu in figures["cpu_s_per_gb"] + figures["machine_cpu_s_per_gb"])
    assert [p.name for p in tmp_path.iterdir()] == ["sweep.json"]  # the feature file is removed
