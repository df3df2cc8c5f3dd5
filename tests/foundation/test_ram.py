"""Available RAM honours a memory cgroup's limit: on files laid out as both cgroup versions
write them, and in a real v1 memory group where the machine has one."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from foundation.ram import available_ram_bytes, machine_available_bytes

GIB = 1 << 30
MEMINFO = "MemTotal:       67108864 kB\nMemAvailable:   33554432 kB\n"  # 32 GiB available


def _proc(tmp_path: Path, cgroup_lines: str) -> Path:
    proc = tmp_path / "proc"
    (proc / "self").mkdir(parents=True)
    (proc / "meminfo").write_text(MEMINFO)
    (proc / "self" / "cgroup").write_text(cgroup_lines)
    return proc


def _group(path: Path, files: dict[str, str]) -> None:
    path.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (path / name).write_text(text)


def test_without_a_limit_the_machine_decides(tmp_path):
    proc = _proc(tmp_path, "4:memory:/box\n0::/\n")
    root = tmp_path / "cgroup"
    _group(root / "memory" / "box", {"memory.limit_in_bytes": "9223372036854771712\n", "memory.usage_in_bytes": "1\n"})
    assert machine_available_bytes(proc) == 32 * GIB
    assert available_ram_bytes(proc, root) == 32 * GIB


def test_a_v1_limit_less_usage_plus_inactive_cache_binds(tmp_path):
    proc = _proc(tmp_path, "4:memory:/box/inner\n")
    root = tmp_path / "cgroup"
    _group(
        root / "memory" / "box",
        {
            "memory.limit_in_bytes": f"{12 * GIB}\n",
            "memory.usage_in_bytes": f"{5 * GIB}\n",
            "memory.stat": f"cache 0\ntotal_inactive_file {GIB}\n",
        },
    )
    _group(root / "memory" / "box" / "inner", {"memory.limit_in_bytes": "9223372036854771712\n"})
    assert available_ram_bytes(proc, root) == 8 * GIB  # the parent's limit binds the child


def test_a_v2_limit_binds_and_max_means_none(tmp_path):
    proc = _proc(tmp_path, "0::/pod/c1\n")
    root = tmp_path / "cgroup"
    (root).mkdir()
    (root / "cgroup.controllers").write_text("cpu memory\n")
    _group(root / "pod", {"memory.max": "max\n"})
    _group(
        root / "pod" / "c1",
        {"memory.max": f"{4 * GIB}\n", "memory.current": f"{3 * GIB}\n", "memory.stat": "inactive_file 0\n"},
    )
    assert available_ram_bytes(proc, root) == GIB


def test_unreadable_cgroup_files_fall_back_to_the_machine(tmp_path):
    proc = _proc(tmp_path, "4:memory:/gone\n")
    assert available_ram_bytes(proc, tmp_path / "nowhere") == 32 * GIB


MEMORY_ROOT = Path("/sys/fs/cgroup/memory")


@pytest.mark.root
def test_a_process_in_a_real_memory_group_sees_its_limit(tmp_path):
    if os.geteuid() != 0 or not (MEMORY_ROOT / "memory.limit_in_bytes").exists():
        pytest.skip("needs root and a cgroup v1 memory hierarchy")
    group = MEMORY_ROOT / f"mbtest-ram-{os.getpid()}"
    group.mkdir()
    try:
        (group / "memory.limit_in_bytes").write_text(str(2 * GIB))
        child = (
            "import os, json, sys; open(sys.argv[1] + '/cgroup.procs', 'w').write(str(os.getpid()));"
            "from foundation.ram import available_ram_bytes, machine_available_bytes;"
            "print(json.dumps([available_ram_bytes(), machine_available_bytes()]))"
        )
        out = subprocess.run([sys.executable, "-c", child, str(group)], capture_output=True, text=True, check=True)
        inside, machine = json.loads(out.stdout)
        assert inside <= 2 * GIB < machine or machine < 2 * GIB
        assert inside > GIB  # a fresh interpreter charges tens of MB, not a GiB
    finally:
        group.rmdir()
