#!/usr/bin/env python
"""Feature-cache hit rate, degree ordering vs presampling, on every real dataset in ../shared.

For each graph and each kind of training set - ``uniform`` (nodes drawn at random) and
``clustered`` (a BFS ball around a random root, like papers100M's arXiv-only labels) - and for
cache sizes of 5/10/20/30/50% of the feature rows: the share of feature reads a static cache
serves. Presampling learns its ranking from one sampled epoch; hit rates are measured on another
epoch drawn with a different seed (the cache never sees the epoch it is scored on). Every figure
is the mean over --trials training sets (different random draws / roots).

Run: ``.venv/bin/python benchmarks/cache.py [--train-fraction 0.02] [--trials 3] [--output F]``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import common
import numpy as np

CACHE_FRACTIONS = (0.05, 0.10, 0.20, 0.30, 0.50)


def measure(dataset, seeds, fanouts, batch_size, trial) -> dict[str, list[float]]:
    from remotegnn.cache.hitrate import hit_rate_curve
    from remotegnn.cache.policy import access_counts, degree_ranking, presample_ranking

    counts = access_counts(dataset, seeds, fanouts, batch_size=batch_size, seed=1000 + trial)
    rankings = {
        "degree": degree_ranking(dataset.degree),
        "presample": presample_ranking(dataset, seeds, fanouts, batch_size=batch_size, seed=trial),
    }
    return {policy: hit_rate_curve(counts, ranking, CACHE_FRACTIONS) for policy, ranking in rankings.items()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--train-fraction", type=float, default=0.02, help="training set size, share of nodes (default 0.02)"
    )
    parser.add_argument("--trials", type=int, default=3, help="training sets per kind, averaged (default 3)")
    parser.add_argument("--fanouts", default=common.FANOUTS_TEXT)
    parser.add_argument(
        "--batch-size", type=int, default=256, help="seeds per batch (default 256: the graphs are small)"
    )
    parser.add_argument("--data-dir", type=Path, default=common.DATA_DIR)
    parser.add_argument("--output", type=Path, help="also write the JSON here (atomically)")
    args = parser.parse_args(argv)

    from trainsets import bfs_ball, uniform_nodes

    from remotegnn.cache.hitrate import degree_skew

    fanouts = [int(f) for f in args.fanouts.split(",")]
    datasets = common.real_datasets(args.data_dir)
    results = {}
    for name, dataset in datasets.items():
        n = dataset.meta.num_nodes
        size = max(16, round(args.train_fraction * n))
        per_kind = {}
        for kind, make in (
            ("uniform", lambda t, n=n, size=size: uniform_nodes(n, size, t)),
            ("clustered", lambda t, dataset=dataset, size=size: bfs_ball(dataset, size, t)),
        ):
            trials = [measure(dataset, make(t), fanouts, args.batch_size, t) for t in range(args.trials)]
            mean = {
                policy: [
                    round(float(np.mean([tr[policy][i] for tr in trials])), 4) for i in range(len(CACHE_FRACTIONS))
                ]
                for policy in trials[0]
            }
            per_kind[kind] = {
                "hit_rate": {f"{f:.0%}": {p: mean[p][i] for p in mean} for i, f in enumerate(CACHE_FRACTIONS)},
                "presample_minus_degree_points": {
                    f"{f:.0%}": round(100 * (mean["presample"][i] - mean["degree"][i]), 1)
                    for i, f in enumerate(CACHE_FRACTIONS)
                },
            }
        results[name] = {
            "nodes": n,
            "edges": dataset.meta.num_edges,
            "train_nodes": size,
            "degree_skew": {f"top {k:.0%}": round(v, 3) for k, v in degree_skew(dataset).items()},
            **per_kind,
        }
    report = {
        "benchmark": "cache",
        "parameters": {
            "fanouts": fanouts,
            "batch_size": args.batch_size,
            "train_fraction": args.train_fraction,
            "trials": args.trials,
            "cache_fractions": list(CACHE_FRACTIONS),
        },
        "machine": common.machine(),
        "datasets": results or "none: ../shared/datasets is absent",
    }
    return common.emit(report, args.output)


if __name__ == "__main__":
    sys.exit(main())
