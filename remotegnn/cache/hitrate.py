"""Hit rate of a static cache as a function of its size, from measured access counts.

For a static cache the hits of a run are exactly the accesses to cached nodes, so one sampled
run's per-node access counts give the whole curve for every policy at once: cache the first
x*N nodes of a ranking, hit rate = their share of all accesses. The counts must come from a
run other than the one presampling learned from (a different seed), or presample would be
scored on its own training data.
"""

from __future__ import annotations

import numpy as np


def hit_rate_curve(counts: np.ndarray, ranking: np.ndarray, fractions) -> list[float]:
    """Share of accesses served when the first ``fraction`` of all nodes in ``ranking`` are cached."""
    total = counts.sum()
    if total == 0:
        return [0.0 for _ in fractions]
    cumulative = np.concatenate([[0], np.cumsum(counts[ranking])])
    n = len(counts)
    return [float(cumulative[min(int(round(f * n)), len(ranking))] / total) for f in fractions]


def degree_skew(dataset, fractions=(0.01, 0.05, 0.10, 0.30)) -> dict[float, float]:
    """Share of edge endpoints held by the top fraction of nodes by (in + out) degree."""
    degree = np.diff(np.asarray(dataset.csc.indptr)) + np.diff(np.asarray(dataset.csr.indptr))
    ordered = np.sort(degree)[::-1]
    cumulative = np.concatenate([[0], np.cumsum(ordered)])
    total = cumulative[-1] or 1
    return {f: float(cumulative[int(round(f * len(degree)))] / total) for f in fractions}
