"""The runs calibration reads, whoever measured them: a testbed's runs file (``testbed run --runs``)
and the record ``provision run`` writes for each job on a real cluster, both defined in
:mod:`contracts.runs`; beside them, a GPU's measured training steps (:mod:`contracts.gpu_steps`).

Each becomes a :class:`CalibrationRun`: where it ran (the links and volumes, in the cost models'
terms), how it ended, and its calibration report - the learner's output when it is a
``memorybridge.calibration-run`` document (a job may run any script; other outputs are no report).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from pydantic import ValidationError

from contracts.gpu_steps import GPU_STEPS_KIND, GpuStepsFile
from contracts.runs import CALIBRATION_RUN_KIND, CLUSTER_RUN_KIND, JobRecord, JobReport, RunRecord, RunsFile
from foundation.errors import InputFileError, UsageError, format_validation_error
from foundation.fileio import read_model
from planner.calibration.testbed import TESTBED_LEARNER
from planner.costmodel.evaluation import FLOW_CAP_GBPS


@dataclass(frozen=True)
class Links:
    """What a run's machines could move: the links and each memory machine's volume."""

    memory_hosts: int
    link_gbit: float
    learner_gbit: float | None
    volume_mbps: float
    volume_iops: int
    learner: str  # the learner's key in Coefficients.gpu_tflops
    flow_gbit: float | None = None  # the most one TCP flow carried (None: no per-flow cap)


@dataclass(frozen=True)
class CalibrationRun:
    """One measured run as calibration sees it."""

    origin: str  # "testbed NAME" or "cluster NAME", for the calibration file's provenance
    started_at: datetime
    exit_code: int | None
    report: JobReport | None
    links: Links | None  # None: the run cannot be fitted from, for the reason in ``unusable``
    unusable: str | None = None


def of_testbed(record: RunRecord, report: JobReport | None) -> CalibrationRun:
    spec = record.testbed.spec
    links = Links(
        memory_hosts=spec.memory_hosts,
        link_gbit=spec.link_gbit,
        learner_gbit=spec.learner_gbit,
        volume_mbps=spec.volume_mbps,
        volume_iops=spec.volume_iops,
        learner=TESTBED_LEARNER,
        flow_gbit=spec.flow_gbit,
    )
    return CalibrationRun(f"testbed {record.testbed.name}", record.started_at, record.exit_code, report, links)


def of_cluster(record: JobRecord, report: JobReport | None) -> CalibrationRun:
    """A `provision run` job; its learner's step rate is fitted under its GPU's name."""
    c = record.cluster
    unusable = None
    if c.memory_machines == 0 or c.memory_gbit is None:
        unusable = "a single-machine job: the pipeline model is fitted on two-level clusters"
    elif not (c.volume_mbps and c.volume_iops):
        unusable = "the cluster's volume limits are unknown (a state file written before they were recorded)"
    links = (
        None
        if unusable or c.memory_gbit is None
        else Links(
            memory_hosts=c.memory_machines,
            link_gbit=c.memory_gbit,
            learner_gbit=c.learner_gbit,
            volume_mbps=c.volume_mbps,
            volume_iops=c.volume_iops,
            learner=c.learner_gpu,
            flow_gbit=FLOW_CAP_GBPS,
        )
    )
    return CalibrationRun(f"cluster {c.name}", record.started_at, record.exit_code, report, links, unusable)


def _report(output: dict | None, path: Path, where: str) -> JobReport | None:
    """The calibration report in a learner's output, or None when the output is something else."""
    if not isinstance(output, dict) or output.get("kind") != CALIBRATION_RUN_KIND:
        return None
    try:
        return JobReport.model_validate(output)
    except ValidationError as exc:
        errors = format_validation_error(exc).replace("; ", f"; {where}.")
        raise InputFileError(f"{path} is invalid: {where}.{errors}") from exc


def load_runs(*paths: str | Path) -> list[CalibrationRun]:
    """The runs of testbed runs files and cluster job records, in order; a wrong or missing field
    is reported with its file and path (runs.3.output.server...)."""
    runs, _ = load_inputs(*paths)
    if not runs:
        raise UsageError("no runs: give at least one runs file or job record with --from")
    return runs


def load_inputs(*paths: str | Path) -> tuple[list[CalibrationRun], list[tuple[str, GpuStepsFile]]]:
    """What calibration reads: the runs of testbed runs files and cluster job records, in order,
    and GPU steps files (``benchmarks/gpu_steps.py``) by name."""
    runs: list[CalibrationRun] = []
    gpu_steps: list[tuple[str, GpuStepsFile]] = []
    for path in map(Path, paths):
        try:
            kind = json.loads(path.read_bytes()).get("kind")
        except (OSError, ValueError, AttributeError):
            kind = None  # read_model below reports what is wrong with the file
        if kind == GPU_STEPS_KIND:
            gpu_steps.append((path.name, read_model(path, GpuStepsFile, "GPU steps file")))
        elif kind == CLUSTER_RUN_KIND:
            record = read_model(path, JobRecord, "cluster run record")
            runs.append(of_cluster(record, _report(record.output, path, "output")))
        else:
            testbed = read_model(path, RunsFile, "runs file")
            runs += [of_testbed(r, _report(r.output, path, f"runs.{i}.output")) for i, r in enumerate(testbed.runs)]
    return runs, gpu_steps
