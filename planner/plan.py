"""The planner's boundary models: a recommendation request and the versioned plan it produces.

The same models serve the CLI's ``--json``, the plan file that ``provision up`` reads and the
REST API, so all three share one schema.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from planner.catalog.models import Arch, SnapshotInfo
from planner.costmodel.workload import Workload
from planner.datasets.profile import DatasetProfile
from planner.fileio import atomic_write_text, read_model

PLAN_SCHEMA_VERSION = 1
ModelName = Literal["pipeline", "paper"]
SolverName = Literal["enumerate", "milp"]


class StrictModel(BaseModel):
    """Frozen, and unknown fields are errors: a typo in a request or a plan file is never ignored."""

    model_config = ConfigDict(frozen=True, extra="forbid")


class Constraints(StrictModel):
    budget_usd: float | None = Field(None, gt=0, le=1e9, description="total USD for the whole job")
    deadline_hours: float | None = Field(None, gt=0, le=1e6, description="total wall-clock hours")
    max_hourly_usd: float | None = Field(None, gt=0, le=1e6, description="cluster price cap, USD/h")


class Filters(StrictModel):
    gpu_families: list[str] | None = Field(None, max_length=200, description="learner families, e.g. g4dn, g5")
    memory_families: list[str] | None = Field(None, max_length=200, description="memory-machine families")
    max_memory_gib: float | None = Field(None, gt=0, description="largest RAM per instance")
    arch: Arch | None = Field(None, description="every machine of this architecture")
    exclude: list[str] = Field(default_factory=list, max_length=2000, description="instance types never used")
    max_memory_nodes: int = Field(4, ge=1, le=16, description="largest k of memory machines")


class PlanRequest(StrictModel):
    """Inputs of a recommendation: dataset (a built-in name or an inline profile) and the job."""

    dataset: str | None = Field(None, description="built-in dataset name (see `planner datasets`)")
    profile: DatasetProfile | None = Field(None, description="inline dataset profile instead of a name")
    workload: Workload = Field(default_factory=Workload)
    constraints: Constraints = Field(default_factory=Constraints)
    filters: Filters = Field(default_factory=Filters)
    model: ModelName = "pipeline"
    spot: bool = False
    solver: SolverName = "enumerate"
    top: int = Field(5, ge=1, le=100, description="plans to show; the plan keeps 10 alternatives for failover")

    @model_validator(mode="after")
    def _one_dataset(self) -> PlanRequest:
        if (self.dataset is None) == (self.profile is None):
            raise ValueError("give exactly one of dataset (a built-in name) or profile (an inline profile)")
        return self


class NodeGroup(StrictModel):
    instance_type: str
    count: int = Field(ge=1)
    market: Literal["on-demand", "spot"]
    usd_per_hour_each: float
    vcpus: int
    memory_gib: float
    gpu: str | None = None


class VolumeSpec(StrictModel):
    """One EBS volume per data machine (memory machine, or the learner when alone)."""

    type: Literal["gp3"] = "gp3"
    count: int = Field(ge=1)
    size_gb: int = Field(ge=1)
    iops: int = Field(ge=1)
    throughput_mbps: int = Field(ge=1)
    usd_per_hour_each: float


class ClusterPlan(StrictModel):
    layout: Literal["two-level", "single-machine"]
    learner: NodeGroup
    memory: NodeGroup | None = None
    volume: VolumeSpec
    usd_per_hour: float
    epoch_seconds: float
    startup_seconds: float
    total_hours: float
    total_usd: float
    stages: dict[str, float] = Field(description="per-epoch seconds of each pipeline stage")
    bottleneck: str
    explanation: str = Field(description="why the bottleneck stage takes as long as it does")
    cache_fraction: float | None = None
    hit_rate: float | None = None
    fits: bool = Field(True, description="meets the budget, deadline and hourly cap")

    @property
    def label(self) -> str:
        memory = f" + {self.memory.count}x {self.memory.instance_type}" if self.memory else " alone"
        return f"{self.learner.instance_type}{memory}"


class FrontierPoint(StrictModel):
    total_hours: float
    total_usd: float
    label: str


class Recommendation(StrictModel):
    """A recommendation, and the plan file ``provision up`` reads (schema ``memorybridge.plan``)."""

    kind: Literal["memorybridge.plan"] = "memorybridge.plan"
    schema_version: Literal[1] = PLAN_SCHEMA_VERSION
    plan_id: str = Field(description="digest of the request and the snapshot: same inputs, same id")
    snapshot: SnapshotInfo
    request: PlanRequest
    profile: DatasetProfile
    coefficients_source: str
    feasible: bool
    reason: str | None = Field(None, description="why nothing fits, and what would")
    cheapest_feasible_usd: float | None = Field(None, description="cheapest plan ignoring the budget")
    chosen: ClusterPlan | None = None
    alternatives: list[ClusterPlan] = Field(default_factory=list, description="ranked runners-up (failover order)")
    single_machine: ClusterPlan | None = Field(None, description="the cheapest single GPU machine, for comparison")
    two_level: ClusterPlan | None = Field(None, description="the cheapest two-level cluster, for comparison")
    frontier: list[FrontierPoint] = Field(default_factory=list, description="Pareto frontier of cost vs time")
    warnings: list[str] = Field(default_factory=list)


def write_plan(recommendation: Recommendation, path: str | Path) -> Path:
    return atomic_write_text(path, recommendation.model_dump_json(indent=2) + "\n")


def read_plan(path: str | Path) -> Recommendation:
    return read_model(path, Recommendation, "plan file")
