"""A running job's progress as `provision status` shows it: the latest epoch beside the plan's prediction."""

from __future__ import annotations

from rich.console import Console

from foundation.fileio import write_model
from provisioning import render
from provisioning.job.runner import CURRENT, EPOCH_LINE, current_progress, runs_dir
from provisioning.models import ClusterStatus, JobProgress


def test_the_example_scripts_epoch_line_is_recognised():
    found = EPOCH_LINE.match("epoch 3: 12.31s, 45.2 batches/s, stall 0.812s, loss 1.2345, test acc 0.7000")
    assert found and (found["epoch"], found["seconds"], found["batches"], found["stall"]) == (
        "3",
        "12.31",
        "45.2",
        "0.812",
    )
    assert EPOCH_LINE.match("[memory rank 0] learner 0 session 0: epoch 0: 2 batches in 0.30s") is None


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
