"""Hosts for `provision run`'s tests: machines reached through the overridable ssh command.

``local_hosts`` stands in for ssh with a script that runs the command on this machine (as ssh
would: the words joined and run by a shell), so the real rsync, the real `remotegnn` CLI and a
real moto S3 server do the work; each test gets its own machine layout under tmp_path.
"""

from __future__ import annotations

import datetime as dt
import shutil
import stat
import sys
from pathlib import Path

import pytest

from contracts.cluster import ClusterState, NodeState
from provisioning.job.models import MachineLayout

LOCAL_SSH = """#!/bin/bash
# Stands in for ssh: `local-ssh [-l USER] [USER@]HOST COMMAND...` runs COMMAND on this machine.
if [ "$1" = "-l" ]; then shift 2; fi
shift
exec /bin/bash -c "$*"
"""


def write_script(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return path


@pytest.fixture
def local_ssh(tmp_path) -> str:
    if shutil.which("rsync") is None:
        pytest.skip("needs rsync, which copies datasets and job files (apt-get install rsync)")
    return str(write_script(tmp_path / "local-ssh", LOCAL_SSH))


@pytest.fixture
def layout(tmp_path) -> MachineLayout:
    machine = tmp_path / "machine"
    (machine / "var").mkdir(parents=True)
    return MachineLayout(
        bin_dir=str(Path(sys.executable).parent),
        boot_status=str(machine / "var" / "boot-status"),
        init_log=str(machine / "var" / "init.log"),
        datasets_dir=str(machine / "data" / "datasets"),
        jobs_dir=str(machine / "jobs"),
        wheel_dir=str(machine / "wheel"),
    )


def node(name: str, role: str, ip: str) -> NodeState:
    return NodeState(
        node=name,
        role=role,
        instance_id=f"i-{name}",
        instance_type="g4dn.xlarge" if role == "learner" else "r6i.large",
        arch="x86_64",
        market="on-demand",
        private_ip=ip,
        public_ip=None,
        usd_per_hour=0.5,
        gpus=1 if role == "learner" else 0,
        slots=1,
    )


def cluster_state(hostfile: Path, memory: int = 1, addresses: list[str] | None = None) -> ClusterState:
    """A state file's content for a learner and ``memory`` memory machines at ``addresses``."""
    addresses = addresses or [f"10.0.0.{i + 2}" for i in range(memory + 1)]
    nodes = [node("learner-0", "learner", addresses[0])]
    nodes += [node(f"memory-{i}", "memory", addresses[i + 1]) for i in range(memory)]
    return ClusterState(
        name="c1",
        region="us-east-1",
        availability_zone="us-east-1a",
        plan_id="p1",
        plan_rank=0,
        plan_label="g4dn.xlarge + 1x r6i.large",
        usd_per_hour=1.0,
        predicted_total_usd=1.0,
        security_group_id="sg-1",
        key_name="k",
        placement_group="pg",
        ssh_user="ec2-user",
        hostfile=str(hostfile),
        written_at=dt.datetime.now(dt.UTC),
        nodes=nodes,
    )


@pytest.fixture(scope="session")
def small_dataset(tmp_path_factory) -> Path:
    """A 2,048-node R-MAT dataset written through the real format (what a user stages)."""
    from remotegnn.synth import SynthSpec, synth

    path = tmp_path_factory.mktemp("datasets") / "rmat11"
    synth(SynthSpec(nodes=2048, edges=16_000, dim=16, classes=4, seed=3), path, progress=False)
    return path


@pytest.fixture
def remote(tmp_path, local_ssh):
    """A learner and one memory machine, both reached through ``local_ssh``."""
    from provisioning.job.remote import Remote

    state = cluster_state(tmp_path / "c1.hostfile")
    return Remote.for_cluster(state, tmp_path / "known_hosts", None, local_ssh)
