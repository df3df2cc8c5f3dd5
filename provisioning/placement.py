"""The cluster placement group: the learner and memory machines on one low-latency network spine.

One group per zone attempt (``memorybridge-NAME-ZONE``): a cluster placement group lives in one
availability zone, so when failover moves the cluster, the failed zone's group is deleted with the
rest of that attempt and the next zone gets its own.
"""

from __future__ import annotations

from provisioning import tags
from provisioning.errors import refuse_foreign_name
from provisioning.ledger import Ledger


def ensure_placement_group(ledger: Ledger, zone: str, rank: int) -> str:
    name = tags.resource_name(ledger.cluster, zone)
    found = ledger.aws.call(
        "describe_placement_groups", Filters=[*tags.filters(ledger.cluster), {"Name": "group-name", "Values": [name]}]
    )
    if any(g.get("State") != "deleted" for g in found["PlacementGroups"]):
        return name
    with refuse_foreign_name("InvalidPlacementGroup.Duplicate", "placement group", name, ledger.cluster):
        ledger.aws.call(
            "create_placement_group",
            GroupName=name,
            Strategy="cluster",
            TagSpecifications=[tags.tag_specification("placement-group", ledger.tags("placement-group", rank))],
        )
    ledger.created.add("placement_groups", name)
    ledger.report(f"created placement group {name}")
    return name
