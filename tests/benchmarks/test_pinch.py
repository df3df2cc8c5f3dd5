"""benchmarks/pinch_records.py and pinch_exchange.py, small: their figures checked against each
other (the kernel and testbed parts skip with the reason without root, BPF support or Open MPI)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def run(script: str, *args: str, timeout: int) -> dict:
    done = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / script), *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout)


@pytest.mark.slow
@pytest.mark.root
def test_records_are_exact_in_every_mode_and_the_fixed_point_error_within_its_bound(tmp_path):
    out = tmp_path / "records.json"
    args = ("--frames", "500", "--messages", "3", "--values", "65536", "--contributions", "2,256")
    report = run("pinch_records.py", *args, "--error-values", "4096", "--output", str(out), timeout=300)
    assert json.loads(out.read_text()) == report
    rows = report["fixed_point_error"]["rows"]
    assert [r["contributions"] for r in rows] == [2, 256]
    for row in rows:  # this part needs no root
        assert row["fixed_point_within_bound"] and row["fixed_point"]["max_abs"] <= row["bound_max"]
        assert row["fixed_point"]["max_abs"] < row["float32_sequential"]["max_abs"]
    if "skipped" in report.get("test_run", {}):
        pytest.skip(report["test_run"]["skipped"])
    kernel = report["test_run"]["kernel"]
    assert kernel["exact"] and kernel["actions"] == {"drop": 499, "pass": 1}
    modes = report["end_to_end"]["modes"]
    assert set(modes) == {"udp", "pinch-user", "pinch-kernel"}
    for mode in modes.values():
        assert mode["receiver"]["exact"] and mode["receiver"]["records"] == 3 * 65536 // 16
    # Only the kernel mode's process is spared the datagrams: it reads the completions and control.
    assert modes["pinch-kernel"]["receiver"]["datagrams_read"] < modes["udp"]["receiver"]["datagrams_read"] / 10
    assert modes["pinch-kernel"]["receiver"]["xdp_runs"] > 0


@pytest.mark.slow
@pytest.mark.root
@pytest.mark.mpi
def test_training_over_every_exchange_agrees_and_survives_faults(tmp_path):
    out = tmp_path / "exchange.json"
    args = ("--workers", "2", "--rounds", "2", "--methods", "standard", "--nodes", "4096", "--data-dir", str(tmp_path))
    # Each exchange and each fault once: pinch with loss and udp with duplication here, the other two
    # pairs in tests/fullgraph/exchange/pinch/test_testbed.py, so every pair runs once in the suite.
    faults = ("--fault-runs", "pinch:loss,udp:duplication")
    report = run("pinch_exchange.py", *args, *faults, "--output", str(out), timeout=900)
    if "skipped" in report:
        pytest.skip(report["skipped"])
    assert json.loads(out.read_text()) == report
    runs = report["runs"]["2 workers, standard"]
    assert runs["udp"]["against_mpi"]["identical_losses"] and runs["udp"]["against_mpi"]["same_payload_bytes"]
    assert runs["pinch"]["against_mpi"]["max_loss_difference"] < 1e-4
    assert runs["pinch"]["against_mpi"]["same_payload_bytes"]
    assert runs["pinch"]["datagrams"]["summed_in_kernel_records"] > 0
    assert runs["pinch"]["datagrams"]["read_by_processes"] < runs["pinch"]["datagrams"]["sent"] / 10
    assert set(runs["faults"]) == {"pinch, 1% loss", "udp, 1% duplication"}
    for name, fault in runs["faults"].items():
        assert fault["against_fault_free"]["identical_losses"], name
        assert fault["against_fault_free"]["same_payload_bytes"], name
        kind, other = ("dropped", "duplicated") if "loss" in name else ("duplicated", "dropped")
        assert fault["injected"][kind] > 0 and fault["injected"][other] == 0, name
    assert runs["faults"]["pinch, 1% loss"]["datagrams"]["retransmitted"] > 0
    assert all(r > 0 for r in runs["pinch"]["syscalls_per_round"].values())
