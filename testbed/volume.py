"""The memory hosts' cloud volume: a cgroup v1 blkio group per host, and a cold page cache.

Each memory host gets its own group with the volume's read limits on the dataset's disk, as
each memory instance has its own EBS volume; the agent puts the host's processes in it, and
what they fork inherits it. blk-throttle only sees reads that reach the device, so the
dataset's pages are evicted before every job (``evict``): a warm page cache would be RAM speed.
"""

from __future__ import annotations

import os
from pathlib import Path

from contracts.testbed import Host, Volume
from remotegnn.volume.blkio import ThrottleGroup
from testbed.errors import TestbedError


class HostGroup(ThrottleGroup):
    """A named blkio group that outlives the process that made it.

    ``ThrottleGroup.__init__`` names a group after the making process and sweeps groups whose
    maker has exited; a testbed's group is made by `up`, which exits, and must serve every
    later `run` until `down`. So this constructor names the group itself and reuses the rest.
    """

    def __init__(self, path: Path, device: str):  # no super().__init__(): see the class docstring
        self.root, self.device, self.path = path.parent, device, path


def _cgroup(host: Host) -> Path:
    """The host's blkio group (a memory host of a testbed with a volume has one)."""
    if host.cgroup is None:
        raise TestbedError(f"host {host.name} has no blkio group: its testbed throttles no volume")
    return host.cgroup


def create(host: Host, volume: Volume) -> HostGroup:
    """Make ``host``'s group with the volume's limits; a group of that name already there is not ours."""
    group = HostGroup(_cgroup(host), volume.device)
    try:
        group.path.mkdir()
    except FileExistsError:
        raise TestbedError(
            f"blkio group {group.path} already exists and is not this testbed's: remove it "
            f"(`rmdir {group.path}`) or pick another --name"
        ) from None
    try:
        group.limit(round(volume.mb_per_s * 1e6), volume.iops)
    except BaseException as exc:
        group.remove()
        if isinstance(exc, OSError):
            raise TestbedError(
                f"limiting reads from device {volume.device} in {group.path} failed: {exc.strerror}"
            ) from None
        raise
    return group


def limits(host: Host) -> tuple[int | None, int | None]:
    """The group's read limits (bytes/s, IOPS) as the kernel holds them."""
    cgroup = _cgroup(host)
    return _rule(cgroup / "blkio.throttle.read_bps_device"), _rule(cgroup / "blkio.throttle.read_iops_device")


def _rule(path: Path) -> int | None:
    try:
        fields = path.read_text().split()
    except FileNotFoundError:
        return None
    return int(fields[1]) if len(fields) >= 2 else None


def evict(dataset: Path) -> int:
    """Drop the dataset's files from the page cache; the bytes they hold. Only these files, not
    the whole cache (`echo 3 > /proc/sys/vm/drop_caches`), which would slow every other process on
    a shared machine. Dirty pages cannot be dropped, so each file is flushed first. Pages another
    process has mapped stay cached."""
    total = 0
    for path in [dataset] if dataset.is_file() else sorted(dataset.rglob("*")):
        if not path.is_file():
            continue
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fdatasync(fd)
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            total += os.fstat(fd).st_size
        finally:
            os.close(fd)
    return total
