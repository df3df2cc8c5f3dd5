"""The API load benchmark runs against a real uvicorn process and reports every figure."""

from __future__ import annotations

from tests.benchmarks.script import run_benchmark


def test_a_short_run_reports_both_modes_and_new_workloads(tmp_path):
    args = ("--clients", "2", "--duration", "1", "--new-workloads", "2")
    report = run_benchmark("api_load.py", *args, output=tmp_path / "api_load.json")
    figures = report["figures"]
    for mode in ("identical", "distinct"):
        assert figures[mode]["ok"] > 0 and figures[mode]["errors"] == 0
        assert 0 < figures[mode]["latency_ms"]["p50"] <= figures[mode]["latency_ms"]["p99"]
    new = figures["new_workload_in_process"]
    assert new["requests"] == 2 and 0 < new["latency_ms"]["p50"] <= new["latency_ms"]["max"]
    assert isinstance(new["target_met"], bool)
