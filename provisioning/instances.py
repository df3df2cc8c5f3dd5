"""Launching the cluster's machines, one run_instances call per node, and waiting for them.

Each instance: the node's image and type in the chosen zone's default subnet, the cluster's
security group, key pair and placement group; IMDSv2 required (``HttpTokens=required``, hop limit
1, so a stolen SSRF cannot read the instance role's credentials); spot when the plan says spot
(one-time, terminate on interruption); shutdown from inside terminates rather than stops (a stopped
machine still bills its volumes and is easy to forget). The root volume is the image's, launched
encrypted (EBS encrypts nothing by default unless the account opted in), as gp3 and deleted with
the instance. Tags go on the instance and its root volume at creation, so nothing exists untagged
even for a moment. One call per node gives each a deterministic ClientToken and its own node tag. Where the plan runs
ENA Express, it is enabled on the instance's primary network interface as soon as it exists (for
TCP, the job's transport; not for UDP, whose receivers would see packets reordered).
"""

from __future__ import annotations

from provisioning import tags
from provisioning.encryption import ebs_encryption
from provisioning.errors import AwsError, WaitError
from provisioning.ledger import Ledger
from provisioning.models import NodeSpec

# Launch succeeded but EC2 took the machine back at once: the zone is out of capacity after all.
CAPACITY_STATE_REASONS = frozenset({"Server.InsufficientInstanceCapacity", "Server.SpotInstanceTermination"})
# States of an instance EC2 gave up on while waiting for it to run.
STOPPED_AT_LAUNCH = frozenset({"shutting-down", "terminated", "stopping", "stopped"})
# EC2's reason when it may not use a volume's KMS key; its own message ("Client error on launch") does not say so.
KMS_REASON = "Client.InternalError"
KMS_HINT = (
    " (EC2 gives this when it may not use a volume's KMS key: check that the key, --kms-key or the "
    "image's, exists in this region and that its key policy lets you and EC2 use it)"
)


def root_device_mapping(node: NodeSpec) -> dict:
    """The image's root device at the image's size, encrypted, deleted with the instance.

    Naming the image's own size changes nothing on AWS, and moto rejects a mapping without a size.
    """
    return {
        "DeviceName": node.root_volume.device_name,
        "Ebs": {
            "VolumeSize": node.root_volume.size_gb,
            "VolumeType": node.root_volume.volume_type,
            "DeleteOnTermination": True,
            **ebs_encryption(node.kms_key_id),
        },
    }


def launch(
    ledger: Ledger,
    node: NodeSpec,
    rank: int,
    zone: str,
    subnet: str,
    group_id: str,
    key_name: str,
    placement_group: str,
    user_data: str,
    version: str,
) -> str:
    instance_tags = {**ledger.tags(node.role, rank, node.usd_per_hour, node.node), tags.VERSION: version}
    root_tags = ledger.tags("root-volume", rank, 0.0, node.node)
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
        BlockDeviceMappings=[root_device_mapping(node)],
        TagSpecifications=[
            tags.tag_specification("instance", instance_tags),
            tags.tag_specification("volume", root_tags),
        ],
        ClientToken=ledger.client_token(node.node, zone, str(rank)),
    )
    if node.market == "spot":
        params["InstanceMarketOptions"] = {
            "MarketType": "spot",
            "SpotOptions": {"SpotInstanceType": "one-time", "InstanceInterruptionBehavior": "terminate"},
        }
        params["TagSpecifications"].append(tags.tag_specification("spot-instances-request", instance_tags))
    instance = ledger.aws.call("run_instances", **params)["Instances"][0]
    instance_id = instance["InstanceId"]
    ledger.created.add("instances", instance_id)
    ledger.report(f"launched {node.node} {node.instance_type} ({node.market}) in {zone}: {instance_id}")
    if node.ena_express:
        enable_ena_express(ledger, instance)
    return instance_id


def enable_ena_express(ledger: Ledger, instance: dict) -> None:
    """ENA Express for TCP on ``instance``'s primary network interface (its attachment, device 0)."""
    eni = next(n for n in instance["NetworkInterfaces"] if n["Attachment"]["DeviceIndex"] == 0)
    ledger.aws.call(
        "modify_network_interface_attribute",
        NetworkInterfaceId=eni["NetworkInterfaceId"],
        EnaSrdSpecification={"EnaSrdEnabled": True, "EnaSrdUdpSpecification": {"EnaSrdUdpEnabled": False}},
    )
    ledger.report(f"ENA Express enabled on {instance['InstanceId']}'s {eni['NetworkInterfaceId']}")


def describe(ledger: Ledger, instance_ids: list[str]) -> dict[str, dict]:
    reservations = ledger.aws.items("describe_instances", "Reservations", InstanceIds=instance_ids)
    return {i["InstanceId"]: i for r in reservations for i in r["Instances"]}


def wait_running(ledger: Ledger, instance_ids: list[str]) -> None:
    """Wait until every instance runs; one that EC2 stopped at launch raises EC2's reason as an AwsError.

    A capacity reason becomes that capacity error, so failover moves on; any other (a KMS key EC2
    may not use, for one) is a failure like any AWS error, reported with the reason EC2 gave.
    """
    try:
        ledger.aws.wait("instance_running", "instances to run", InstanceIds=instance_ids)
    except WaitError:
        for instance in describe(ledger, instance_ids).values():
            code = instance.get("StateReason", {}).get("Code")
            if code and instance["State"]["Name"] in STOPPED_AT_LAUNCH:
                message = f"{instance['InstanceId']} stopped at launch: {instance['StateReason'].get('Message', '')}"
                raise AwsError(
                    "RunInstances",
                    code.removeprefix("Server.") if code in CAPACITY_STATE_REASONS else code,
                    message + (KMS_HINT if code == KMS_REASON else ""),
                ) from None
        raise


def wait_healthy(ledger: Ledger, instance_ids: list[str]) -> None:
    ledger.report("waiting for the instances' status checks")
    ledger.aws.wait("instance_status_ok", "instance status checks", InstanceIds=instance_ids)
