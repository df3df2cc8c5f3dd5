#!/usr/bin/env python
"""RETEXO's data volume, measured against the paper's Eq. 2, for 2, 4 and 8 workers.

For each graph and worker count n: a random partition into n parts, then standard training and
RETEXO (GraphSAGE, 2 layers, hidden 256, the paper's Appendix B.1 widths) for a few rounds
(``--rounds``, 3 by default) through ``fullgraph.retexo.training.train_local``, which counts
every byte each worker sends and receives by kind. Eq. 2's terms come from the partition and
the model before training (``fullgraph.retexo.volume``).

- ``measured_gamma`` = DV_std / DV_lazy of the two runs (Eq. 2's kinds: features,
  representations and their gradients, model gradients and weights; the standard procedure's
  scoring exchanges and the few bytes of metrics are reported apart), beside ``predicted_gamma``
  at the same R: the check of the byte accounting (the paper matched within 0.2%; target 1%).
- Extrapolated to R = 200 (``--extrapolate``), since full runs of 200 rounds per layer are long:
  the bytes that move once (features; RETEXO's representations) plus the measured per-round
  bytes (the rest divided by R) times 200, beside Eq. 2 at R = 200.

Graphs: Cora, CiteSeer and Facebook from ``../shared/datasets`` (skipped with a reason when
absent) and a synthetic R-MAT graph (``remotegnn.synth``: 262,144 nodes, 1.5M pairs stored both
ways, 64 features; made once in the data directory).

Run: ``.venv/bin/python benchmarks/retexo_volume.py [--datasets cora,citeseer,facebook,synthetic]
[--workers 2,4,8] [--rounds 3] [--extrapolate 200] [--output FILE]``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import time
from pathlib import Path

import common

from contracts.datavolume import data_volume
from fullgraph.partitioner import write_partition
from fullgraph.retexo.config import TrainConfig
from fullgraph.retexo.training import TrainResult, train_local
from remotegnn.store import GraphDataset
from remotegnn.synth import SynthSpec, synth

DATASETS = ("cora", "citeseer", "facebook", "synthetic")
SYNTHETIC = SynthSpec(nodes=262_144, edges=1_500_000, dim=64, classes=8, seed=0, train=0.2, val=0.1, test=0.7)
MODEL = "sage"
TARGET = 0.01  # measured gamma within 1% of Eq. 2's


def synthetic(data_dir: Path) -> GraphDataset:
    path = data_dir / "retexo" / "rmat-262k"
    if not (path / "meta.json").exists():
        synth(SYNTHETIC, path, overwrite=True, progress=False)
    return GraphDataset.open(path)


def once_and_per_round(result: TrainResult) -> tuple[int, float]:
    """Bytes that move once per run, and per round (Eq. 2's kinds, summed over workers)."""
    workers = result.traffic[: result.workers]
    once_kinds = ("features", "representations") if result.config.method == "retexo" else ("features",)
    once = sum(t.total(once_kinds) for t in workers)
    return once, (result.measured.total - once) / result.config.rounds


def measure(dataset: GraphDataset, n: int, rounds: int, extrapolate: int, data_dir: Path) -> dict:
    path = data_dir / "retexo" / f"{dataset.meta.name}-volume-random{n}"
    meta = write_partition(dataset, path, n, "random", seed=0, overwrite=True)
    runs = {}
    for method in ("standard", "retexo"):
        start = time.perf_counter()
        runs[method] = train_local(path, TrainConfig(method=method, model=MODEL, rounds=rounds, split="random"))
        runs[method + "_seconds"] = round(time.perf_counter() - start, 2)
    std, lazy = runs["standard"], runs["retexo"]
    predicted = std.predicted  # the same Eq. 2 terms for both runs
    at_target = data_volume(predicted.inputs.model_copy(update={"rounds": extrapolate}))
    extrapolated = {}
    for method, result in (("standard", std), ("retexo", lazy)):
        once, per_round = once_and_per_round(result)
        extrapolated[method] = once + per_round * extrapolate
    measured_gamma = std.measured.total / lazy.measured.total
    return {
        "workers": n,
        "boundary_rows": meta.boundary_rows,
        "cut_fraction": round(meta.cut_fraction, 4),
        "rounds_run": rounds,
        "bytes": {
            "standard": std.measured.model_dump(),
            "retexo": lazy.measured.model_dump(),
            "predicted_standard": predicted.standard.total,
            "predicted_retexo": predicted.lazy.total,
        },
        "measured_gamma": measured_gamma,
        "predicted_gamma": predicted.gamma,
        "gamma_error": abs(measured_gamma / predicted.gamma - 1),
        "within_1_percent": abs(measured_gamma / predicted.gamma - 1) <= TARGET,
        f"extrapolated_gamma_R{extrapolate}": extrapolated["standard"] / extrapolated["retexo"],
        f"predicted_gamma_R{extrapolate}": at_target.gamma,
        f"extrapolated_bytes_R{extrapolate}": extrapolated,
        f"predicted_bytes_R{extrapolate}": {"standard": at_target.standard.total, "retexo": at_target.lazy.total},
        "seconds": {"standard": runs["standard_seconds"], "retexo": runs["retexo_seconds"]},
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", default=",".join(DATASETS))
    parser.add_argument("--workers", default="2,4,8")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--extrapolate", type=int, default=200)
    parser.add_argument("--data-dir", type=Path, default=common.DATA_DIR)
    parser.add_argument("--output", type=Path)
    args = parser.parse_args(argv)
    names = args.datasets.split(",")
    graphs = {k: v for k, v in common.real_datasets(args.data_dir).items() if k in names}
    if "synthetic" in names:
        graphs["synthetic"] = synthetic(args.data_dir)
    report = {
        "benchmark": "retexo_volume",
        "date": dt.date.today().isoformat(),
        "machine": common.machine(),
        "model": f"{MODEL}, 2 layers, hidden 256",
        "datasets": {},
        "skipped": {n: "needs ../shared/datasets beside the checkout" for n in names if n not in graphs},
    }
    for name, dataset in graphs.items():
        rows = [measure(dataset, int(n), args.rounds, args.extrapolate, args.data_dir) for n in args.workers.split(",")]
        report["datasets"][name] = {"nodes": dataset.meta.num_nodes, "edges": dataset.meta.num_edges, "runs": rows}
    return common.emit(report, args.output)


if __name__ == "__main__":
    raise SystemExit(main())
