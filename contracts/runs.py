"""The records of training jobs, as their runners write them and `planner calibrate` reads them.

- a testbed's runs file (``memorybridge.testbed-runs`` v1): one :class:`RunRecord` per `testbed run`;
- a cluster job's record (``memorybridge.cluster-run`` v1): one :class:`JobRecord` per `provision run`;
- the result a calibration job prints (``memorybridge.calibration-run`` v1, :class:`JobReport`),
  which both keep as the learner's output.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field

from contracts.kinds import formerly
from contracts.profile import DatasetProfile
from contracts.shards import DEFAULT_LAYOUT, ShardLayoutName
from contracts.stats import EpochCounters
from contracts.testbed import TestbedState
from contracts.workload import Workload
from foundation.models import StrictModel

CALIBRATION_RUN_KIND: Final = "memorybridge.calibration-run"
CLUSTER_RUN_KIND: Final = "memorybridge.cluster-run"
TESTBED_RUNS_KIND: Final = "memorybridge.testbed-runs"
OLDER_TESTBED_RUNS_KIND: Final = "remotegnn.testbed-runs"  # read as TESTBED_RUNS_KIND (contracts.kinds)


# -- what a calibration job reports -------------------------------------------------------------
class JobEpoch(BaseModel):
    """One epoch of a calibration run, as its learner measured it."""

    model_config = ConfigDict(extra="ignore")

    seconds: float = Field(gt=0, description="the training loop's wall time for the epoch")
    batches: int = Field(gt=0)
    compute_s: float = Field(ge=0, description="learner time in forward, backward and optimizer step")
    stats: EpochCounters = Field(description="the memory ranks' counters (the loader's PipelineStats)")


class ServerConfig(BaseModel):
    """The memory server a calibration run used."""

    model_config = ConfigDict(extra="ignore")

    cache_bytes: int = Field(ge=0, description="feature-cache RAM per memory host (serve --cache-gb)")
    batch_creators: int = Field(gt=0)
    vector_loaders: int = Field(gt=0)


class JobReport(StrictModel):
    """What a calibration training job prints as its result (schema ``memorybridge.calibration-run``
    v1): the dataset's profile, the workload, the memory server and each epoch's measurements. The
    testbed and `provision run` keep it as the learner's output; `planner calibrate` fits from it."""

    kind: Literal["memorybridge.calibration-run"] = CALIBRATION_RUN_KIND
    version: Literal[1] = 1
    profile: DatasetProfile
    workload: Workload
    server: ServerConfig
    learners: int = Field(
        1,
        ge=1,
        description="data-parallel learner ranks that trained (the world size); each epoch's figures are the "
        "first rank's, over its share of the batches",
    )
    epochs: list[JobEpoch] = Field(min_length=1)

    def steady_epochs(self) -> list[JobEpoch]:
        """Epochs after the first when there are several: the first pays for JIT compilation and
        start-up, which the model counts apart from the epoch time."""
        return self.epochs[1:] if len(self.epochs) > 1 else self.epochs


# -- the testbed's runs file --------------------------------------------------------------------
class RunRecord(StrictModel):
    """One `testbed run`: the testbed, the commands, how the job ended and what its learner printed."""

    testbed: TestbedState
    command: list[str] = Field(description="the training command as given")
    mpiexec: list[str] = Field(description="the whole job's command line")
    learners: int
    serve_args: list[str]
    started_at: datetime
    wall_s: float
    exit_code: int
    evicted_bytes: int = Field(description="the dataset's bytes dropped from the page cache before the job")
    leftover_processes: int = Field(description="processes still on the hosts after the job, stopped by the testbed")
    output: dict[str, Any] | None = Field(description="the learner's last JSON document")
    output_note: str = ""


class RunsFile(StrictModel):
    """A testbed's runs file (schema ``memorybridge.testbed-runs`` v1): one record per job, appended.
    A file written under the schema's former name, ``remotegnn.testbed-runs``, still loads, and is
    written back (when a run is appended) under the current one."""

    kind: Annotated[Literal["memorybridge.testbed-runs"], formerly(OLDER_TESTBED_RUNS_KIND, TESTBED_RUNS_KIND)] = (
        TESTBED_RUNS_KIND
    )
    version: Literal[1] = 1
    runs: list[RunRecord] = Field(default_factory=list)


# -- a cluster job's record ---------------------------------------------------------------------
class JobProgress(StrictModel):
    """The latest epoch line a running job printed."""

    epoch: int
    seconds: float
    batches_per_s: float
    stall_s: float
    elapsed_s: float
    cost_usd: float = Field(description="elapsed hours at the cluster's recorded price")
    predicted_epoch_s: float | None = Field(None, description="the plan's epoch time, to compare")


class ClusterSpec(StrictModel):
    """What the job ran on, as calibration needs it: the machines' links and volume."""

    name: str
    plan_id: str
    plan_label: str
    learner_type: str
    learner_gpu: str = Field(description="the learner's GPU model (its step rate's name in the coefficients)")
    learner_gbit: float = Field(description="the learner's baseline network bandwidth")
    memory_type: str | None
    memory_gbit: float | None = Field(description="a memory machine's baseline network bandwidth")
    memory_machines: int
    usd_per_hour: float
    volume_mbps: int = Field(description="each data volume's provisioned throughput (0: unknown)")
    volume_iops: int = Field(description="each data volume's provisioned IOPS (0: unknown)")
    cache_gib: float | None = Field(description="feature-cache RAM per data machine the plan priced")
    flows: int = Field(1, ge=1, description="TCP flows per memory machine the plan priced (`remotegnn launch --flows`)")
    learners: int = Field(
        1, ge=1, description="data-parallel learner ranks the plan priced, one per GPU (`remotegnn launch --learners`)"
    )
    sampling: Literal["memory", "learner"] = Field(
        "memory", description="who samples the batches the plan priced (`remotegnn launch --sampling`)"
    )
    shard_layout: ShardLayoutName = Field(
        DEFAULT_LAYOUT,
        description="how the feature rows are dealt to the memory machines (`remotegnn launch --layout`, "
        "contracts.shards); each memory machine is staged its part in it",
    )
    predicted_epoch_s: float | None = Field(description="the plan's epoch time")


RecoveryCause = Literal["machine-lost", "interruption-notice", "lost-during-recovery", "stalled"]


class Recovery(StrictModel):
    """One loss of machines (or of the job's progress) during a job, and what `provision run
    --recover` did about it."""

    at: datetime = Field(description="when the loss was noticed")
    cause: RecoveryCause = Field(
        "machine-lost",
        description="machine-lost: EC2 no longer runs it; interruption-notice: AWS's two-minute warning (the job "
        "checkpointed, the machine was retired); lost-during-recovery: lost while the job was being recovered (the "
        "same restart covers it); stalled: no heartbeat from the training loop for --stall-minutes",
    )
    lost: dict[str, str] = Field(description="node -> why, in EC2's words (state and state reason); empty when stalled")
    replaced: bool = Field(description="false: not recovered (no --recover, or --max-restarts reached)")
    seconds_lost: float = Field(0.0, ge=0, description="from the loss noticed to the job running again")


class JobRecord(StrictModel):
    """One `provision run` job (schema ``memorybridge.cluster-run`` v1): what ran where, how it
    ended, each epoch's progress and what the learner reported."""

    kind: Literal["memorybridge.cluster-run"] = CLUSTER_RUN_KIND
    schema_version: Literal[1] = 1
    job_id: str
    cluster: ClusterSpec
    dataset: str = Field(description="the dataset's path on the data machines")
    command: list[str] = Field(description="the training command as given")
    launch: list[str] = Field(description="the `remotegnn launch` command run on the learner")
    started_at: datetime
    wall_s: float
    exit_code: int | None = Field(description="the job's exit status; none when it was stopped")
    ended: Literal["finished", "failed", "interrupted", "max-hours", "lost", "stalled"] = Field(
        description="lost: a machine was lost and not replaced (no --recover, or --max-restarts reached); "
        "stalled: the training loop stopped beating and the job was not restarted"
    )
    progress: list[JobProgress] = Field(default_factory=list, description="each epoch line, in order")
    output: dict[str, Any] | None = Field(description="the learner's last JSON document")
    log: str = Field(description="the job's output, saved beside this record")
    torn_down: bool = False
    recoveries: list[Recovery] = Field(default_factory=list, description="each machine loss, in order")
