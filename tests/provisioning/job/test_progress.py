"""A running job's progress as `provision status` shows it: the latest epoch beside the plan's prediction."""

from __future__ import annotations

import pytest
from rich.console import Console

from contracts.progress import EpochEnded
from contracts.runs import ClusterSpec, JobProgress
from foundation.fileio import write_model
from provisioning import render
from provisioning.job.runner import CURRENT, current_progress, job_progress, runs_dir
from provisioning.models import ClusterStatus


def test_a_progress_event_becomes_the_jobs_progress_with_its_cost_so_far(spec):
    event = EpochEnded(epoch=3, seconds=12.31, batches=556, batches_per_s=45.2, stall_s=0.812)
    progress = job_progress(event, elapsed_s=1800.0, spec=spec)
    assert (progress.epoch, progress.seconds, progress.batches_per_s, progress.stall_s) == (3, 12.31, 45.2, 0.812)
    assert progress.elapsed_s == 1800.0 and progress.cost_usd == spec.usd_per_hour / 2
    assert progress.predicted_epoch_s == spec.predicted_epoch_s


@pytest.fixture
def spec() -> ClusterSpec:
    return ClusterSpec(
        name="c1",
        plan_id="p1",
        plan_label="g4dn.xlarge + 1x r6i.large",
        learner_type="g4dn.xlarge",
        learner_gpu="T4",
        learner_gbit=5.0,
        memory_type="r6i.large",
        memory_gbit=12.5,
        memory_machines=1,
        usd_per_hour=1.9,
        volume_mbps=125,
        volume_iops=3000,
        cache_gib=4.0,
        predicted_epoch_s=70.2,
    )


def test_status_shows_the_running_jobs_latest_epoch_against_the_prediction(tmp_path):
    assert current_progress(tmp_path, "c1") is None
    progress = JobProgress(
        epoch=4, seconds=71.5, batches_per_s=16.8, stall_s=2.25, elapsed_s=390.0, cost_usd=0.21, predicted_epoch_s=70.2
    )
    home = runs_dir(tmp_path, "c1")
    home.mkdir(parents=True)
    write_model(home / CURRENT, progress)
    assert current_progress(tmp_path, "c1") == progress

    report = ClusterStatus(
        name="c1", region="us-east-1", exists=True, plan_id="p", usd_per_hour=1.9, cost_so_far_usd=0.3, resources=[]
    ).model_copy(update={"job": progress})
    console = Console(width=200, record=True)
    console.print(render.status(report))
    text = console.export_text()
    assert "epoch 4 took 71.5 s against 70.2 s predicted" in text and "learner stall 2.25 s" in text
