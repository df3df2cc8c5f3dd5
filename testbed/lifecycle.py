"""`up`, `down` and `status`: making a testbed, removing it completely, and checking it.

`up` records its plan before it creates anything and undoes what it made if any step fails
(or is interrupted), so a failed `up` leaves nothing, or says which `down` removes the rest.
`down` stops every process on the hosts, then deletes the namespaces (their links go with them),
the blkio and memory groups and the state; it also finds objects named after the testbed that no state file
mentions (an `up` killed outright), is idempotent, and checks afterwards that nothing is left.
"""

from __future__ import annotations

import functools
import shutil
from collections.abc import Callable, Sequence
from pathlib import Path

from pydantic import BaseModel

from contracts.testbed import TestbedSpec, TestbedState, Volume
from foundation.errors import InputFileError, UsageError
from foundation.units import GIB
from remotegnn.volume.detect import blkio_root, detect_emulation
from testbed import memory as mem
from testbed import mpi, netns, system
from testbed import state as st
from testbed import volume as vol
from testbed.errors import TestbedError, Unsupported
from testbed.processes import Scope, stop


def up(spec: TestbedSpec, state_dir: Path) -> TestbedState:
    """Create the testbed ``spec`` describes; on any failure remove what was made and re-raise."""
    system.require(root=system.root(), network=system.network())
    volume, cgroup_root = _volume(spec)
    bed = st.plan(spec, cgroup_root, volume, mem.memory_root() if spec.learner_ram_gib else None)
    if st.directory(state_dir, bed.name).exists():
        raise UsageError(f"--name: testbed {bed.name} exists; remove it with `testbed down --name {bed.name}`")
    undo: list[Callable[[], object]] = [lambda: shutil.rmtree(st.directory(state_dir, bed.name), ignore_errors=True)]
    try:
        st.save(bed, state_dir)
        for namespace in bed.namespaces:
            netns.add_namespace(namespace)
            undo.append(functools.partial(netns.delete_namespace, namespace))
        netns.add_bridge(bed.switch)
        for host in bed.hosts:
            netns.connect(bed, host)
        if bed.volume is not None and bed.volume.image is not None:
            bed = _attach_loops(bed, bed.volume.image, undo, state_dir)
        for host in bed.memory:
            if host.cgroup is not None and bed.volume is not None:
                group = vol.create(host, bed.volume)
                undo.append(group.remove)
        for host in bed.learners:
            if host.memory_cgroup is not None and spec.learner_ram_gib is not None:
                mem.create(host.memory_cgroup, spec.learner_ram_gib)
                undo.append(functools.partial(mem.remove, host.memory_cgroup))
        mpi.write_agent(bed, st.directory(state_dir, bed.name))
        bed = bed.model_copy(update={"status": "ready"})
        st.save(bed, state_dir)
    except BaseException as exc:
        rollback(undo, exc, bed.name)
        raise
    return bed


def _attach_loops(bed: TestbedState, image: Path, undo: list[Callable[[], object]], state_dir: Path) -> TestbedState:
    """Give each memory host a loop device of ``image`` of its own (``testbed.volume``), recording
    each in the state as it is made, so `down` detaches it whatever happens next."""
    for host in bed.memory:
        loop = vol.attach(image)
        undo.append(functools.partial(vol.detach, loop))
        hosts = [h.model_copy(update={"loop": loop}) if h.name == host.name else h for h in bed.hosts]
        bed = bed.model_copy(update={"hosts": hosts})
        st.save(bed, state_dir)
    return bed


def rollback(undo: Sequence[Callable[[], object]], error: BaseException, name: str) -> None:
    """Run every undo step, newest first, after ``error`` stopped `up` of testbed ``name``;
    return if all succeeded (the caller re-raises ``error``).

    A failing step does not stop the others: a namespace that will not go must not also leave
    the blkio groups behind. If any failed, raise a TestbedError caused by ``error`` whose message
    starts with it (why `up` failed matters more than the cleanup), names the failed steps and the
    `down` that removes the rest (it finds the testbed's objects by name, state file or not).
    A second Ctrl-C during the rollback still stops it."""
    failures = []
    for step in reversed(undo):
        try:
            step()
        except Exception as exc:
            failures.append(str(exc) or type(exc).__name__)
    if failures:
        raise TestbedError(
            f"{str(error) or type(error).__name__}; rolling back failed too: {'; '.join(failures)}. "
            f"Run `testbed down --name {name}` to remove what is left"
        ) from error


def _volume(spec: TestbedSpec) -> tuple[Volume | None, Path | None]:
    """The volume to throttle: the disk under the dataset's features, if blkio can throttle it."""
    if spec.dataset is None:
        return None, None
    features = spec.dataset / "features.npy" if spec.dataset.is_dir() else spec.dataset
    if not features.is_file():
        raise UsageError(
            f"--dataset: {spec.dataset} is neither a RemoteGNN dataset directory (with features.npy) "
            "nor a file; give the dataset whose volume the memory hosts read"
        )
    support = detect_emulation(features)
    if not support.blkio.available:
        raise Unsupported(f"--dataset: the volume under {features} cannot be throttled: {support.blkio.reason}")
    assert support.device is not None and support.cgroup_root is not None  # blkio is available only with both
    image = vol.image_of(support.device, spec.dataset)
    volume = Volume(
        dataset=spec.dataset.resolve(),
        device=support.device,
        mb_per_s=spec.volume_mbps,
        iops=spec.volume_iops,
        image=image[0] if image else None,
        mountpoint=image[1] if image else None,
    )
    return volume, Path(support.cgroup_root)


class Removed(BaseModel):
    """What `down` removed for one testbed."""

    name: str
    namespaces: list[str]
    cgroups: list[str]
    processes_stopped: int
    state_removed: bool


def down(state_dir: Path, name: str) -> Removed:
    """Remove testbed ``name`` completely, whether `up` finished or not; nothing there is fine."""
    path = st.directory(state_dir, name)
    try:
        recorded = st.load(state_dir, name) if (path / "state.json").exists() else None
    except InputFileError:
        recorded = None  # a broken record: the names the kernel holds still say what to remove
    namespaces = set(netns.namespaces(f"{name}-"))
    groups = set(_groups(f"{name}-"))
    if recorded is not None:
        namespaces.update(recorded.namespaces)
        groups.update(recorded.groups)
    stopped = stop(Scope(namespaces, groups))
    for namespace in sorted(namespaces):
        netns.delete_namespace(namespace)
    for group in sorted(groups):
        vol.HostGroup(group, "").remove()
    for loop in recorded.loops if recorded is not None else []:
        vol.detach(loop)
    left = [n for n in namespaces if netns.exists(n)] + [str(g) for g in groups if g.exists()]
    if left:
        raise TestbedError(f"testbed {name}: {', '.join(sorted(left))} could not be removed; run down again")
    state_removed = path.exists()
    shutil.rmtree(path, ignore_errors=True)
    return Removed(
        name=name,
        namespaces=sorted(n for n in namespaces),
        cgroups=sorted(str(g) for g in groups),
        processes_stopped=stopped,
        state_removed=state_removed,
    )


class DownReport(BaseModel):
    removed: list[Removed]


def down_all(state_dir: Path, prefix: str) -> list[Removed]:
    """Remove every testbed whose name starts with ``prefix``: recorded ones, and ones only the
    kernel knows of (named objects left by an `up` or a state directory that was killed or lost)."""
    names = set(st.names(state_dir, f"{prefix}-"))
    for obj in netns.namespaces(f"{prefix}-") + [g.name for g in _groups(f"{prefix}-")]:
        names.add(obj.rsplit("-", 1)[0])
    return [down(state_dir, name) for name in sorted(names)]


def _groups(prefix: str) -> list[Path]:
    """The blkio and memory groups named with ``prefix``."""
    root = blkio_root()
    return (sorted(root.glob(f"{prefix}*")) if root is not None else []) + mem.groups(prefix)


class Check(BaseModel):
    what: str
    ok: bool
    detail: str


class Status(BaseModel):
    """A testbed's record and whether the kernel still holds what it says."""

    testbed: TestbedState
    healthy: bool
    processes: int
    checks: list[Check]


class StatusReport(BaseModel):
    support: system.Support
    testbeds: list[Status]


def status(state_dir: Path, name: str) -> Status:
    bed = st.load(state_dir, name)
    checks = [Check(what="state", ok=bed.status == "ready", detail=f"status {bed.status}")]
    for namespace in bed.namespaces:
        checks.append(
            Check(
                what=f"namespace {namespace}",
                ok=netns.exists(namespace),
                detail="present" if netns.exists(namespace) else "missing",
            )
        )
    for host in bed.hosts:
        for namespace, device, direction in ((host.namespace, netns.HOST_IF, "out"), (bed.switch, host.port, "in")):
            shaped = netns.rate(namespace, device) if netns.exists(namespace) else None
            checks.append(
                Check(
                    what=f"{host.name} link {direction}",
                    ok=shaped is not None and abs(shaped[1] - host.gbit) < 1e-3,
                    detail=f"{shaped[0]} {shaped[1]:g} Gbit/s" if shaped is not None else "no tbf",
                )
            )
        if host.cgroup is not None and bed.volume is not None:
            bps, iops = vol.limits(host)
            want = (round(bed.volume.mb_per_s * 1e6), bed.volume.iops)
            device = vol.device(host, bed.volume) if host.loop is None or host.loop.exists() else "a missing device"
            checks.append(
                Check(
                    what=f"{host.name} volume",
                    ok=(bps, iops) == want,
                    detail=f"blkio {bps} B/s, {iops} IOPS on {device}" if bps else "no blkio group",
                )
            )
        if host.loop is not None and bed.volume is not None and bed.volume.image is not None:
            backing = vol.backing_file(host.loop)
            checks.append(
                Check(
                    what=f"{host.name} loop device",
                    ok=backing == bed.volume.image,
                    detail=f"{host.loop} reads {backing}" if backing else f"{host.loop} is not attached",
                )
            )
        if host.memory_cgroup is not None and bed.spec.learner_ram_gib is not None:
            held = mem.limit(host.memory_cgroup)
            checks.append(
                Check(
                    what=f"{host.name} RAM",
                    ok=held == round(bed.spec.learner_ram_gib * GIB),
                    detail=f"memory group limit {held / GIB:g} GiB" if held is not None else "no memory group",
                )
            )
    processes = len(Scope(bed.namespaces, bed.groups).pids())
    return Status(testbed=bed, healthy=all(c.ok for c in checks), processes=processes, checks=checks)
