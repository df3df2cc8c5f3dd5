"""The inputs and outputs shared by the cost models.

Candidate clusters are flat numpy arrays (one entry per cluster), so a model prices a million
clusters with a few dozen vector operations, and one cluster (an API estimate) with the same code.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np

from contracts.calibration import Coefficients
from contracts.plan import Unrunnable
from contracts.profile import DatasetProfile
from contracts.workload import FullGraphJob, Method, Workload
from foundation.units import SECONDS_PER_HOUR
from planner.catalog.models import DataTransferPrices, VolumeType
from planner.catalog.snapshot import InstanceColumns
from planner.costmodel.batch import BatchShape, estimate_batch

FEASIBLE = 0  # the reason code of a candidate that can run


def first_unrunnable(checks: Mapping[Unrunnable, np.ndarray]) -> np.ndarray:
    """Per cluster, the first reason in :class:`Unrunnable` order whose check holds; FEASIBLE if none.

    ``checks`` maps each reason a model tests to its per-cluster failure mask.
    """
    tested = [reason for reason in Unrunnable if reason in checks]
    return np.select([checks[reason] for reason in tested], [int(reason) for reason in tested], FEASIBLE)


@dataclass(frozen=True)
class Clusters:
    """Candidate clusters, one entry per index. ``count == 0`` is the single-machine layout."""

    learner: np.ndarray  # index into InstanceColumns
    memory: np.ndarray  # index into InstanceColumns; -1 for a single machine
    count: np.ndarray  # memory machines k (0 = single machine)
    volume_mbps: np.ndarray  # provisioned gp3 throughput per volume
    volume_iops: np.ndarray  # provisioned gp3 IOPS per volume

    def __len__(self) -> int:
        return len(self.learner)

    def take(self, index) -> Clusters:
        return Clusters(
            *(getattr(self, f)[index] for f in ("learner", "memory", "count", "volume_mbps", "volume_iops"))
        )

    # Cached: the explanation of each described plan reads them again, and recomputing them over
    # every candidate each time was a visible share of a request (the arrays never change).
    @cached_property
    def data_machine(self) -> np.ndarray:
        """The machine that holds the graph: a memory node, or the learner itself when alone."""
        return np.where(self.count > 0, self.memory, self.learner)

    @cached_property
    def data_machines(self) -> np.ndarray:
        return np.maximum(self.count, 1)


FLOW_CAP_GBPS = 10.0
"""What AWS lets one TCP flow (5-tuple) carry between instances in a cluster placement group, the
placement `provision up` makes (5 Gbit/s outside one; EC2's "instance network bandwidth" page)."""

ENA_EXPRESS_FLOW_CAP_GBPS = 25.0
"""What one flow carries with ENA Express (AWS's SRD transport) enabled at both ends: EC2's ENA
Express page, "up to 25 Gbps", still within each machine's own bandwidth."""


@dataclass(frozen=True)
class ModelInputs:
    """Everything a cost model needs besides the clusters."""

    columns: InstanceColumns
    volume: VolumeType
    profile: DatasetProfile
    workload: Workload
    coefficients: Coefficients
    spot: bool = False
    method: Method = "sampled"
    job: FullGraphJob = field(default_factory=FullGraphJob)  # full-graph methods only
    transfer: DataTransferPrices | None = None  # full-graph methods only: what moving a GB costs
    flow_cap_gbps: float = FLOW_CAP_GBPS  # one TCP flow's most (the testbed's links cap none)
    ena_express: bool = False  # enable ENA Express where both ends of a link support it

    def ena_express_links(self, clusters: Clusters) -> np.ndarray:
        """Which clusters' links run ENA Express: asked for, two-level, and both types support it."""
        supported = self.columns.ena_express
        return self.ena_express & (clusters.count > 0) & supported[clusters.learner] & supported[clusters.data_machine]

    def flow_caps_gbps(self, ena_express_links: np.ndarray) -> np.ndarray:
        """What one flow of each cluster's link may carry: ENA Express's cap where it runs, else AWS's TCP cap."""
        return np.where(ena_express_links, ENA_EXPRESS_FLOW_CAP_GBPS, self.flow_cap_gbps)

    @cached_property
    def batch(self) -> BatchShape:
        return estimate_batch(self.profile, self.workload)

    @cached_property
    def learner_ranks(self) -> np.ndarray:
        """Data-parallel ranks a learner of each catalog type trains on: one per GPU, at most the
        workload's ``gpus`` (1 for a type without GPUs, which no learner is)."""
        ranks = np.maximum(self.columns.gpu_count, 1)
        return ranks if self.workload.gpus is None else np.minimum(ranks, self.workload.gpus)

    @cached_property
    def learner_tflops(self) -> np.ndarray:
        """Peak FP32 TFLOPS of one GPU of every catalog type (NaN: no GPU or not a supported GPU)."""
        table = self.coefficients.gpu_tflops
        return np.array([table.get(i.gpu_model, np.nan) if i.gpu_model else np.nan for i in self.columns.instances])

    @cached_property
    def learner_memory_gbps(self) -> np.ndarray:
        """Memory bandwidth of one GPU of every catalog type (inf: a learner priced on FLOPs alone)."""
        table = self.coefficients.gpu_memory_gbps
        return np.array([table.get(i.gpu_model, np.inf) if i.gpu_model else np.inf for i in self.columns.instances])

    @property
    def miss_bytes(self) -> float:
        """Bytes one cache miss reads from a volume, on average: whole pages, those its row touches.

        The feature file's rows follow its header (an .npy's), so they are not page aligned: a row
        of b bytes touches 1 + (b - 1) / page pages at the offsets rows fall on (every 4 KiB row
        two pages; one 512-byte row in eight two). Counting ceil(b / page) priced half the bytes
        of 4 KiB rows: the testbed's volume-bound runs read 8 KiB a miss, so a fitted
        ``volume_efficiency`` of 0.5 stood in for the second page, and then slowed IOPS-bound
        reads, where a row's pages are one I/O, by 2x as well."""
        page = self.coefficients.page_bytes
        return (1.0 + (self.profile.row_bytes - 1) / page) * page

    def volume_size_gb(self, clusters: Clusters, data_bytes_per_machine: np.ndarray) -> np.ndarray:
        """Size of each data machine's volume: its data plus headroom, at least what the IOPS need."""
        size = np.ceil(self.coefficients.volume_headroom * data_bytes_per_machine / 1e9)
        return np.maximum.reduce(
            [
                size,
                np.full_like(size, self.volume.min_size_gb),
                np.ceil(clusters.volume_iops / self.volume.max_iops_per_gb),
            ]
        )


Formula = Callable[[Mapping[str, Any]], Any]


class Details(Mapping[str, np.ndarray]):
    """A model's figures for the explanation: arrays it computed anyway, and formulas over them.

    A request describes a dozen clusters out of hundreds of thousands, so derived figures are not
    computed for every cluster up front: ``at(i)`` evaluates the formulas on one cluster's values,
    and asking for a derived figure by name computes (and keeps) its whole array. Formulas are numpy
    expressions over the stored names, so the same one serves a scalar and an array.
    """

    def __init__(self, stored: dict[str, np.ndarray], derived: dict[str, Formula]):
        self.stored, self.derived = stored, derived
        self._computed: dict[str, np.ndarray] = {}

    def __getitem__(self, name: str) -> np.ndarray:
        if name in self.stored:
            return self.stored[name]
        if name not in self._computed:
            with np.errstate(divide="ignore", invalid="ignore"):
                self._computed[name] = np.asarray(self.derived[name](self.stored))
        return self._computed[name]

    def __iter__(self) -> Iterator[str]:
        yield from self.stored
        yield from self.derived

    def __len__(self) -> int:
        return len(self.stored) + len(self.derived)

    def at(self, i: int) -> dict[str, float]:
        values = {name: array[i] for name, array in self.stored.items()}
        with np.errstate(divide="ignore", invalid="ignore"):
            derived = {name: float(formula(values)) for name, formula in self.derived.items()}
        return {**{name: float(value) for name, value in values.items()}, **derived}


@dataclass
class Evaluation:
    """A model's verdict on every candidate cluster (arrays aligned with the Clusters)."""

    model: str
    stages: dict[str, np.ndarray]  # per-epoch seconds of each pipeline stage
    startup_s: np.ndarray
    hourly_usd: np.ndarray
    volume_gb: np.ndarray
    infeasible: np.ndarray  # Unrunnable code per cluster, FEASIBLE (0) when it can run
    epochs: int
    details: Mapping[str, np.ndarray] = field(default_factory=dict)  # figures the explanation quotes
    # Pipelined stages overlap, so an epoch takes as long as the slowest; a full-graph round runs its
    # stages one after another (each waits for the previous exchange), so it takes their sum.
    overlapped: bool = True
    # Charges that are not hourly (data transfer): per epoch, and once per job.
    usd_per_epoch_extra: np.ndarray | float = 0.0
    usd_fixed_extra: np.ndarray | float = 0.0
    # Wall time / time without interruptions: above 1 on spot, where reclaimed machines are recovered.
    time_factor: np.ndarray | float = 1.0

    def detail_at(self, i: int) -> dict[str, float]:
        """Every figure of ``details`` for cluster ``i`` (derived ones computed for that cluster only)."""
        if isinstance(self.details, Details):
            return self.details.at(i)
        return {name: float(values[i]) for name, values in self.details.items()}

    @cached_property
    def _epoch_and_bottleneck(self) -> tuple[np.ndarray, np.ndarray]:
        # Both from one stack of the stages, which is not kept: a planner server keeps priced
        # evaluations, and the stack would be 40% of one.
        stacked = np.stack(list(self.stages.values()))
        epoch = np.max(stacked, axis=0) if self.overlapped else np.sum(stacked, axis=0)
        return epoch, np.argmax(stacked, axis=0).astype(np.int8)

    @property
    def epoch_s(self) -> np.ndarray:
        return self._epoch_and_bottleneck[0]

    @property
    def bottleneck(self) -> np.ndarray:
        """Index into ``stage_names`` of the slowest stage of each cluster."""
        return self._epoch_and_bottleneck[1]

    @property
    def stage_names(self) -> list[str]:
        return list(self.stages)

    @cached_property
    def total_hours(self) -> np.ndarray:
        return (self.startup_s + self.epochs * self.epoch_s) / SECONDS_PER_HOUR * self.time_factor

    @cached_property
    def total_usd(self) -> np.ndarray:
        return self.total_hours * self.hourly_usd + self.epochs * self.usd_per_epoch_extra + self.usd_fixed_extra

    @cached_property
    def feasible(self) -> np.ndarray:
        return (self.infeasible == FEASIBLE) & np.isfinite(self.total_usd)
