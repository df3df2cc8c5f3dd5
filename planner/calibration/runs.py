"""The runs file (``remotegnn testbed run --runs``) as calibration reads it.

The planner imports nothing from remotegnn (boundaries are data), so this is a read-only view of
the testbed's ``RunsFile``: only the fields calibration needs, other fields ignored. What the
testbed record lacks - the dataset profile, the workload, the server's cache and process counts,
the learner's compute time per step - the training job prints as a ``JobReport`` (schema
``memorybridge.calibration-run`` v1), which the record keeps as the learner's output.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Final, Literal

from pydantic import BaseModel, ConfigDict, Field

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


class RunView(_View):
    testbed: TestbedView
    started_at: datetime
    exit_code: int
    output: JobReport | None


class RunsView(_View):
    kind: Literal["remotegnn.testbed-runs"]
    version: Literal[1]
    runs: list[RunView] = Field(min_length=1)


def load_runs(path: str | Path) -> RunsView:
    """The runs file; a wrong or missing field is reported with its path (runs.3.output.server...)."""
    return read_model(path, RunsView, "runs file")
