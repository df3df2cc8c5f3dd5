"""The learner host's RAM: a cgroup v1 memory group capping what its processes hold.

The testbed's hosts share one machine's RAM, so without a cap a learner cache on ``auto``
sizes itself to the whole machine and crowds out the memory hosts. The group's limit counts
anonymous memory and page cache, as a machine's RAM does; the agent puts the learner host's
processes in it, and what they fork inherits it.
"""

from __future__ import annotations

from pathlib import Path

from foundation.ram import CGROUP_ROOT, V1_FILES, own_groups
from foundation.units import GIB
from testbed.errors import TestbedError, Unsupported
from testbed.volume import HostGroup

MEMORY_ROOT = CGROUP_ROOT / "memory"


def memory_root() -> Path:
    """Where the learner's group is made: in this process's own memory group, so the testbed's
    hosts stay inside whatever limit and accounting the caller runs under (a container's, a
    CI job's). Unsupported where this machine has no cgroup v1 memory hierarchy."""
    for group, files in own_groups():
        if files is V1_FILES and (group / "memory.limit_in_bytes").exists():
            return group
    raise Unsupported(
        f"--learner-ram-gib needs a cgroup v1 memory hierarchy at {MEMORY_ROOT}; leave it out to share the "
        "machine's RAM"
    )


def create(group: Path, gib: float) -> None:
    """Make ``group`` with a limit of ``gib`` GiB; a group of that name already there is not ours."""
    try:
        group.mkdir()
    except FileExistsError:
        raise TestbedError(
            f"memory group {group} already exists and is not this testbed's: remove it (`rmdir {group}`) "
            "or pick another --name"
        ) from None
    try:
        (group / "memory.limit_in_bytes").write_text(str(round(gib * GIB)))
    except BaseException as exc:
        remove(group)
        if isinstance(exc, OSError):
            raise TestbedError(f"limiting {group} to {gib:g} GiB failed: {exc.strerror}") from None
        raise


def limit(group: Path) -> int | None:
    """The group's limit in bytes as the kernel holds it (None: no such group)."""
    try:
        return int((group / "memory.limit_in_bytes").read_text())
    except FileNotFoundError:
        return None


def remove(group: Path) -> None:
    """Remove an empty group (its charged page cache moves to the parent); gone already is fine.
    The same rmdir as a blkio group's, which waits for an exiting thread to leave."""
    HostGroup(group, "").remove()


def groups(prefix: str) -> list[Path]:
    """Memory groups whose names start with ``prefix`` (what a killed `up` may have left)."""
    try:
        return sorted(memory_root().glob(f"{prefix}*"))
    except Unsupported:
        return []
