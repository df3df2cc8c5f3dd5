"""benchmarks/disk_based.py end to end on a tiny graph: real volume reads, real pipeline processes.

The figures of so small a run mean nothing; what is checked is the logic that can break: both
sides train on the very same batches (same rows read, same loss), both read the disk, and the
JSON carries the fields the README describes.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.pyg_samplers import PYG_SAMPLERS, with_pyg_samplers

pytestmark = pytest.mark.slow  # whole training runs or MPI jobs, seconds each

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "benchmarks" / "disk_based.py"


TINY = ["--nodes", "8192", "--train-fraction", "0.05", "--batch-size", "128", "--fanouts", "5,5", "--hidden", "16"]


def disk_based(*args: str | Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(SCRIPT), *map(str, args)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=180,
        env=with_pyg_samplers(),
    )


def test_tiny_run_emits_the_comparison(tmp_path):
    output = tmp_path / "disk_based.json"
    done = disk_based(*TINY, "--epochs", "2", "--data-dir", tmp_path, "--output", output)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert json.loads(output.read_text()) == report
    assert report["benchmark"] == "disk_based" and report["parameters"]["epoch_batches"] == 4  # 409 seeds / 128

    baseline, remote, figures = report["pyg_mmap"], report["remotegnn"], report["figures"]
    assert [e["epoch"] for e in baseline["epochs"]] == [e["epoch"] for e in remote["epochs"]] == [0, 1]
    for ours, theirs in zip(baseline["epochs"], remote["epochs"]):
        assert ours["batches"] == theirs["batches"] == 4
        # The same batches: every row the baseline read is a row the pipeline looked up, and the
        # same initial weights on the same batches give the same loss.
        assert ours["rows_read"] == theirs["cache_hits"] + theirs["cache_misses"]
        assert abs(ours["loss"] - theirs["loss"]) < 1e-3
        assert ours["bytes_read"] >= ours["volume"]["bytes_read"] > 0 and theirs["bytes_read"] > 0
        for side in (ours, theirs):
            assert 0 <= side["stall_s"] <= side["seconds"] and side["compute_s"] > 0
    assert remote["setup_bytes_read"] > 0 and remote["cache_fill_floor_s"] > 0  # the cache filled from a cold file

    assert set(figures) >= {
        "epoch_seconds",
        "epoch_ratio",
        "target_met",
        "cache_hit_rate",
        "bytes_read_per_epoch",
        "learner_stall_s_per_epoch",
        "volume_time_ratio",
        "end_to_end_ratio",
    }
    assert 0 < figures["cache_hit_rate"] < 1 and figures["epoch_ratio"] > 0
    assert report["emulation"]["baseline_volume"]["emulation"] in ("blkio", "token-bucket", "page-cache")
    assert report["parameters"]["remotegnn_node_order"] == "id order"

    real = report["pyg_mmap_real"]
    if "skipped" in real:  # no root, cgroup v1 or PyG sampler here: the reason is the result
        assert report["figures_real"] == {"skipped": real["skipped"]}
        assert "torch-sparse" not in real["skipped"] or not PYG_SAMPLERS.is_dir(), real  # installed, it runs
        return
    assert real["sampler"] in ("torch-sparse", "pyg-lib") and real["throttle_held"]
    first = real["epochs"][0]
    assert first["batches"] == 4 and first["read_requests"] > 0 and first["read_bytes"] > 0  # a cold start
    reads = report["figures_real"]["reads_per_epoch"]
    assert reads["remotegnn"]["requests"] == sum(e["volume"]["requests"] for e in remote["epochs"]) / 2
    assert all(side["volume_floor_s"] > 0 for side in reads.values())
    assert report["figures_real"]["epoch_ratio"] > 0


def test_a_reordered_graph_and_one_baseline(tmp_path):
    done = disk_based(*TINY, "--baselines", "emulated", "--order", "bfs", "--data-dir", tmp_path)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["parameters"]["remotegnn_node_order"] == "bfs" and report["pyg_mmap_real"] is None
    # the same batches in the user's ids: the same rows looked up and the same loss as the baseline
    ours, theirs = report["pyg_mmap"]["epochs"][0], report["remotegnn"]["epochs"][0]
    assert ours["rows_read"] == theirs["cache_hits"] + theirs["cache_misses"]
    assert abs(ours["loss"] - theirs["loss"]) < 1e-3


def test_an_unknown_baseline_is_refused(capsys, monkeypatch):
    """In this process (the script's main, as test_data_parallel imports its script): the refusal
    comes before any work, so a process of its own would be nearly all interpreter and torch start-up."""
    monkeypatch.syspath_prepend(str(SCRIPT.parent))  # its helpers import as the benchmarks do
    import disk_based as script

    with pytest.raises(SystemExit) as refused:
        script.main(["--baselines", "fast"])
    assert refused.value.code == 2 and "--baselines: one or more of emulated, real" in capsys.readouterr().err
