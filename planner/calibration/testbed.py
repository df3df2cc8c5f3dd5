"""A testbed configuration as the cost models' inputs, and both models' predictions for it.

The models price catalog columns, so a testbed becomes a two-row catalog (the learner host l0 and
a memory host) and one cluster, and the unchanged model code evaluates it. The mapping:

- vCPUs of a memory host = its server processes (batch creators + vector loaders);
- network baseline Gbit/s = the tbf rate of each host's link (``--link-gbit``, ``--learner-gbit``);
- EBS baseline and provisioned MB/s and IOPS = the blkio limits (``--volume-mbps``, ``--volume-iops``),
  or less where the one disk every host's volume lives on gives each less (``disk_mbps``: a fast
  volume's limit is a ceiling, not a rate, when four hosts read one disk at once);
- a memory host's start-up (choosing its caches, sweeping them in) runs on ``core_share`` of a
  core: where the hosts share fewer cores than they are, each gets its part;
- RAM = the feature cache (``serve --cache-gb``) plus the graph structure, with no OS reserve:
  the server is given exactly that budget, and the paper model's M_l is the same RAM;
- the learner's "GPU" = the CPU, priced by ``Coefficients.gpu_tflops[learner]`` (fitted by
  ``planner calibrate`` as ``testbed-cpu``), so its step time comes from the model's own formula;
- the learner caches feature rows only when the run's workload names its ``learner_cache``, and
  samples its own batches only when it names ``sampling`` (runs recorded before learner-side
  sampling existed were sampled on the memory hosts);
- each memory host's start-up reads its own share of the feature file by the run's
  ``shard_layout``: a run that does not name one is priced as modulo (every host's rows spread
  over the whole file), as the memory hosts dealt rows before layouts existed; a run of another
  layout must say so in its workload.

Full-graph runs (``fullgraph retexo train`` on the testbed, and SliceGCN's MPI jobs) become a
one-row catalog of workers: vCPUs = the cores a worker gets, network = the tbf rate, and volumes
fast enough to take no time (the measured span starts after the partitions are loaded).

A testbed has no price, so the evaluations' costs are NaN; only times are meaningful.
"""

from __future__ import annotations

import math

import numpy as np
from pydantic import Field

from contracts.calibration import Coefficients
from contracts.profile import DatasetProfile
from contracts.workload import FullGraphJob, Method, SamplingMode, Workload
from foundation.errors import UsageError
from foundation.models import StrictModel
from foundation.units import GIB
from planner.catalog.models import InstanceType, VolumeType
from planner.catalog.snapshot import InstanceColumns, load_catalog
from planner.catalog.transfer import US_EAST_1_TRANSFER
from planner.costmodel import fullgraph, paper, pipeline, slicegcn
from planner.costmodel.evaluation import Clusters, Evaluation, ModelInputs

TESTBED_LEARNER = "testbed-cpu"  # the learner's entry in Coefficients.gpu_tflops
LEARNER_MEMORY_GIB = 64.0  # the learner's "GPU memory": no limit that matters on a CPU
UNLIMITED_MBPS = 1e9  # a volume read that takes no time at the testbed's scale
NO_COPY_GBPS = math.inf
"""The testbed learner's host-to-device rate: it trains on its CPU, so no batch is copied to a
device. Pricing a PCIe copy there (and subtracting it again when fitting the CPU's rate) would
leave the prediction short by the copy wherever the model hides it behind the step."""


class EmulatedCluster(StrictModel):
    """One testbed configuration, in the testbed's own units."""

    memory_hosts: int = Field(1, ge=1)
    cores: int = Field(gt=0, description="server processes per memory host (batch creators + vector loaders)")
    link_gbit: float = Field(gt=0, description="tbf rate of each host's link")
    learner_gbit: float | None = Field(None, gt=0, description="the learner's tbf rate, if it differs")
    flow_gbit: float | None = Field(None, gt=0, description="the htb cap on each TCP flow, if the testbed had one")
    volume_mbps: float = Field(gt=0, description="blkio read MB/s of each memory host's volume")
    volume_iops: int = Field(gt=0, description="blkio read IOPS of each memory host's volume")
    disk_mbps: float | None = Field(
        None,
        gt=0,
        description="read MB/s the machine's disk gives each memory host when they read at once "
        "(their volumes share it); None: the blkio limit alone bounds a volume",
    )
    core_share: float = Field(
        1.0,
        gt=0,
        le=1,
        description="the share of a core each memory host's server gets at start-up, when every host chooses its "
        "caches and sweeps them at once (the testbed's hosts share the machine's cores); 1: a core each",
    )
    cache_bytes: int = Field(ge=0, description="feature-cache RAM per memory host")
    learner: str = Field(TESTBED_LEARNER, description="key of the learner in Coefficients.gpu_tflops")


def _host(name: str, **spec) -> InstanceType:
    """A testbed host as an instance type of the catalog (no price: only times are meaningful)."""
    return InstanceType(name=name, family="testbed", arch="x86_64", **spec)


def model_inputs(
    machine: EmulatedCluster,
    profile: DatasetProfile,
    workload: Workload,
    coefficients: Coefficients,
    volume: VolumeType | None = None,
) -> tuple[ModelInputs, Clusters]:
    """The models' inputs for ``machine``: a two-row catalog and the one cluster made of it."""
    if machine.learner not in coefficients.gpu_tflops:
        raise UsageError(
            f"the coefficients have no step rate for the learner {machine.learner!r} "
            "(gpu_tflops); calibrate them on testbed runs with `planner calibrate`"
        )
    update: dict[str, float] = {
        "os_reserve_gib": 0.0,
        # a host's start-up is one core's work: a share of one is that much slower
        "rank_nodes_per_s": coefficients.rank_nodes_per_s * machine.core_share,
        "sweep_gbps": coefficients.sweep_gbps * machine.core_share,
    }
    if machine.learner == TESTBED_LEARNER:
        update["pcie_gbps"] = NO_COPY_GBPS  # a CPU learner trains where its batches already are
    coefficients = coefficients.model_copy(update=update)
    if "learner_cache" not in workload.model_fields_set:
        # A run that does not say it had a learner cache had none: runs recorded before learner
        # caches existed must be predicted as they ran, not with the planner's default (auto).
        workload = workload.model_copy(update={"learner_cache": "none"})
    if "sampling" not in workload.model_fields_set:
        workload = workload.model_copy(update={"sampling": "memory"})
    if "shard_layout" not in workload.model_fields_set:
        workload = workload.model_copy(update={"shard_layout": "modulo"})
    memory_gib = (machine.cache_bytes + profile.structure_bytes) / GIB
    volume_mbps = min(machine.volume_mbps, machine.disk_mbps or math.inf)
    learner = _host(
        "testbed-l0",
        vcpus=1,
        memory_gib=LEARNER_MEMORY_GIB,
        gpu_model=machine.learner,
        gpu_count=1,
        gpu_memory_gib=LEARNER_MEMORY_GIB,
        network_baseline_gbps=machine.learner_gbit or machine.link_gbit,
    )
    memory = _host(
        "testbed-m",
        vcpus=machine.cores,
        memory_gib=memory_gib,
        ebs_baseline_mbps=volume_mbps,
        ebs_baseline_iops=machine.volume_iops,
        network_baseline_gbps=machine.link_gbit,
    )
    clusters = Clusters(
        learner=np.array([0]),
        memory=np.array([1]),
        count=np.array([machine.memory_hosts]),
        volume_mbps=np.array([volume_mbps]),
        volume_iops=np.array([machine.volume_iops]),
    )
    inputs = ModelInputs(
        columns=InstanceColumns.from_instances([learner, memory]),
        volume=volume or load_catalog().volumes["gp3"],
        profile=profile,
        workload=workload,
        coefficients=coefficients,
        flow_cap_gbps=machine.flow_gbit or math.inf,  # without --flow-gbit tbf caps a link, not its flows
    )
    return inputs, clusters


def predict(
    machine: EmulatedCluster, profile: DatasetProfile, workload: Workload, coefficients: Coefficients
) -> dict[str, Evaluation]:
    """Both models' evaluation of ``machine`` (one-element arrays), keyed by model name.

    The paper model describes one memory machine; for more its evaluation is marked infeasible
    (reason 6) but its time is still computed, as for an AWS cluster.
    """
    inputs, clusters = model_inputs(machine, profile, workload, coefficients)
    return {"pipeline": pipeline.evaluate(inputs, clusters), "paper": paper.evaluate(inputs, clusters)}


class LinkBytes(StrictModel):
    """What the pipeline model sends over a testbed's links per epoch, in GB (1e9 bytes)."""

    sampling: SamplingMode = Field(description="who sampled: the memory hosts or the learner")
    id_gb: float = Field(
        ge=0, description="compact ids, edge counts, sources and labels (memory), or the row ids requested (learner)"
    )
    feature_gb: float = Field(ge=0, description="feature rows, at the wire precision")

    @property
    def total_gb(self) -> float:
        return self.id_gb + self.feature_gb


def link_bytes(
    machine: EmulatedCluster, profile: DatasetProfile, workload: Workload, coefficients: Coefficients
) -> LinkBytes:
    """The pipeline model's bytes per epoch on ``machine``'s links, as a plan's ``data_path`` gives
    them (``wire_id_gb_per_epoch``, ``wire_feature_gb_per_epoch``) for ``workload.sampling``: a
    workload that does not set it is priced as sampled on the memory hosts (``model_inputs``).
    The product itself never calls it: ``benchmarks/wire.py`` sets it beside the bytes a testbed run
    sent, and it stays here because it reads the cost model's own inputs."""
    inputs, clusters = model_inputs(machine, profile, workload, coefficients)
    d = pipeline.evaluate(inputs, clusters).detail_at(0)
    return LinkBytes(
        sampling="learner" if d["learner_samples"] else "memory",
        id_gb=d["epoch_wire_id_gb"],
        feature_gb=d["epoch_wire_feature_gb"],
    )


class EmulatedWorkers(StrictModel):
    """A full-graph testbed run's machines: n worker hosts with one link rate and a share of the CPU."""

    workers: int = Field(ge=2)
    cores: float = Field(gt=0, description="CPU cores a worker gets (the testbed's hosts share the machine's)")
    link_gbit: float = Field(gt=0, description="tbf rate of each host's link")


def predict_full_graph(
    machine: EmulatedWorkers,
    profile: DatasetProfile,
    workload: Workload,
    job: FullGraphJob,
    method: Method,
    coefficients: Coefficients,
) -> Evaluation:
    """The full-graph model's evaluation of ``machine`` (one-element arrays; costs are NaN): the
    SliceGCN model's for method slicegcn, else the partitioned procedures'. The product itself never
    calls it: ``benchmarks/retexo_time.py`` and ``slicegcn_time.py`` set it beside a testbed run, and
    it stays here because it builds the cost model's own inputs."""
    worker = _host(
        "testbed-m",
        vcpus=1,
        memory_gib=LEARNER_MEMORY_GIB,
        ebs_baseline_mbps=UNLIMITED_MBPS,
        network_baseline_gbps=machine.link_gbit,
    )
    # vCPUs are whole numbers in the catalog: a fractional share of a core scales the rates instead.
    rates = {
        "cpu_dense_gflops_per_vcpu": coefficients.cpu_dense_gflops_per_vcpu * machine.cores,
        "cpu_sparse_gflops_per_vcpu": coefficients.cpu_sparse_gflops_per_vcpu * machine.cores,
        "os_reserve_gib": 0.0,
    }
    inputs = ModelInputs(
        columns=InstanceColumns.from_instances([worker]),
        volume=load_catalog().volumes["gp3"],
        profile=profile,
        workload=workload,
        coefficients=coefficients.model_copy(update=rates),
        method=method,
        job=job,
        transfer=US_EAST_1_TRANSFER,
    )
    clusters = Clusters(
        learner=np.array([0]),
        memory=np.array([0]),
        count=np.array([machine.workers]),
        volume_mbps=np.array([UNLIMITED_MBPS]),
        volume_iops=np.array([16000.0]),
    )
    model = slicegcn.evaluate if method == "slicegcn" else fullgraph.evaluate
    return model(inputs, clusters)
