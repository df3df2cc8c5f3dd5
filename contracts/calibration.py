"""The calibration file (the pipeline model's named coefficients, schema ``memorybridge.calibration``
v1) and the report of the fit that made it.

The defaults are engineering estimates, each with its reasoning below; `planner calibrate` fits
them from measured runs (testbed runs, cluster jobs) and writes the file `recommend --calibration`
reads; ``pricing_data`` ships one fitted on the testbed. :class:`FitReport` is what the fit says
of itself (`planner calibrate --json`): each value fitted, from which runs, and what was skipped.
"""

from __future__ import annotations

from pathlib import Path
from typing import Final, Literal

from pydantic import BaseModel, Field

from foundation.fileio import read_model
from foundation.models import StrictModel

# Peak FP32 TFLOPS per GPU (vendor datasheets). Only NVIDIA GPUs are listed: PyG's CUDA path
# does not run on g4ad's Radeon Pro V520 or dl1's Gaudi, so those types are never learners.
NVIDIA_FP32_TFLOPS: dict[str, float] = {
    "T4": 8.1,
    "T4g": 8.1,
    "V100": 15.7,
    "A10G": 31.2,
    "L4": 30.3,
    "A100": 19.5,
    "L40S": 91.6,
    "H100": 67.0,
    "H200": 67.0,
    "B200": 75.0,
    "B300": 75.0,
    "RTX PRO Server 6000": 117.0,
}
# Memory bandwidth per GPU, GB/s (vendor datasheets; the A100 of p4d is the 40 GB card, the H100
# of p5 the SXM one). A mini-batch step at the usual hidden widths is mostly memory traffic.
NVIDIA_MEMORY_GBPS: dict[str, float] = {
    "T4": 320.0,
    "T4g": 320.0,
    "V100": 900.0,
    "A10G": 600.0,
    "L4": 300.0,
    "A100": 1555.0,
    "L40S": 864.0,
    "H100": 3350.0,
    "H200": 4800.0,
    "B200": 8000.0,
    "B300": 8000.0,
    "RTX PRO Server 6000": 1597.0,
}


# A step's rates, fitted on an H100 (benchmarks/gpu_steps.py, results/gpu_steps.json) and kept as
# the defaults of every GPU: see planner.costmodel.gpu for the model and docs/planner.md for how
# they compare with published timings on other cards.
GPU_DENSE_EFFICIENCY = 0.75
GPU_MEMORY_EFFICIENCY = 0.30
GPU_STEP_OVERHEAD_S = 0.0024
LEARNER_RESERVE_GIB: Final = 8.0
"""RAM a learner keeps for its training process (model, optimiser, activations and the batches in
flight): what the planner's ``learner_reserve_gib`` assumes and what DistributedGraphLoader's
``learner_cache="auto"`` leaves free, so the cache the planner prices is the one the loader takes."""

# Start-up besides the volume's reads, as measured on the larger-than-RAM rehearsal (a 33.5M-node
# graph, four memory hosts): 5 s from launch to the loader's open session and about 2 s from the
# filled caches to the first batch and at the end; choosing the caches took one process 1.8-2.0 s
# (scores of every node, sorted). A memory rank sweeps its share of the feature file past the
# page cache (O_DIRECT), so a core only copies the wanted rows out of what the volume wrote: the
# whole machine spent 0.12-0.13 CPU s per GB of file swept that way on a 2-core machine, against
# 0.8-0.9 through the memory map on one thread (``benchmarks/sweep_reads.py``), so one core keeps
# up with about 7.5 GB/s, above any one EBS volume: the volume binds.
JOB_START_S: Final = 7.0
RANK_NODES_PER_S: Final = 17e6
SWEEP_GBPS: Final = 7.5

DEFAULT_SOURCE = "defaults: engineering estimates, not yet calibrated"


class Coefficients(StrictModel):
    """Pipeline-model coefficients (schema ``memorybridge.calibration`` v1).

    ``calibrated`` says whether they were fitted from measured runs (`planner calibrate` sets it);
    ``source`` is free text for people and is never parsed.
    """

    schema_version: Literal[1] = 1
    source: str = Field(DEFAULT_SOURCE, max_length=2000)
    calibrated: bool = Field(False, description="fitted from measured runs; false: the engineering estimates")
    sample_edges_per_core_s: float = Field(
        15e6, gt=0, description="sampled edges per second per vCPU (numba CSC sampling, ~60 ns per edge)"
    )
    gather_gbps_per_core: float = Field(
        2.0, gt=0, description="GB/s of feature rows gathered into preallocated buffers per vCPU"
    )
    job_start_s: float = Field(
        JOB_START_S,
        ge=0,
        description="start-up seconds besides the reads: launching the job (mpiexec, each rank's imports, MPI's "
        "start), opening the loader's session and closing the job",
    )
    rank_nodes_per_s: float = Field(
        RANK_NODES_PER_S,
        gt=0,
        description="nodes a data machine scores and sorts per second when it chooses its caches at start-up "
        "(one core: every machine ranks all nodes, as the learner's cache is the hottest rows of the whole graph)",
    )
    sweep_gbps: float = Field(
        SWEEP_GBPS,
        gt=0,
        description="GB/s of the feature file one core of a data machine sweeps into its caches at start-up "
        "(read past the page cache): a volume faster than this is bound by it instead",
    )
    page_bytes: int = Field(4096, gt=0, description="read granularity of the volume path (OS page)")
    io_max_bytes: int = Field(262_144, gt=0, description="EBS counts an I/O of up to 256 KiB as one operation")
    volume_efficiency: float = Field(0.85, gt=0, le=1, description="achieved share of volume MB/s and IOPS")
    network_efficiency: float = Field(0.85, gt=0, le=1, description="achieved share of the link's baseline")
    gpu_efficiency: float = Field(
        GPU_DENSE_EFFICIENCY, gt=0, le=1, description="achieved share of peak FP32 in a step's dense products"
    )
    gpu_memory_efficiency: float = Field(
        GPU_MEMORY_EFFICIENCY,
        gt=0,
        le=1,
        description="achieved share of the GPU's memory bandwidth in a step's memory traffic (rows in and out, "
        "aggregation)",
    )
    gpu_step_overhead_s: float = Field(
        GPU_STEP_OVERHEAD_S, ge=0, description="per-batch kernel launches and optimizer step"
    )
    pcie_gbps: float = Field(12.0, gt=0, description="host-to-device copy GB/s (pinned)")
    data_parallel_efficiency: float = Field(
        0.9,
        gt=0,
        le=1,
        description="each rank's share of one GPU's speed when several of a learner's GPUs train data-parallel "
        "(the gradients' all-reduce, waiting for the slowest): an estimate; `planner calibrate` fits it from runs with "
        "several learners",
    )
    os_reserve_gib: float = Field(4.0, ge=0, description="RAM a memory machine keeps for the OS and the server")
    learner_reserve_gib: float = Field(
        LEARNER_RESERVE_GIB, ge=0, description="RAM the training process needs on the learner"
    )
    memory_cache_skips_learner_rows: bool = Field(
        True,
        description="the memory machines' caches hold the next-hottest rows after the learner's (true), "
        "or rank all rows and so repeat the learner's (false)",
    )
    cpu_dense_gflops_per_vcpu: float = Field(
        20.0,
        gt=0,
        description="full-graph training: achieved float32 GFLOP/s of dense layer products per vCPU (PyTorch GEMM "
        "on a hyperthread, about a third of an AVX2/AVX-512 core's peak)",
    )
    cpu_sparse_gflops_per_vcpu: float = Field(
        1.0,
        gt=0,
        description="full-graph training: GFLOP/s of edge-wise aggregation per vCPU (scatter-add, memory-bound)",
    )
    spot_replacement_s: float = Field(
        600.0,
        ge=0,
        description="spot: launching a replacement for a reclaimed machine, booting it, installing its packages "
        "(the learner's CUDA torch) and re-attaching its volume, seconds (an estimate, not measured on AWS)",
    )
    checkpoint_interval_s: float = Field(
        600.0, gt=0, description="spot: seconds between checkpoints; an interruption loses half of one on average"
    )
    spot_unknown_monthly_share: float = Field(
        0.125,
        ge=0,
        lt=1,
        description="spot: the share of a type's spot instances reclaimed in a month where the snapshot has no band "
        "for it (the middle band, 10-15%)",
    )
    gpu_memory_headroom: float = Field(0.85, gt=0, le=1, description="usable share of GPU memory")
    volume_headroom: float = Field(1.2, ge=1, description="volume size / data it holds")
    gpu_tflops: dict[str, float] = Field(default_factory=lambda: dict(NVIDIA_FP32_TFLOPS))
    gpu_memory_gbps: dict[str, float] = Field(
        default_factory=lambda: dict(NVIDIA_MEMORY_GBPS),
        description="memory bandwidth per GPU; a learner without one (the testbed's CPU) is priced on FLOPs alone",
    )


DEFAULT_COEFFICIENTS = Coefficients()


def load_coefficients(path: str | Path) -> Coefficients:
    """The coefficients of a calibration file, including one written before ``calibrated`` existed.

    Such a file came from `planner calibrate`, the only writer of these files, or is a copy of the
    defaults that kept their ``source``: it is calibrated unless that source is the defaults' own.
    """
    coefficients = read_model(path, Coefficients, "calibration file")
    if "calibrated" in coefficients.model_fields_set:
        return coefficients
    return coefficients.model_copy(update={"calibrated": coefficients.source != DEFAULT_SOURCE})


class FittedValue(BaseModel):
    """One coefficient the fit changed: its new value, its default, and the runs it came from."""

    name: str
    value: float
    default: float
    runs: list[int]  # indices in the runs file it was fitted from
    how: str


class FitReport(BaseModel):
    """What `planner calibrate` fitted, what it kept at the defaults, and which runs it skipped and why."""

    coefficients: Coefficients
    fitted: list[FittedValue]
    kept_default: list[str]
    skipped: dict[int, str]  # run index -> why it was not used
