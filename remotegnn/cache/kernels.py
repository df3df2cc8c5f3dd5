"""numba kernels for moving feature rows.

An explicit element loop, not ``row[:] = src[i]`` slices or ``np.take``: measured here it copies
60k random 512-byte rows in 3.5 ms (8.9 GB/s) against 12.7 ms for ``np.take(..., out=)`` and
16 ms for the slice form, which numba does not turn into a memcpy. The gathers prefetch the
rows ``PREFETCH_AHEAD`` rows ahead, so several rows are in flight at once: 1.4x on uniformly
random rows.
"""

from __future__ import annotations

import numba
import numpy as np

from remotegnn.prefetch import prefetch, prefetch_row

PREFETCH_AHEAD = 8
"""Rows ahead of the copy whose lines are requested (a 512-byte row is 8 lines; 8 rows keep about
64 lines in flight, about what one core can track)."""


@numba.njit(nogil=True, cache=True)
def gather_rows(src, idx, out):
    """out[i] = src[idx[i]] for every i."""
    dim = src.shape[1]
    n = idx.shape[0]
    for i in range(n):
        if i + PREFETCH_AHEAD < n:
            prefetch_row(src, idx[i + PREFETCH_AHEAD])
        r = idx[i]
        for j in range(dim):
            out[i, j] = src[r, j]


@numba.njit(nogil=True, cache=True)
def gather_cached(slot, rows, n_id, out, miss_pos):
    """Copy cached rows of n_id into out; record positions of misses. Returns the miss count."""
    dim = rows.shape[1]
    n = n_id.shape[0]
    misses = 0
    for i in range(n):
        if i + 2 * PREFETCH_AHEAD < n:
            prefetch(slot, n_id[i + 2 * PREFETCH_AHEAD])
        if i + PREFETCH_AHEAD < n:
            ahead = slot[n_id[i + PREFETCH_AHEAD]]
            if ahead >= 0:
                prefetch_row(rows, ahead)
        s = slot[n_id[i]]
        if s >= 0:
            for j in range(dim):
                out[i, j] = rows[s, j]
        else:
            miss_pos[misses] = i
            misses += 1
    return misses


@numba.njit(nogil=True, cache=True)
def scatter_rows(src, positions, out):
    """out[positions[i]] = src[i] for every i."""
    dim = src.shape[1]
    for i in range(positions.shape[0]):
        p = positions[i]
        for j in range(dim):
            out[p, j] = src[i, j]


@numba.njit(nogil=True, cache=True)
def move_rows(src, idx, positions, out):
    """out[positions[i]] = src[idx[i]] for every i (a gather and a scatter in one pass)."""
    dim = src.shape[1]
    n = idx.shape[0]
    for i in range(n):
        if i + PREFETCH_AHEAD < n:
            prefetch_row(src, idx[i + PREFETCH_AHEAD])
        r = idx[i]
        p = positions[i]
        for j in range(dim):
            out[p, j] = src[r, j]


@numba.njit(nogil=True, cache=True)
def count_accesses(counts, n_id):
    """counts[v] += 1 for every v in n_id (one feature read per node and batch)."""
    for i in range(n_id.shape[0]):
        counts[n_id[i]] += 1


def empty_slots(num_nodes: int) -> np.ndarray:
    return np.full(num_nodes, -1, dtype=np.int32)


@numba.njit(nogil=True, cache=True)
def select_sent(n_id, held, index, count, block_rows, out):
    """Positions i of n_id whose row memory rank ``index`` of ``count`` sends: its own
    ((n_id[i] // block_rows) % count == index, ``contracts.shards``) and not held by the learner
    (``held`` empty: none is). Returns how many."""
    k = 0
    check = held.shape[0] > 0
    for i in range(n_id.shape[0]):
        v = n_id[i]
        if (v // block_rows) % count == index and not (check and held[v]):
            out[k] = i
            k += 1
    return k


@numba.njit(nogil=True, cache=True)
def copy_rows_at(flat, starts, out):
    """out[i] = flat[starts[i] : starts[i] + row length] for every i: rows out of a buffer of the
    file, ``starts`` counted in elements of the feature dtype."""
    dim = out.shape[1]
    for i in range(starts.shape[0]):
        s = starts[i]
        for j in range(dim):
            out[i, j] = flat[s + j]
