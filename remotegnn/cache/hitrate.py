"""Hit rate of a static cache as a function of its size, from measured access counts.

For a static cache the hits of a run are exactly the accesses to cached nodes, so one sampled
run's per-node access counts give the whole curve for every policy at once: cache the first
x*N nodes of a ranking, hit rate = their share of all accesses. The counts must come from a
run other than the one presampling learned from (a different seed), or presample would be
scored on its own training data.
"""

from __future__ import annotations

import numpy as np

CHUNK = 1 << 20
"""Nodes read per step: a pass over a graph of 10^8 nodes holds megabytes, not bytes per node."""


def hit_rate_curve(counts: np.ndarray, ranking: np.ndarray, fractions) -> list[float]:
    """Share of accesses served when the first ``fraction`` of all nodes in ``ranking`` are cached."""
    total = int(counts.sum(dtype=np.int64))
    if total == 0:
        return [0.0 for _ in fractions]
    n = len(counts)
    points = [min(int(round(f * n)), len(ranking)) for f in fractions]
    served, running, start = {}, 0, 0
    for stop in sorted(set(points)):
        for a in range(start, stop, CHUNK):
            running += int(counts[ranking[a : min(a + CHUNK, stop)]].sum(dtype=np.int64))
        served[stop], start = running, stop
    return [served[point] / total for point in points]


def degree_skew(dataset, fractions=(0.01, 0.05, 0.10, 0.30)) -> dict[float, float]:
    """Share of edge endpoints held by the top fraction of nodes by (in + out) degree.

    Counted from a histogram of the degrees, built a block of nodes at a time: the top k nodes
    are whole degree values from the highest down plus part of one, whose nodes all have the
    same degree, so the shares equal those of sorting every node's degree."""
    csc, csr = dataset.csc.indptr, dataset.csr.indptr
    n = len(csc) - 1
    nodes_with = np.zeros(1, dtype=np.int64)  # nodes_with[d]: nodes of degree d
    for a in range(0, n, CHUNK):
        b = min(a + CHUNK, n)
        block = np.bincount(np.diff(np.asarray(csc[a : b + 1])) + np.diff(np.asarray(csr[a : b + 1])))
        if len(block) > len(nodes_with):
            nodes_with = np.concatenate([nodes_with, np.zeros(len(block) - len(nodes_with), dtype=np.int64)])
        nodes_with[: len(block)] += block
    degrees = np.arange(len(nodes_with) - 1, -1, -1, dtype=np.int64)  # highest first
    nodes = np.cumsum(nodes_with[::-1])
    ends = np.cumsum(nodes_with[::-1] * degrees)
    total = int(ends[-1]) or 1
    shares = {}
    for f in fractions:
        k = int(round(f * n))
        i = int(np.searchsorted(nodes, k))  # the first degree value whose nodes reach k
        if k == 0 or i >= len(nodes):
            taken = 0 if k == 0 else int(ends[-1])
        else:
            before_nodes, before_ends = (int(nodes[i - 1]), int(ends[i - 1])) if i else (0, 0)
            taken = before_ends + (k - before_nodes) * int(degrees[i])
        shares[f] = taken / total
    return shares
