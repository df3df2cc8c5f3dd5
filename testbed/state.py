"""Where a testbed's state lives, and how a testbed is planned before anything is created.

What a testbed is asked to be (``TestbedSpec``) and what it is made of (``TestbedState``) are
defined in :mod:`contracts.testbed`: the runs file embeds them and the planner's calibration reads them.
The state file records every kernel object a testbed owns, so `down` removes exactly those and
`run` finds the hosts. Every name derives from the testbed's name (``mbtb-3fa2c1`` gives the
namespaces ``mbtb-3fa2c1-sw``, ``-l0``, ``-m0``, the blkio group ``mbtb-3fa2c1-m0`` and the
learner's memory group ``mbtb-3fa2c1-l0``): names
never collide with another run's, and teardown can find what a killed `up` made before its
state said so. Links live only inside the testbed's namespaces, never in the root namespace, so
deleting a namespace deletes its links and two testbeds may use the same subnet.
"""

from __future__ import annotations

import secrets
from pathlib import Path

from contracts.testbed import PREFIX, Host, TestbedSpec, TestbedState, Volume
from foundation.errors import UsageError
from foundation.fileio import read_model, write_model
from testbed.errors import TestbedError

STATE_DIR = Path("/run/memorybridge/testbeds")  # /run: kernel objects, like this record of them, end at reboot
STATE_DIR_ENV = "MEMORYBRIDGE_TESTBED_DIR"
LEARNER_HOST_ID = 2  # learner host i's address in the subnet is LEARNER_HOST_ID + i; memory host i's MEMORY_HOST_ID + i
MEMORY_HOST_ID = 10


def new_name(prefix: str = PREFIX) -> str:
    """PREFIX-ID with a random 6-hex-digit ID, so concurrent runs never pick the same names."""
    return f"{prefix}-{secrets.token_hex(3)}"


def plan(
    spec: TestbedSpec, cgroup_root: Path | None, volume: Volume | None, memory_root: Path | None = None
) -> TestbedState:
    """Every name and address of the testbed, decided before anything is created (``memory_root``:
    where the learners' memory groups go, when ``spec.learner_ram_gib`` caps their RAM)."""
    net = spec.subnet.network_address
    learners = [
        Host(
            name=f"l{i}",
            role="learner",
            namespace=f"{spec.name}-l{i}",
            address=net + LEARNER_HOST_ID + i,
            gbit=spec.learner_gbit or spec.link_gbit,
            port=f"p-l{i}",
            memory_cgroup=memory_root / f"{spec.name}-l{i}" if spec.learner_ram_gib and memory_root else None,
        )
        for i in range(spec.learner_hosts)
    ]
    memory = [
        Host(
            name=f"m{i}",
            role="memory",
            namespace=f"{spec.name}-m{i}",
            address=net + MEMORY_HOST_ID + i,
            gbit=spec.link_gbit,
            port=f"p-m{i}",
            cgroup=cgroup_root / f"{spec.name}-m{i}" if volume and cgroup_root else None,
        )
        for i in range(spec.memory_hosts)
    ]
    return TestbedState(name=spec.name, spec=spec, switch=f"{spec.name}-sw", hosts=[*learners, *memory], volume=volume)


def directory(state_dir: Path, name: str) -> Path:
    return state_dir / name


def save(state: TestbedState, state_dir: Path) -> Path:
    return write_model(directory(state_dir, state.name) / "state.json", state)


def load(state_dir: Path, name: str) -> TestbedState:
    path = directory(state_dir, name) / "state.json"
    if not path.exists():
        raise TestbedError(f"no testbed {name!r} in {state_dir} (list them with `testbed status`)")
    return read_model(path, TestbedState, "testbed state")


def names(state_dir: Path, prefix: str = "") -> list[str]:
    """Testbeds with a state file, by name."""
    if not state_dir.is_dir():
        return []
    return sorted(p.parent.name for p in state_dir.glob("*/state.json") if p.parent.name.startswith(prefix))


def find(state_dir: Path, name: str | None) -> TestbedState:
    """The testbed called ``name``, or the only one there is."""
    if name is not None:
        return load(state_dir, name)
    found = names(state_dir)
    if not found:
        raise TestbedError(f"no testbed in {state_dir}; make one with `testbed up`")
    if len(found) > 1:
        raise UsageError(f"--name: {len(found)} testbeds exist ({', '.join(found)}); name the one to use")
    return load(state_dir, found[0])
