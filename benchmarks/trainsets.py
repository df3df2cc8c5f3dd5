"""Training-seed sets for cache experiments: spread uniformly, or clustered in one region. ``cache.py``
compares the cache policies on both, and so do the cache tests on Cora
(``tests/remotegnn/cache/test_real_datasets.py``); training itself takes the dataset's own split.

Real training sets are often localised (papers100M labels only arXiv papers), which is where a
degree-ordered cache loses to presampling (GNNLab's finding). A BFS ball - the first ``size`` nodes
reached from a random root, following edges both ways - is the simplest localised set.
"""

from __future__ import annotations

import numba
import numpy as np

from foundation.errors import UsageError
from remotegnn.store import GraphDataset


def uniform_nodes(num_nodes: int, size: int, seed: int = 0) -> np.ndarray:
    if not 0 < size <= num_nodes:
        raise UsageError(f"training-set size must be in [1, {num_nodes}]")
    return np.sort(np.random.default_rng([seed, 1]).choice(num_nodes, size, replace=False))


@numba.njit(nogil=True, cache=True)
def _bfs(csc_ptr, csc_idx, csr_ptr, csr_idx, root, size, seen, queue):
    head, tail = 0, 1
    queue[0] = root
    seen[root] = True
    while head < tail and tail < size:
        v = queue[head]
        head += 1
        for ptr, idx in ((csc_ptr, csc_idx), (csr_ptr, csr_idx)):
            for p in range(ptr[v], ptr[v + 1]):
                u = idx[p]
                if not seen[u] and tail < size:
                    seen[u] = True
                    queue[tail] = u
                    tail += 1
    return tail


def bfs_ball(dataset: GraphDataset, size: int, seed: int = 0, max_roots: int = 100) -> np.ndarray:
    """``size`` nodes around a random root (retrying roots whose component is too small)."""
    n = dataset.meta.num_nodes
    if not 0 < size <= n:
        raise UsageError(f"training-set size must be in [1, {n}]")
    rng = np.random.default_rng([seed, 2])
    queue = np.empty(size, dtype=np.int64)
    best = np.empty(0, dtype=np.int64)
    for root in rng.choice(n, min(max_roots, n), replace=False):
        seen = np.zeros(n, dtype=np.bool_)
        found = _bfs(
            dataset.csc.indptr, dataset.csc.indices, dataset.csr.indptr, dataset.csr.indices, root, size, seen, queue
        )
        if found > len(best):
            best = np.sort(queue[:found])
        if found == size:
            break
    return best
