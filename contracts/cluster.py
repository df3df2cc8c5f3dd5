"""The cluster state file (schema ``memorybridge.cluster`` v1): what `provision up` made, for
`provision run`, `status` and `down`, and the hosts `remotegnn launch --hostfile` runs on.

A cache of what the EC2 tags say (`status` and `down` work without it); it embeds the plan the
cluster was launched from, so a job on it knows the plan's stage times, cache and volume.
"""

from __future__ import annotations

import datetime as dt
from typing import Final, Literal

from pydantic import Field

from contracts.plan import Arch, ClusterPlan
from foundation.models import StrictModel

STATE_SCHEMA_VERSION: Final = 1
Role = Literal["learner", "memory"]


class ShippedWheel(StrictModel):
    """The MemoryBridge wheel every machine of the cluster installs, and nothing else of that name."""

    file: str = Field(pattern=r"^memorybridge-[A-Za-z0-9_.+!-]+\.whl$", description="its file name")
    sha256: str = Field(pattern=r"^[0-9a-f]{64}$", description="what the boot script checks before installing it")
    version: str = Field(min_length=1)


class NodeState(StrictModel):
    node: str
    role: Role
    instance_id: str
    instance_type: str
    arch: Arch
    market: Literal["on-demand", "spot"]
    private_ip: str
    public_ip: str | None
    usd_per_hour: float
    gpus: int
    slots: int
    volume_id: str | None = None


class ClusterState(StrictModel):
    """The cluster state file. A cache of what the tags say: `status` and `down` work without it."""

    kind: Literal["memorybridge.cluster"] = "memorybridge.cluster"
    schema_version: Literal[1] = STATE_SCHEMA_VERSION
    name: str
    region: str
    availability_zone: str
    plan_id: str
    plan_rank: int = Field(description="0: the plan file's chosen plan; n: its n-th alternative")
    plan_label: str
    usd_per_hour: float = Field(description="the cluster's price at launch, USD/h (instances and data volumes)")
    predicted_total_usd: float
    security_group_id: str
    key_name: str
    placement_group: str
    ssh_user: str
    hostfile: str
    written_at: dt.datetime
    nodes: list[NodeState] = Field(description="learner first")
    plan: ClusterPlan | None = Field(
        None, description="the launched plan (stage times, cache share, volume), for `provision run` and status"
    )
    feature_bytes: int | None = Field(None, description="the dataset's feature matrix, bytes (sizes the caches)")
    wheel: ShippedWheel | None = Field(
        None, description="the MemoryBridge wheel the machines install (None: a cluster from before wheels shipped)"
    )
