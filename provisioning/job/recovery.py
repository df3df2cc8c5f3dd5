"""Noticing that a machine of the cluster is gone or about to go, and putting a new one in its place.

A machine is lost when EC2 no longer has it running: AWS reclaimed a spot instance (its state
reason says so), it failed, or someone terminated it. `provision run` asks EC2 about every
machine while the job runs, and again when the job fails, so a job that died with a machine is
told apart from one whose script failed. It also reads each spot machine's interruption notice,
which the notice agent writes there when AWS gives its two-minute warning (``notices``): the job
then checkpoints, and the machine is retired (``retire``) before AWS takes it, so its replacement
starts sooner and its data volume is free to move.

A lost machine is replaced by running `up` again with what it was given the first time (the plan
file and options it kept as ``launch.json``): `up` keeps the live machines, launches only the
missing one, of the same type in the same zone and placement group (or, with every machine gone
and no capacity, the plan file's failover alternative), re-attaches its data volume, which
outlives the instance (volumes attached after launch are not deleted with it; `down` deletes
them), and writes the new state file and hostfile. When the zone has no capacity for the
replacement, the survivors cannot stay (a placement group and its volumes live in one zone): the
cluster is taken down and launched again where failover finds capacity, and `provision run`
stages the dataset on the new machines.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable
from pathlib import Path

from pydantic import ValidationError

from contracts.cluster import ClusterState
from contracts.interruption import InterruptionNotice
from foundation.errors import InputFileError
from foundation.fileio import read_model
from provisioning import bringup, statefile, teardown
from provisioning.aws import Aws
from provisioning.errors import NoCapacityError, ProvisioningError
from provisioning.job.remote import Remote, RemoteError
from provisioning.models import LaunchInputs

RUNNING = frozenset({"pending", "running"})
NOTICE_READ_S = 30.0  # one machine's notice over ssh; a machine slower than that is left to EC2's view


class MachineLost(Exception):
    """Machines of the cluster are no longer running: node -> why, in EC2's words."""

    def __init__(self, lost: dict[str, str]):
        super().__init__("; ".join(f"{node}: {why}" for node, why in lost.items()))
        self.lost = lost


class InterruptionNoticed(Exception):
    """AWS has announced it will reclaim machines of the cluster: node -> its notice."""

    def __init__(self, notices: dict[str, InterruptionNotice]):
        super().__init__(
            "; ".join(f"{node}: AWS will {n.action} it at {n.time:%H:%M:%S} UTC" for node, n in notices.items())
        )
        self.notices = notices

    def lost(self) -> dict[str, str]:
        """What the record says of each machine."""
        return {
            node: f"{n.instance_id}: spot interruption notice ({n.action} at {n.time.isoformat()})"
            for node, n in self.notices.items()
        }


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


def notices(remote: Remote, state: ClusterState, notice_file: str) -> dict[str, InterruptionNotice]:
    """The spot machines whose notice agent has written AWS's interruption notice. A file that is
    not a notice, or is another instance's, is ignored; a machine ssh cannot reach is left to EC2's
    view (``check``)."""
    found = {}
    for node in state.nodes:
        if node.market != "spot":
            continue
        try:
            text = remote.run(node, f"cat {shlex.quote(notice_file)} 2>/dev/null || true", timeout_s=NOTICE_READ_S)
        except RemoteError:
            continue
        if not text.strip():
            continue
        try:
            notice = InterruptionNotice.model_validate_json(text)
        except ValidationError:
            continue  # data from the machine: validated, never trusted
        if notice.instance_id == node.instance_id:
            found[node.node] = notice
    return found


def watch(aws: Aws, remote: Remote, state: ClusterState, notice_file: str) -> None:
    """Raise MachineLost when a machine is gone, InterruptionNoticed when AWS has announced it will be."""
    check(aws, state)
    noticed = notices(remote, state, notice_file)
    if noticed:
        raise InterruptionNoticed(noticed)


def retire(aws: Aws, state: ClusterState, nodes: list[str], report: Callable[[str], None]) -> None:
    """Terminate the machines AWS is about to reclaim, and wait until they are gone (their data
    volumes are then free to attach to the replacements)."""
    ids = [n.instance_id for n in state.nodes if n.node in nodes]
    report(f"retiring {', '.join(nodes)} before AWS takes it")
    aws.call("terminate_instances", InstanceIds=ids)
    aws.wait("instance_terminated", "the retired instances to terminate", InstanceIds=ids)


def replace_lost(
    aws: Aws, state_dir: Path, state: ClusterState, known: set[str], report: Callable[[str], None]
) -> tuple[ClusterState, dict[str, str]]:
    """Run `up` again for the cluster: the lost machines are replaced, the rest kept. Returns the
    new state and the machines lost since ``known`` were (during the recovery), which `up` replaced
    as well."""
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
    opts = bringup.options_from(inputs, state_dir, state.name, state.wheel)
    also = {node: why for node, why in lost_nodes(aws, state).items() if node not in known}
    try:
        return bringup.up(aws, inputs.plan, opts, report).state, also
    except NoCapacityError as exc:  # the zone has no machine of that type now: the survivors cannot stay
        report(
            f"no capacity to replace {', '.join(sorted(known | set(also)))} in {state.availability_zone} ({exc}); "
            "moving the whole cluster: taken down, then launched where the plan file's failover finds capacity"
        )
    teardown.down(aws, state.name, report)
    return bringup.up(aws, inputs.plan, opts, report).state, also
