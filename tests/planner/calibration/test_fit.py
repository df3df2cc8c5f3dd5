"""`planner calibrate`'s fit: runs made from known coefficients give those coefficients back."""

from __future__ import annotations

import copy
import json
import math
import subprocess
import sys

import pytest

from contracts.calibration import DEFAULT_COEFFICIENTS, load_coefficients
from contracts.runs import ClusterSpec, JobRecord, RunsFile
from foundation.errors import InputFileError, UsageError
from planner.calibration.fit import fit
from planner.calibration.runs import load_runs
from planner.calibration.testbed import TESTBED_LEARNER
from tests.planner.calibration.conftest import TRUTH

PLANNER = [sys.executable, "-m", "planner.cli.main"]


def runs_of(document: dict, tmp_path) -> list:
    """The runs of a runs file holding ``document``, as `planner calibrate --from` reads them."""
    path = tmp_path / "runs.json"
    path.write_text(json.dumps(document))
    return load_runs(path)


def test_fit_recovers_the_coefficients_the_runs_were_made_from(runs_document, tmp_path):
    report = fit(runs_of(runs_document, tmp_path))
    co = report.coefficients
    assert co.gpu_tflops[TESTBED_LEARNER] == pytest.approx(TRUTH.gpu_tflops[TESTBED_LEARNER], rel=1e-3)
    for name in ("gpu_step_overhead_s", "sample_edges_per_core_s", "volume_efficiency", "network_efficiency"):
        assert getattr(co, name) == pytest.approx(getattr(TRUTH, name), rel=1e-3), name
    fitted = {f.name for f in report.fitted}
    assert "page_bytes" in report.kept_default and "page_bytes" not in fitted
    assert "4 run(s)" in co.source and "testbed mbtb-abc123" in co.source


def test_runs_with_several_learners_fit_the_data_parallel_efficiency_and_nothing_else(runs_document, tmp_path):
    """A run of two data-parallel learners, each step (all-reduce included) 1/0.8 of one device's:
    its first rank trains half the batches at that pace. The fit finds 0.8 from it alone, and the
    one-device runs still give every other coefficient."""
    parallel = copy.deepcopy(runs_document["runs"][0])
    parallel["learners"] = parallel["output"]["learners"] = 2
    for epoch in parallel["output"]["epochs"]:
        epoch["batches"] = epoch["stats"]["batches"] = epoch["batches"] // 2
        epoch["compute_s"] = epoch["compute_s"] / 2 / 0.8
        epoch["stats"]["batch_creators"]["busy_s"] *= 7  # a rank's share of busier servers: fitted from nothing
    runs_document["runs"].append(parallel)
    report = fit(runs_of(runs_document, tmp_path))
    fitted = {f.name: f for f in report.fitted}
    assert fitted["data_parallel_efficiency"].runs == [4]
    assert report.coefficients.data_parallel_efficiency == pytest.approx(0.8, rel=1e-3)
    for name in ("gpu_step_overhead_s", "sample_edges_per_core_s", "volume_efficiency", "network_efficiency"):
        assert getattr(report.coefficients, name) == pytest.approx(getattr(TRUTH, name), rel=1e-3), name
    assert 4 not in fitted[f"gpu_tflops.{TESTBED_LEARNER}"].runs
    without = fit(runs_of({**runs_document, "runs": runs_document["runs"][:4]}, tmp_path))
    assert "data_parallel_efficiency" in without.kept_default
    # Alone, against a rate these runs did not measure, the efficiency would carry that rate's error.
    with pytest.raises(UsageError, match="one-device rate of 'testbed-cpu' measured too"):
        fit(runs_of({**runs_document, "runs": [parallel]}, tmp_path), base=TRUTH)
    parallel["output"]["epochs"][0]["compute_s"] = 0.0
    idle = fit(runs_of(runs_document, tmp_path))
    assert idle.skipped == {4: "2 learners: no compute time measured"}
    assert "data_parallel_efficiency" in idle.kept_default


def test_efficiencies_come_only_from_runs_their_stage_bounds(runs_document, tmp_path):
    by_name = {f.name: f for f in fit(runs_of(runs_document, tmp_path)).fitted}
    assert by_name["volume_efficiency"].runs == [0, 2]
    assert by_name["network_efficiency"].runs == [1, 3]


def test_failed_runs_are_skipped_with_the_reason(runs_document, tmp_path):
    runs_document["runs"][0]["exit_code"] = 3
    report = fit(runs_of(runs_document, tmp_path))
    assert report.skipped == {0: "the job failed (exit status 3)"}
    for run in runs_document["runs"]:
        run["output"] = None
    with pytest.raises(UsageError, match="no run in the runs file can be calibrated from"):
        fit(runs_of(runs_document, tmp_path))


def test_a_bad_runs_file_names_the_field(tmp_path, runs_document):
    del runs_document["runs"][1]["output"]["server"]["cache_bytes"]
    path = tmp_path / "runs.json"
    path.write_text(json.dumps(runs_document))
    with pytest.raises(InputFileError, match=r"runs\.1\.output\.server\.cache_bytes"):
        load_runs(path)


def test_cli_writes_the_calibration_recommend_reads(tmp_path, runs_document):
    runs, out = tmp_path / "runs.json", tmp_path / "calibration.json"
    runs.write_text(json.dumps(runs_document))
    result = subprocess.run(
        [*PLANNER, "calibrate", "--from", str(runs), "-o", str(out), "--json"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert {f["name"] for f in json.loads(result.stdout)["fitted"]} >= {"volume_efficiency", "network_efficiency"}
    written = load_coefficients(out)
    assert written.volume_efficiency == pytest.approx(0.7, rel=1e-3)
    assert written.calibrated and '"calibrated": true' in out.read_text()
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []  # no temp file left


def test_cli_on_a_bad_file_fails_naming_the_field_and_keeps_the_old_output(tmp_path, runs_document):
    runs, out = tmp_path / "runs.json", tmp_path / "calibration.json"
    runs_document["kind"] = "something-else"
    runs.write_text(json.dumps(runs_document))
    out.write_text("previous")
    result = subprocess.run(
        [*PLANNER, "calibrate", "--from", str(runs), "-o", str(out)], capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 1 and "kind: Input should be" in result.stderr and "Traceback" not in result.stderr
    assert out.read_text() == "previous"


def cluster_record(run: dict, gpu: str = "T4") -> dict:
    """A `provision run` job record (what `provision run` writes) of the same measurements, on a
    cluster of equal links."""
    spec = run["testbed"]["spec"]
    cluster = ClusterSpec(
        name="gnn1",
        plan_id="p",
        plan_label="g4dn.xlarge + r6i.2xlarge",
        learner_type="g4dn.xlarge",
        learner_gpu=gpu,
        learner_gbit=spec["link_gbit"],
        memory_type="r6i.2xlarge",
        memory_gbit=spec["link_gbit"],
        memory_machines=spec["memory_hosts"],
        usd_per_hour=1.0,
        volume_mbps=round(spec["volume_mbps"]),
        volume_iops=spec["volume_iops"],
        cache_gib=None,
        predicted_epoch_s=None,
    )
    record = JobRecord(
        job_id="20260102T030405-abcd",
        cluster=cluster,
        dataset="/data/datasets/synthetic",
        command=run["command"],
        launch=["remotegnn", "launch"],
        started_at=run["started_at"],
        wall_s=run["wall_s"],
        exit_code=run["exit_code"],
        ended="finished",
        output=run["output"],
        log="job.log",
    )
    return record.model_dump(mode="json")


def test_cluster_job_records_calibrate_their_gpu_by_name(tmp_path, runs_document):
    paths = []
    for i, run in enumerate(runs_document["runs"]):
        paths.append(tmp_path / f"job{i}.json")
        paths[-1].write_text(json.dumps(cluster_record(run)))
    # The runs were made at the testbed learner's rate, on FLOPs alone and without a copy to a
    # device: the T4 fit must find that rate when the T4's memory traffic and copy are not priced either.
    flops_only = DEFAULT_COEFFICIENTS.model_copy(update={"gpu_memory_gbps": {}, "pcie_gbps": math.inf})
    report = fit(load_runs(*paths), base=flops_only)
    fitted = {f.name: f for f in report.fitted}
    truth = TRUTH.gpu_tflops[TESTBED_LEARNER]
    assert fitted["gpu_tflops.T4"].value == pytest.approx(truth, rel=1e-3)
    assert fitted["gpu_tflops.T4"].default == DEFAULT_COEFFICIENTS.gpu_tflops["T4"]
    assert report.coefficients.gpu_tflops["T4"] == pytest.approx(truth, rel=1e-3)
    assert "cluster gnn1" in report.coefficients.source


def test_testbed_runs_and_cluster_jobs_together_fit_each_learner(tmp_path, runs_document):
    runs = tmp_path / "runs.json"
    runs.write_text(json.dumps(runs_document))
    job = tmp_path / "job.json"
    job.write_text(json.dumps(cluster_record(runs_document["runs"][0], gpu="L4")))
    other = tmp_path / "other.json"
    other.write_text(json.dumps({**cluster_record(runs_document["runs"][1]), "output": {"test_acc": 0.9}}))
    report = fit(load_runs(runs, job, other))
    fitted = {f.name for f in report.fitted}
    assert {"gpu_tflops.testbed-cpu", "gpu_tflops.L4"} <= fitted
    assert "gpu_step_overhead_s" not in fitted  # shared by both learners: kept, not fitted from either
    assert report.skipped == {5: "no job report (the learner printed no memorybridge.calibration-run JSON)"}


def test_the_learner_rate_comes_from_the_fastest_run(runs_document, tmp_path):
    # On the testbed the server, the links and the learner's receiving share the learner's cores:
    # they slow its steps, by a different amount in each run, and never speed them up.
    for run, slowed in zip(runs_document["runs"], (1.8, 1.0, 1.0, 2.4), strict=True):
        for epoch in run["output"]["epochs"]:
            epoch["compute_s"] *= slowed
    report = fit(runs_of(runs_document, tmp_path))
    learner = {f.name: f for f in report.fitted}[f"gpu_tflops.{TESTBED_LEARNER}"]
    assert learner.runs in ([1], [2])  # an undisturbed run (one of each workload)
    assert learner.value == pytest.approx(TRUTH.gpu_tflops[TESTBED_LEARNER], rel=1e-3)
    for name in ("gpu_step_overhead_s", "sample_edges_per_core_s", "volume_efficiency", "network_efficiency"):
        assert getattr(report.coefficients, name) == pytest.approx(getattr(TRUTH, name), rel=1e-3), name
    # Every run slowed alike: the rate is seen slowed, as nothing shows the steps alone.
    for run in runs_document["runs"]:
        for epoch in run["output"]["epochs"]:
            epoch["compute_s"] = 2 * epoch["batches"] * (epoch["compute_s"] / epoch["batches"])
    contended = fit(runs_of(runs_document, tmp_path)).coefficients.gpu_tflops[TESTBED_LEARNER]
    assert contended < TRUTH.gpu_tflops[TESTBED_LEARNER] / 1.5


def test_the_step_overhead_needs_steps_of_clearly_different_sizes(tmp_path):
    from tests.planner.calibration.conftest import job_run

    # Fanouts 10,5 and 5,5: about 1.4x the FLOPs apart, as the fidelity runs' workloads are.
    close = [job_run(62.5, 5, 0.1, [10, 5]), job_run(62.5, 5, 0.1, [5, 5])]
    report = fit(runs_of(RunsFile(runs=close).model_dump(mode="json"), tmp_path))
    assert "gpu_step_overhead_s" in report.kept_default
    assert report.coefficients.gpu_step_overhead_s == DEFAULT_COEFFICIENTS.gpu_step_overhead_s
