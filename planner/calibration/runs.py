"""The runs calibration reads: a testbed's runs file (``remotegnn testbed run --runs``), and the
record ``provision run`` writes for each job on a real cluster (``memorybridge.cluster-run``).

The planner imports nothing from remotegnn (boundaries are data), so this is a read-only view of
the testbed's ``RunsFile``: only the fields calibration needs, other fields ignored. What the
testbed record lacks - the dataset profile, the workload, the server's cache and process counts,
the learner's compute time per step - the training job prints as a ``JobReport`` (schema
``memorybridge.calibration-run`` v1), which the record keeps as the learner's output.
"""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Final, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from foundation.errors import UsageError
from foundation.fileio import read_model
from planner.costmodel.workload import Workload
from planner.datasets.profile import DatasetProfile

JOB_KIND: Final = "memorybridge.calibration-run"


class _View(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)


class StageCounters(_View):
    """A server stage's counters over an epoch, summed over its processes (PipelineStats)."""

    processes: int = Field(gt=0)
    busy_s: float = Field(ge=0)


class ServerStats(_View):
    """The subset of remotegnn's ``PipelineStats`` the fits read."""

    batches: int = Field(gt=0)
    seconds: float = Field(gt=0)
    batch_creators: StageCounters
    vector_loaders: StageCounters
    cache_hits: int = Field(ge=0)
    cache_misses: int = Field(ge=0)
    bytes_sent: int = Field(0, ge=0, description="batch bytes the memory ranks sent (0 in runs that predate it)")


class JobEpoch(_View):
    seconds: float = Field(gt=0, description="the training loop's wall time for the epoch")
    batches: int = Field(gt=0)
    compute_s: float = Field(ge=0, description="learner time in forward, backward and optimizer step")
    stats: ServerStats


class ServerConfig(_View):
    cache_bytes: int = Field(ge=0, description="feature-cache RAM per memory host (serve --cache-gb)")
    batch_creators: int = Field(gt=0)
    vector_loaders: int = Field(gt=0)


class JobReport(BaseModel):
    """What the calibration training job prints (benchmarks/fidelity_job.py)."""

    model_config = ConfigDict(extra="forbid")

    kind: Literal["memorybridge.calibration-run"] = JOB_KIND
    version: Literal[1] = 1
    profile: DatasetProfile
    workload: Workload
    server: ServerConfig
    epochs: list[JobEpoch] = Field(min_length=1)

    def steady_epochs(self) -> list[JobEpoch]:
        """Epochs after the first when there are several: the first pays for JIT compilation and
        start-up, which the model counts apart from the epoch time."""
        return self.epochs[1:] if len(self.epochs) > 1 else self.epochs


class TestbedSpecView(_View):
    memory_hosts: int = Field(1, ge=1)
    link_gbit: float = Field(gt=0)
    learner_gbit: float | None = Field(None, gt=0)
    volume_mbps: float = Field(gt=0)
    volume_iops: int = Field(gt=0)


class TestbedView(_View):
    name: str
    spec: TestbedSpecView


class Links(BaseModel):
    """What a run's machines could move: the links and each memory machine's volume."""

    model_config = ConfigDict(frozen=True)

    memory_hosts: int
    link_gbit: float
    learner_gbit: float | None
    volume_mbps: float
    volume_iops: int
    learner: str = Field(description="the learner's key in Coefficients.gpu_tflops")


class RunView(_View):
    testbed: TestbedView
    started_at: datetime
    exit_code: int
    output: JobReport | None

    @property
    def origin(self) -> str:
        return f"testbed {self.testbed.name}"

    def unusable(self) -> str | None:
        return None

    def links(self, learner: str) -> Links:
        spec = self.testbed.spec
        return Links(
            memory_hosts=spec.memory_hosts,
            link_gbit=spec.link_gbit,
            learner_gbit=spec.learner_gbit,
            volume_mbps=spec.volume_mbps,
            volume_iops=spec.volume_iops,
            learner=learner,
        )


class RunsView(_View):
    kind: Literal["remotegnn.testbed-runs"]
    version: Literal[1]
    runs: list[RunView] = Field(min_length=1)


class ClusterView(_View):
    """The cluster a `provision run` job ran on (``ClusterSpec`` of provisioning's ``JobRecord``)."""

    name: str
    learner_gpu: str = Field(min_length=1)
    learner_gbit: float = Field(gt=0)
    memory_gbit: float | None = Field(None, gt=0)
    memory_machines: int = Field(ge=0)
    volume_mbps: float = Field(ge=0, description="0: unknown")
    volume_iops: int = Field(ge=0, description="0: unknown")


class ClusterRunView(_View):
    """One `provision run` job on AWS. Its learner's step rate is fitted under its GPU's name."""

    kind: Literal["memorybridge.cluster-run"]
    schema_version: Literal[1]
    cluster: ClusterView
    started_at: datetime
    exit_code: int | None
    output: JobReport | None

    @field_validator("output", mode="before")
    @classmethod
    def _calibration_reports_only(cls, output):
        """A job may run any script; only a calibration job's report is one (others: no report)."""
        return output if isinstance(output, dict) and output.get("kind") == JOB_KIND else None

    @property
    def origin(self) -> str:
        return f"cluster {self.cluster.name}"

    def unusable(self) -> str | None:
        """Why this job cannot be fitted from even with a report, or None."""
        c = self.cluster
        if c.memory_machines == 0 or c.memory_gbit is None:
            return "a single-machine job: the pipeline model is fitted on two-level clusters"
        if not (c.volume_mbps and c.volume_iops):
            return "the cluster's volume limits are unknown (a state file written before they were recorded)"
        return None

    def links(self, learner: str) -> Links:
        c = self.cluster
        assert c.memory_gbit is not None, "unusable() turns single-machine jobs away first"
        return Links(
            memory_hosts=c.memory_machines,
            link_gbit=c.memory_gbit,
            learner_gbit=c.learner_gbit,
            volume_mbps=c.volume_mbps,
            volume_iops=c.volume_iops,
            learner=c.learner_gpu,
        )


class CalibrationRuns(BaseModel):
    """Every run of the files given to `planner calibrate --from`, in order."""

    model_config = ConfigDict(frozen=True)

    runs: list[RunView | ClusterRunView] = Field(min_length=1)


def load_runs(*paths: str | Path) -> CalibrationRuns:
    """The runs of testbed runs files and cluster job records; a wrong or missing field is reported
    with its file and path (runs.3.output.server...)."""
    runs: list[RunView | ClusterRunView] = []
    for path in paths:
        try:
            kind = json.loads(Path(path).read_bytes()).get("kind")
        except (OSError, ValueError, AttributeError):
            kind = None  # read_model below reports what is wrong with the file
        if kind == "memorybridge.cluster-run":
            runs.append(read_model(path, ClusterRunView, "cluster run record"))
        else:
            runs += read_model(path, RunsView, "runs file").runs
    if not runs:
        raise UsageError("no runs: give at least one runs file or job record with --from")
    return CalibrationRuns(runs=runs)
