"""The kernel holding a process to a cloud volume and a memory machine's RAM: a loop device with a
volume's read-ahead over a copy of a file, cgroup v1 groups (blkio limits, a memory limit), and
the clean-up of what a run killed inside them leaves behind.

``pyg_mmap.py`` runs inside them; ``disk_based.py``, which starts it, cleans up after it.
Imported as ``kernel_limits`` (the scripts run as ``python benchmarks/NAME.py``).
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

CGROUPS = Path("/sys/fs/cgroup")
GROUP_PREFIX = "memorybridge-pyg-"
PAGE = 4096


def padded_copy(path: Path) -> Path:
    """Where the copy of ``path`` padded to whole pages lives (a loop device maps whole pages)."""
    return path.with_name(path.name + ".padded")


@contextlib.contextmanager
def loop_device(path: Path, read_ahead_kb: int) -> Iterator[tuple[Path, str]]:
    """A read-only loop device over ``path`` padded to whole pages (a copy beside it, made
    once), with ``read_ahead_kb``; yields (device path, MAJ:MIN) and detaches it after."""
    padded = padded_copy(path)
    size = path.stat().st_size
    whole = -(-size // PAGE) * PAGE
    if not padded.exists() or padded.stat().st_size != whole or padded.stat().st_mtime < path.stat().st_mtime:
        partial = padded.with_name(padded.name + ".partial")
        shutil.copyfile(path, partial)
        os.truncate(partial, whole)
        os.replace(partial, padded)
    device = subprocess.run(
        ["losetup", "--find", "--show", "--read-only", "--direct-io=on", str(padded)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    try:
        queue = Path("/sys/block") / Path(device).name
        (queue / "queue" / "read_ahead_kb").write_text(str(read_ahead_kb))
        yield Path(device), (queue / "dev").read_text().strip()
    finally:
        subprocess.run(["losetup", "--detach", device], check=False)


class Group:
    """A fresh cgroup v1 group of ``controller`` holding this whole process until ``leave``."""

    def __init__(self, controller: str, settings: dict[str, str]):
        self.root = CGROUPS / controller
        self.path = self.root / f"{GROUP_PREFIX}{os.getpid()}-{secrets.token_hex(3)}"
        self.path.mkdir()
        for name, value in settings.items():
            (self.path / name).write_text(value)
        (self.path / "cgroup.procs").write_text(str(os.getpid()))  # every thread, and those it starts

    def read(self, name: str) -> str:
        return (self.path / name).read_text()

    def leave(self) -> None:
        for tid in (self.path / "tasks").read_text().split():
            try:
                (self.root / "tasks").write_text(tid)
            except ProcessLookupError:
                pass  # exited meanwhile
        for _ in range(100):
            try:
                self.path.rmdir()
                return
            except OSError:
                time.sleep(0.01)


def device_reads(group: Group, device: str) -> tuple[int, int]:
    """(read requests, read bytes) the blkio group has passed to ``device``."""

    def count(name: str) -> int:
        for line in group.read(name).splitlines():
            fields = line.split()
            if len(fields) == 3 and fields[0] == device and fields[1] == "Read":
                return int(fields[2])
        return 0

    return count("blkio.throttle.io_serviced"), count("blkio.throttle.io_service_bytes")


def clean_up_after(pid: int, features: Path) -> None:
    """What a run killed midway (the memory group's OOM killer, say) left: its groups and loop
    device. Called by the parent once the run's process ``pid`` has exited."""
    for controller in ("blkio", "memory"):
        for group in (CGROUPS / controller).glob(f"{GROUP_PREFIX}{pid}-*"):
            with contextlib.suppress(OSError):
                group.rmdir()
    found = subprocess.run(
        ["losetup", "--associated", str(padded_copy(features))], capture_output=True, text=True, check=False
    )
    for line in found.stdout.splitlines():
        subprocess.run(["losetup", "--detach", line.split(":")[0]], check=False)
