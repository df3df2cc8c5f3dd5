"""What this machine can do to make reads of one file behave like a cloud volume.

Three kernel features matter (docs/remotegnn.md, section 6): cgroup v1 blkio throttles a
thread's reads from a block device (root only, and only for reads that reach the device);
O_DIRECT makes reads bypass the page cache, so the disk and not RAM is measured; and
posix_fadvise(DONTNEED) evicts a file's cached pages where O_DIRECT is refused. Each is
reported with the reason it is or is not usable, so a benchmark can say what it ran on.
"""

from __future__ import annotations

import mmap
import os
from pathlib import Path
from typing import Literal

from foundation.errors import UsageError
from foundation.models import StrictModel
from remotegnn.volume.limits import PAGE, VolumeLimits

Emulation = Literal["auto", "blkio", "token-bucket", "page-cache", "none"]
EMULATIONS: tuple[str, ...] = ("auto", "blkio", "token-bucket", "page-cache", "none")
RAM_FILESYSTEMS = ("tmpfs", "ramfs")


class EmulationUnavailable(UsageError):
    """An emulation was asked for by name but this machine (or this file's filesystem) lacks it."""


class Capability(StrictModel):
    """One thing the kernel offers for reads, or why it cannot."""

    available: bool
    reason: str


class EmulationSupport(StrictModel):
    """What the kernel offers for reads of ``path``; ``choose()`` turns it into an emulation."""

    path: str
    filesystem: str
    mount_source: str
    device: str | None  # MAJ:MIN of the whole disk that blkio throttles
    cgroup_root: str | None  # the cgroup v1 blkio hierarchy
    blkio: Capability
    o_direct: Capability
    fadvise: Capability

    def choose(self, requested: str, limits: VolumeLimits | None) -> tuple[str, str]:
        """The emulation to use and why. A mode asked for by name that cannot run is an error,
        so a benchmark never silently measures something else; ``auto`` takes the best."""
        if requested not in EMULATIONS:
            raise UsageError(f"unknown emulation {requested!r}; use one of {', '.join(EMULATIONS)}")
        if limits is None and requested not in ("auto", "none"):
            raise UsageError(f"emulation {requested!r} throttles to limits, but limits=None was given")
        if requested == "auto":
            if limits is None:
                return "none", "no limits given: " + self._bare_note()
            if self.blkio.available:
                return "blkio", f"kernel throttle: {self.blkio.reason}"
            if self.o_direct.available:
                return (
                    "token-bucket",
                    f"blkio unavailable ({self.blkio.reason}); O_DIRECT reads paced by a token bucket",
                )
            return "page-cache", (f"approximate: O_DIRECT unavailable ({self.o_direct.reason}); " + self._evict_note())
        if requested == "none":
            return "none", self._bare_note()
        if requested == "blkio":
            self._require(self.blkio, "blkio")
            return "blkio", f"kernel throttle: {self.blkio.reason}"
        if requested == "token-bucket":
            self._require(self.o_direct, "token-bucket (it reads with O_DIRECT)")
            return "token-bucket", "O_DIRECT reads paced by a token bucket"
        return "page-cache", "approximate: " + self._evict_note()

    def _bare_note(self) -> str:
        if self.o_direct.available:
            return "bare disk: O_DIRECT reads, no throttle"
        return f"O_DIRECT unavailable ({self.o_direct.reason}); buffered reads, no throttle, " + self._evict_note(False)

    def _evict_note(self, paced: bool = True) -> str:
        pace = "; a token bucket paces them" if paced else ""
        if self.fadvise.available:
            return "buffered reads after evicting the file's pages with posix_fadvise(DONTNEED)" + pace
        return f"buffered reads that may come from RAM ({self.fadvise.reason})" + pace

    def _require(self, capability: Capability, what: str) -> None:
        if not capability.available:
            raise EmulationUnavailable(
                f"emulation {what} is unavailable for {self.path}: {capability.reason}; "
                "use emulation='auto' to take the best this machine offers"
            )


def detect_emulation(path: str | os.PathLike[str]) -> EmulationSupport:
    """Check blkio, O_DIRECT and page eviction for the file at ``path`` (it must exist)."""
    path = Path(path)
    st = path.stat()
    fstype, source = _mount_of(st.st_dev, path.resolve())
    device, device_reason = _whole_disk(st.st_dev, fstype, source)
    o_direct = _o_direct(path, fstype)
    cgroup_root = blkio_root()
    return EmulationSupport(
        path=str(path),
        filesystem=fstype,
        mount_source=source,
        device=device,
        cgroup_root=str(cgroup_root) if cgroup_root else None,
        blkio=_blkio(cgroup_root, device, device_reason, o_direct),
        o_direct=o_direct,
        fadvise=_fadvise(path, fstype),
    )


def _mount_of(st_dev: int, path: Path) -> tuple[str, str]:
    """Filesystem type and mount source of the mount holding ``path`` (/proc/self/mountinfo
    names each mount's st_dev as MAJ:MIN, which survives bind mounts and btrfs subvolumes)."""
    majmin = f"{os.major(st_dev)}:{os.minor(st_dev)}"
    best: tuple[int, str, str] = (-1, "unknown", "unknown")
    try:
        lines = Path("/proc/self/mountinfo").read_text().splitlines()
    except OSError:
        return best[1], best[2]
    for line in lines:
        left, _, right = line.partition(" - ")
        fields, tail = left.split(), right.split()
        if len(fields) < 5 or len(tail) < 2 or fields[2] != majmin:
            continue
        mount_point = fields[4].replace("\\040", " ")
        if path.is_relative_to(mount_point) and len(mount_point) > best[0]:
            best = (len(mount_point), tail[0], tail[1])
    return best[1], best[2]


def _whole_disk(st_dev: int, fstype: str, source: str) -> tuple[str | None, str]:
    """MAJ:MIN of the disk under the file, or None and why. blk-throttle takes whole disks
    only, so a partition is mapped to its parent."""
    if fstype in RAM_FILESYSTEMS:
        return None, f"the file is on {fstype}, in RAM, with no block device"
    major, minor = os.major(st_dev), os.minor(st_dev)
    if major == 0:  # an anonymous device: overlayfs, btrfs, network filesystems
        try:
            rdev = os.stat(source).st_rdev if source.startswith("/dev/") else 0
        except OSError:
            rdev = 0
        if not rdev:
            return None, f"{fstype} (source {source!r}) has no single block device to throttle"
        major, minor = os.major(rdev), os.minor(rdev)
    sys_dir = Path(f"/sys/dev/block/{major}:{minor}")
    if not sys_dir.exists():
        return None, f"device {major}:{minor} of the {fstype} filesystem is not a block device"
    if (sys_dir / "partition").exists():
        return (sys_dir.resolve().parent / "dev").read_text().strip(), ""
    return f"{major}:{minor}", ""


def _o_direct(path: Path, fstype: str) -> Capability:
    if fstype in RAM_FILESYSTEMS:
        return Capability(available=False, reason=f"the file is on {fstype}: it lives in RAM, there is no disk to read")
    if not hasattr(os, "O_DIRECT"):
        return Capability(available=False, reason="this platform has no O_DIRECT")
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECT)
    except OSError as exc:
        return Capability(available=False, reason=f"{fstype} refuses O_DIRECT ({exc.strerror})")
    try:
        with mmap.mmap(-1, PAGE) as page:
            os.preadv(fd, [page], 0)
    except OSError as exc:
        return Capability(available=False, reason=f"an O_DIRECT read on {fstype} failed ({exc.strerror})")
    finally:
        os.close(fd)
    return Capability(available=True, reason=f"{fstype} serves page-aligned O_DIRECT reads")


def _fadvise(path: Path, fstype: str) -> Capability:
    if fstype in RAM_FILESYSTEMS:
        return Capability(available=False, reason=f"pages of a {fstype} file cannot be evicted (it lives in RAM)")
    if not hasattr(os, "posix_fadvise"):
        return Capability(available=False, reason="this platform has no posix_fadvise")
    fd = os.open(path, os.O_RDONLY)
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    except OSError as exc:
        return Capability(available=False, reason=f"posix_fadvise(DONTNEED) failed ({exc.strerror})")
    finally:
        os.close(fd)
    return Capability(available=True, reason="posix_fadvise(DONTNEED) evicts the file's clean pages")


def blkio_root() -> Path | None:
    """Mount point of the cgroup v1 hierarchy with the blkio controller, if any."""
    try:
        mounts = Path("/proc/mounts").read_text().splitlines()
    except OSError:
        return None
    for line in mounts:
        fields = line.split()
        if len(fields) >= 4 and fields[2] == "cgroup" and "blkio" in fields[3].split(","):
            return Path(fields[1])
    return None


def _blkio(root: Path | None, device: str | None, device_reason: str, o_direct: Capability) -> Capability:
    def missing(reason: str) -> Capability:
        return Capability(available=False, reason=reason)

    if os.geteuid() != 0:
        return missing("needs root (cgroup directories and throttle files belong to root)")
    if root is None:
        return missing("no cgroup v1 blkio hierarchy is mounted (cgroup v2's io.max is not used)")
    if not (root / "blkio.throttle.read_bps_device").exists():
        return missing(f"{root} has no blkio.throttle files (kernel without blk-throttle)")
    if not os.access(root, os.W_OK):
        return missing(f"{root} is read-only here")
    if device is None:
        return missing(device_reason)
    if not o_direct.available:
        return missing(
            f"reads served from the page cache are not throttled and O_DIRECT is unavailable ({o_direct.reason})"
        )
    return Capability(available=True, reason=f"cgroup v1 blkio at {root}, device {device}")
