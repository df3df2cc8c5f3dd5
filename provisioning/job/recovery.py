"""Noticing that a machine of the cluster is gone, and putting a new one in its place.

A machine is lost when EC2 no longer has it running: AWS reclaimed a spot instance (its state
reason says so), it failed, or someone terminated it. `provision run` asks EC2 about every
machine while the job runs, and again when the job fails, so a job that died with a machine is
told apart from one whose script failed.

A lost machine is replaced by running `up` again with what it was given the first time (the plan
file and options it kept as ``launch.json``): `up` keeps the live machines, launches only the
missing one, of the same type in the same zone and placement group (or, with every machine gone
and no capacity, the plan file's failover alternative), re-attaches its data volume, which
outlives the instance (volumes attached after launch are not deleted with it; `down` deletes
them), and writes the new state file and hostfile.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from contracts.cluster import ClusterState
from foundation.errors import InputFileError
from foundation.fileio import read_model
from provisioning import launch, statefile
from provisioning.aws import Aws
from provisioning.errors import ProvisioningError
from provisioning.models import LaunchInputs

RUNNING = frozenset({"pending", "running"})


class MachineLost(Exception):
    """Machines of the cluster are no longer running: node -> why, in EC2's words."""

    def __init__(self, lost: dict[str, str]):
        super().__init__("; ".join(f"{node}: {why}" for node, why in lost.items()))
        self.lost = lost


def lost_nodes(aws: Aws, state: ClusterState) -> dict[str, str]:
    """The cluster's machines EC2 does not have running, and why (its state and state reason)."""
    ids = {n.instance_id: n.node for n in state.nodes}
    reservations = aws.items("describe_instances", "Reservations", InstanceIds=list(ids))
    found = {i["InstanceId"]: i for r in reservations for i in r["Instances"]}
    lost = {}
    for instance_id, node in ids.items():
        instance = found.get(instance_id)
        if instance is None:
            lost[node] = f"{instance_id} is gone"
        elif instance["State"]["Name"] not in RUNNING:
            reason = instance.get("StateReason", {}).get("Message") or instance.get("StateTransitionReason", "")
            lost[node] = f"{instance_id} is {instance['State']['Name']}" + (f" ({reason})" if reason else "")
    return lost


def check(aws: Aws, state: ClusterState) -> None:
    """Raise MachineLost when any machine of the cluster is gone."""
    lost = lost_nodes(aws, state)
    if lost:
        raise MachineLost(lost)


def replace_lost(aws: Aws, state_dir: Path, state: ClusterState, report: Callable[[str], None]) -> ClusterState:
    """Run `up` again for the cluster: the lost machines are replaced, the rest kept; the new state."""
    path = statefile.launch_inputs_path(state_dir, state.name)
    if not path.exists():
        raise ProvisioningError(
            f"cluster {state.name} has no {path} (it was made by an older `provision up`): replace the machine "
            "by running `provision up` again with its plan file"
        )
    try:
        inputs = read_model(path, LaunchInputs, "launch inputs file")
    except InputFileError as exc:
        raise ProvisioningError(f"{exc}; run `provision up` again with the cluster's plan file") from None
    opts = launch.options_from(inputs, state_dir, state.name, state.wheel)
    return launch.up(aws, inputs.plan, opts, report).state
