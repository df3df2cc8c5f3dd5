"""What the user trains: a sampled mini-batch job (fanouts, batch size, width, epochs, how features
travel), or full-graph training on GPU-less workers, over a partitioned graph or over column slices
of the features (the model, rounds, workers and where they are)."""

from __future__ import annotations

import math
from typing import Annotated, Final, Literal

from pydantic import Field, ValidationInfo, field_validator

from contracts.profile import CachePolicy
from contracts.shards import DEFAULT_LAYOUT, ShardLayoutName
from foundation.models import StrictModel

GnnName = Literal["gcn", "sage", "gat"]
WireDtype = Literal["float32", "float16", "bfloat16", "auto"]
LearnerCacheMode = Literal["auto", "none"]
# No learner anyone rents has more RAM than this (the largest GPU types have 2 TiB): a bigger number is a typo.
MAX_LEARNER_CACHE_GIB: Final = 65_536.0
LearnerCacheGiB = Annotated[float, Field(gt=0, le=MAX_LEARNER_CACHE_GIB)]
GpuCacheMode = Literal["auto"]
SamplingMode = Literal["memory", "learner"]
# The most memory one GPU of any rentable type has is 192 GB (B200): a bigger number is a typo.
MAX_GPU_CACHE_GIB: Final = 1024.0
GPU_CACHE_OFF: Final = ("none", "off")
"""Words for no device cache; stored as 0, the default, so every way of saying it is the same request."""
MAX_FLOWS: Final = 16
# GraphSAGE's usual 3-hop sampling, as PyG's examples train it (and the MemoryBridge paper measures):
# 15, 10 and 5 neighbours per hop in batches of 1024 seeds. Every default of a sampled job (the
# planner's workload, the loader and the memory server, the cache rankings, `remotegnn profile`)
# is these two, so a plan prices the batches the loader builds when neither is given.
DEFAULT_FANOUTS: Final = (15, 10, 5)
DEFAULT_BATCH_SIZE: Final = 1024


MAX_LEARNER_MACHINES = 8
MAX_LEARNER_GPUS = 16  # the most GPUs any EC2 instance has (p4de/p5: 8; trn/inf types are not learners)


class Workload(StrictModel):
    """A GraphSAGE-style mini-batch training job (defaults: the paper's and PyG's usual setting).

    ``learner_cache`` and ``wire_dtype`` say how feature rows reach the learner of a two-level
    cluster: which rows the learner keeps in its own RAM (those are never sent), and the precision
    of the rows that are sent. Both are explained in docs/planner.md ("Learner cache and wire
    precision"). ``sampling`` says which side of a two-level cluster samples the batches, and so
    whether their structure crosses the link (docs/planner.md, "Where batches are sampled").
    ``shard_layout`` says how feature rows are dealt to the memory machines, and so how much of the
    feature file each one copies and reads at start-up (docs/planner.md, "Start-up").
    """

    fanouts: list[int] = Field(
        default_factory=lambda: list(DEFAULT_FANOUTS),
        min_length=1,
        max_length=6,
        description="neighbours sampled per hop; -1 = all",
    )
    batch_size: int = Field(DEFAULT_BATCH_SIZE, gt=0, le=1_000_000)
    hidden_dim: int = Field(256, gt=0, le=65_536)
    epochs: int = Field(10, gt=0, le=100_000)
    cache_policy: CachePolicy = Field(
        "degree", description="how every feature cache ranks rows (memory machines' and the learner's)"
    )
    learner_cache: LearnerCacheMode | LearnerCacheGiB = Field(
        "auto",
        description="feature rows the learner of a two-level cluster keeps in its RAM (they never cross the link): "
        "auto (the planner sizes it from the learner's free RAM, as DistributedGraphLoader's default does), none, "
        "or a size in GiB (DistributedGraphLoader's learner_cache)",
    )
    gpu_cache_gib: GpuCacheMode | float = Field(
        0.0,
        description="feature rows each training GPU keeps in its own memory (neither sent nor copied from the host): "
        "0 or none (off, as DistributedGraphLoader's device_cache by default), auto (the memory the model, its "
        'optimizer and the largest batch leave free, as the loader\'s device_cache="auto" sizes it), or a size '
        "in GiB",
    )
    gpus: int | None = Field(
        None,
        ge=1,
        le=MAX_LEARNER_GPUS,
        description="at most this many GPUs of the learner train, one data-parallel rank each (`remotegnn launch "
        "--learners`); none: every GPU the learner has",
    )
    learner_machines: int = Field(
        1,
        ge=1,
        le=MAX_LEARNER_MACHINES,
        description="GPU machines that learn side by side, data-parallel, fed by the same memory machines (two-level "
        "clusters only); each trains on its GPUs as `gpus` says",
    )
    flows: int = Field(
        1,
        ge=1,
        le=MAX_FLOWS,
        description="TCP flows each memory machine streams batches to the learner over (`remotegnn launch --flows`, "
        "Open MPI's btl_tcp_links); AWS caps one flow, so a memory machine's link is priced at most flows x the cap",
    )
    wire_dtype: WireDtype = Field(
        "float32",
        description="precision of feature rows on the link: float32 (exact; rows stored as float16 stay float16), "
        "float16 or bfloat16 (half the bytes, lossy), or auto (the planner may choose float16)",
    )
    sampling: Literal["auto", "memory", "learner"] = Field(
        "auto",
        description="who samples the batches of a two-level cluster: memory (the memory machines, which send "
        "compact frames: ids, edges and labels with the rows), learner (the learner holds the graph's CSC in its "
        "RAM and asks only for the rows it lacks, by id), or auto (the planner prices both and keeps the cheaper)",
    )
    shard_layout: ShardLayoutName = Field(
        DEFAULT_LAYOUT,
        description="how feature rows are dealt to the memory machines (`remotegnn serve --layout`): striped (runs "
        "of about 64 MiB of the feature file dealt in turn: each machine copies and reads only its own part), "
        "range (one run each) or modulo (row v on machine v % k: each holds the whole file and reads most of it to "
        "fill its caches)",
    )

    @field_validator("fanouts")
    @classmethod
    def _fanouts_valid(cls, fanouts: list[int]) -> list[int]:
        if any(f == 0 or f < -1 or f > 10_000 for f in fanouts):
            raise ValueError("each fanout is -1 (all neighbours) or between 1 and 10000")
        return fanouts

    @field_validator("learner_cache", mode="before")
    @classmethod
    def _learner_cache_valid(cls, value: object) -> object:
        """One message for every wrong value (a union would report one per member, under odd names)."""
        if value in ("auto", "none"):
            return value
        size = _number(value)
        if size is None or not 0 < size <= MAX_LEARNER_CACHE_GIB:
            raise ValueError(
                f"{value!r} is not auto, none or a size in GiB above 0 and up to {MAX_LEARNER_CACHE_GIB:g} (e.g. 32)"
            )
        return size

    @field_validator("gpu_cache_gib", mode="before")
    @classmethod
    def _gpu_cache_valid(cls, value: object) -> object:
        """``auto``, a word for off (stored as 0), or a size in GiB; one message for every wrong value."""
        if value == "auto":
            return value
        if isinstance(value, str) and value.strip().lower() in GPU_CACHE_OFF:
            return 0.0
        size = _number(value)
        if size is None or not 0 <= size <= MAX_GPU_CACHE_GIB:
            raise ValueError(
                f"{value!r} is not auto, none or a size in GiB from 0 up to {MAX_GPU_CACHE_GIB:g} (e.g. 5)"
            )
        return size


Method = Literal["sampled", "standard", "retexo", "slicegcn"]
FULL_GRAPH_METHODS: Final = ("standard", "retexo", "slicegcn")
PARTITIONED_METHODS: Final = ("standard", "retexo")  # a partition of the nodes per worker
SLICEGCN_GNN: Final = "gcn"  # the only model SliceGCN's workers train
WorkersIn = Literal["zone", "zones", "regions", "internet"]
MAX_WORKERS: Final = 16
MAX_BOUNDARY_ROWS: Final = MAX_WORKERS * 10**12  # every node of the largest profile a halo row of every part


class FullGraphJob(StrictModel):
    """Full-graph training on n GPU-less workers. Methods standard and retexo partition the graph:
    every round is one full-batch pass over each worker's partition, with the boundary exchanges
    and gradient averaging of the RETEXO paper's two procedures (defaults: the paper's, Appendix
    B.1). Method slicegcn gives every worker the whole graph and a column slice of the features:
    a round is one epoch of each worker's GCN on its slice. The hidden width is
    ``Workload.hidden_dim``.
    """

    gnn: GnnName = Field("sage", description="gcn, sage (GraphSAGE) or gat; slicegcn trains gcn only (its default)")
    layers: int = Field(2, ge=1, le=8, description="K, message-passing layers")
    heads: int = Field(4, ge=1, le=64, description="GAT's heads on hidden layers")
    rounds: int = Field(
        100,
        ge=1,
        le=100_000,
        description="R: rounds of standard training, per layer for RETEXO, epochs of SliceGCN (a full-batch pass each)",
    )
    classes: int | None = Field(None, gt=0, le=1_000_000, description="output classes (default: the profile's)")
    workers: int | None = Field(
        None,
        ge=2,
        le=MAX_WORKERS,
        description="n, the workers the graph is split over (the partition you have; slicegcn: the feature "
        "slices); default: every n from 2 to filters.max_memory_nodes",
    )
    boundary_rows: int | None = Field(
        None,
        ge=0,
        le=MAX_BOUNDARY_ROWS,
        description="halo rows summed over the workers, as `fullgraph partition` measures them (partition.json's "
        "boundary_rows; slicegcn: for the partitioned procedures priced beside it); default: estimated for nodes "
        "placed at random",
    )
    workers_in: WorkersIn = Field(
        "zone",
        description="where the workers are: one AZ (zone), an AZ each (zones), a region each (regions), or "
        "different owners over the internet (internet); sets the transfer price and latency",
    )
    feature_fusion: bool = Field(
        False,
        description="slicegcn only: the master fuses the feature slices and sends each worker its fused slice "
        "every epoch, and takes its gradient back (default: off, as plain SliceGCN)",
    )

    @field_validator("boundary_rows")
    @classmethod
    def _measured_boundary_needs_its_workers(cls, rows: int | None, info: ValidationInfo) -> int | None:
        if rows is not None and info.data.get("workers") is None:
            raise ValueError("boundary rows are measured on one partition: give its number of workers too")
        return rows


def _number(value: object) -> float | None:
    """``value`` as a finite float when it is a number or a numeric string (never a bool), else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        number = float(value)
    elif isinstance(value, str):
        try:
            number = float(value.strip())
        except ValueError:
            return None
    else:
        return None
    return number if math.isfinite(number) else None
