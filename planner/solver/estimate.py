"""Price one given cluster (no search): the API's /v1/estimates and `planner estimate`."""

from __future__ import annotations

import datetime as dt

import numpy as np
from pydantic import Field, model_validator

from contracts.calibration import DEFAULT_COEFFICIENTS, Coefficients
from contracts.plan import (
    GP3_MAX_IOPS,
    GP3_MAX_MBPS,
    GP3_MBPS_PER_IOPS,
    GP3_MIN_IOPS,
    GP3_MIN_MBPS,
    MAX_MEMORY_NODES,
    ClusterPlan,
    ModelName,
    PlanRequest,
    SnapshotInfo,
    Unrunnable,
    UnrunnableReason,
)
from contracts.profile import DatasetName, DatasetProfile
from contracts.workload import Workload
from foundation.errors import UsageError
from foundation.models import StrictModel
from planner.catalog.models import InstanceType
from planner.catalog.snapshot import Catalog, load_catalog
from planner.costmodel.evaluation import FEASIBLE, Clusters
from planner.solver.describe import describe
from planner.solver.pricing import resolve_profile
from planner.solver.solution import Solution


class EstimateRequest(StrictModel):
    """One cluster to price: learner, optional memory machines, the gp3 volume, and the job."""

    dataset: DatasetName | None = Field(None, description="built-in dataset name, in any case")
    profile: DatasetProfile | None = Field(None, description="inline dataset profile instead of a name")
    learner: str = Field(description="GPU instance type of the learning machine", examples=["g4dn.xlarge"])
    memory: str | None = Field(
        None, description="GPU-less memory-machine type; omit for a single machine", examples=["r8g.2xlarge"]
    )
    memory_count: int = Field(
        1, ge=1, le=MAX_MEMORY_NODES, description="number of memory machines (ignored without memory)"
    )
    volume_throughput_mbps: int = Field(
        GP3_MIN_MBPS, ge=GP3_MIN_MBPS, le=GP3_MAX_MBPS, description="gp3 throughput per volume"
    )
    volume_iops: int = Field(GP3_MIN_IOPS, ge=GP3_MIN_IOPS, le=GP3_MAX_IOPS, description="gp3 IOPS per volume")
    workload: Workload = Field(default_factory=Workload, description="the training job, as a plan request's")
    model: ModelName = Field(
        "pipeline", description="cost model: pipeline (stage by stage) or paper (MemoryBridge paper, eqs. 3-8)"
    )
    spot: bool = Field(False, description="price spot instances, as a plan request's spot does")
    ena_express: bool = Field(
        False, description="enable ENA Express when the learner and memory types both support it (25 Gbit/s per flow)"
    )

    @model_validator(mode="after")
    def _valid(self) -> EstimateRequest:
        if (self.dataset is None) == (self.profile is None):
            raise ValueError("give exactly one of dataset (a built-in name) or profile (an inline profile)")
        if self.volume_throughput_mbps > GP3_MBPS_PER_IOPS * self.volume_iops:
            raise ValueError(
                f"gp3 allows at most {GP3_MBPS_PER_IOPS:g} MB/s per provisioned IOPS: raise volume_iops "
                f"to {round(self.volume_throughput_mbps / GP3_MBPS_PER_IOPS)} or lower volume_throughput_mbps"
            )
        return self


class Estimate(StrictModel):
    """The priced cluster. When it cannot run the job, ``unrunnable`` says why as data; ``reason``
    repeats its description for clients that read text only (as Recommendation.reason does)."""

    snapshot: SnapshotInfo
    request: EstimateRequest
    profile: DatasetProfile
    feasible: bool
    reason: str | None = Field(None, description="why this cluster cannot run the job, in words")
    unrunnable: UnrunnableReason | None = Field(None, description="why this cluster cannot run the job, as a code")
    plan: ClusterPlan


def estimate(
    request: EstimateRequest,
    *,
    catalog: Catalog | None = None,
    coefficients: Coefficients = DEFAULT_COEFFICIENTS,
    today: dt.date | None = None,
) -> Estimate:
    """Price one cluster the caller chose, with the models ``recommend`` ranks every cluster by.

    Args:
        request: The cluster (learner, memory machines, gp3 volume) and the job.
        catalog: The price snapshot to price with; None loads the shipped one.
        coefficients: The pipeline model's coefficients; by default the shipped ones.
        today: The date the snapshot's age (and staleness) is counted to; None for today.

    Raises:
        UsageError: The learner has no usable GPU, the memory type has one, or a type has no
            price in the snapshot for the market asked.
    """
    catalog = catalog or load_catalog()
    learner = catalog.instance(request.learner)
    if not learner.has_gpu:
        raise UsageError(f"learner: {learner.name} has no GPU; pick a GPU type such as g4dn.xlarge")
    if learner.gpu_model not in coefficients.gpu_tflops:
        # Without a throughput the models price nothing (NaN): refuse, as for a type without a GPU.
        raise UsageError(
            f"learner: {learner.name}'s {learner.gpu_model} GPU cannot run PyG's CUDA path (or has no "
            "known throughput); pick an NVIDIA type such as g4dn.xlarge"
        )
    _require_price(learner, "learner", request.spot)
    count, memory_index = 0, -1
    index = {inst.name: i for i, inst in enumerate(catalog.columns.instances)}
    if request.memory is not None:
        memory = catalog.instance(request.memory)
        if memory.has_gpu:
            raise UsageError(f"memory: {memory.name} has a GPU; memory machines are GPU-less types such as r8g.2xlarge")
        _require_price(memory, "memory", request.spot)
        count = request.memory_count
        memory_index = index[request.memory] if count else -1
    clusters = Clusters(
        learner=np.array([index[request.learner]]),
        memory=np.array([memory_index]),
        count=np.array([count]),
        volume_mbps=np.array([float(request.volume_throughput_mbps)]),
        volume_iops=np.array([float(request.volume_iops)]),
    )
    as_plan = PlanRequest(
        dataset=request.dataset,
        profile=request.profile,
        workload=request.workload,
        model=request.model,
        spot=request.spot,
        ena_express=request.ena_express,
    )
    sol = Solution(as_plan, catalog, coefficients, clusters=clusters)
    code = int(sol.ev.infeasible[0])
    unrunnable = UnrunnableReason.of(Unrunnable(code)) if code != FEASIBLE else None
    return Estimate(
        snapshot=catalog.info(today),
        request=request,
        profile=resolve_profile(as_plan),
        feasible=bool(sol.ev.feasible[0]),
        reason=unrunnable.description if unrunnable else None,
        unrunnable=unrunnable,
        plan=describe(sol, 0),
    )


def _require_price(instance: InstanceType, role: str, spot: bool) -> None:
    """An estimate is a price: a type the snapshot has no price for cannot be estimated."""
    if instance.price(spot) is None:
        market = "spot" if spot else "on-demand"
        raise UsageError(
            f"{role}: the snapshot has no {market} price for {instance.name}; pick a priced type "
            "(`planner instances` lists them)"
        )
