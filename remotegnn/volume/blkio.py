"""The kernel emulation: a cgroup v1 blkio group that throttles the volume's reader threads.

cgroup v1 ``tasks`` takes thread ids, so only the volume's reader threads are moved into the
group and nothing else in the process is slowed down. The group is removed on close, on
garbage collection and at interpreter exit (weakref.finalize); groups left by a process that
was killed are swept when the next one is made.

blk-throttle is exact over long runs (125-128 MB/s measured at a 125 MB/s limit,
docs/testbed.md) but it grants a whole slice of budget up front (``throtl_slice``: 100 ms on
a rotational-flagged disk such as virtio's vda, 20 ms on an SSD): a short burst after an idle
moment runs at the bare disk's speed. ``probe`` measures both, and the volume uses the kernel
throttle under ``auto`` only when bursts are held too.
"""

from __future__ import annotations

import errno
import os
import secrets
import threading
import time
import weakref
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TypeVar

from foundation.models import StrictModel
from remotegnn.volume.limits import VolumeLimits

PREFIX = "memorybridge-volume-"
PROBE_IOPS = 1000
PROBE_SECONDS = 0.25
PROBE_SUSTAINED_S = 0.1  # the probe's tail, well past a 100 ms slice
PROBE_BURST_IOS = 20
HELD = 1.25  # a measured rate at most this times the limit counts as held
T = TypeVar("T")


class ThrottleProbe(StrictModel):
    """Measured read rate over the limit, for a short burst and for a sustained stream."""

    limit_iops: int
    burst_ratio: float
    sustained_ratio: float

    @property
    def effective(self) -> bool:
        return self.sustained_ratio <= HELD

    @property
    def exact(self) -> bool:
        return self.effective and self.burst_ratio <= HELD

    def describe(self) -> str:
        return (
            f"at a {self.limit_iops} IOPS probe limit a {PROBE_BURST_IOS}-I/O burst ran at "
            f"{self.burst_ratio:.1f}x and a sustained stream at {self.sustained_ratio:.2f}x the limit"
        )


class ThrottleGroup:
    """One blkio cgroup limiting reads from one device (MAJ:MIN)."""

    def __init__(self, root: Path, device: str):
        sweep_stale(root)
        self.root, self.device = root, device
        self.path = root / f"{PREFIX}{os.getpid()}-{secrets.token_hex(4)}"
        self.path.mkdir()

    def limit(self, bytes_per_s: int | None, iops: int | None) -> None:
        """Set the read limits; None lifts one (the kernel removes a rule set to 0)."""
        self._write("blkio.throttle.read_bps_device", f"{self.device} {bytes_per_s or 0}")
        self._write("blkio.throttle.read_iops_device", f"{self.device} {iops or 0}")

    def join(self) -> None:
        """Move the calling thread into the group."""
        self._write("tasks", str(threading.get_native_id()))

    def evacuate(self) -> None:
        """Move this process's threads in the group back to the hierarchy's root, so the group
        can be removed: the reader, and any native thread started from it (numba's first call
        in a thread starts one), which inherits the group."""
        for tid in (self.path / "tasks").read_text().split():
            if os.path.exists(f"/proc/self/task/{tid}"):
                try:
                    (self.root / "tasks").write_text(tid)
                except ProcessLookupError:
                    pass  # it exited meanwhile

    def reads_serviced(self) -> int:
        """Read I/Os the kernel has passed through the group (blkio.throttle.io_serviced)."""
        return read_counter(self.path, self.device, "io_serviced")

    def remove(self) -> None:
        """rmdir the group, waiting briefly for an exiting thread to leave it."""
        for _ in range(100):
            try:
                self.path.rmdir()
                return
            except FileNotFoundError:
                return
            except OSError as exc:
                if exc.errno != errno.EBUSY:
                    raise
                time.sleep(0.01)
        self.path.rmdir()

    def _write(self, name: str, value: str) -> None:
        (self.path / name).write_text(value)


def read_counter(group: Path, device: str, counter: str) -> int:
    """A blkio group's read count for one device (MAJ:MIN): ``io_serviced`` (I/Os) or
    ``io_service_bytes`` (bytes) of its ``blkio.throttle.`` files."""
    for line in (group / f"blkio.throttle.{counter}").read_text().splitlines():
        fields = line.split()
        if len(fields) == 3 and fields[0] == device and fields[1] == "Read":
            return int(fields[2])
    return 0


def sweep_stale(root: Path) -> None:
    """Remove empty groups left by processes of ours that no longer run (killed, say)."""
    for path in root.glob(f"{PREFIX}*"):
        pid = path.name[len(PREFIX) :].split("-")[0]
        if pid.isdigit() and not _alive(int(pid)):
            try:
                if not (path / "tasks").read_text().strip():
                    path.rmdir()
            except OSError:
                pass  # another process swept it, or it is still busy: leave it


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class ThrottledReader:
    """Reader threads (``threads``, each started on demand) inside a fresh blkio group:
    ``run(fn, ...)`` calls fn in one of them, ``pool`` takes several calls at once."""

    def __init__(self, root: Path, device: str, threads: int = 1):
        self.group = ThrottleGroup(root, device)
        self._executor = ThreadPoolExecutor(
            max_workers=threads, thread_name_prefix="volume-blkio", initializer=self.group.join
        )
        self._finalizer = weakref.finalize(self, _shut_down, self._executor, self.group)
        try:
            self.run(lambda: None)  # starts the thread; raises if it could not join the group
        except BaseException:
            self.close()
            raise

    def run(self, fn: Callable[..., T], *args) -> T:
        return self._executor.submit(fn, *args).result()

    @property
    def pool(self) -> ThreadPoolExecutor:
        return self._executor

    def limit(self, limits: VolumeLimits) -> None:
        self.group.limit(max(1, round(limits.bytes_per_s)), max(1, round(limits.iops)))

    def close(self) -> None:
        self._finalizer()


def _shut_down(executor: ThreadPoolExecutor, group: ThrottleGroup) -> None:
    executor.shutdown(wait=True)
    group.evacuate()  # an exited reader may linger in the group for a moment; remove() waits for it
    group.remove()


def probe(group: ThrottleGroup, fd: int, page: memoryview) -> ThrottleProbe:
    """Run in the group's thread: re-read one page with O_DIRECT under a probe limit for
    PROBE_SECONDS and compare the rates of the first few I/Os and of the tail with the limit.
    Rereading one page keeps the disk itself fast, so only the throttle can slow it down."""
    group.limit(None, PROBE_IOPS)
    try:
        done: list[float] = []
        start = time.perf_counter()
        while time.perf_counter() - start < PROBE_SECONDS:
            os.preadv(fd, [page], 0)
            done.append(time.perf_counter() - start)
    finally:
        group.limit(None, None)
    burst_rate = PROBE_BURST_IOS / max(done[PROBE_BURST_IOS - 1], 1e-9) if len(done) >= PROBE_BURST_IOS else 0.0
    tail = sum(1 for t in done if t >= PROBE_SECONDS - PROBE_SUSTAINED_S)
    return ThrottleProbe(
        limit_iops=PROBE_IOPS,
        burst_ratio=round(burst_rate / PROBE_IOPS, 3),
        sustained_ratio=round(tail / PROBE_SUSTAINED_S / PROBE_IOPS, 3),
    )
