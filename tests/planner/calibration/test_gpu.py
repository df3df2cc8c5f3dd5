"""Fitting a GPU's rates from its measured steps (planner.calibration.gpu, `planner calibrate`)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from contracts.calibration import DEFAULT_COEFFICIENTS, load_coefficients
from contracts.gpu_steps import GpuStep, GpuStepsFile
from foundation.errors import UsageError
from planner.calibration.fit import fit
from planner.calibration.gpu import fit_gpus
from planner.cli.main import app
from planner.costmodel.gpu import step_work

ROOT = Path(__file__).resolve().parents[3]
TRUTH = {"tflops": 20.0, "gbps": 500.0, "overhead": 0.003}


def measured_steps(key="L4", truth=TRUTH, precision="float32") -> GpuStepsFile:
    """Steps of 2 fanouts x 3 batch sizes x 3 widths x both forms, timed exactly as ``truth`` prices them."""
    co = DEFAULT_COEFFICIENTS
    steps = []
    for fanouts, nodes, edges in (
        ([10, 5], [256, 2000, 9000], [2500, 10000]),
        ([5, 5, 5], [256, 1200, 5000, 18000], [1280, 5600, 22000]),
    ):
        for scale in (1, 2, 4):
            n, e = [scale * v for v in nodes], [scale * v for v in edges]
            for hidden in (64, 128, 256):
                for trimmed in (True, False):
                    work = step_work(tuple(n), tuple(e), 100, hidden, 10, form="trimmed" if trimmed else "whole")
                    seconds = (
                        work.flops / (truth["tflops"] * 1e12 * co.gpu_efficiency)
                        + work.memory_bytes / (truth["gbps"] * 1e9 * co.gpu_memory_efficiency)
                        + truth["overhead"]
                    )
                    steps.append(
                        GpuStep(
                            fanouts=fanouts,
                            batch_size=256 * scale,
                            hidden_dim=hidden,
                            precision=precision,
                            trimmed=trimmed,
                            nodes_per_hop=n,
                            edges_per_hop=e,
                            steps=10,
                            step_s=seconds,
                            step_s_p90=seconds,
                        )
                    )
    name = {"L4": "NVIDIA L4", "H100": "NVIDIA H100 80GB HBM3"}.get(key, key)
    return GpuStepsFile(
        gpu=name, gpu_key=key, torch="2.11.0", feature_dim=100, classes=10, command="test", measurements=steps
    )


def test_a_gpus_rates_and_the_overhead_are_recovered():
    values, co = fit_gpus([("l4.json", measured_steps())], DEFAULT_COEFFICIENTS)
    assert co.gpu_tflops["L4"] == pytest.approx(TRUTH["tflops"], rel=1e-6)
    assert co.gpu_memory_gbps["L4"] == pytest.approx(TRUTH["gbps"], rel=1e-6)
    assert co.gpu_step_overhead_s == pytest.approx(TRUTH["overhead"], rel=1e-6)
    assert co.gpu_tflops["T4"] == DEFAULT_COEFFICIENTS.gpu_tflops["T4"]  # other GPUs keep their datasheets
    assert {v.name for v in values} == {"gpu_tflops.L4", "gpu_memory_gbps.L4", "gpu_step_overhead_s"}


def test_two_gpus_keep_the_shared_overhead():
    other = {"tflops": 60.0, "gbps": 3000.0, "overhead": DEFAULT_COEFFICIENTS.gpu_step_overhead_s}
    files = [
        ("l4.json", measured_steps(truth={**TRUTH, "overhead": other["overhead"]})),
        ("h100.json", measured_steps("H100", other)),
    ]
    values, co = fit_gpus(files, DEFAULT_COEFFICIENTS)
    assert co.gpu_tflops["H100"] == pytest.approx(60.0, rel=1e-6) and co.gpu_tflops["L4"] == pytest.approx(
        20.0, rel=1e-6
    )
    assert "gpu_step_overhead_s" not in {v.name for v in values}


def test_mixed_precision_steps_are_not_fitted():
    fp32 = measured_steps()
    mixed = measured_steps(truth={"tflops": 80.0, "gbps": 900.0, "overhead": 0.003}, precision="bfloat16")
    both = fp32.model_copy(update={"measurements": fp32.measurements + mixed.measurements})
    _, co = fit_gpus([("both.json", both)], DEFAULT_COEFFICIENTS)
    assert co.gpu_tflops["L4"] == pytest.approx(TRUTH["tflops"], rel=1e-6)


def test_a_gpu_the_planner_does_not_know_or_too_few_shapes_is_refused():
    unknown = measured_steps().model_copy(update={"gpu": "Radeon", "gpu_key": None})
    with pytest.raises(UsageError, match="no entry in the planner's GPU tables"):
        fit_gpus([("radeon.json", unknown)], DEFAULT_COEFFICIENTS)
    few = measured_steps()
    few = few.model_copy(update={"measurements": [m for m in few.measurements if m.hidden_dim == 64]})
    with pytest.raises(UsageError, match="two or more hidden widths"):
        fit_gpus([("few.json", few)], DEFAULT_COEFFICIENTS)


def test_hop_counts_must_match_the_fanouts():
    with pytest.raises(ValueError, match="2 fanouts need 3 nodes_per_hop"):
        GpuStep(
            fanouts=[10, 5],
            batch_size=1,
            hidden_dim=8,
            precision="float32",
            trimmed=True,
            nodes_per_hop=[1, 2],
            edges_per_hop=[1, 2],
            steps=1,
            step_s=1.0,
            step_s_p90=1.0,
        )


def test_calibrate_reads_a_gpu_steps_file(tmp_path):
    path = tmp_path / "l4-steps.json"
    path.write_text(measured_steps().model_dump_json())
    out = tmp_path / "calibration.json"
    done = CliRunner().invoke(app, ["calibrate", "--from", str(path), "-o", str(out), "--json"])
    assert done.exit_code == 0, done.output
    report = json.loads(done.stdout)
    assert {v["name"] for v in report["fitted"]} >= {"gpu_tflops.L4", "gpu_memory_gbps.L4"}
    co = load_coefficients(out)
    assert co.calibrated and co.gpu_tflops["L4"] == pytest.approx(TRUTH["tflops"], rel=1e-6)
    assert "NVIDIA L4 (L4)" in co.source and "l4-steps.json" in co.source


def test_no_input_at_all_is_refused():
    with pytest.raises(UsageError, match="no runs"):
        fit([])


def test_the_recorded_h100_steps_give_its_datasheet_rates_at_the_default_efficiencies():
    # The defaults' efficiencies were set from this file: a fit of it lands on the H100's datasheet.
    recorded = GpuStepsFile.model_validate_json((ROOT / "benchmarks" / "results" / "gpu_steps.json").read_text())
    assert recorded.gpu_key == "H100"
    _, co = fit_gpus([("gpu_steps.json", recorded)], DEFAULT_COEFFICIENTS)
    assert co.gpu_tflops["H100"] == pytest.approx(DEFAULT_COEFFICIENTS.gpu_tflops["H100"], rel=0.05)
    assert co.gpu_memory_gbps["H100"] == pytest.approx(DEFAULT_COEFFICIENTS.gpu_memory_gbps["H100"], rel=0.05)
    assert co.gpu_step_overhead_s == pytest.approx(DEFAULT_COEFFICIENTS.gpu_step_overhead_s, rel=0.05)
