"""The cluster state file and the MPI hostfile, both written atomically (temp file, fsync, rename).

Files live in the state directory (default ``~/.memorybridge/clusters``; ``--state-dir`` or
``MEMORYBRIDGE_STATE_DIR`` elsewhere): ``NAME.json`` (:class:`~provisioning.models.ClusterState`),
``NAME/wheel/`` (the MemoryBridge wheel the machines install, see ``provisioning.wheel``),
``NAME/launch.json`` (what `up` was given, for replacing a lost machine) and
``NAME.hostfile``, a standard Open MPI hostfile that ``remotegnn launch --hostfile`` reads::

    # comment lines start with '#'
    10.0.1.23 slots=1      <- one line per memory machine, one MPI process each
    10.0.1.17 slots=1      <- the learners, always last; slots = the ranks the plan trains on each

Open MPI places ranks on the hosts in file order, and ``remotegnn launch`` starts the memory
ranks first, so this order puts each server on a memory machine and the training on the learner.

Hosts are private IPs: MPI runs inside the VPC (start it on the learner), where the security group
lets cluster members reach each other on every TCP port.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from contracts.cluster import ClusterState
from foundation.errors import UsageError
from foundation.fileio import atomic_write_text, read_model, write_model

STATE_DIR_ENV = "MEMORYBRIDGE_STATE_DIR"
DEFAULT_STATE_DIR = Path("~/.memorybridge/clusters")


def state_path(state_dir: Path, name: str) -> Path:
    return state_dir.expanduser() / f"{name}.json"


def hostfile_path(state_dir: Path, name: str) -> Path:
    return state_dir.expanduser() / f"{name}.hostfile"


def wheel_dir(state_dir: Path, name: str) -> Path:
    """Where `up` keeps the wheel the cluster's machines install, for `provision run` to copy."""
    return state_dir.expanduser() / name / "wheel"


def launch_inputs_path(state_dir: Path, name: str) -> Path:
    """What `up` was given (``provisioning.models.LaunchInputs``), for replacing a lost machine."""
    return state_dir.expanduser() / name / "launch.json"


def check_writable(state_dir: Path) -> None:
    """Fail before creating anything in AWS if the state cannot be recorded afterwards."""
    directory = state_dir.expanduser()
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"--state-dir: cannot create {directory}: {exc.strerror}") from None
    if not os.access(directory, os.W_OK | os.X_OK):
        raise UsageError(f"--state-dir: {directory} is not writable")


def render_hostfile(state: ClusterState) -> str:
    lines = [
        f"# Open MPI hostfile of memorybridge cluster {state.name} (plan {state.plan_id}, {state.plan_label}),",
        "# written by `provision up`. Memory machines first, then the learners (the rank order of "
        "`remotegnn launch`); slots = MPI processes for the host; private IPs.",
    ]
    ordered = sorted(state.nodes, key=lambda node: node.role == "learner")  # stable: memory machines keep their order
    lines += [f"{node.private_ip} slots={node.slots}" for node in ordered]
    return "\n".join(lines) + "\n"


def write(state_dir: Path, state: ClusterState) -> Path:
    """Write the hostfile, then the state file that names it; return the state file's path."""
    atomic_write_text(state.hostfile, render_hostfile(state))
    return write_model(state_path(state_dir, state.name), state)


def read(state_dir: Path, name: str) -> ClusterState | None:
    """The cluster's state file, or None when there is none (a broken one is an InputFileError)."""
    path = state_path(state_dir, name)
    return read_model(path, ClusterState, "cluster state file") if path.exists() else None


def remove(state_dir: Path, name: str) -> bool:
    """Delete the state file, the hostfile, `up`'s inputs and the kept wheel (the job records stay)."""
    removed = False
    for path in (state_path(state_dir, name), hostfile_path(state_dir, name), launch_inputs_path(state_dir, name)):
        if path.exists():
            path.unlink()
            removed = True
    wheels = wheel_dir(state_dir, name)
    if wheels.exists():
        shutil.rmtree(wheels)
        removed = True
    return removed
