"""Names and tags: how every resource of a cluster is found again.

Tags are the source of truth (the state file is a convenience that can be lost): ``up`` finds an
existing cluster by them, ``status`` reads cost and roles from them, ``down`` deletes what carries
them. Every resource gets the cluster name, its role, the plan id and rank it was made for, the
hourly price at launch, and the id of the ``up`` run (attempt) that created it, which is what a
rollback deletes.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from foundation.errors import UsageError

PREFIX = "memorybridge:"
CLUSTER = PREFIX + "cluster"
ROLE = PREFIX + "role"
NODE = PREFIX + "node"
PLAN_ID = PREFIX + "plan-id"
PLAN_RANK = PREFIX + "plan-rank"
PRICE = PREFIX + "usd-per-hour"
ATTEMPT = PREFIX + "attempt"
VERSION = PREFIX + "version"  # instances: the MemoryBridge version their boot script installs

NAME_PATTERN = re.compile(r"^[a-z][a-z0-9-]{0,38}[a-z0-9]$")


def check_cluster_name(name: str) -> str:
    """Cluster names become parts of AWS resource names and tag values: keep them plain."""
    if not NAME_PATTERN.match(name):
        raise UsageError(
            f"cluster name {name!r} must be 2-40 characters of a-z, 0-9 and '-', start with a "
            "letter and not end with '-'"
        )
    return name


def resource_name(cluster: str, *parts: str) -> str:
    """AWS-side name of a cluster resource: ``memorybridge-NAME[-PART...]``."""
    return "-".join(("memorybridge", cluster, *parts))


def cluster_tags(
    cluster: str, role: str, plan_id: str, rank: int, usd_per_hour: float, attempt: str, node: str | None = None
) -> dict[str, str]:
    tags = {
        CLUSTER: cluster,
        ROLE: role,
        PLAN_ID: plan_id,
        PLAN_RANK: str(rank),
        PRICE: f"{usd_per_hour:.6f}",
        ATTEMPT: attempt,
        "Name": resource_name(cluster, node) if node else resource_name(cluster, role),
    }
    if node:
        tags[NODE] = node
    return tags


def tag_specification(resource_type: str, tags: Mapping[str, str]) -> dict:
    return {"ResourceType": resource_type, "Tags": [{"Key": k, "Value": v} for k, v in tags.items()]}


def filters(cluster: str, attempt: str | None = None) -> list[dict]:
    """EC2 ``Filters`` that select a cluster's resources (or only those one attempt created)."""
    out = [{"Name": f"tag:{CLUSTER}", "Values": [cluster]}]
    if attempt:
        out.append({"Name": f"tag:{ATTEMPT}", "Values": [attempt]})
    return out


def tags_of(resource: Mapping) -> dict[str, str]:
    """A described resource's ``Tags`` list as a dict."""
    return {t["Key"]: t["Value"] for t in resource.get("Tags") or []}
