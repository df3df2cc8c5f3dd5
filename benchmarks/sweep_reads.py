#!/usr/bin/env python
"""A memory rank's start-up sweep from a cold page cache: through the memory map, and past it.

Through the map (how a memory rank swept before it read past the page cache, and how a cache
outside a memory rank still fills) a step's rows are copied by ``gather_rows_threaded`` on 1, 2,
... threads, the next step's pages asked for ahead (``posix_fadvise(WILLNEED)``). Past the page
cache a step is one ``DirectRows.read`` (``remotegnn.cache.direct``): ``O_DIRECT`` reads of the
windows holding its rows, the next piece read while this one's rows are copied.

This script writes a feature file of ``--gib`` GiB (960-byte rows: 240 float32 features, as the
larger-than-RAM rehearsal's graph), drops its pages from the page cache before every run
(``posix_fadvise(DONTNEED)``: a run finds none of it cached) and sweeps ``--share`` of its rows,
spread evenly over the file (so every window is read, as a cache fill's are), in steps of 64 MiB
of rows, each way in turn, ``--repeats`` times. Reported per way: bytes of the file per second;
this process's CPU seconds (user and system, every thread) per GB of the file; the whole
machine's busy CPU seconds per GB (it also counts the kernel's threads that reclaim the page
cache, which are in no process's count, and any other work on the machine); and the rate against
one thread through the map in the same repeat, as the disk's rate drifts on a shared machine.
Every way must copy the same rows (checked each run). Nothing else is asserted.

Run: ``.venv/bin/python benchmarks/sweep_reads.py [--gib 4] [--output FILE]``.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import tempfile
import time
from pathlib import Path

import common
import numpy as np

from remotegnn.cache.direct import DirectRows
from remotegnn.cache.gather import fill_threads, gather_rows_threaded

DIM = 240
ROW_BYTES = DIM * 4
STEP_BYTES = 64 << 20  # a sweep step: one learner-cache chunk's rows (remotegnn.server.startup)
WRITE_BYTES = 64 << 20
DIRECT = "direct"
IDLE, IOWAIT = 3, 4  # the columns of /proc/stat's cpu line


def write_file(path: Path, size: int) -> None:
    """A .npy of ``size`` bytes of float32 rows (the header's 128 bytes aside), on disk."""
    rows = size // ROW_BYTES
    features = np.lib.format.open_memmap(path, mode="w+", dtype=np.float32, shape=(rows, DIM))
    block = np.random.default_rng(0).random((WRITE_BYTES // ROW_BYTES, DIM), dtype=np.float32)
    for start in range(0, rows, len(block)):
        stop = min(start + len(block), rows)
        features[start:stop] = block[: stop - start]
    features.flush()
    del features
    fd = os.open(path, os.O_RDONLY)
    os.fsync(fd)
    os.close(fd)


def cpu_seconds() -> tuple[float, float]:
    """CPU seconds so far: this process's (user and system, every thread), and the whole
    machine's busy time (``/proc/stat``: all but idle and I/O wait), which also counts the kernel's
    threads that reclaim the page cache and serve the reads."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    fields = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    busy = sum(fields) - fields[IDLE] - fields[IOWAIT]
    return usage.ru_utime + usage.ru_stime, busy / os.sysconf("SC_CLK_TCK")


def sweep_once(path: Path, nodes: np.ndarray, way: int | str) -> tuple[float, float, float, np.ndarray]:
    """Seconds, this process's CPU seconds and the machine's to sweep ``nodes``' rows into RAM
    ``way`` (a thread count through the map, or ``DIRECT``), and the rows."""
    common.evict(path)  # clean pages, mapped by no one between runs: none stays cached
    features = np.load(path, mmap_mode="r")
    out = np.empty((len(nodes), DIM), dtype=np.float32)
    out.fill(0)  # the caches' pages exist before a sweep fills them
    step = STEP_BYTES // ROW_BYTES
    started, cpu = time.perf_counter(), cpu_seconds()
    if way == DIRECT:
        with DirectRows(path, features.offset, np.dtype(np.float32), DIM) as reader:
            for start in range(0, len(nodes), step):
                reader.read([(nodes[start : start + step], out[start : start + step])])
    else:
        fd = os.open(path, os.O_RDONLY)
        for start in range(0, len(nodes), step):
            stop = min(start + step, len(nodes))
            if stop < len(nodes):  # the next step's pages, queued while this step copies
                first, last = int(nodes[stop]), int(nodes[min(stop + step, len(nodes)) - 1])
                os.posix_fadvise(fd, first * ROW_BYTES, (last - first + 1) * ROW_BYTES, os.POSIX_FADV_WILLNEED)
            gather_rows_threaded(features, nodes[start:stop], out[start:stop], int(way))
        os.close(fd)
    seconds, (own, machine) = time.perf_counter() - started, cpu_seconds()
    del features
    return seconds, own - cpu[0], machine - cpu[1], out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gib", type=float, default=4.0, help="size of the feature file, GiB")
    parser.add_argument("--share", type=float, default=0.3, help="share of the rows the sweep reads (0-1]")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--work-dir", type=Path, default=None, help="where the file goes (default: a temp dir)")
    parser.add_argument("--output", type=Path, help="also write the JSON here")
    args = parser.parse_args()
    ways: list[int | str] = [*sorted({1, *range(2, fill_threads() + 1)}), DIRECT]
    with tempfile.TemporaryDirectory(dir=args.work_dir) as work:
        path = Path(work) / "features.npy"
        size = int(args.gib * 2**30) // WRITE_BYTES * WRITE_BYTES
        write_file(path, size)
        rows = size // ROW_BYTES
        nodes = np.unique(np.linspace(0, rows - 1, int(rows * args.share)).astype(np.int64))
        expected = np.load(path, mmap_mode="r")[nodes[:: max(1, len(nodes) // 1000)]]
        gather_rows_threaded(np.zeros((1, DIM), np.float32), np.zeros(1, np.int64), np.empty((1, DIM), np.float32), 1)
        runs: dict[str, list[tuple[float, float, float]]] = {str(way): [] for way in ways}
        for _ in range(args.repeats):
            for way in ways:
                seconds, own, machine, out = sweep_once(path, nodes, way)
                if not np.array_equal(out[:: max(1, len(nodes) // 1000)], expected):
                    raise SystemExit(f"sweeping {way} copied other rows")
                runs[str(way)].append((size / seconds / 1e9, own / (size / 1e9), machine / (size / 1e9)))
    one = [figures[0] for figures in runs["1"]]
    result = {
        "benchmark": "sweep_reads",
        "machine": common.machine(),
        "file_gib": size / 2**30,
        "share_of_rows": args.share,
        "repeats": args.repeats,
        "ways": {
            ("past the page cache" if way == DIRECT else f"map, {way} thread{'s' * (way != '1')}"): {
                "gb_per_s": [round(rate, 3) for rate, _, _ in figures],
                "cpu_s_per_gb": [round(own, 3) for _, own, _ in figures],
                "machine_cpu_s_per_gb": [round(machine, 3) for _, _, machine in figures],
                "against_one_thread_through_the_map": [
                    round(rate / base, 2) for (rate, _, _), base in zip(figures, one, strict=True)
                ],
                "median_against_one_thread": round(
                    statistics.median(rate / base for (rate, _, _), base in zip(figures, one, strict=True)), 2
                ),
            }
            for way, figures in runs.items()
        },
    }
    common.emit(result, args.output)


if __name__ == "__main__":
    main()
