"""FeatureVolume: feature rows read from features.npy as if it lay on a gp3 cloud volume.

Cache misses must cost what they would cost in the cloud, so every read really goes to the disk
(O_DIRECT, or buffered after evicting the file's pages) in whole 4 KiB pages, counted and
paced as EBS counts them (limits.py). Which pacing runs is decided once, at open, from what the
machine supports (detect.py), and is reported as ``emulation`` and ``emulation_note``:

- ``blkio``: the kernel throttles a dedicated reader thread in its own cgroup (blkio.py);
- ``token-bucket``: O_DIRECT reads paced in user space (throttle.py);
- ``page-cache``: buffered reads after posix_fadvise(DONTNEED), paced likewise; approximate;
- ``none``: the bare disk, unpaced (O_DIRECT where the filesystem allows it).
"""

from __future__ import annotations

import dataclasses
import mmap
import os
import threading
import time
import weakref
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

from foundation.errors import UsageError
from remotegnn.errors import DatasetError
from remotegnn.store import GraphDataset
from remotegnn.volume.blkio import ThrottledReader, ThrottleProbe, probe
from remotegnn.volume.detect import Emulation, EmulationSupport, detect_emulation
from remotegnn.volume.limits import PAGE, VolumeLimits
from remotegnn.volume.plan import ReadPlan, RowLayout, Window, gather_rows, plan_reads, warm_up, windows, word_dtype
from remotegnn.volume.throttle import TokenBucket

DEFAULT_BUFFER_BYTES = 64 << 20
DEFAULT_QUEUE_DEPTH = 16
"""Requests in flight at once: a cloud volume reaches its IOPS only with many outstanding (gp3's
3,000 IOPS at about 1 ms each need 3 or more), one at a time it is latency-bound."""
_PROBES: dict[str, ThrottleProbe] = {}  # blk-throttle's behaviour per device, measured once per process


@dataclasses.dataclass
class VolumeStats:
    """Counters since open (or the last reset). ``bytes_read`` is whole pages, over-read and
    merged gaps included; ``seconds`` is wall time in read_rows; ``io_seconds`` is time in reads
    summed over the requests in flight (under blkio, the kernel's throttling too), and
    ``throttled_seconds`` the wall time reads waited for the token bucket (the longest lane)."""

    calls: int = 0
    rows: int = 0
    requests: int = 0
    pages: int = 0
    bytes_read: int = 0
    seconds: float = 0.0
    io_seconds: float = 0.0
    throttled_seconds: float = 0.0

    def snapshot(self) -> VolumeStats:
        return dataclasses.replace(self)

    def reset(self) -> None:
        for field in dataclasses.fields(self):
            setattr(self, field.name, field.default)

    def since(self, earlier: VolumeStats) -> VolumeStats:
        """What happened between ``earlier`` (a snapshot) and now."""
        return VolumeStats(
            **{f.name: getattr(self, f.name) - getattr(earlier, f.name) for f in dataclasses.fields(self)}
        )

    def as_dict(self) -> dict:
        """The counters plus achieved rates (MB = 10**6 bytes)."""
        rate = (lambda x: round(x / self.seconds, 3)) if self.seconds > 0 else (lambda x: 0.0)
        return {
            **dataclasses.asdict(self),
            "mb_per_s": rate(self.bytes_read / 1e6),
            "iops": rate(self.requests),
            "rows_per_s": rate(self.rows),
        }


class FeatureVolume:
    """Reads feature rows of ``dataset`` at the speed of a volume with ``limits`` (None: unpaced).

    One reader at a time (calls are serialised); ``out`` is the caller's preallocated array and
    the page buffer is reused across calls, growing up to ``buffer_bytes`` (larger reads are
    done in pieces with the same requests and counts). A read's requests are issued by
    ``queue_depth`` threads at once, each taking every ``queue_depth``-th request in order, so
    up to that many are in flight while the pacing still follows the volume's schedule.

    Args:
        dataset: The dataset whose feature file is read.
        limits: The volume's MB/s, IOPS and request sizes to read at; None reads unpaced.
        emulation: How reads are made to behave like the volume: "blkio" (the kernel's cgroup
            throttle), "token-bucket" (O_DIRECT reads paced here), "page-cache" (approximate:
            the file's cached pages evicted), "none", or "auto" for the best this machine and
            file allow. A mode asked for by name that cannot run is an error.
        buffer_bytes: The most the reused page buffer grows to (64 MiB by default).
        queue_depth: Requests in flight at once (at least 1; 16 by default).
    """

    def __init__(
        self,
        dataset: GraphDataset,
        limits: VolumeLimits | None = VolumeLimits(),
        emulation: Emulation = "auto",
        *,
        buffer_bytes: int = DEFAULT_BUFFER_BYTES,
        queue_depth: int = DEFAULT_QUEUE_DEPTH,
    ):
        if queue_depth < 1:
            raise UsageError(f"queue_depth must be at least 1, not {queue_depth}")
        meta = dataset.meta
        self.dataset, self.limits = dataset, limits
        self.support: EmulationSupport = detect_emulation(dataset.features_path)
        mode, note = self.support.choose(emulation, limits)
        self._shape = (meta.num_nodes, meta.feature_dim)
        self._dtype = np.dtype(meta.feature_dtype)
        self._layout = RowLayout(
            offset=dataset.features_offset,
            row_bytes=meta.row_bytes,
            gap_pages=limits.merge_gap_pages if limits else 0,
            max_pages=(limits or VolumeLimits()).max_request_bytes // PAGE,
        )
        self._capacity = max(buffer_bytes // PAGE, self._layout.max_pages + self._layout.row_span_pages)
        self._word = word_dtype(self._layout)
        self._buffer: np.ndarray | None = None
        self._view: memoryview | None = None
        self._reader: ThrottledReader | None = None
        self._pool: ThreadPoolExecutor | None = None
        self.queue_depth = queue_depth
        self._bucket: TokenBucket | None = None
        self._lock = threading.Lock()
        self.stats = VolumeStats()
        direct = mode in ("blkio", "token-bucket") or (mode == "none" and self.support.o_direct.available)
        self._evict = not direct
        self._fd = os.open(dataset.features_path, os.O_RDONLY | (os.O_DIRECT if direct else 0))
        self._closer = weakref.finalize(self, os.close, self._fd)
        try:
            self._file_size = os.fstat(self._fd).st_size
            if self._evict and self.support.fadvise.available:
                os.posix_fadvise(self._fd, 0, 0, os.POSIX_FADV_RANDOM)  # no readahead beyond the pages asked for
            if mode == "blkio":
                mode, note = self._start_blkio(emulation == "auto", note)
            if mode in ("token-bucket", "page-cache"):
                assert limits is not None  # choose() throttles only to limits
                self._bucket = TokenBucket(limits.bytes_per_s, limits.iops)
            if self._reader is None:
                self._pool = ThreadPoolExecutor(max_workers=queue_depth, thread_name_prefix="volume-read")
        except BaseException:
            self.close()
            raise
        self.emulation: str = mode
        self.emulation_note: str = note

    # -- reading --------------------------------------------------------------------------------
    def read_rows(self, nodes: np.ndarray, out: np.ndarray) -> None:
        """Fill ``out[i] = features[nodes[i]]`` from the disk at the emulated speed. ``nodes``:
        sorted unique node ids; ``out``: C-contiguous [len(nodes), D] of the feature dtype."""
        nodes = self._checked(nodes, out)
        with self._lock:
            start = time.perf_counter()
            try:
                if len(nodes):
                    self._read(nodes, out)
            finally:
                self.stats.calls += 1
                self.stats.seconds += time.perf_counter() - start

    def _read(self, nodes: np.ndarray, out: np.ndarray) -> None:
        plan = plan_reads(nodes, self._layout)
        buffer = self._ensure_buffer(min(plan.pages, self._capacity))
        words, rows, size = buffer.view(self._word), out.view(self._word), self._word.itemsize
        if self._bucket is not None:
            self._bucket.begin()
        for window in windows(plan, self._capacity):
            if window.carry_pages:
                src = window.carry_from * PAGE
                buffer[: window.carry_pages * PAGE] = buffer[src : src + window.carry_pages * PAGE]
            self._read_requests(plan, window)
            positions = (plan.row_pos[window.r0 : window.r1] - window.base * PAGE) // size
            gather_rows(words, positions, rows[window.r0 : window.r1])
            self.stats.rows += window.r1 - window.r0

    def _read_requests(self, plan: ReadPlan, window: Window) -> None:
        k0, k1 = window.k0, window.k1
        offsets = plan.req_offset[k0:k1].tolist()
        positions = ((plan.req_pos[k0:k1] - window.base) * PAGE).tolist()
        sizes = (plan.req_pages[k0:k1] * PAGE).tolist()
        if self._evict and self.support.fadvise.available:
            os.posix_fadvise(self._fd, offsets[0], offsets[-1] + sizes[-1] - offsets[0], os.POSIX_FADV_DONTNEED)
        bucket = self._bucket
        deadlines = [bucket.charge(size) for size in sizes] if bucket is not None else [0.0] * len(sizes)
        requests = list(zip(offsets, positions, sizes, deadlines, strict=True))
        lanes = min(self.queue_depth, len(requests))
        pool = self._reader.pool if self._reader is not None else self._pool
        assert pool is not None  # open: one of the two exists
        done = list(pool.map(self._issue, [requests[lane::lanes] for lane in range(lanes)]))
        stats = self.stats
        stats.requests += k1 - k0
        stats.pages += sum(sizes) // PAGE
        stats.bytes_read += sum(sizes)
        stats.io_seconds += sum(io for io, _ in done)
        stats.throttled_seconds += max(slept for _, slept in done)  # lanes sleep at once: the read's wall time

    def _issue(self, requests: list[tuple[int, int, int, float]]) -> tuple[float, float]:
        """One lane of a read: its requests in order, each delivered no earlier than its
        deadline; returns (seconds in reads, seconds asleep for the pacing)."""
        fd, view, bucket, file_size = self._fd, self._view, self._bucket, self._file_size
        assert view is not None  # the buffer exists while a read runs
        io = slept = 0.0
        for offset, position, size, deadline in requests:
            t0 = time.perf_counter()
            got = os.preadv(fd, [view[position : position + size]], offset)
            io += time.perf_counter() - t0
            if got != min(size, file_size - offset):
                raise DatasetError(
                    f"{self.dataset.features_path}: read {got} of {size} bytes at offset {offset}; "
                    "the file changed or is shorter than its meta says"
                )
            if bucket is not None:
                slept += bucket.wait_until(deadline)
        return io, slept

    def _checked(self, nodes: np.ndarray, out: np.ndarray) -> np.ndarray:
        if self._fd < 0:
            raise UsageError("read_rows() on a closed FeatureVolume")
        nodes = np.asarray(nodes)
        if nodes.ndim != 1 or nodes.dtype.kind not in "iu":
            raise UsageError(f"nodes must be a 1-D array of integer node ids, got {nodes.dtype}{list(nodes.shape)}")
        nodes = nodes.astype(np.int64, copy=False)
        shape = (len(nodes), self._shape[1])
        if not isinstance(out, np.ndarray) or out.shape != shape or out.dtype != self._dtype:
            got = f"{out.dtype}{list(out.shape)}" if isinstance(out, np.ndarray) else type(out).__name__
            raise UsageError(f"out must be a {self._dtype}{list(shape)} array (one row per node), got {got}")
        if not out.flags.c_contiguous or not out.flags.writeable:
            raise UsageError("out must be C-contiguous and writable: preallocate it and pass a leading slice")
        if len(nodes) > 1 and not (nodes[1:] > nodes[:-1]).all():
            raise UsageError("nodes must be sorted and unique (np.unique gives that)")
        if len(nodes) and (nodes[0] < 0 or nodes[-1] >= self._shape[0]):
            raise UsageError(f"node ids must lie in [0, {self._shape[0]}); got {nodes[0]}..{nodes[-1]}")
        return nodes

    def _ensure_buffer(self, pages: int) -> np.ndarray:
        """The page-aligned read buffer (an anonymous mmap, as O_DIRECT needs), grown by doubling."""
        if self._buffer is None or len(self._buffer) < pages * PAGE:
            have = 0 if self._buffer is None else len(self._buffer) // PAGE
            size = max(pages, min(2 * have, self._capacity)) * PAGE
            region = mmap.mmap(-1, size)
            self._view, self._buffer = memoryview(region), np.frombuffer(region, dtype=np.uint8)
        return self._buffer

    # -- blkio ----------------------------------------------------------------------------------
    def _start_blkio(self, auto: bool, note: str) -> tuple[str, str]:
        """Start the throttled reader thread, unless the kernel throttle proves not to hold
        (under ``auto``: also for short bursts); then fall back to the token bucket."""
        device, cgroup_root, limits = self.support.device, self.support.cgroup_root, self.limits
        # choose() picks blkio only with limits, and only where detection found the device and the hierarchy
        assert device is not None and cgroup_root is not None and limits is not None

        def usable(probed: ThrottleProbe) -> bool:
            return probed.exact or (probed.effective and not auto)

        measured = _PROBES.get(device)
        if measured is None or usable(measured):
            warm_up(
                self._word
            )  # here, not in the reader: numba's first call starts a thread, which would join the group
            reader = self._reader = ThrottledReader(Path(cgroup_root), device, self.queue_depth)
            if measured is None:
                self._ensure_buffer(1)
                assert self._view is not None  # _ensure_buffer mapped it
                measured = _PROBES[device] = reader.run(probe, reader.group, self._fd, self._view[:PAGE])
            if usable(measured):
                reader.limit(limits)
                caveat = (
                    ""
                    if measured.exact
                    else " (blk-throttle grants a slice of budget up front, so short bursts run faster)"
                )
                return "blkio", f"{note}; probe: {measured.describe()}{caveat}"
        if self._reader is not None:
            self._reader.close()
            self._reader = None
        why = "does not hold bursts" if measured.effective else "does not throttle"
        return (
            "token-bucket",
            f"the kernel throttle {why} ({measured.describe()}); O_DIRECT reads paced by a token bucket",
        )

    # -- lifetime -------------------------------------------------------------------------------
    @property
    def cgroup(self) -> Path | None:
        """The blkio group throttling the reader thread (blkio emulation only)."""
        return self._reader.group.path if self._reader is not None else None

    def describe(self) -> dict:
        """What a benchmark should print next to its figures."""
        return {
            "emulation": self.emulation,
            "note": self.emulation_note,
            "limits": self.limits.model_dump() if self.limits else None,
            "filesystem": self.support.filesystem,
            "mount_source": self.support.mount_source,
            "device": self.support.device,
            "path": self.support.path,
            "cgroup": str(self.cgroup) if self.cgroup else None,
        }

    def close(self) -> None:
        if self._reader is not None:
            self._reader.close()
            self._reader = None
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None
        self._closer()
        self._fd = -1
        self._buffer = self._view = None

    def __enter__(self) -> FeatureVolume:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"FeatureVolume({self.support.path!r}, emulation={self.emulation!r})"
