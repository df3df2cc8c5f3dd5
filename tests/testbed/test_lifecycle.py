"""up, status and down against the kernel: what up makes is there, and after down (or a failed
up) nothing is - checked by listing namespaces, cgroups, processes and state files."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pytest

from contracts import testbed as tb  # its Test* models are no test classes
from remotegnn.volume.detect import blkio_root
from testbed import errors, job, lifecycle, memory, netns, processes
from testbed import state as st
from tests.testbed.conftest import cli

BLKIO = blkio_root()
GIB = 1 << 30


def kernel_objects(name: str) -> list[str]:
    """Every namespace, blkio and memory group whose name starts with the testbed's."""
    groups = [p.name for p in BLKIO.glob(f"{name}-*")] if BLKIO else []
    return netns.namespaces(f"{name}-") + groups + [p.name for p in memory.groups(f"{name}-")]


def test_up_makes_what_the_state_records_and_status_checks_it(make_testbed, state_dir, volume):
    bed = make_testbed(memory_hosts=2, link_gbit=1.5, learner_gbit=3.0, dataset=volume, volume_mbps=50, volume_iops=700)
    assert sorted(kernel_objects(bed.name)) == sorted([*bed.namespaces, f"{bed.name}-m0", f"{bed.name}-m1"])
    assert st.load(state_dir, bed.name).status == "ready"
    found = lifecycle.status(state_dir, bed.name)
    assert found.healthy and found.processes == 0
    details = {c.what: c.detail for c in found.checks}
    assert details["l0 link in"] == "tbf 3 Gbit/s" and details["m1 link out"] == "tbf 1.5 Gbit/s"
    assert details["m1 volume"].startswith("blkio 50000000 B/s, 700 IOPS")


def test_the_learner_hosts_ram_is_what_its_processes_see(make_testbed, state_dir):
    if not (memory.MEMORY_ROOT / "memory.limit_in_bytes").exists():
        pytest.skip("no cgroup v1 memory hierarchy")
    bed = make_testbed(memory_hosts=2, learner_ram_gib=2.5)
    assert f"{bed.name}-l0" in kernel_objects(bed.name)
    checks = {c.what: c for c in lifecycle.status(state_dir, bed.name).checks}
    assert checks["l0 RAM"].ok and checks["l0 RAM"].detail == "memory group limit 2.5 GiB"
    probe = [sys.executable, "-c", "from foundation.ram import available_ram_bytes as a; print(a())"]
    seen = {
        host: int(subprocess.run(job.host_command(state_dir, bed, host, probe), capture_output=True, text=True).stdout)
        for host in ("l0", "m0")
    }
    assert GIB < seen["l0"] <= 2.5 * GIB < seen["m0"]
    # A memory host's process started from the learner host (as Open MPI starts its daemons)
    # leaves the learner's memory group: its RAM is not the learner's.
    nested = [*job.host_command(state_dir, bed, "m1", [*probe[:2], "print(open('/proc/self/cgroup').read())"])]
    from_learner = job.host_command(state_dir, bed, "l0", nested)
    groups = subprocess.run(from_learner, capture_output=True, text=True, check=True).stdout
    home = "/" + str(bed.learner.memory_cgroup.parent.relative_to(memory.MEMORY_ROOT)).removeprefix(".")
    assert f":memory:{home}\n" in groups and f"{bed.name}-l0" not in groups
    removed = lifecycle.down(state_dir, bed.name)
    assert str(bed.learner.memory_cgroup) in removed.cgroups and kernel_objects(bed.name) == []


def test_down_stops_processes_and_removes_everything(make_testbed, state_dir, volume):
    bed = make_testbed(memory_hosts=2, dataset=volume)
    # A process on a memory host (so in its blkio group) that would run for ever.
    sleeper = subprocess.Popen(
        job.host_command(state_dir, bed, "m1", ["sh", "-c", "echo up; exec sleep 600"]),
        stdout=subprocess.PIPE,
        text=True,
    )
    assert sleeper.stdout.readline() == "up\n"
    assert sleeper.pid in processes.Scope(bed.namespaces).pids()
    removed = lifecycle.down(state_dir, bed.name)
    assert sleeper.wait(timeout=10) < 0  # killed by a signal
    assert removed.processes_stopped >= 1 and len(removed.namespaces) == 4 and len(removed.cgroups) == 2
    assert kernel_objects(bed.name) == [] and not st.directory(state_dir, bed.name).exists()
    again = lifecycle.down(state_dir, bed.name)  # idempotent
    assert again.namespaces == [] and again.cgroups == [] and not again.state_removed


@pytest.mark.parametrize("foreign", ["namespace", "blkio group"])
def test_a_failed_up_removes_what_it_made_and_nothing_else(prefix, state_dir, volume, foreign):
    """up fails midway on a name someone else holds (the last memory host's): it undoes its own
    work, and leaves the other owner's object alone."""
    name = st.new_name(prefix)
    if foreign == "namespace":
        subprocess.run(["ip", "netns", "add", f"{name}-m1"], check=True)
    else:
        (BLKIO / f"{name}-m1").mkdir()
    try:
        with pytest.raises(errors.TestbedError, match=f"{name}-m1 already exists and is not this testbed's"):
            lifecycle.up(tb.TestbedSpec(name=name, memory_hosts=2, dataset=volume), state_dir)
        assert kernel_objects(name) == [f"{name}-m1"]
        assert not st.directory(state_dir, name).exists()
    finally:
        if foreign == "namespace":
            subprocess.run(["ip", "netns", "delete", f"{name}-m1"], check=True)
        else:
            (BLKIO / f"{name}-m1").rmdir()


def test_down_all_sweeps_testbeds_whose_state_is_lost(make_testbed, prefix, state_dir, volume):
    lost, kept = make_testbed(dataset=volume), make_testbed()
    shutil.rmtree(st.directory(state_dir, lost.name))  # as if `up` had been killed before writing it
    removed = lifecycle.down_all(state_dir, prefix)
    assert sorted(r.name for r in removed) == sorted([lost.name, kept.name])
    assert kernel_objects(lost.name) == kernel_objects(kept.name) == []
    assert st.names(state_dir) == []


def test_cli_up_status_down(prefix, state_dir):
    name = st.new_name(prefix)
    made = cli("up", "--name", name, "--link-gbit", "2", "--state-dir", state_dir, "--json")
    assert made.returncode == 0, made.stderr
    assert json.loads(made.stdout)["hosts"][1]["gbit"] == 2.0
    shown = cli("status", "--state-dir", state_dir, "--json")
    assert shown.returncode == 0, shown.stderr
    assert [t["healthy"] for t in json.loads(shown.stdout)["testbeds"]] == [True]
    gone = cli("down", "--state-dir", state_dir)  # the only testbed: no --name needed
    assert gone.returncode == 0, gone.stderr
    assert f"{name}: removed 3 namespaces" in gone.stdout and kernel_objects(name) == []


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--link-gbit", "0"], "--link-gbit: Input should be greater than 0"),
        (["--subnet", "8.8.8.0/24"], "--subnet: 8.8.8.0/24 is not a private /24"),
        (["--memory-hosts", "9"], "--memory-hosts: Input should be less than or equal to 8"),
        (["--prefix", "Bad_prefix"], "--prefix: 'Bad_prefix' must be 1-8 lowercase letters"),
        (["--name", "exp1"], "--name: 'exp1' is not PREFIX-ID"),
        (["--dataset", "/nonexistent"], "--dataset: /nonexistent is neither a RemoteGNN dataset"),
    ],
)
def test_bad_requests_are_one_line_naming_the_flag(state_dir, args, message, root_support):
    done = (
        cli("up", "--prefix", "tbad", *args, "--state-dir", state_dir)
        if "--prefix" not in args
        else cli("up", *args, "--state-dir", state_dir)
    )
    assert done.returncode == 2, done.stderr
    assert message in done.stderr and len(done.stderr.strip().splitlines()) == 1
    assert netns.namespaces("tbad-") == []
