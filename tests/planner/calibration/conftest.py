"""Calibration fixtures: a small profile, and runs files made from known coefficients."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from contracts.calibration import DEFAULT_COEFFICIENTS
from contracts.profile import DatasetProfile
from contracts.runs import RunRecord, RunsFile
from contracts.testbed import TestbedSpec
from contracts.workload import Workload
from planner.calibration.testbed import TESTBED_LEARNER, EmulatedCluster, model_inputs, predict
from planner.costmodel.pipeline import step_work_of
from testbed.state import plan

PROFILE = DatasetProfile(
    name="synthetic",
    num_nodes=65536,
    num_edges=1_000_000,
    feature_rows=65536,
    feature_dim=1024,
    num_train=13107,
    structure_bytes=8_000_000,
    cache_curves={"degree": [(0.1, 0.6), (0.3, 0.85), (0.6, 0.96)]},
)
TRUTH = DEFAULT_COEFFICIENTS.model_copy(
    update={
        "gpu_tflops": {**DEFAULT_COEFFICIENTS.gpu_tflops, TESTBED_LEARNER: 0.2},
        "gpu_step_overhead_s": 0.01,
        "sample_edges_per_core_s": 2e6,
        "volume_efficiency": 0.7,
        "network_efficiency": 0.6,
    }
)
# (volume MB/s, link Gbit/s, cache share, fanouts): volume-bound and link-bound runs of two workloads,
# whose steps differ enough in size (4x the FLOPs) for the fit to find the step overhead.
CONFIGS = [(62.5, 5, 0.1, [10, 5]), (250, 1, 0.6, [10, 5]), (62.5, 5, 0.1, [2, 2]), (125, 1, 0.3, [2, 2])]


def job_run(volume_mbps, link_gbit, cache, fanouts, co=TRUTH, profile=PROFILE):
    """A runs-file record whose measurements are exactly what ``co`` predicts."""
    workload = Workload(fanouts=fanouts, batch_size=256, hidden_dim=16)
    machine = EmulatedCluster(
        cores=2,
        link_gbit=link_gbit,
        volume_mbps=volume_mbps,
        volume_iops=16000,
        cache_bytes=int(cache * profile.feature_bytes),
    )
    inputs, _ = model_inputs(machine, profile, workload, co)
    ev = predict(machine, profile, workload, co)["pipeline"]
    batch, batches = inputs.batch, inputs.batch.batches_per_epoch
    hit = float(ev.details["hit_rate"][0])
    step = step_work_of(inputs).seconds(co, co.gpu_tflops[TESTBED_LEARNER], float("inf"))
    step += batch.feature_bytes / (inputs.coefficients.pcie_gbps * 1e9)  # the copy: none on the testbed's CPU
    rows = batches * batch.nodes
    epoch = {
        "seconds": float(ev.epoch_s[0]),
        "batches": batches,
        "compute_s": batches * step,
        "stats": {
            "batches": batches,
            "seconds": float(ev.epoch_s[0]),
            "batch_creators": {"processes": 1, "busy_s": batches * batch.edges / co.sample_edges_per_core_s},
            "vector_loaders": {"processes": 1, "busy_s": float(ev.stages["volume"][0])},
            "cache_hits": round(rows * hit),
            "cache_misses": round(rows * (1 - hit)),
        },
    }
    report = {
        "kind": "memorybridge.calibration-run",
        "version": 1,
        "profile": profile.model_dump(mode="json"),
        "workload": workload.model_dump(mode="json"),
        "server": {"cache_bytes": machine.cache_bytes, "batch_creators": 1, "vector_loaders": 1},
        "epochs": [epoch],
    }
    spec = TestbedSpec(name="mbtb-abc123", link_gbit=link_gbit, volume_mbps=volume_mbps, volume_iops=16000)
    record = RunRecord(
        testbed=plan(spec, None, None),  # what `testbed up` records, without a volume to throttle
        command=["python", "job.py"],
        mpiexec=["mpiexec", "-n", "2"],
        learners=1,
        serve_args=[],
        started_at=datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC),
        wall_s=float(ev.epoch_s[0]),
        exit_code=0,
        evicted_bytes=0,
        leftover_processes=0,
        output=report,
    )
    return record.model_dump(mode="json")


@pytest.fixture
def runs_document():
    """A testbed runs file (what `testbed run --runs` writes), as JSON."""
    return RunsFile(runs=[RunRecord.model_validate(job_run(*c)) for c in CONFIGS]).model_dump(mode="json")
