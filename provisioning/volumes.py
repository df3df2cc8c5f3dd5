"""The data volumes: one encrypted gp3 volume per data machine, with the plan's size, IOPS and throughput.

Created in the instance's zone after the instance runs (a capacity failure then costs no volume),
attached as ``/dev/sdf`` (user data finds it by model, whatever the device name becomes on Nitro).
Volumes are found again by their node tag, so a re-run attaches the existing one instead of
creating a second. Encrypted like the root volumes (see ``provisioning.encryption``): with the
node's KMS key, or the account's default EBS key.
"""

from __future__ import annotations

from provisioning import tags
from provisioning.encryption import ebs_encryption
from provisioning.errors import ProvisioningError
from provisioning.ledger import Ledger
from provisioning.models import NodeSpec

DEVICE = "/dev/sdf"


def ensure_volumes(ledger: Ledger, nodes: list[tuple[NodeSpec, dict]], rank: int) -> dict[str, str]:
    """Make sure each (node, described instance) with a volume has its volume attached; node -> volume id."""
    wanted = [(node, instance) for node, instance in nodes if node.volume]
    volumes = {node.node: _find_or_create(ledger, node, instance, rank) for node, instance in wanted}
    fresh = [v["VolumeId"] for v in volumes.values() if v["State"] == "creating"]
    if fresh:
        ledger.aws.wait("volume_available", "data volumes to be created", VolumeIds=fresh)
    attaching = []
    for node, instance in wanted:
        volume = volumes[node.node]
        holders = {a["InstanceId"] for a in volume.get("Attachments", [])}
        if instance["InstanceId"] in holders:
            continue
        if holders:
            raise ProvisioningError(
                f"data volume {volume['VolumeId']} of {node.node} is attached to "
                f"{', '.join(sorted(holders))}, not to {instance['InstanceId']}"
            )
        ledger.aws.call("attach_volume", VolumeId=volume["VolumeId"], InstanceId=instance["InstanceId"], Device=DEVICE)
        attaching.append(volume["VolumeId"])
    if attaching:
        ledger.aws.wait("volume_in_use", "data volumes to attach", VolumeIds=attaching)
    return {node: volume["VolumeId"] for node, volume in volumes.items()}


def _find_or_create(ledger: Ledger, node: NodeSpec, instance: dict, rank: int) -> dict:
    zone = instance["Placement"]["AvailabilityZone"]
    found = ledger.aws.items(
        "describe_volumes",
        "Volumes",
        Filters=[
            *tags.filters(ledger.cluster),
            {"Name": f"tag:{tags.NODE}", "Values": [node.node]},
            {"Name": f"tag:{tags.ROLE}", "Values": ["data-volume"]},
            {"Name": "availability-zone", "Values": [zone]},
            {"Name": "status", "Values": ["creating", "available", "in-use"]},
        ],
    )
    if found:
        return found[0]
    assert node.volume is not None
    volume = ledger.aws.call(
        "create_volume",
        AvailabilityZone=zone,
        Size=node.volume.size_gb,
        VolumeType="gp3",
        Iops=node.volume.iops,
        Throughput=node.volume.throughput_mbps,
        **ebs_encryption(node.kms_key_id),
        TagSpecifications=[
            tags.tag_specification("volume", ledger.tags("data-volume", rank, node.volume.usd_per_hour, node.node))
        ],
        ClientToken=ledger.client_token(node.node, "volume", zone),
    )
    ledger.created.add("volumes", volume["VolumeId"])
    ledger.report(f"created {node.volume.size_gb} GB gp3 volume {volume['VolumeId']} for {node.node}")
    return {**volume, "State": volume.get("State", "creating")}
