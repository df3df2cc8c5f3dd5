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
- ``rcm``: reverse Cuthill-McKee, the bandwidth-reducing order from sparse solvers: SciPy's
  algorithm (each component from a node of lowest degree, each node's new neighbours queued in
  ascending degree), with ties broken by id where SciPy's quicksort breaks them as it happens to.

On a heterogeneous graph each node type keeps its id range (a node's type follows from its id),
so the order is applied within each type.

Every order is computed in bounded memory, for graphs larger than RAM: the per-node arrays are
files in a scratch folder (:mod:`remotegnn.store.external`); the sorts by degree are external
bucket sorts, and the searches walk the structure mapped for scattered reads, marking nodes in a bitmap file
and appending to the order's file as they go (only a node's newly queued neighbours are held).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import numba
import numpy as np

from remotegnn.store.external import Scratch, sort_by_key, spans
from remotegnn.store.npy import NpyAppender, NpyReader
from remotegnn.store.reader import GraphDataset

KEY_BYTES_PER_NODE = 64  # a block of (node, key) pairs with the key's temporaries
SMALL_RUN = 32  # runs of newly queued nodes this short are put in degree order by insertion


def degree_ranking(degree: np.ndarray) -> np.ndarray:
    """Node ids by descending degree, ties by ascending id (stable, reproducible): the ``degree``
    order held in RAM, as the feature cache's ``degree`` policy ranks nodes."""
    return np.argsort(-np.asarray(degree, dtype=np.int64), kind="stable")


def _sorted_nodes(dataset: GraphDataset, scratch: Scratch, name: str, key: Callable[[np.ndarray], np.ndarray]) -> Path:
    """Node ids sorted by ``key(in-degree)``, ties by id, into scratch file ``name``."""
    degree = NpyReader(dataset.path / dataset.meta.files["degree"].path)

    def chunks() -> Iterator[tuple[np.ndarray, np.ndarray]]:
        for start, stop in spans(degree.rows, scratch.rows(KEY_BYTES_PER_NODE)):
            yield np.arange(start, stop, dtype=np.int64), key(degree.read(start, stop).astype(np.int64))

    sort_by_key(chunks, degree.rows, scratch.path(name), scratch)
    return scratch.path(name)


def _by_degree(dataset: GraphDataset, scratch: Scratch) -> Path:
    return _sorted_nodes(dataset, scratch, "degree", np.negative)


def _by_degree_class(dataset: GraphDataset, scratch: Scratch) -> Path:
    return _sorted_nodes(dataset, scratch, "dbg", lambda degree: -np.floor(np.log2(degree + 1)).astype(np.int64))


@numba.njit(nogil=True, cache=True)
def _search(first_ptr, first_idx, second_ptr, second_idx, roots, seen, order, by_degree, both):
    """Breadth-first over the first adjacency's lists then (with ``both``) the second's, a new
    search from each root not yet reached; ``seen`` is a bitmap. With ``by_degree``, the nodes
    each node queues are put in ascending degree (the lengths of the lists walked), equal degrees
    in the order they were found (Cuthill-McKee)."""
    tail = 0
    for root in roots:
        if seen[root >> 3] & (1 << (root & 7)):
            continue
        seen[root >> 3] |= 1 << (root & 7)
        head = tail
        order[tail] = root
        tail += 1
        while head < tail:
            v = order[head]
            head += 1
            found = tail
            tail = _visit(first_ptr, first_idx, v, seen, order, tail)
            if both:
                tail = _visit(second_ptr, second_idx, v, seen, order, tail)
            if by_degree and tail - found > 1:
                _by_ascending_degree(order[found:tail], first_ptr, second_ptr, both)


@numba.njit(inline="always", nogil=True)
def _visit(ptr, idx, v, seen, order, tail):
    """Queue v's neighbours not seen yet; return the new queue end."""
    for p in range(ptr[v], ptr[v + 1]):
        u = idx[p]
        if not seen[u >> 3] & (1 << (u & 7)):
            seen[u >> 3] |= 1 << (u & 7)
            order[tail] = u
            tail += 1
    return tail


@numba.njit(nogil=True, cache=True)
def _by_ascending_degree(run, first_ptr, second_ptr, both):
    """Sort ``run`` in place by degree, stably: by insertion as SciPy does, or by merge sort for a
    long run (a hub's neighbours)."""
    degree = np.empty(len(run), dtype=np.int64)
    for i in range(len(run)):
        v = run[i]
        degree[i] = first_ptr[v + 1] - first_ptr[v]
        if both:
            degree[i] += second_ptr[v + 1] - second_ptr[v]
    if len(run) > SMALL_RUN:
        run[:] = run[np.argsort(degree, kind="mergesort")]
        return
    for i in range(1, len(run)):
        d, v = degree[i], run[i]
        j = i
        while j > 0 and degree[j - 1] > d:
            degree[j], run[j] = degree[j - 1], run[j - 1]
            j -= 1
        degree[j], run[j] = d, v


def _searched(dataset: GraphDataset, scratch: Scratch, name: str, roots: Path, rcm: bool) -> Path:
    """The search's order (breadth-first, or Cuthill-McKee's) from ``roots`` into scratch file ``name``."""
    n = dataset.meta.num_nodes
    csc, csr = dataset.csc, dataset.csr
    first, second = (csr, csc) if rcm else (csc, csr)
    seen = scratch.create(f"{name}.seen", (n + 7) // 8, np.uint8)
    order = scratch.create(name, n, np.int64)
    # An undirected graph's second lists add no one (each holds the first's nodes), and the first's
    # lengths alone rank degrees alike: walking the first alone halves the pages read.
    both = not dataset.meta.undirected
    _search(
        np.asarray(first.indptr),
        np.asarray(first.indices),
        np.asarray(second.indptr),
        np.asarray(second.indices),
        np.asarray(np.load(roots, mmap_mode="r")),
        np.asarray(seen),
        np.asarray(order),
        rcm,
        both,
    )
    order.flush()
    del order, seen
    scratch.path(f"{name}.seen").unlink()
    return scratch.path(name)


def _breadth_first(dataset: GraphDataset, scratch: Scratch) -> Path:
    return _searched(dataset, scratch, "bfs", _by_degree(dataset, scratch), rcm=False)


def _reverse_cuthill_mckee(dataset: GraphDataset, scratch: Scratch) -> Path:
    """Cuthill-McKee over edges both ways from nodes of ascending (in + out) degree, then reversed.

    As SciPy's ``reverse_cuthill_mckee`` on an undirected graph: each node's neighbours in stored
    order, those it queues sorted by degree; a directed graph adds its in-neighbours after them."""
    csc, csr = (NpyReader(dataset.path / dataset.meta.files[f"{layout}/indptr"].path) for layout in ("csc", "csr"))
    n = dataset.meta.num_nodes

    def chunks() -> Iterator[tuple[np.ndarray, np.ndarray]]:
        for start, stop in spans(n, scratch.rows(KEY_BYTES_PER_NODE)):
            degree = np.diff(csc.read(start, stop + 1)) + np.diff(csr.read(start, stop + 1))
            yield np.arange(start, stop, dtype=np.int64), degree

    sort_by_key(chunks, n, scratch.path("rcm.seeds"), scratch)
    forward = NpyReader(_searched(dataset, scratch, "cm", scratch.path("rcm.seeds"), rcm=True))
    with NpyAppender(scratch.path("rcm"), np.int64) as out:
        for start, stop in reversed(list(spans(n, scratch.rows(2 * 8)))):
            out.append(forward.read(start, stop)[::-1])
    return scratch.path("rcm")


ORDERS: dict[str, Callable[[GraphDataset, Scratch], Path]] = {
    "degree": _by_degree,
    "dbg": _by_degree_class,
    "bfs": _breadth_first,
    "rcm": _reverse_cuthill_mckee,
}


def node_order(dataset: GraphDataset, name: str, scratch: Scratch) -> Path:
    """The file in ``scratch`` (int64 ``.npy``) holding ``order[new] = old`` for the order
    ``name`` (one of ``ORDERS``), each node type kept in its id range on a heterogeneous graph."""
    path = ORDERS[name](dataset, scratch)
    hetero = dataset.meta.hetero
    if hetero is not None:
        reader, ends = NpyReader(path), np.asarray(hetero.node_offsets[1:])

        def chunks() -> Iterator[tuple[np.ndarray, np.ndarray]]:
            for block in reader.blocks(scratch.rows(KEY_BYTES_PER_NODE)):
                yield block, np.searchsorted(ends, block, side="right")

        path = scratch.path(f"{name}.typed")
        sort_by_key(chunks, reader.rows, path, scratch)
    return path
