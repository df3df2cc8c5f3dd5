"""Node orders that give a graph locality: which node each stored row should hold.

Sampling reads a node's CSC segment, its entry in the sampler's per-node arrays and its feature
row; with arbitrary ids every one of those is a cache miss (in RAM) or a 4 KiB page of its own (on
a volume). An order stores nodes that are read together next to each other. Each function
returns ``order`` with ``order[new] = old``: the node stored as row ``new``.

- ``degree``: descending degree, ties by id. On power-law graphs a few percent of the nodes are
  in most batches; stored first they share cache lines and pages, and a degree-ranked feature
  cache holds one contiguous block (it ranks the same way).
- ``dbg``: degree-based grouping (Faldu et al., "A Closer Look at Lightweight Graph
  Reordering"): nodes grouped by degree class (powers of two), hot classes first, the input
  order kept inside a class - most of ``degree``'s gain, less of the locality the ids had.
- ``bfs``: breadth-first from the highest-degree node over edges in both directions, each
  remaining component from its highest-degree node: a node's neighbours land near it, so a
  batch's misses fall into runs.
- ``rcm``: reverse Cuthill-McKee (SciPy's), the bandwidth-reducing order from sparse solvers.

On a heterogeneous graph each node type keeps its id range (a node's type follows from its id),
so the order is applied within each type.
"""

from __future__ import annotations

from collections.abc import Callable

import numba
import numpy as np

from remotegnn.store.reader import GraphDataset


def degree_ranking(degree: np.ndarray) -> np.ndarray:
    """Node ids by descending degree, ties by ascending id (stable, reproducible): the ``degree``
    order, and the feature cache's ``degree`` policy."""
    return np.argsort(-np.asarray(degree, dtype=np.int64), kind="stable")


def _by_degree(dataset: GraphDataset) -> np.ndarray:
    return degree_ranking(dataset.degree)


def _by_degree_class(dataset: GraphDataset) -> np.ndarray:
    degree = np.asarray(dataset.degree, dtype=np.int64)
    degree_class = np.floor(np.log2(degree + 1)).astype(np.int64)
    return np.argsort(-degree_class, kind="stable")


@numba.njit(nogil=True, cache=True)
def _bfs_order(in_ptr, in_idx, out_ptr, out_idx, roots):
    """Breadth-first over in- and out-edges, a new search from each root not yet reached."""
    n = in_ptr.shape[0] - 1
    seen = np.zeros(n, dtype=np.bool_)
    order = np.empty(n, dtype=np.int64)
    tail = 0
    for root in roots:
        if seen[root]:
            continue
        seen[root] = True
        head = tail
        order[tail] = root
        tail += 1
        while head < tail:
            v = order[head]
            head += 1
            tail = _visit(in_ptr, in_idx, v, seen, order, tail)
            tail = _visit(out_ptr, out_idx, v, seen, order, tail)
    return order


@numba.njit(inline="always", nogil=True)
def _visit(ptr, idx, v, seen, order, tail):
    """Queue v's neighbours not seen yet; return the new queue end."""
    for p in range(ptr[v], ptr[v + 1]):
        u = idx[p]
        if not seen[u]:
            seen[u] = True
            order[tail] = u
            tail += 1
    return tail


def _breadth_first(dataset: GraphDataset) -> np.ndarray:
    csc, csr = dataset.csc, dataset.csr
    return _bfs_order(
        np.asarray(csc.indptr),
        np.asarray(csc.indices),
        np.asarray(csr.indptr),
        np.asarray(csr.indices),
        _by_degree(dataset),
    )


def _reverse_cuthill_mckee(dataset: GraphDataset) -> np.ndarray:
    import scipy.sparse as sp
    from scipy.sparse.csgraph import reverse_cuthill_mckee

    n = dataset.meta.num_nodes
    indptr, indices, _ = dataset.csr
    data = np.ones(len(indices), dtype=np.int8)
    adjacency = sp.csr_matrix((data, np.asarray(indices), np.asarray(indptr)), shape=(n, n))
    if not dataset.meta.undirected:
        adjacency = (adjacency + adjacency.T).tocsr()
    return np.asarray(reverse_cuthill_mckee(adjacency, symmetric_mode=True), dtype=np.int64)


ORDERS: dict[str, Callable[[GraphDataset], np.ndarray]] = {
    "degree": _by_degree,
    "dbg": _by_degree_class,
    "bfs": _breadth_first,
    "rcm": _reverse_cuthill_mckee,
}


def node_order(dataset: GraphDataset, name: str) -> np.ndarray:
    """``order[new] = old`` for the order ``name`` (one of ``ORDERS``), each node type kept in
    its id range on a heterogeneous graph."""
    order = ORDERS[name](dataset)
    hetero = dataset.meta.hetero
    if hetero is not None:
        node_type = np.searchsorted(np.asarray(hetero.node_offsets[1:]), order, side="right")
        order = order[np.argsort(node_type, kind="stable")]
    return order
