"""The memory hosts' cloud volume: a cgroup v1 blkio group per host, and a cold page cache.

Each memory host gets its own group with the volume's read limits, as each memory instance has
its own EBS volume; the agent puts the host's processes in it, and what they fork inherits it.
blk-throttle only sees reads that reach the device, so the dataset's pages are evicted before
every job (``evict``): a warm page cache would be RAM speed.

Where the dataset lies in a filesystem image mounted read-only (``image_of``), each memory host
also gets a read-only loop device of that image of its own (``attach``), which the agent mounts
at the image's mount point in each of the host's calls, and the limits go on that device. A
host then has its own page cache, as a machine has: on one shared page cache a page one host
read is found cached by the next, so hosts whose rows interleave in the file (``modulo``) read
far less than separate machines would. The loop devices read the image with direct I/O, so no
page cache under them is shared either, and with the read-ahead of a new EBS volume; the page
cache of a call's mount ends with its last process, so every job starts cold on every host.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from contracts.shards import READAHEAD_BYTES
from contracts.testbed import Host, Volume
from foundation.errors import UsageError
from remotegnn.volume.blkio import ThrottleGroup, read_counter
from testbed.errors import TestbedError, Unsupported
from testbed.system import run


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


def device(host: Host, volume: Volume) -> str:
    """MAJ:MIN of the device ``host``'s reads of the dataset reach: its own loop device, or the disk."""
    if host.loop is None:
        return volume.device
    rdev = os.stat(host.loop).st_rdev
    return f"{os.major(rdev)}:{os.minor(rdev)}"


def read_bytes(host: Host, volume: Volume) -> int:
    """Bytes ``host``'s group has read from its volume (the group's counter for that device
    alone: a loop device's own reads of the image are charged to the group on the disk too)."""
    return read_counter(_cgroup(host), device(host, volume), "io_service_bytes")


def image_of(majmin: str, dataset: Path) -> tuple[Path, Path] | None:
    """The image and mount point of the filesystem on loop device ``majmin`` holding
    ``dataset``; None where the device is no loop device. The mount must be read-only: the hosts
    mount the image again, and a filesystem mounted read-write may change under them."""
    try:
        image = Path(Path(f"/sys/dev/block/{majmin}/loop/backing_file").read_text().strip())
    except FileNotFoundError:
        return None
    argv = ["findmnt", "--json", "-o", "TARGET,OPTIONS", "--target", str(dataset)]
    found = json.loads(run(argv, "finding the dataset's mount"))
    mount = found["filesystems"][0]
    if "ro" not in mount["options"].split(","):
        raise UsageError(
            f"--dataset: {dataset} lies in the image {image}, mounted read-write at "
            f"{mount['target']}; remount it read-only (`mount -o remount,ro {mount['target']}`) so each memory host "
            "can mount its own read-only view"
        )
    return image, Path(mount["target"])


def attach(image: Path) -> Path:
    """A new read-only loop device of ``image`` reading it with direct I/O, with an EBS volume's read-ahead."""
    loop = Path(run(["losetup", "--find", "--show", "--read-only", "--direct-io=on", str(image)], "attaching").strip())
    try:
        queue = Path("/sys/block") / loop.name
        if (queue / "loop" / "dio").read_text().strip() != "1":
            raise Unsupported(
                f"{loop} cannot read {image} with direct I/O (the image's filesystem or its alignment refuses it), so "
                "the hosts would share the image's page cache"
            )
        (queue / "queue" / "read_ahead_kb").write_text(str(READAHEAD_BYTES >> 10))
    except BaseException:
        detach(loop)
        raise
    return loop


def backing_file(loop: Path) -> Path | None:
    """The file a loop device reads, or None where it is not attached."""
    try:
        return Path((Path("/sys/block") / loop.name / "loop" / "backing_file").read_text().strip())
    except FileNotFoundError:
        return None


def detach(loop: Path) -> None:
    """Detach a loop device (at its last close if a mount still holds it); one already gone is fine."""
    if backing_file(loop) is not None:
        run(["losetup", "--detach", str(loop)], f"detaching {loop}")


def create(host: Host, volume: Volume) -> HostGroup:
    """Make ``host``'s group with the volume's limits; a group of that name already there is not ours."""
    group = HostGroup(_cgroup(host), device(host, volume))
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
                f"limiting reads from device {group.device} in {group.path} failed: {exc.strerror}"
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
