#!/usr/bin/env python
"""A memory rank's start-up sweep on 1, 2, ... threads, from a cold page cache.

The sweep reads its cache rows through the feature file's memory map in steps of 64 MiB of rows,
asking the kernel for the next step's pages before it copies this one's (``remotegnn.server.startup``);
each step's rows are copied by ``gather_rows_threaded`` on the thread count given. This script
writes a feature file of ``--gib`` GiB (960-byte rows: 240 float32 features, as the
larger-than-RAM rehearsal's graph), drops its pages from the page cache before every run
(``posix_fadvise(DONTNEED)``: a run finds none of it cached) and sweeps ``--share`` of its rows,
spread evenly over the file (so every page is read, as a cache fill's read-ahead windows are),
on each thread count in turn, ``--repeats`` times. Rates are bytes of the file per second; the
speed-up of each count is against one thread in the same repeat, as the disk's rate drifts on a
shared machine. Nothing is asserted.

Run: ``.venv/bin/python benchmarks/sweep_threads.py [--gib 4] [--output FILE]``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

import common
import numpy as np

from remotegnn.cache.gather import gather_rows_threaded, sweep_threads

DIM = 240
ROW_BYTES = DIM * 4
STEP_BYTES = 64 << 20  # a sweep step: one learner-cache chunk's rows (remotegnn.server.startup)
WRITE_BYTES = 64 << 20


def write_file(path: Path, size: int) -> None:
    block = np.random.default_rng(0).random(WRITE_BYTES // 4, dtype=np.float32).tobytes()
    with open(path, "wb") as handle:
        for _ in range(size // WRITE_BYTES):
            handle.write(block)
        handle.flush()
        os.fsync(handle.fileno())


def sweep_once(path: Path, nodes: np.ndarray, threads: int) -> float:
    """Seconds to sweep ``nodes``' rows into RAM as a memory rank's start-up does."""
    common.evict(path)  # clean pages, mapped by no one between runs: none stays cached
    rows = os.path.getsize(path) // ROW_BYTES
    features = np.memmap(path, dtype=np.float32, mode="r", shape=(rows, DIM))
    out = np.empty((len(nodes), DIM), dtype=np.float32)
    out.fill(0)  # the caches' pages exist before a sweep fills them
    step = STEP_BYTES // ROW_BYTES
    fd = os.open(path, os.O_RDONLY)
    started = time.perf_counter()
    for start in range(0, len(nodes), step):
        stop = min(start + step, len(nodes))
        if stop < len(nodes):  # the next step's pages, queued while this step copies
            first, last = int(nodes[stop]), int(nodes[min(stop + step, len(nodes)) - 1])
            os.posix_fadvise(fd, first * ROW_BYTES, (last - first + 1) * ROW_BYTES, os.POSIX_FADV_WILLNEED)
        gather_rows_threaded(features, nodes[start:stop], out[start:stop], threads)
    seconds = time.perf_counter() - started
    os.close(fd)
    del features
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gib", type=float, default=4.0, help="size of the feature file, GiB")
    parser.add_argument("--share", type=float, default=0.3, help="share of the rows the sweep reads (0-1]")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--work-dir", type=Path, default=None, help="where the file goes (default: a temp dir)")
    parser.add_argument("--output", type=Path, help="also write the JSON here")
    args = parser.parse_args()
    counts = sorted({1, *range(2, sweep_threads() + 1)})
    with tempfile.TemporaryDirectory(dir=args.work_dir) as work:
        path = Path(work) / "features.bin"
        size = int(args.gib * 2**30) // WRITE_BYTES * WRITE_BYTES
        write_file(path, size)
        rows = size // ROW_BYTES
        nodes = np.unique(np.linspace(0, rows - 1, int(rows * args.share)).astype(np.int64))
        gather_rows_threaded(np.zeros((1, DIM), np.float32), np.zeros(1, np.int64), np.empty((1, DIM), np.float32), 1)
        runs: dict[int, list[float]] = {count: [] for count in counts}
        for _ in range(args.repeats):
            for count in counts:
                runs[count].append(size / sweep_once(path, nodes, count) / 1e9)
    result = {
        "benchmark": "sweep_threads",
        "machine": common.machine(),
        "file_gib": size / 2**30,
        "share_of_rows": args.share,
        "repeats": args.repeats,
        "threads": {
            str(count): {
                "gb_per_s": [round(rate, 3) for rate in rates],
                "speedup_over_one_thread": [round(r / one, 2) for r, one in zip(rates, runs[1], strict=True)],
                "median_speedup": round(statistics.median(r / one for r, one in zip(rates, runs[1], strict=True)), 2),
            }
            for count, rates in runs.items()
        },
    }
    common.emit(result, args.output)


if __name__ == "__main__":
    main()
