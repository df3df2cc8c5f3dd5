"""The job's boundary models: where things are on the machines, and the record a job leaves.

``MachineLayout`` is what ``provision run`` assumes of a machine. Its defaults are the paths the
boot script of ``provision up`` creates; a cluster built from other images (or test hosts on one
machine) passes its own with ``--layout FILE``. ``JobRecord`` is the runs JSON written to
``~/.memorybridge/clusters/NAME/runs/``, which ``planner calibrate --from`` and ``provision status``
read; ``JobProgress`` (in provisioning.models) is a job's epoch line, for ``provision status``.
"""

from __future__ import annotations

import datetime as dt
from typing import Any, Literal

from pydantic import Field

from planner.plan import StrictModel
from provisioning import userdata
from provisioning.models import JobProgress

JOB_SCHEMA_VERSION = 1


class MachineLayout(StrictModel):
    """Paths on the cluster's machines (absolute), as the boot script lays them out."""

    bin_dir: str = Field(f"{userdata.VENV}/bin", description="where remotegnn, python and mpiexec are")
    boot_status: str = Field(userdata.BOOT_STATUS, description="one word: running, ok or failed")
    init_log: str = Field(userdata.INIT_LOG, description="the boot script's log (its tail is shown on failure)")
    datasets_dir: str = Field(f"{userdata.MOUNT_POINT}/datasets", description="datasets on the data volume")
    jobs_dir: str = Field("/home/ec2-user/memorybridge-jobs", description="a job's script directory and logs")


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
    predicted_epoch_s: float | None = Field(description="the plan's epoch time")


class JobRecord(StrictModel):
    """One `provision run` job: what ran where, how it ended, and what the learner reported."""

    kind: Literal["memorybridge.cluster-run"] = "memorybridge.cluster-run"
    schema_version: Literal[1] = JOB_SCHEMA_VERSION
    job_id: str
    cluster: ClusterSpec
    dataset: str = Field(description="the dataset's path on the data machines")
    command: list[str] = Field(description="the training command as given")
    launch: list[str] = Field(description="the `remotegnn launch` command run on the learner")
    started_at: dt.datetime
    wall_s: float
    exit_code: int | None = Field(description="the job's exit status; none when it was stopped")
    ended: Literal["finished", "failed", "interrupted", "max-hours"]
    progress: list[JobProgress] = Field(default_factory=list, description="each epoch line, in order")
    output: dict[str, Any] | None = Field(description="the learner's last JSON document")
    log: str = Field(description="the job's output, saved beside this record")
    torn_down: bool = False
