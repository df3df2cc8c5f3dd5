"""benchmarks/gpu_steps.py on the CPU (its CUDA path runs on a GPU machine): every shape, form and
precision asked for is measured on DistributedGraphLoader batches and written as a valid file."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from contracts.gpu_steps import GpuStepsFile

ROOT = Path(__file__).resolve().parents[2]


def test_the_benchmark_measures_every_shape_it_is_asked_for(tmp_path):
    output = tmp_path / "steps.json"
    done = subprocess.run(
        [
            sys.executable,
            str(ROOT / "benchmarks" / "gpu_steps.py"),
            "--device",
            "cpu",
            "--scale",
            "12",
            "--pairs",
            "40000",
            "--dim",
            "16",
            "--fanouts",
            "5,5;4,3,2",
            "--batch-sizes",
            "64,128",
            "--hidden",
            "16,32",
            "--warmup",
            "1",
            "--steps",
            "2",
            "--data-dir",
            str(tmp_path / "data"),
            "--output",
            str(output),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    measured = GpuStepsFile.model_validate_json(output.read_text())
    assert (measured.gpu, measured.gpu_key, measured.feature_dim) == ("cpu", None, 16)
    shapes = {(tuple(m.fanouts), m.batch_size, m.hidden_dim, m.precision, m.step_form) for m in measured.measurements}
    assert len(shapes) == len(measured.measurements) == 2 * 2 * 2 * 2 * 3
    for m in measured.measurements:
        assert m.nodes_per_hop[0] == m.batch_size and m.steps == 2 and m.step_s <= m.step_s_p90
    summary = json.loads(done.stdout)
    assert len(summary["rows"]) == len(measured.measurements)
    assert {(r["precision"], r["form"]) for r in summary["rows"]} == {
        (p, f) for p in ("float32", "bfloat16") for f in ("blocks", "trimmed", "whole")
    }
    assert all(r["speedup_vs_float32"] is None for r in summary["rows"] if r["precision"] == "float32")
