#!/usr/bin/env python
"""RETEXO's aggregate cache: seconds per round with each frozen input's neighbour aggregate
computed once per layer, against computing it in every pass, in the same process.

A RETEXO layer trains on a frozen input for all its rounds, so the input's neighbour aggregate
(GCN's normalised sum, GraphSAGE's mean) is the same in every round wherever no dropout touches
it: in every scoring pass, and with ``--dropout 0`` in every training pass too. The cache
(``TrainConfig.aggregate_cache``, on by default) computes it once per layer.

Graph: the synthetic R-MAT graph of retexo_time.py (65,536 nodes, 600k pairs stored both ways,
64 features), dealt at random to ``--workers`` workers (threads of this process, the in-process
exchange, so the figure is compute alone). Model: 2 layers, hidden 256, ``--rounds`` per layer.
For each model and dropout, runs with the cache off and on alternate ``--repeats`` times; the
fastest of each is kept. Reported: seconds per round (all layers' rounds together), the
speed-up, and how far the cached run's per-round losses are from the uncached ones (GraphSAGE:
0, bit-identical; GCN applies its weights after the sum, so float rounding) and both test
accuracies.

Run: ``.venv/bin/python benchmarks/retexo_aggregate_cache.py [--models gcn,sage] [--dropouts 0.3,0]
[--rounds 10] [--output FILE]`` (about 4 minutes on 2 vCPUs).
"""

from __future__ import annotations

import argparse
import datetime as dt
import tempfile
from pathlib import Path

import common
import torch
from fullgraph_setup import RETEXO_GRAPH, RETEXO_HIDDEN, retexo_graph

from fullgraph.partitioner import write_partition
from fullgraph.retexo.config import TrainConfig
from fullgraph.retexo.training import TrainResult, train_local


def timed_runs(partition: Path, config: TrainConfig, repeats: int) -> dict[bool, TrainResult]:
    """The fastest run with the cache off and on, the two alternating so drift hits both
    (after a warm-up run that neither is charged for)."""
    train_local(partition, config.model_copy(update={"rounds": 1}))  # warm-up, kept out of the timings
    best: dict[bool, TrainResult] = {}
    for _ in range(repeats):
        for cached in (False, True):
            result = train_local(partition, config.model_copy(update={"aggregate_cache": cached}))
            if cached not in best or result.seconds < best[cached].seconds:
                best[cached] = result
    return best


def per_round(result: TrainResult) -> float:
    return sum(s.seconds for s in result.stages) / sum(len(s.rounds) for s in result.stages)


def compare(runs: dict[bool, TrainResult]) -> dict:
    plain, cached = runs[False], runs[True]
    losses = [abs(a.loss - b.loss) for sp, sc in zip(plain.stages, cached.stages) for a, b in zip(sp.rounds, sc.rounds)]
    return {
        "seconds_per_round": {"uncached": round(per_round(plain), 4), "cached": round(per_round(cached), 4)},
        "speedup": round(per_round(plain) / per_round(cached), 2),
        "max_loss_difference": max(losses),
        "test_acc": {"uncached": plain.test_acc, "cached": cached.test_acc},
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="gcn,sage", help="of gcn, sage (GAT's aggregate depends on its weights)")
    parser.add_argument("--dropouts", default="0.3,0", help="dropout on each layer's input (0.3: the default)")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=10, help="rounds per layer")
    parser.add_argument("--repeats", type=int, default=2, help="runs of each, the fastest kept")
    parser.add_argument("--nodes", type=int, default=RETEXO_GRAPH.nodes, help="the R-MAT graph's nodes (quick checks)")
    parser.add_argument("--data-dir", type=Path, default=common.DATA_DIR)
    parser.add_argument("--output", type=Path)
    args = parser.parse_args(argv)
    dataset = retexo_graph(args.data_dir, args.nodes)
    report: dict = {
        "benchmark": "retexo_aggregate_cache",
        "date": dt.date.today().isoformat(),
        "machine": common.machine(torch=torch.__version__, threads=torch.get_num_threads()),
        "setting": {"workers": args.workers, "rounds": args.rounds, "hidden": RETEXO_HIDDEN, "repeats": args.repeats},
        "graph": {"nodes": dataset.meta.num_nodes, "edges": dataset.meta.num_edges, "dim": dataset.meta.feature_dim},
        "runs": {},
    }
    with tempfile.TemporaryDirectory(prefix="aggregate-cache-") as tmp:
        partition = Path(tmp) / "parts"
        write_partition(dataset, partition, args.workers, "random", seed=0)
        for model in args.models.split(","):
            for p in (float(d) for d in args.dropouts.split(",")):
                config = TrainConfig(model=model, hidden=RETEXO_HIDDEN, rounds=args.rounds, dropout=p, split="random")  # type: ignore[arg-type]  # a ModelName
                report["runs"][f"{model} dropout {p:g}"] = compare(timed_runs(partition, config, args.repeats))
    return common.emit(report, args.output)


if __name__ == "__main__":
    raise SystemExit(main())
