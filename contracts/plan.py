"""A recommendation request and the versioned plan it produces (schema ``memorybridge.plan`` v1).

The same models serve `planner recommend --json`, the plan file that `provision up` reads and the
REST API, so all three share one schema; the cluster state embeds the plan it was built from.
"""

from __future__ import annotations

import datetime as dt
from enum import IntEnum, StrEnum
from pathlib import Path
from typing import Any, Final, Literal

from pydantic import Field, ValidationInfo, field_validator, model_validator

from contracts.profile import DatasetName, DatasetProfile
from contracts.shards import ShardLayoutName
from contracts.workload import (
    FULL_GRAPH_METHODS,
    SLICEGCN_GNN,
    FullGraphJob,
    Method,
    SamplingMode,
    WorkersIn,
    Workload,
)
from foundation.fileio import read_model, write_model
from foundation.models import StrictModel

PLAN_SCHEMA_VERSION: Final = 1
# The grid holds every k from 1 to max_memory_nodes, so each k adds a layer as large as k = 1:
# 4 keeps a full-catalog request near 0.2 s; 16 (four times the grid) is there for graphs that need it.
DEFAULT_MAX_MEMORY_NODES: Final = 4
MAX_MEMORY_NODES: Final = 16
ModelName = Literal["pipeline", "paper"]
FullGraphMethodName = Literal["standard", "retexo", "slicegcn"]
SolverName = Literal["enumerate", "milp"]
Arch = Literal["x86_64", "arm64"]
# gp3's provisioning limits per volume (the paper's Table I; the ratio from AWS's EBS docs). The
# candidate grid, the pinned-volume filters and the estimate request all check against these.
GP3_MIN_MBPS: Final = 125
GP3_MAX_MBPS: Final = 1000
GP3_MIN_IOPS: Final = 3000
GP3_MAX_IOPS: Final = 16000
GP3_MBPS_PER_IOPS: Final = 0.25
RANKING_RULE: Final = (
    "cheaper first, then faster, then cheaper per hour, then fewer machines, then instance names A to Z "
    "(the learner's first), then fewer volume MB/s, then fewer IOPS"
)
"""How every list of plans is ordered, ties included, so the same request always ranks the same
plans the same way (the planner's Priced.order implements it; every interface states it)."""


class SnapshotInfo(StrictModel):
    """What every answer says about the snapshot it was computed from."""

    region: str
    retrieved_on: dt.date
    age_days: int
    stale: bool = Field(description="older than the staleness limit (30 days): prices may have moved")
    sha256: str = Field(description="digest of the snapshot file, so an answer can be reproduced")


class Unrunnable(IntEnum):
    """Why a candidate cluster cannot run the job at all (its ``description`` is shown to users).

    Definition order is precedence: a cluster that fails several checks gets the first reason
    listed here (the planner's ``first_unrunnable``), so no cost model orders its checks by itself.
    """

    NO_PRICE = 1
    UNSUPPORTED_GPU = 2
    STRUCTURE_EXCEEDS_RAM = 3
    BATCH_EXCEEDS_GPU = 4
    SEVERAL_MEMORY_MACHINES = 5
    VOLUME_TOO_LARGE = 6
    LEARNER_CACHE_EXCEEDS_RAM = 7
    PARTITION_EXCEEDS_RAM = 8
    SLICE_EXCEEDS_RAM = 9
    ONE_LEARNER_ALONE = 10
    GPU_CACHE_EXCEEDS_GPU = 11
    CSC_EXCEEDS_LEARNER_RAM = 12

    @property
    def description(self) -> str:
        return UNRUNNABLE_DESCRIPTIONS[self]


UNRUNNABLE_DESCRIPTIONS = {
    Unrunnable.NO_PRICE: "no price for this market in the snapshot",
    Unrunnable.UNSUPPORTED_GPU: "the learner's GPU is not in the model's GPU table "
    "(only NVIDIA GPUs run PyG's CUDA path)",
    Unrunnable.STRUCTURE_EXCEEDS_RAM: "the graph structure does not fit the data machine's RAM",
    Unrunnable.BATCH_EXCEEDS_GPU: "a mini-batch does not fit the learner's GPU memory",
    Unrunnable.SEVERAL_MEMORY_MACHINES: "the paper model describes one memory machine only",
    Unrunnable.ONE_LEARNER_ALONE: "a single machine is one learner: several learner machines share memory machines",
    Unrunnable.GPU_CACHE_EXCEEDS_GPU: "the GPU cache asked for does not fit the learner's GPU memory beside the "
    "model, its gradients and optimizer state, and the largest batch",
    Unrunnable.CSC_EXCEEDS_LEARNER_RAM: "learner-side sampling: the graph's CSC does not fit the learner's free "
    "RAM (sample on the memory machines instead: sampling memory or auto)",
    Unrunnable.VOLUME_TOO_LARGE: "the volume would exceed the volume type's size limit",
    Unrunnable.LEARNER_CACHE_EXCEEDS_RAM: "the learner cache asked for does not fit the learner's free RAM",
    Unrunnable.PARTITION_EXCEEDS_RAM: "a worker's partition, its halo rows and the training activations do not fit "
    "its RAM",
    Unrunnable.SLICE_EXCEEDS_RAM: "a worker's copy of the graph structure, its feature slice and the training "
    "activations do not fit its RAM",
}


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
    max_memory_nodes: int = Field(
        DEFAULT_MAX_MEMORY_NODES,
        ge=1,
        le=MAX_MEMORY_NODES,
        description=f"largest k of memory machines (up to {MAX_MEMORY_NODES}; each k adds a grid layer)",
    )
    # IOPS before MB/s: the MB/s check reads the IOPS (gp3 ties throughput to provisioned IOPS).
    volume_iops: int | None = Field(
        None,
        ge=GP3_MIN_IOPS,
        le=GP3_MAX_IOPS,
        description="use only gp3 volumes with exactly these provisioned IOPS (the volume you have or want)",
    )
    volume_mbps: int | None = Field(
        None,
        ge=GP3_MIN_MBPS,
        le=GP3_MAX_MBPS,
        description="use only gp3 volumes with exactly this throughput, MB/s (e.g. 125, gp3's baseline)",
    )

    @field_validator("volume_mbps")
    @classmethod
    def _throughput_within_iops(cls, mbps: int | None, info: ValidationInfo) -> int | None:
        iops = info.data.get("volume_iops")
        if mbps is not None and iops is not None and mbps > GP3_MBPS_PER_IOPS * iops:
            raise ValueError(
                f"gp3 gives at most {GP3_MBPS_PER_IOPS:g} MB/s per provisioned IOPS: {mbps} MB/s needs at least "
                f"{round(mbps / GP3_MBPS_PER_IOPS)} IOPS"
            )
        return mbps


class PlanRequest(StrictModel):
    """Inputs of a recommendation: dataset (a built-in name or an inline profile) and the job."""

    dataset: DatasetName | None = Field(
        None, description="built-in dataset name (see `planner datasets`), in any case: papers100m is papers100M"
    )
    profile: DatasetProfile | None = Field(None, description="inline dataset profile instead of a name")
    workload: Workload = Field(default_factory=Workload)
    method: Method = Field(
        "sampled",
        description="sampled (mini-batches streamed to a GPU learner), or full-graph training on GPU-less workers: "
        "over a partitioned graph, standard (boundary exchanges every round) or retexo (one exchange per layer), or "
        "over column slices of the features, slicegcn (the whole graph and one slice per worker)",
    )
    full_graph: FullGraphJob = Field(
        default_factory=FullGraphJob, description="the full-graph job (standard, retexo, slicegcn)"
    )
    constraints: Constraints = Field(default_factory=Constraints)
    filters: Filters = Field(default_factory=Filters)
    model: ModelName = "pipeline"
    spot: bool = Field(
        False,
        description="price spot instances with their expected interruptions (full-graph methods keep no "
        "checkpoints, so each starts the job over), each cluster on spot only where that stays cheaper than on demand",
    )
    ena_express: bool = Field(
        False,
        description="enable ENA Express on two-level plans whose learner and memory types both support it: one flow "
        "then carries 25 Gbit/s instead of 10 (AWS charges nothing for it)",
    )
    solver: SolverName = "enumerate"
    top: int = Field(5, ge=1, le=100, description="plans to show; the plan keeps 10 alternatives for failover")

    @model_validator(mode="before")
    @classmethod
    def _slicegcn_trains_gcn(cls, data: Any) -> Any:
        """A slicegcn job that names no GNN is a GCN: the job's default (sage) is the partitioned
        methods', and SliceGCN's workers train GCNs only, so the request says what is priced."""
        if not isinstance(data, dict) or data.get("method") != "slicegcn":
            return data
        job = data.get("full_graph", {})
        if isinstance(job, FullGraphJob) and "gnn" not in job.model_fields_set:
            return {**data, "full_graph": job.model_copy(update={"gnn": SLICEGCN_GNN})}
        if isinstance(job, dict) and "gnn" not in job:
            return {**data, "full_graph": {**job, "gnn": SLICEGCN_GNN}}
        return data

    @model_validator(mode="after")
    def _one_dataset(self) -> PlanRequest:
        if (self.dataset is None) == (self.profile is None):
            raise ValueError("give exactly one of dataset (a built-in name) or profile (an inline profile)")
        return self

    @model_validator(mode="after")
    def _full_graph_consistent(self) -> PlanRequest:
        job = self.full_graph
        if job.feature_fusion and self.method != "slicegcn":
            raise ValueError(f"feature fusion applies to method slicegcn only, not {self.method}")
        if self.workload.learner_machines > 1 and (self.full_graph_method or self.model == "paper"):
            raise ValueError(
                "learner_machines: several learner machines are priced by the pipeline model for sampled training "
                "only; leave it at 1 for the paper model and the full-graph methods"
            )
        if not self.full_graph_method:
            if job != FullGraphJob():
                raise ValueError(
                    "the full-graph settings (workers, rounds, GNN, where the workers are) apply to methods standard "
                    "and retexo (a partition per worker) and slicegcn (a feature slice per worker); choose one of "
                    "them, or leave the settings out for sampled training"
                )
            return self
        if self.model == "paper":
            raise ValueError(f"the paper model prices sampled training only, not method {self.method}")
        if self.filters.gpu_families:
            raise ValueError(f"method {self.method} trains on GPU-less workers: give no GPU families")
        if self.method == "slicegcn" and job.gnn != SLICEGCN_GNN:
            raise ValueError(
                f"method slicegcn trains a GCN on each feature slice (the SliceGCN paper's model), not {job.gnn}: "
                "make the GNN gcn or leave it out"
            )
        if job.gnn == "gat" and job.layers > 1 and self.workload.hidden_dim % job.heads:
            raise ValueError(
                f"GAT splits the hidden width ({self.workload.hidden_dim}) over its heads ({job.heads}): "
                "make the width a multiple of the heads"
            )
        return self

    @property
    def full_graph_method(self) -> bool:
        return self.method in FULL_GRAPH_METHODS


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


class DataPath(StrictModel):
    """Where a pipeline plan's feature reads are served, and what crosses the link each epoch.

    Shares are of all feature reads of an epoch and add up to 1: the learner's own cache (never
    sent), the data machines' RAM caches, and their volumes. Absent from plans of the paper model.
    """

    learner_cache_gib: float = Field(0.0, ge=0, description="feature rows the learner caches, GiB (0: none)")
    learner_free_gib: float = Field(
        0.0,
        ge=0,
        description="learner RAM a cache could use: after the OS, the training process, in-flight batches and, "
        "where the learner samples, its CSC",
    )
    learner_csc_gib: float = Field(
        0.0, ge=0, description="learner RAM the graph's CSC takes where the learner samples, GiB (0: it does not)"
    )
    learner_cache_fraction: float = Field(0.0, ge=0, le=1, description="share of feature rows the learner caches")
    served_by_learner: float = Field(0.0, ge=0, le=1, description="share of feature reads the learner's cache serves")
    served_by_memory: float = Field(
        0.0, ge=0, le=1, description="share of feature reads the data machines' RAM caches serve (sent over the link)"
    )
    served_by_volume: float = Field(0.0, ge=0, le=1, description="share of feature reads that miss every cache")
    memory_hit_rate: float = Field(
        0.0, ge=0, le=1, description="of the feature reads that cross the link, the share the RAM caches serve"
    )
    wire_dtype: Literal["float32", "float16", "bfloat16"] | None = Field(
        None, description="precision of the feature rows that cross the link (none on a single machine)"
    )
    link_gbit_per_s: float = Field(
        0.0,
        ge=0,
        description="the link priced between the memory machines and the learner: the smaller of the learner's "
        "baseline and the memory machines' combined, each at most flows x AWS's per-flow cap (0 on one machine)",
    )
    flows: int = Field(1, ge=1, description="TCP flows each memory machine streams over (`remotegnn launch --flows`)")
    ena_express: bool = Field(
        False,
        description="the link runs ENA Express (asked for, and both types support it): priced at 25 Gbit/s per flow, "
        "and `provision up` enables it on every machine",
    )
    sampling: SamplingMode | None = Field(
        None,
        description="who samples the batches: memory (the memory machines send compact frames) or learner (it "
        "samples on its own CSC and asks for the rows it lacks by id); none on a single machine",
    )
    shard_layout: ShardLayoutName | None = Field(
        None,
        description="how feature rows are dealt to the memory machines (`remotegnn serve --layout`): striped, "
        "range or modulo; none on a single machine, which holds every row",
    )
    startup_read_gb_per_machine: float = Field(
        0.0,
        ge=0,
        description="GB each data machine (a memory machine, or the learner alone) reads from its volume at "
        "start-up: the structure and the read-ahead windows of the feature file that its caches' fill needs",
    )
    startup_read_seconds: float = Field(
        0.0,
        ge=0,
        description="seconds that read takes: at the volume's rate, or one core's sweep into RAM where that is "
        "slower (0 in plans from before it was priced)",
    )
    startup_fixed_seconds: float = Field(
        0.0,
        ge=0,
        description="start-up seconds besides the reads: launching the job and each data machine choosing its "
        "caches (0 in plans from before they were priced)",
    )
    staged_gb_per_machine: float = Field(
        0.0,
        ge=0,
        description="GB staging copies to each data machine's volume: the structure and the feature rows it holds "
        "in file order (its own part under striped and range, the largest where parts differ; the whole file "
        "under modulo or on one machine)",
    )
    wire_gb_per_epoch: float = Field(
        0.0, ge=0, description="GB crossing the link per epoch: feature rows, and ids, edges and labels (or requests)"
    )
    wire_feature_gb_per_epoch: float = Field(0.0, ge=0, description="of which feature rows, GB")
    wire_id_gb_per_epoch: float = Field(
        0.0,
        ge=0,
        description="of which compact ids, edge counts and sources and labels (memory sampling) or the ids of the "
        "rows the learner asks for (learner sampling), GB",
    )
    gpu_cache_gib: float = Field(
        0.0, ge=0, description="feature rows each training GPU keeps in its memory, GiB (0: none)"
    )
    gpu_cache_free_gib: float = Field(
        0.0,
        ge=0,
        description="the most a GPU cache may take: one GPU's memory less the model, its gradients and optimizer "
        "state, the largest batch and a margin (what gpu_cache_gib=auto takes)",
    )
    served_by_gpu: float = Field(
        0.0, ge=0, le=1, description="of served_by_learner, the share of feature reads the GPUs' caches serve"
    )


class BatchFigures(StrictModel):
    """One sampled mini-batch as the plan prices it, and what it moves to the GPUs."""

    input_nodes: float = Field(ge=0, description="distinct nodes per batch, every hop (the rows of its x)")
    edges: float = Field(ge=0, description="sampled edges per batch, every hop")
    batches_per_epoch: int = Field(ge=0)
    host_to_device_gb_per_epoch: float = Field(
        ge=0, description="feature rows copied from host to GPU memory per epoch: every read the GPU caches miss"
    )


class SpotRisk(StrictModel):
    """What spot interruptions add to a plan priced for spot, and whether spot still paid."""

    runs_spot: bool = Field(description="false: after its interruptions spot cost more, so the plan runs on demand")
    interruptions: float = Field(ge=0, description="interruptions expected over the job on spot")
    recovery_seconds: float = Field(
        ge=0,
        description="each one's cost: a replacement booted, the start-up again, and half a checkpoint interval "
        "(or, where the job starts over, the work done so far as well)",
    )
    starts_over: bool = Field(
        False, description="the method keeps no checkpoints (full-graph training): an interruption starts the job over"
    )
    added_hours: float = Field(ge=0, description="what recoveries add to the job on spot")
    spot_usd: float = Field(description="the job's expected bill on spot, recoveries included")
    on_demand_usd: float = Field(description="the same cluster's bill on demand")
    bands: dict[str, str] = Field(
        description="each instance type's share of spot instances AWS reclaims in a month, as the snapshot says"
    )


class MethodFigures(StrictModel):
    """One full-graph procedure on a plan's cluster, for side-by-side comparison."""

    method: FullGraphMethodName
    rounds: int = Field(description="rounds run (RETEXO: R for each of the K layers; SliceGCN: its epochs)")
    data_volume_gb: float = Field(
        description="the RETEXO paper's Eq. 2: bytes sent plus bytes received, GB (SliceGCN: its worker-master "
        "messages counted by Eq. 2's convention, once each)"
    )
    transfer_gb: float = Field(description="GB that cross the network, each counted once (validation exchanges too)")
    transfer_usd: float = Field(description="what moving them costs where the workers are")
    total_hours: float
    total_usd: float = Field(description="instances, volumes and data transfer")
    runnable: bool = Field(True, description="the procedure fits this cluster's RAM (its figures are moot if not)")


class FullGraphPath(StrictModel):
    """What a full-graph plan moves between its workers, and what that costs.

    ``boundary_rows``, ``boundary_measured`` and ``gamma`` describe a partition of the nodes: for
    slicegcn, which has none, they are those of the partitioned procedures priced beside it.
    """

    method: FullGraphMethodName
    workers: int
    workers_in: WorkersIn
    boundary_rows: int = Field(
        description="halo rows summed over the workers: rows one exchange moves (slicegcn: of the partitioned "
        "procedures beside it)"
    )
    boundary_measured: bool = Field(description="measured on a partition (else estimated for a random placement)")
    rounds: int = Field(description="rounds run (RETEXO: R for each of the K layers; SliceGCN: its epochs)")
    usd_per_gb: float = Field(description="price of a GB moved between two workers where they are")
    transfer_gb: float
    transfer_usd: float
    transfer_gb_per_round: float | None = Field(
        None, description="GB that cross the network per round (mean over rounds), one-time exchanges excluded"
    )
    gamma: float = Field(description="Eq. 2: standard training's data volume over RETEXO's, on this partition")
    methods: list[MethodFigures] = Field(
        description="every procedure that trains this model on this cluster, side by side (slicegcn: GCN only)"
    )


class ClusterPlan(StrictModel):
    layout: Literal["two-level", "single-machine", "partitioned"]
    learner: NodeGroup | None = Field(description="the GPU machine (none in a partitioned layout: no GPU)")
    memory: NodeGroup | None = Field(None, description="memory machines, or a partitioned layout's workers")
    volume: VolumeSpec
    usd_per_hour: float
    epoch_seconds: float = Field(description="one epoch; full-graph methods: one round (the mean over all rounds)")
    startup_seconds: float = Field(
        description="once per job: loading the data (full-graph methods: and the exchanges made only once)"
    )
    total_hours: float
    total_usd: float
    stages: dict[str, float] = Field(
        description="seconds of each stage per epoch (pipelined: they overlap) or per round (full-graph: they add up)"
    )
    bottleneck: str
    explanation: str = Field(description="why the bottleneck stage takes as long as it does")
    cache_fraction: float | None = Field(None, description="share of feature rows the data machines' RAM caches hold")
    hit_rate: float | None = Field(None, description="share of all feature reads the data machines' RAM caches serve")
    data_path: DataPath | None = Field(
        None, description="which cache serves what and the bytes on the link (pipeline model)"
    )
    full_graph: FullGraphPath | None = Field(
        None, description="a partitioned layout's exchanges, transfer bill and the procedures side by side"
    )
    spot: SpotRisk | None = Field(None, description="asked for spot: its interruptions, priced")
    batch: BatchFigures | None = Field(None, description="the mini-batch priced (sampled training only)")
    learner_ranks: int | None = Field(
        None,
        description="GPUs that train, over every learner machine, one data-parallel rank each (`remotegnn launch "
        "--learners`); none where the model prices no GPU (the paper's, the full-graph methods)",
    )
    fits: bool = Field(True, description="meets the budget, deadline and hourly cap")

    @property
    def label(self) -> str:
        if self.learner is None:
            assert self.memory is not None, "a plan without a learner is its workers"
            return f"{self.memory.count}x {self.memory.instance_type}"
        memory = f" + {self.memory.count}x {self.memory.instance_type}" if self.memory else " alone"
        learners = f"{self.learner.count}x " if self.learner.count > 1 else ""
        return f"{learners}{self.learner.instance_type}{memory}"


class FrontierPoint(StrictModel):
    total_hours: float
    total_usd: float
    label: str


class UnrunnableReason(StrictModel):
    """Why a cluster cannot run the job at all: a code for programs, a description for people."""

    code: Unrunnable
    description: str

    @classmethod
    def of(cls, code: Unrunnable) -> UnrunnableReason:
        return cls(code=code, description=code.description)


class InfeasibleCode(StrEnum):
    """What keeps every plan out of a recommendation."""

    NO_CANDIDATE = "no_candidate"  # no candidate cluster can run the job at all, whatever the constraints
    BUDGET = "budget"  # plans meet the other constraints, but cost more than the budget
    DEADLINE = "deadline"  # plans meet the other constraints, but take longer than the deadline
    MAX_HOURLY = "max_hourly"  # plans meet the other constraints, but cost more per hour than the cap
    ALL_CONSTRAINTS = "all_constraints"  # relaxing any one constraint alone is not enough


class Change(StrEnum):
    """How an advice item changes its request field."""

    AT_LEAST = "at_least"  # set it to ``value`` or more
    AT_MOST = "at_most"  # set it to ``value`` or less
    RELAX = "relax"  # loosen this filter (no single value to name)
    SHRINK = "shrink"  # make this part of the job smaller (no single value to name)


class Advice(StrictModel):
    """One change to the request that would let a plan fit."""

    field: str = Field(description="the request field to change, as a path, e.g. constraints.budget_usd")
    change: Change
    value: int | float | None = Field(None, description="the bound to reach (at_least, at_most); none otherwise")
    plan: str | None = Field(None, description="the plan that reaches exactly this bound")


class Infeasibility(StrictModel):
    """Why no plan fits, and what would, as data: each interface words it in its own vocabulary.

    For budget, deadline and max_hourly, ``binding`` is the one constraint at fault and its
    at_least advice is exact: with the other constraints as they are, that value is the least
    that lets a plan fit (rounded up to a cent, a hundredth of an hour, a tenth of a cent per
    hour, or to three significant digits where that is finer: a plan of $0.00368 needs a
    budget of 0.00369, not 0.01). For all_constraints each value is only what its constraint needs even if the others
    were dropped: more than one must give.
    """

    code: InfeasibleCode
    binding: str | None = Field(None, description="the one constraint that keeps every plan out, as a field path")
    advice: list[Advice] = Field(default_factory=list, description="changes that would let a plan fit")
    common_reason: UnrunnableReason | None = Field(
        None, description="no_candidate: the most common reason the candidate clusters cannot run"
    )
    detail: str = Field(description="the advice in words, naming request fields by their paths")


class Recommendation(StrictModel):
    """A recommendation, and the plan file ``provision up`` reads (schema ``memorybridge.plan``).

    When nothing fits, ``infeasibility`` is the answer as data (a code, the binding constraint as
    a request field path, the values that would fit), and every interface words it itself: the
    CLI with its options, the REST API (``infeasibility.detail``) with field paths. ``reason``
    stays for clients that only show text: a plain sentence on why nothing fits that names no
    option and no field, so it reads right whichever interface passed it on.
    """

    kind: Literal["memorybridge.plan"] = "memorybridge.plan"
    schema_version: Literal[1] = PLAN_SCHEMA_VERSION
    plan_id: str = Field(description="digest of the request and the snapshot: same inputs, same id")
    snapshot: SnapshotInfo
    request: PlanRequest
    profile: DatasetProfile
    coefficients_source: str
    feasible: bool
    reason: str | None = Field(None, description="why nothing fits, in words that name no option or field")
    infeasibility: Infeasibility | None = Field(None, description="why nothing fits and what would, as data")
    cheapest_feasible_usd: float | None = Field(None, description="cheapest plan ignoring the budget")
    chosen: ClusterPlan | None = None
    alternatives: list[ClusterPlan] = Field(
        default_factory=list, description=f"runners-up in failover order, ranked {RANKING_RULE}"
    )
    single_machine: ClusterPlan | None = Field(None, description="the cheapest single GPU machine, for comparison")
    two_level: ClusterPlan | None = Field(None, description="the cheapest two-level cluster, for comparison")
    frontier: list[FrontierPoint] = Field(default_factory=list, description="Pareto frontier of cost vs time")
    warnings: list[str] = Field(default_factory=list)


def write_plan(recommendation: Recommendation, path: str | Path) -> Path:
    return write_model(path, recommendation)


def read_plan(path: str | Path) -> Recommendation:
    return read_model(path, Recommendation, "plan file")
