"""Row gathers split over threads: the same rows whatever the thread count, from a real memory map."""

from __future__ import annotations

import os

import numpy as np
import pytest

from remotegnn.cache.gather import FILL_THREADS_MAX, MIN_ROWS_PER_THREAD, fill_threads, gather_rows_threaded


@pytest.fixture(scope="module")
def rows_file(tmp_path_factory) -> np.memmap:
    """A feature file on disk, read through its memory map as a memory rank's sweep reads it."""
    rows = np.random.default_rng(0).random((5 * MIN_ROWS_PER_THREAD + 17, 12), dtype=np.float32)
    path = tmp_path_factory.mktemp("gather") / "features.bin"
    rows.tofile(path)
    return np.memmap(path, dtype=np.float32, mode="r", shape=rows.shape)


@pytest.mark.parametrize("threads", [1, 2, 3, 5, 8])
@pytest.mark.parametrize("count", [0, 1, MIN_ROWS_PER_THREAD - 1, 2 * MIN_ROWS_PER_THREAD, 4 * MIN_ROWS_PER_THREAD + 9])
def test_every_thread_count_gathers_the_same_rows(rows_file, threads, count):
    idx = np.sort(np.random.default_rng(count).choice(rows_file.shape[0], count, replace=False))
    out = np.full((count, rows_file.shape[1]), np.nan, dtype=np.float32)
    gather_rows_threaded(rows_file, idx, out, threads)
    assert np.array_equal(out, np.asarray(rows_file)[idx])


def test_a_sweep_uses_a_thread_per_core_it_may_run_on_up_to_the_cap():
    cores = os.sched_getaffinity(0)
    assert fill_threads() == min(FILL_THREADS_MAX, len(cores))
    try:
        os.sched_setaffinity(0, {min(cores)})  # a process pinned to one core sweeps on one thread
        assert fill_threads() == 1
    finally:
        os.sched_setaffinity(0, cores)
