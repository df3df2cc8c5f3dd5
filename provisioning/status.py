"""`provision status`: the cluster as EC2 sees it now, and what it has cost so far.

Everything comes from EC2 (by tags), not from the state file: the state file only adds a drift
report when it disagrees. Cost so far is each live resource's hourly price *as recorded in its tag
at launch* times the hours since it was launched (instances) or created (volumes); today's prices
do not rewrite yesterday's bill. Stopped instances bill no compute and count zero; resources
already deleted are not counted.
"""

from __future__ import annotations

import datetime as dt

from contracts.cluster import ClusterState
from foundation.units import hours
from provisioning import tags
from provisioning.aws import Aws
from provisioning.inventory import discover
from provisioning.models import ClusterStatus, ResourceStatus

BILLED_INSTANCE_STATES = ("pending", "running", "stopping", "shutting-down")


def _hours(since: dt.datetime, now: dt.datetime) -> float:
    return max(0.0, hours((now - since).total_seconds()))


def status(
    aws: Aws,
    cluster: str,
    state: ClusterState | None = None,
    state_file: str | None = None,
    now: dt.datetime | None = None,
) -> ClusterStatus:
    now = now or dt.datetime.now(dt.UTC)
    found = discover(aws, cluster)
    rows: list[ResourceStatus] = []
    for i in found.instances:
        t = tags.tags_of(i)
        price, billed = float(t.get(tags.PRICE, 0)), i["State"]["Name"] in BILLED_INSTANCE_STATES
        rows.append(
            ResourceStatus(
                kind="instance",
                id=i["InstanceId"],
                role=t.get(tags.ROLE, "?"),
                node=t.get(tags.NODE),
                state=i["State"]["Name"],
                instance_type=i["InstanceType"],
                zone=i["Placement"]["AvailabilityZone"],
                private_ip=i.get("PrivateIpAddress"),
                public_ip=i.get("PublicIpAddress"),
                version=t.get(tags.VERSION),
                usd_per_hour=price,
                since=i["LaunchTime"],
                cost_usd=round(price * _hours(i["LaunchTime"], now), 4) if billed else 0.0,
            )
        )
    for v in found.volumes:
        t = tags.tags_of(v)
        price = float(t.get(tags.PRICE, 0))
        rows.append(
            ResourceStatus(
                kind="volume",
                id=v["VolumeId"],
                role=t.get(tags.ROLE, "?"),
                node=t.get(tags.NODE),
                state=v["State"],
                zone=v["AvailabilityZone"],
                usd_per_hour=price,
                since=v["CreateTime"],
                cost_usd=round(price * _hours(v["CreateTime"], now), 4),
            )
        )
    for kind, items, key in (
        ("security-group", found.security_groups, "GroupId"),
        ("placement-group", found.placement_groups, "GroupName"),
        ("key-pair", found.key_pairs, "KeyName"),
    ):
        rows += [
            ResourceStatus(
                kind=kind,
                id=item[key],
                role=tags.tags_of(item).get(tags.ROLE, "?"),
                state=item.get("State", "available"),
                usd_per_hour=0.0,
                cost_usd=0.0,
            )
            for item in items
        ]
    plan_ids = {tags.tags_of(i).get(tags.PLAN_ID) for i in found.instances}
    return ClusterStatus(
        name=cluster,
        region=aws.region,
        exists=bool(rows),
        plan_id=next(iter(plan_ids), None) if len(plan_ids) == 1 else None,
        usd_per_hour=round(
            sum(r.usd_per_hour for r in rows if r.kind == "volume" or r.state in BILLED_INSTANCE_STATES), 6
        ),
        cost_so_far_usd=round(sum(r.cost_usd for r in rows), 4),
        resources=rows,
        state_file=state_file,
        drift=_drift(state, {r.id for r in rows if r.kind == "instance"}) if state else [],
    )


def _drift(state: ClusterState, live: set[str]) -> list[str]:
    recorded = {n.instance_id: n.node for n in state.nodes}
    out = [
        f"{node} ({iid}) is in the state file but not live in EC2" for iid, node in recorded.items() if iid not in live
    ]
    out += [f"{iid} is live in EC2 but not in the state file" for iid in sorted(live - set(recorded))]
    return out
