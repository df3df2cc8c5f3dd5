"""A GPU's step rates from its measured training steps (``memorybridge.gpu-steps`` files).

Each float32 measurement is one batch shape's median step. The planner prices a step as FLOPs at
``gpu_tflops[GPU] x gpu_efficiency`` plus memory bytes at ``gpu_memory_gbps[GPU] x
gpu_memory_efficiency`` plus ``gpu_step_overhead_s`` (``planner.costmodel.gpu``), so the three
unknowns come from one least-squares solve over the shapes, weighted by 1 / step so that each
shape counts by its relative error (a 3 ms step matters as much as a 30 ms one). The efficiencies
stay; the GPU's two rates are fitted, so other GPUs keep their datasheet figures. Mixed-precision
measurements are kept in the file for people: the planner prices float32.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from contracts.calibration import Coefficients, FittedValue
from contracts.gpu_steps import GpuStep, GpuStepsFile
from foundation.errors import UsageError
from planner.costmodel.gpu import StepWork, step_work

# Three unknowns need at least this many shapes, with more than one hidden width among them.
MIN_SHAPES = 4


def measured_work(measured: GpuStepsFile, step: GpuStep) -> StepWork:
    """The planner's count of the work of one measured step's shape."""
    return step_work(
        tuple(step.nodes_per_hop),
        tuple(step.edges_per_hop),
        measured.feature_dim,
        step.hidden_dim,
        measured.classes,
        form=step.step_form,
    )


def design(measured: GpuStepsFile) -> tuple[np.ndarray, np.ndarray]:
    """(rows of [FLOPs, memory bytes, 1], median step seconds) of the float32 measurements."""
    rows, seconds = [], []
    for m in measured.measurements:
        if m.precision != "float32":
            continue
        work = measured_work(measured, m)
        rows.append([work.flops, work.memory_bytes, 1.0])
        seconds.append(m.step_s)
    return np.array(rows).reshape(-1, 3), np.array(seconds)


def fit_gpu(
    key: str, files: Sequence[tuple[str, GpuStepsFile]], co: Coefficients, fit_overhead: bool
) -> tuple[list[FittedValue], dict[str, float]]:
    """One GPU's fitted values and {its tflops, its GB/s, the overhead} from all its files; the
    overhead is fitted only when ``fit_overhead`` (one GPU among the inputs), else charged at ``co``'s."""
    origin = ", ".join(o for o, _ in files)
    designs = [design(measured) for _, measured in files]
    x, y = np.vstack([d[0] for d in designs]), np.concatenate([d[1] for d in designs])
    widths = {m.hidden_dim for _, f in files for m in f.measurements if m.precision == "float32"}
    if len(y) < MIN_SHAPES or len(widths) < 2:
        raise UsageError(
            f"{origin}: {len(y)} float32 shape(s); fitting a GPU needs at least {MIN_SHAPES}, over two or more "
            "hidden widths (benchmarks/gpu_steps.py measures 24)"
        )
    weight = 1.0 / y
    if fit_overhead:
        solution = np.linalg.lstsq(x * weight[:, None], y * weight, rcond=None)[0]
    else:
        solution = np.append(
            np.linalg.lstsq(x[:, :2] * weight[:, None], (y - co.gpu_step_overhead_s) * weight, rcond=None)[0],
            co.gpu_step_overhead_s,
        )
    seconds_per_flop, seconds_per_byte, overhead = (float(v) for v in solution)
    if seconds_per_flop <= 0 or seconds_per_byte <= 0 or overhead < 0:
        raise UsageError(
            f"{origin}: the measurements do not separate compute from memory traffic (a negative rate); "
            "measure more batch sizes and hidden widths"
        )
    tflops = 1.0 / (seconds_per_flop * 1e12 * co.gpu_efficiency)
    gbps = 1.0 / (seconds_per_byte * 1e9 * co.gpu_memory_efficiency)
    predicted = x @ solution
    how = (
        f"least squares of {len(y)} float32 step medians on FLOPs, memory bytes and 1 (weighted by 1/step; "
        f"largest error {np.max(np.abs(predicted / y - 1)):.0%}) from {origin}"
    )
    values = [
        FittedValue(name=f"gpu_tflops.{key}", value=tflops, default=co.gpu_tflops.get(key, np.nan), runs=[], how=how),
        FittedValue(
            name=f"gpu_memory_gbps.{key}", value=gbps, default=co.gpu_memory_gbps.get(key, np.nan), runs=[], how=how
        ),
    ]
    if fit_overhead:
        values.append(
            FittedValue(name="gpu_step_overhead_s", value=overhead, default=co.gpu_step_overhead_s, runs=[], how=how)
        )
    return values, {"tflops": tflops, "gbps": gbps, "overhead": overhead}


def fit_gpus(files: Sequence[tuple[str, GpuStepsFile]], co: Coefficients) -> tuple[list[FittedValue], Coefficients]:
    """Every measured GPU's rates, and ``co`` with them."""
    by_gpu: dict[str, list[tuple[str, GpuStepsFile]]] = {}
    for origin, measured in files:
        if measured.gpu_key is None:
            raise UsageError(
                f"{origin}: the GPU {measured.gpu!r} has no entry in the planner's GPU tables, so no plan would "
                "use its rates; measure a GPU the catalog offers"
            )
        by_gpu.setdefault(measured.gpu_key, []).append((origin, measured))
    values: list[FittedValue] = []
    tflops, gbps = dict(co.gpu_tflops), dict(co.gpu_memory_gbps)
    update: dict[str, object] = {"gpu_tflops": tflops, "gpu_memory_gbps": gbps}
    for key, group in sorted(by_gpu.items()):
        fitted, rates = fit_gpu(key, group, co, fit_overhead=len(by_gpu) == 1)
        values += fitted
        tflops[key], gbps[key] = rates["tflops"], rates["gbps"]
        if len(by_gpu) == 1:
            update["gpu_step_overhead_s"] = rates["overhead"]
    return values, co.model_copy(update=update)
