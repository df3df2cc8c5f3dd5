"""Launching the cluster's machines, one run_instances call per node, and waiting for them.

Each instance: the node's image and type in the chosen zone's default subnet, the cluster's
security group, key pair and placement group; IMDSv2 required (``HttpTokens=required``, hop limit
1, so a stolen SSRF cannot read the instance role's credentials); spot when the plan says spot
(one-time, terminate on interruption); shutdown from inside terminates rather than stops (a stopped
machine still bills its volumes and is easy to forget). Tags go on the instance and its root volume
at creation, so nothing exists untagged even for a moment. One call per node gives each a
deterministic ClientToken and its own node tag.
"""

from __future__ import annotations

from provisioning import tags
from provisioning.errors import AwsError, WaitError
from provisioning.models import NodeSpec
from provisioning.run import Run

# Launch succeeded but EC2 took the machine back at once: the zone is out of capacity after all.
CAPACITY_STATE_REASONS = frozenset({"Server.InsufficientInstanceCapacity", "Server.SpotInstanceTermination"})


def launch(
    run: Run,
    node: NodeSpec,
    rank: int,
    zone: str,
    subnet: str,
    group_id: str,
    key_name: str,
    placement_group: str,
    user_data: str,
) -> str:
    instance_tags = run.tags(node.role, rank, node.usd_per_hour, node.node)
    root_tags = run.tags("root-volume", rank, 0.0, node.node)
    params: dict = dict(
        ImageId=node.ami,
        InstanceType=node.instance_type,
        MinCount=1,
        MaxCount=1,
        KeyName=key_name,
        SubnetId=subnet,
        SecurityGroupIds=[group_id],
        Placement={"AvailabilityZone": zone, "GroupName": placement_group},
        MetadataOptions={"HttpTokens": "required", "HttpEndpoint": "enabled", "HttpPutResponseHopLimit": 1},
        UserData=user_data,
        InstanceInitiatedShutdownBehavior="terminate",
        TagSpecifications=[
            tags.tag_specification("instance", instance_tags),
            tags.tag_specification("volume", root_tags),
        ],
        ClientToken=run.client_token(node.node, zone, str(rank)),
    )
    if node.market == "spot":
        params["InstanceMarketOptions"] = {
            "MarketType": "spot",
            "SpotOptions": {"SpotInstanceType": "one-time", "InstanceInterruptionBehavior": "terminate"},
        }
        params["TagSpecifications"].append(tags.tag_specification("spot-instances-request", instance_tags))
    instance_id = run.aws.call("run_instances", **params)["Instances"][0]["InstanceId"]
    run.created.add("instances", instance_id)
    run.report(f"launched {node.node} {node.instance_type} ({node.market}) in {zone}: {instance_id}")
    return instance_id


def describe(run: Run, instance_ids: list[str]) -> dict[str, dict]:
    reservations = run.aws.items("describe_instances", "Reservations", InstanceIds=instance_ids)
    return {i["InstanceId"]: i for r in reservations for i in r["Instances"]}


def wait_running(run: Run, instance_ids: list[str]) -> None:
    """Wait until every instance runs; one EC2 reclaimed for capacity raises that capacity error."""
    try:
        run.aws.wait("instance_running", "instances to run", InstanceIds=instance_ids)
    except WaitError:
        for instance in describe(run, instance_ids).values():
            reason = instance.get("StateReason", {})
            if reason.get("Code") in CAPACITY_STATE_REASONS:
                raise AwsError(
                    "RunInstances",
                    reason["Code"].removeprefix("Server."),
                    f"{instance['InstanceId']} stopped at launch: {reason.get('Message', '')}",
                ) from None
        raise


def wait_healthy(run: Run, instance_ids: list[str]) -> None:
    run.report("waiting for the instances' status checks")
    run.aws.wait("instance_status_ok", "instance status checks", InstanceIds=instance_ids)
