#!/usr/bin/env python
"""Data-parallel learners against one learner at the same global batch: accuracy over seeds.

For each seed, the example (`examples/train_graphsage.py`) trains twice as one `remotegnn launch`
job with one memory rank: once with one learner at batch B, once with N learners at batch B / N
each (DistributedDataParallel over gloo), so both take the same global batch of B seeds a step.
The rows give each run's test accuracy and its steady epochs' seconds; the summary gives each
configuration's mean and standard deviation over the seeds, their difference, and
``within_noise``: whether the difference is inside twice the larger standard deviation (for a
person to read, not a verdict). The epoch seconds compare the two on this machine only: on a
machine with few cores the learners and the memory rank share them.

    .venv/bin/python benchmarks/data_parallel.py [--seeds 0,1,2,3,4] [--learners 2] [--batch-size 256]
        [--epochs 2] [--output FILE]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

import common

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "train_graphsage.py"
TIMEOUT_S = 600


def train(seed: int, learners: int, batch_size: int, epochs: int) -> dict:
    """One launch job; the first learner's report, with every learner's parameters' digest."""
    launch = [sys.executable, "-m", "remotegnn.cli.main", "launch", "--memory", "1", "--learners", str(learners)]
    example = [sys.executable, str(EXAMPLE), "--dataset", "synth", "--epochs", str(epochs), "--json"]
    example += ["--batch-size", str(batch_size), "--seed", str(seed)]
    done = subprocess.run([*launch, "--", *example], capture_output=True, text=True, timeout=TIMEOUT_S, cwd=ROOT)
    if done.returncode != 0:
        raise SystemExit(f"seed {seed}, {learners} learner(s) failed: {done.stderr[-2000:]}")
    if learners == 1:
        reports = [json.loads(done.stdout)]  # one learner prints one indented document
    else:  # several print one line each, so that their documents never mix
        reports = sorted(
            (json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")), key=lambda r: r["rank"]
        )
    first = reports[0]
    steady = first["epochs"][1:] or first["epochs"]
    return {
        "seed": seed,
        "learners": learners,
        "batch_size_per_learner": batch_size,
        "test_acc": first["test_acc"],
        "epoch_s": round(statistics.fmean(e["seconds"] for e in steady), 3),
        "batches_per_learner": first["train_batches"],
        "same_parameters": len({r["parameters_sha256"] for r in reports}) == 1,
    }


def summary(rows: list[dict], learners: int) -> dict:
    def of(n: int, key: str) -> list[float]:
        return [r[key] for r in rows if r["learners"] == n]

    def spread(values: list[float]) -> dict:
        return {"mean": round(statistics.fmean(values), 4), "std": round(statistics.pstdev(values), 4)}

    one, many = of(1, "test_acc"), of(learners, "test_acc")
    difference = statistics.fmean(many) - statistics.fmean(one)
    return {
        "one_learner_acc": spread(one),
        f"{learners}_learners_acc": spread(many),
        "difference": round(difference, 4),
        "within_noise": abs(difference) <= 2 * max(statistics.pstdev(one), statistics.pstdev(many)),
        "epoch_s_ratio": round(statistics.fmean(of(1, "epoch_s")) / statistics.fmean(of(learners, "epoch_s")), 3),
        "every_run_same_parameters": all(r["same_parameters"] for r in rows),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", default="0,1,2,3,4", help="comma-separated seeds")
    parser.add_argument("--learners", type=int, default=2, help="data-parallel learners (at least 2)")
    parser.add_argument("--batch-size", type=int, default=256, help="the global batch (divisible by --learners)")
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--output", type=Path)
    args = parser.parse_args(argv)
    seeds = [int(s) for s in args.seeds.split(",") if s]
    if not seeds or args.learners < 2 or args.batch_size % args.learners or args.epochs < 1:
        parser.error("--seeds: at least one; --learners: at least 2; --batch-size: a multiple of --learners")
    rows = []
    for seed in seeds:
        rows.append(train(seed, 1, args.batch_size, args.epochs))
        rows.append(train(seed, args.learners, args.batch_size // args.learners, args.epochs))
    report = {
        "benchmark": "data_parallel",
        "parameters": {
            "seeds": seeds,
            "learners": args.learners,
            "global_batch": args.batch_size,
            "epochs": args.epochs,
        },
        "rows": rows,
        "summary": summary(rows, args.learners),
        "machine": common.machine(),
    }
    return common.emit(report, args.output)


if __name__ == "__main__":
    sys.exit(main())
