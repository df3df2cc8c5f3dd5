"""What exists: a cluster's resources found by their tags, and sets of resource ids to delete.

Tags, not the state file, are the truth: a crashed ``up``, a lost state file or a create call whose
response never arrived still leave tagged resources, and ``down``/rollback find them here.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields

from provisioning import tags
from provisioning.aws import Aws

# Everything but "terminated": an instance that is shutting down still holds its security group.
LIVE_INSTANCE_STATES = ["pending", "running", "stopping", "stopped", "shutting-down"]


@dataclass
class ResourceIds:
    """Ids (names for placement groups and key pairs) of resources, in creation order per kind."""

    instances: list[str] = field(default_factory=list)
    volumes: list[str] = field(default_factory=list)
    security_groups: list[str] = field(default_factory=list)
    placement_groups: list[str] = field(default_factory=list)
    key_pairs: list[str] = field(default_factory=list)

    def add(self, kind: str, ident: str) -> None:
        items = getattr(self, kind)
        if ident not in items:
            items.append(ident)

    def merge(self, other: ResourceIds) -> ResourceIds:
        out = ResourceIds(**{f.name: list(getattr(self, f.name)) for f in fields(self)})
        for kind, ident in other.entries():
            out.add(kind, ident)
        return out

    def minus(self, other: ResourceIds) -> ResourceIds:
        return ResourceIds(
            **{f.name: [i for i in getattr(self, f.name) if i not in getattr(other, f.name)] for f in fields(self)}
        )

    def zonal(self) -> ResourceIds:
        """Only what belongs to one zone attempt (instances, volumes, placement groups)."""
        return ResourceIds(
            instances=list(self.instances), volumes=list(self.volumes), placement_groups=list(self.placement_groups)
        )

    def entries(self) -> list[tuple[str, str]]:
        return [(f.name, ident) for f in fields(self) for ident in getattr(self, f.name)]

    def labels(self) -> list[str]:
        """'instance i-0abc', 'security-group sg-0def', ... for messages and reports."""
        return [f"{kind.removesuffix('s').replace('_', '-')} {ident}" for kind, ident in self.entries()]

    def is_empty(self) -> bool:
        return not self.entries()


@dataclass
class Inventory:
    """Described resources (EC2's dicts) of one cluster."""

    instances: list[dict] = field(default_factory=list)
    volumes: list[dict] = field(default_factory=list)
    security_groups: list[dict] = field(default_factory=list)
    placement_groups: list[dict] = field(default_factory=list)
    key_pairs: list[dict] = field(default_factory=list)

    def ids(self) -> ResourceIds:
        return ResourceIds(
            instances=[i["InstanceId"] for i in self.instances],
            volumes=[v["VolumeId"] for v in self.volumes],
            security_groups=[g["GroupId"] for g in self.security_groups],
            placement_groups=[g["GroupName"] for g in self.placement_groups],
            key_pairs=[k["KeyName"] for k in self.key_pairs],
        )

    def is_empty(self) -> bool:
        return self.ids().is_empty()


def discover(aws: Aws, cluster: str, attempt: str | None = None) -> Inventory:
    """Every live resource tagged for ``cluster`` (and, given ``attempt``, created by that run)."""
    where = tags.filters(cluster, attempt)
    reservations = aws.items(
        "describe_instances",
        "Reservations",
        Filters=[*where, {"Name": "instance-state-name", "Values": LIVE_INSTANCE_STATES}],
    )
    return Inventory(
        instances=[i for r in reservations for i in r["Instances"]],
        volumes=[v for v in aws.items("describe_volumes", "Volumes", Filters=where) if v["State"] != "deleted"],
        security_groups=aws.items("describe_security_groups", "SecurityGroups", Filters=where),
        placement_groups=[
            g
            for g in aws.call("describe_placement_groups", Filters=where)["PlacementGroups"]
            if g.get("State") != "deleted"
        ],
        key_pairs=aws.call("describe_key_pairs", Filters=where)["KeyPairs"],
    )


def cluster_names(aws: Aws) -> list[str]:
    """Names of the clusters with live resources in this region."""
    tagged = aws.items("describe_tags", "Tags", Filters=[{"Name": "key", "Values": [tags.CLUSTER]}])
    return sorted(name for name in {t["Value"] for t in tagged} if not discover(aws, name).is_empty())
