#!/usr/bin/env python
"""SliceGCN against GCN in the setting of the SliceGCN paper's Table IV, with its ablations.

Setting (the paper's Table II for Tolokers): 500 epochs, hidden 128, 4 layers, Adam lr 1e-3 with
cosine annealing, dropout 0.5; the figure is the test metric at the best validation epoch
(ROC-AUC for Tolokers' two classes, accuracy for Cora and CiteSeer). Variants: GCN (the same
network with one slice), SliceGCN, -SE (slice encoding), -FF (feature fusion), -FFSE, at p = 2
and 3. Tolokers runs on each of its 10 standard splits (run i: split i, seed i), Cora and CiteSeer
on their standard split with seeds 0..N-1. The paper reports one run each; its figures are printed
beside the mean and standard deviation here.

Runs go through ``fullgraph.slicegcn.training.train_reference`` (the single-process
implementation, which the tests hold equal to the distributed one), on ``--device`` (cuda for a
GPU: the same computation, faster). ``--output`` is rewritten after every run and ``--resume``
skips the runs it already holds.

Run: ``.venv/bin/python benchmarks/slicegcn_accuracy.py [--datasets tolokers,cora,citeseer]
[--parts 2,3] [--variants GCN,SliceGCN,SliceGCN-SE,SliceGCN-FF,SliceGCN-FFSE] [--runs 10]
[--epochs 500] [--device cpu|cuda] [--shared DIR] [--output FILE] [--resume]``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import statistics
import time
from pathlib import Path

import common
from fullgraph_setup import dataset_path

# The paper's Table IV (one run each): dataset -> variant -> p -> figure in points.
PAPER = {
    "tolokers": {
        "GCN": {1: 82.94},
        "SliceGCN": {2: 83.39, 3: 84.20},
        "SliceGCN-SE": {2: 84.06, 3: 84.31},
        "SliceGCN-FF": {2: 83.34, 3: 82.78},
        "SliceGCN-FFSE": {2: 82.57, 3: 83.08},
    }
}
VARIANTS = {
    "GCN": {},
    "SliceGCN": {},
    "SliceGCN-SE": {"encoding": True},
    "SliceGCN-FF": {"fusion": True},
    "SliceGCN-FFSE": {"encoding": True, "fusion": True},
}


def summarise(runs: list[dict]) -> list[dict]:
    groups: dict[tuple, list[float]] = {}
    for r in runs:
        groups.setdefault((r["dataset"], r["variant"], r["parts"]), []).append(100 * r["test"])
    rows = []
    for (dataset, variant, parts), values in sorted(groups.items()):
        paper = PAPER.get(dataset, {}).get(variant, {}).get(parts)
        mean = statistics.fmean(values)
        rows.append(
            {
                "dataset": dataset,
                "variant": variant,
                "parts": parts,
                "runs": len(values),
                "mean": round(mean, 2),
                "std": round(statistics.stdev(values), 2) if len(values) > 1 else None,
                "paper": paper,
                "mean_minus_paper": round(mean - paper, 2) if paper is not None else None,
            }
        )
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--datasets", default="tolokers,cora,citeseer")
    parser.add_argument("--parts", default="2,3")
    parser.add_argument("--variants", default=",".join(VARIANTS))
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--epochs", type=int, default=500)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--shared", type=Path, default=common.SHARED_DATASETS)
    parser.add_argument("--data-dir", type=Path, default=common.DATA_DIR / "slicegcn")
    parser.add_argument("--output", type=Path, default=Path("slicegcn_accuracy.json"))
    parser.add_argument("--resume", action="store_true")
    args = parser.parse_args()

    from fullgraph.slicegcn.config import SliceConfig
    from fullgraph.slicegcn.training import train_reference

    if not args.shared.is_dir():
        print(json.dumps({"skipped": f"needs the shared datasets at {args.shared}"}))
        return 0
    args.data_dir.mkdir(parents=True, exist_ok=True)
    report = json.loads(args.output.read_text()) if args.resume and args.output.exists() else {"runs": []}
    done = {(r["dataset"], r["variant"], r["parts"], r["run"]) for r in report["runs"]}
    report.update(
        benchmark="slicegcn_accuracy",
        when=dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        machine=common.machine(device=args.device),
        parameters={"epochs": args.epochs, "hidden": 128, "layers": 4, "lr": 1e-3, "dropout": 0.5, "runs": args.runs},
    )
    for name in args.datasets.split(","):
        for variant in args.variants.split(","):
            for parts in [1] if variant == "GCN" else [int(p) for p in args.parts.split(",")]:
                for run in range(args.runs):
                    if (name, variant, parts, run) in done:
                        continue
                    config = SliceConfig(parts=parts, epochs=args.epochs, seed=run, **VARIANTS[variant])
                    began = time.perf_counter()
                    result = train_reference(
                        dataset_path(name, run, args.shared, args.data_dir), config, device=args.device
                    )
                    report["runs"].append(
                        {
                            "dataset": name,
                            "variant": variant,
                            "parts": parts,
                            "run": run,
                            "metric": result.metric,
                            "test": result.test,
                            "val": result.val,
                            "best_epoch": result.best_epoch,
                            "parameters": result.parameters,
                            "seconds": round(time.perf_counter() - began, 2),
                        }
                    )
                    report["summary"] = summarise(report["runs"])
                    common.save(report, args.output)
    report["summary"] = summarise(report["runs"])
    common.save(report, args.output)
    print(json.dumps(report["summary"], indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
