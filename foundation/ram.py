"""How much RAM this process could still take: the machine's, or its memory cgroup's if less.

A process in a container (Docker, Kubernetes, the testbed's learner host) is killed at its
cgroup's limit long before the machine runs out, so sizing a cache from ``MemAvailable`` alone
would overcommit it. Both cgroup layouts are read: v1 (``memory.limit_in_bytes``) and v2
(``memory.max``), and every ancestor's limit counts, since the tightest one binds.
"""

from __future__ import annotations

import os
from pathlib import Path

PROC = Path("/proc")
CGROUP_ROOT = Path("/sys/fs/cgroup")
V1_FILES = ("memory.limit_in_bytes", "memory.usage_in_bytes", "total_inactive_file")
V2_FILES = ("memory.max", "memory.current", "inactive_file")
UNLIMITED = 1 << 60
"""Any limit above this is "no limit" (v1 writes its maximum as a page-rounded 2^63 - 1)."""


def machine_available_bytes(proc: Path = PROC) -> int:
    """RAM the kernel could give a process now (MemAvailable: free plus reclaimable cache)."""
    try:
        with open(proc / "meminfo") as meminfo:
            for line in meminfo:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")


def _read_int(path: Path) -> int | None:
    try:
        text = path.read_text().strip()
    except OSError:
        return None
    if text == "max":
        return UNLIMITED
    try:
        return int(text)
    except ValueError:
        return None


def _stat(path: Path, key: str) -> int:
    try:
        for line in path.read_text().splitlines():
            name, _, value = line.partition(" ")
            if name == key:
                return int(value)
    except (OSError, ValueError):
        pass
    return 0


def _headroom(group: Path, limit_file: str, usage_file: str, inactive_key: str) -> int | None:
    """What the group at ``group`` could still charge: limit less usage, plus the inactive page
    cache the kernel reclaims before it kills anyone; None where the group sets no limit."""
    limit = _read_int(group / limit_file)
    if limit is None or limit >= UNLIMITED:
        return None
    usage = _read_int(group / usage_file) or 0
    return max(0, limit - usage + _stat(group / "memory.stat", inactive_key))


def own_groups(proc: Path = PROC, cgroup_root: Path = CGROUP_ROOT) -> list[tuple[Path, tuple[str, str, str]]]:
    """This process's memory group in each mounted layout (v1 first where both are), with the
    files that layout names: (group directory, (limit, usage, inactive-cache key))."""
    try:
        lines = (proc / "self" / "cgroup").read_text().splitlines()
    except OSError:
        return []
    found = []
    for line in lines:
        if line.count(":") < 2:
            continue  # not a hierarchy line
        _, controllers, path = line.split(":", 2)
        if "memory" in controllers.split(","):
            found.append((cgroup_root / "memory" / path.lstrip("/"), V1_FILES))
        elif controllers == "" and (cgroup_root / "cgroup.controllers").exists():
            found.append((cgroup_root / path.lstrip("/"), V2_FILES))
    return sorted(found, key=lambda entry: entry[1] is not V1_FILES)


def _groups(proc: Path, cgroup_root: Path) -> list[tuple[Path, tuple[str, str, str]]]:
    """This process's memory groups and all their ancestors up to each layout's mount."""
    groups = []
    for group, files in own_groups(proc, cgroup_root):
        mount = cgroup_root / "memory" if files is V1_FILES else cgroup_root
        while True:
            groups.append((group, files))
            if group == mount or mount not in group.parents:
                break
            group = group.parent
    return groups


def available_ram_bytes(proc: Path = PROC, cgroup_root: Path = CGROUP_ROOT) -> int:
    """RAM this process could take now: the machine's available RAM, or less where a memory
    cgroup it runs in (or any ancestor of that group) is closer to its limit."""
    available = machine_available_bytes(proc)
    for group, files in _groups(proc, cgroup_root):
        headroom = _headroom(group, *files)
        if headroom is not None:
            available = min(available, headroom)
    return available
