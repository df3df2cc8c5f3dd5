"""What each `provision` command reports with ``--json`` (``up``, ``status``, ``down``, a dry run),
and the machines a plan asks for, made concrete for a region.

The cluster state file ``provision up`` writes is a shared format: :mod:`contracts.cluster`.
They are frozen and reject unknown fields, like every boundary model.
"""

from __future__ import annotations

import datetime as dt
from typing import Literal

from pydantic import Field

from contracts.cluster import Arch, ClusterState, Role
from contracts.plan import ClusterPlan, Recommendation
from contracts.runs import JobProgress
from foundation.models import StrictModel

# gp3 whatever the image says: the baseline 3,000 IOPS and 125 MB/s at no extra cost, and cheaper per GB than gp2.
ROOT_VOLUME_TYPE = "gp3"

ResourceKind = Literal["instance", "volume", "security-group", "placement-group", "key-pair"]


class DataVolume(StrictModel):
    """The encrypted gp3 volume of one data machine, from the plan's VolumeSpec."""

    size_gb: int
    iops: int
    throughput_mbps: int
    usd_per_hour: float


class RootVolume(StrictModel):
    """An instance's root volume as its image defines it; launched encrypted, as gp3, deleted with the instance."""

    device_name: str = Field(description="the image's root device name (/dev/xvda on Amazon Linux 2023)")
    size_gb: int = Field(description="the image's root snapshot size")
    volume_type: str = ROOT_VOLUME_TYPE


class NodeSpec(StrictModel):
    """One machine a plan asks for, made concrete for a region (architecture, image, MPI slots)."""

    node: str = Field(description="learner-0, memory-0, memory-1, ...")
    role: Role
    instance_type: str
    market: Literal["on-demand", "spot"]
    usd_per_hour: float
    arch: Arch
    gpus: int
    slots: int = Field(
        description="MPI processes this host runs: a learner one per GPU the plan trains on (and a lone machine "
        "one more, its memory rank), a memory machine one"
    )
    ami: str
    root_volume: RootVolume
    volume: DataVolume | None = None
    kms_key_id: str | None = Field(
        None, description="KMS key of its root and data volumes; None: the account's default EBS key"
    )
    ena_express: bool = Field(False, description="ENA Express on its network interface (the plan priced it)")


class LaunchOption(StrictModel):
    """A plan of the plan file (rank 0 = chosen) with its machines and the zones to try, in order."""

    rank: int
    plan: ClusterPlan
    zones: list[str]
    nodes: list[NodeSpec]


class SkippedPlan(StrictModel):
    rank: int
    label: str
    reason: str


class PlannedResource(StrictModel):
    """Resources of one kind that `provision up` would create, as the plan file alone says them."""

    kind: ResourceKind
    name: str = Field(description="the AWS-side name or the nodes it is for ('memory-0 ... memory-1')")
    count: int = 1
    usd_per_hour_each: float = Field(0.0, description="the plan's price (0 for free resources and root volumes)")
    detail: str = Field(description="type, market, size, rules: what it is, in words")


class PlannedCluster(StrictModel):
    """What `provision up` would create when the plan it tries first launches."""

    rank: int = Field(description="0: the plan file's chosen plan; n: its n-th alternative")
    label: str
    usd_per_hour: float
    total_usd: float
    resources: list[PlannedResource]


class DryRun(StrictModel):
    """What `provision up` would create, and in which order it would fail over; nothing is created."""

    cluster: str
    region: str
    existing: bool | None = Field(
        description="resources tagged for this cluster exist; up would converge to them (None: not asked)"
    )
    creates: PlannedCluster
    options: list[LaunchOption] = Field(
        description="each plan up may launch, in failover order, checked against the region (empty: not asked)"
    )
    skipped: list[SkippedPlan]
    not_checked: list[str] = Field(
        default_factory=list,
        description="what a dry run with AWS credentials asks the region and this one did not (no credentials)",
    )


class Attempt(StrictModel):
    """One (plan, zone) try of `provision up`, and how it ended."""

    rank: int
    label: str
    zone: str | None
    outcome: Literal["launched", "capacity", "unavailable"]
    detail: str = ""


class UpResult(StrictModel):
    state: ClusterState
    state_file: str
    attempts: list[Attempt]
    created: list[str] = Field(description="resources this run created (empty when the cluster already existed)")


class ResourceStatus(StrictModel):
    kind: ResourceKind
    id: str
    role: str
    node: str | None = None
    state: str
    instance_type: str | None = None
    zone: str | None = None
    private_ip: str | None = None
    public_ip: str | None = None
    version: str | None = Field(None, description="instances: the MemoryBridge version their boot script installs")
    usd_per_hour: float = Field(description="price recorded in the resource's tag at launch")
    since: dt.datetime | None = Field(None, description="launch (instances) or creation (volumes) time")
    cost_usd: float = Field(description="usd_per_hour x hours billed so far (0 for stopped instances)")


class ClusterStatus(StrictModel):
    name: str
    region: str
    exists: bool
    plan_id: str | None
    usd_per_hour: float = Field(description="what the cluster costs per hour now, at launch prices")
    cost_so_far_usd: float
    resources: list[ResourceStatus]
    state_file: str | None = Field(None, description="the state file, when there is one")
    drift: list[str] = Field(default_factory=list, description="where the state file and EC2 disagree")
    job: JobProgress | None = Field(None, description="the running `provision run` job's latest epoch")


class DownResult(StrictModel):
    name: str
    region: str
    deleted: list[str]
    state_file_removed: bool


class LaunchInputs(StrictModel):
    """What `up` was given besides the wheel (which the state file names), kept beside the state
    file so that `provision run --recover` can call it again to replace a lost machine."""

    plan: Recommendation = Field(description="the plan file, failover alternatives included")
    public_key: str
    public_key_file: str
    ssh_cidrs: list[str] = Field(default_factory=list)
    ami_overrides: dict[Role, str] = Field(default_factory=dict)
    ssh_user: str
    kms_key_id: str | None = None
    requires: list[str] = Field(default_factory=list, description="the wheel's Requires-Dist lines")
