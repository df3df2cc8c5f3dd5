"""benchmarks/data_parallel.py: its summary of runs, and the requests it refuses before training.
(Two learners training to identical parameters at one learner's accuracy: the example's test.)"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))

import data_parallel  # noqa: E402  (a script beside its helpers, imported as the benchmarks import it)


def row(seed: int, learners: int, acc: float, epoch_s: float) -> dict:
    return {"seed": seed, "learners": learners, "test_acc": acc, "epoch_s": epoch_s, "same_parameters": True}


def test_the_summary_compares_the_means_against_the_spread_over_seeds():
    rows = [row(0, 1, 0.90, 2.0), row(0, 2, 0.89, 1.0), row(1, 1, 0.92, 2.0), row(1, 2, 0.91, 1.0)]
    got = data_parallel.summary(rows, 2)
    assert got["one_learner_acc"] == {"mean": 0.91, "std": 0.01}
    assert got["difference"] == pytest.approx(-0.01) and got["within_noise"] and got["epoch_s_ratio"] == 2.0
    apart = data_parallel.summary(
        [row(0, 1, 0.90, 2.0), row(0, 2, 0.80, 1.0), row(1, 1, 0.92, 2.0), row(1, 2, 0.81, 1.0)], 2
    )
    assert not apart["within_noise"]  # 0.105 apart, where the seeds move each by 0.01


@pytest.mark.parametrize("args", [["--learners", "1"], ["--batch-size", "255"], ["--seeds", ""]])
def test_bad_requests_are_refused_before_anything_trains(args):
    done = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "data_parallel.py"), *args], capture_output=True, text=True
    )
    assert done.returncode == 2 and "--learners: at least 2" in done.stderr
