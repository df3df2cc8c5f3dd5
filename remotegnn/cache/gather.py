"""Row gathers split over threads, for a cache filled through the feature file's memory map.

A cache that is not a memory rank's (``FeatureCache.build`` with ``fill=True``; the learner's
cache under the local transport) reads its rows through the file's memory map, and every page it
touches costs the faulting thread kernel time (reading the page in, adding it to the page cache,
mapping it), so one thread's copy can bind a fast disk. The gather kernel releases the GIL, so
threads that each take a slice of the rows fault and copy at once: from a cold page cache, two
threads swept 1.2-1.9x what one did on a 2-core machine (``benchmarks/sweep_reads.py``). A memory
rank's start-up sweep reads past the page cache instead (``remotegnn.cache.direct``). The slices
are disjoint and each row is copied as one thread would copy it, so the caches hold the same
bytes whatever the thread count.

The threads live for one gather: no thread of a fill outlives the call that started it.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from remotegnn.cache.kernels import gather_rows

FILL_THREADS_MAX = 8
"""Most threads a fill copies rows on (one per core it may run on, up to this): where the copy
binds, a few threads outrun any EBS volume, and more would only contend for the page cache's
locks."""
MIN_ROWS_PER_THREAD = 4096
"""Fewer rows than this are not split further: handing a slice to a thread costs more than copying it."""


def fill_threads() -> int:
    """Threads a fill copies rows on: one per core this process may run on, at most
    ``FILL_THREADS_MAX``."""
    return max(1, min(FILL_THREADS_MAX, len(os.sched_getaffinity(0))))


def gather_rows_threaded(src: np.ndarray, idx: np.ndarray, out: np.ndarray, threads: int) -> None:
    """``out[i] = src[idx[i]]`` for every i, the rows split into up to ``threads`` contiguous
    slices copied at once (the calling thread copies the first)."""
    parts = max(1, min(threads, len(idx) // MIN_ROWS_PER_THREAD))
    if parts == 1:
        gather_rows(src, idx, out)
        return
    cuts = np.linspace(0, len(idx), parts + 1).astype(np.int64)
    with ThreadPoolExecutor(parts - 1, thread_name_prefix="remotegnn sweep") as pool:
        rest = [pool.submit(gather_rows, src, idx[a:b], out[a:b]) for a, b in zip(cuts[1:-1], cuts[2:], strict=True)]
        gather_rows(src, idx[: cuts[1]], out[: cuts[1]])
        for done in rest:
            done.result()
