"""`planner calibrate`: fit the pipeline model's coefficients from measured testbed runs.

Each coefficient comes from the stage it governs, as a ratio of what the model's formula would
take at full efficiency to what the server or the learner measured (no joint least squares over
epoch times: a max() of stages gives a fit nothing to hold on to where a stage is not the
bottleneck):

- ``volume_efficiency``: in runs whose slowest stage is the volume, the measured cache misses'
  pages at the blkio MB/s and IOPS, over the vector loaders' busy seconds per process;
- ``network_efficiency``: in runs whose slowest stage is the link, the bytes the measured rows
  and the expected batch's compact structure (or, where the learner sampled, the measured rows'
  request ids) put on the wire at the tbf rate, over the epoch's seconds; runs recorded with
  int64 frames, before the compact encoding, sent more than that, so a fit on them reads low;
- ``sample_edges_per_core_s``: expected sampled edges over the batch creators' busy seconds;
- ``gpu_tflops["testbed-cpu"]`` and ``gpu_step_overhead_s``: the learner's compute seconds per
  step against the step's FLOPs, the rate from the fastest run (the least disturbed by what shares
  the learner's cores), the overhead a least-squares line where the steps' sizes differ enough;
- a GPU's ``gpu_tflops`` and ``gpu_memory_gbps`` (and the overhead) from its measured training
  steps (``memorybridge.gpu-steps`` files), see :mod:`planner.calibration.gpu`;
- ``data_parallel_efficiency``: in runs with several data-parallel learners, one device's step as
  the model prices it (at the rates just fitted) over a rank's measured step, whose backward pass
  includes the gradients' all-reduce and the wait for the slowest rank. Those runs fit nothing
  else: their stats are the first rank's share of a job whose links and servers fed them all.

Medians, not means: a run disturbed by a neighbour on a shared machine should not move a
coefficient. Every other coefficient keeps its default, and ``FitReport`` says which were fitted.
"""

from __future__ import annotations

import math
import platform
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from operator import itemgetter

import numpy as np

from contracts.calibration import DEFAULT_COEFFICIENTS, Coefficients, FitReport, FittedValue
from contracts.gpu_steps import GpuStepsFile
from contracts.runs import JobReport
from contracts.wirebytes import REQUEST_ID_BYTES
from foundation.errors import UsageError
from planner.calibration.gpu import fit_gpus
from planner.calibration.runs import CalibrationRun, Links
from planner.calibration.testbed import TESTBED_LEARNER, EmulatedCluster, model_inputs
from planner.costmodel.pipeline import step_work_of

STAGES = ("volume", "network", "cpu", "gpu")
# An intercept (the step overhead) is fitted only from steps whose FLOPs differ at least this much:
# between two sizes 1.3x apart (the fidelity runs' fanouts) a 10% disturbance of one step moves the
# intercept by more than the whole overhead (the recorded runs gave 8.6 ms where a step's own
# launches take about 2).
OVERHEAD_FLOPS_SPREAD = 2.0


@dataclass(frozen=True)
class Observation:
    """One usable run: its configuration and its steady epochs' means."""

    index: int  # position in the runs file
    machine: EmulatedCluster
    report: JobReport
    epoch_s: float
    batches: float
    compute_s: float
    sample_busy_s: float
    load_busy_per_process_s: float
    hits: float
    misses: float


def machine_of(links: Links, report: JobReport) -> EmulatedCluster:
    """The run's machines in the cost models' terms (a testbed's learner is its CPU)."""
    return EmulatedCluster(
        memory_hosts=links.memory_hosts,
        cores=report.server.batch_creators + report.server.vector_loaders,
        link_gbit=links.link_gbit,
        learner_gbit=links.learner_gbit,
        flow_gbit=links.flow_gbit,
        volume_mbps=links.volume_mbps,
        volume_iops=links.volume_iops,
        cache_bytes=report.server.cache_bytes,
        learner=links.learner,
    )


def observations(runs: Sequence[CalibrationRun]) -> tuple[list[Observation], dict[int, str]]:
    """The runs that can be fitted from, and why each other one cannot."""
    usable, skipped = [], {}
    for index, run in enumerate(runs):
        if run.exit_code != 0:
            skipped[index] = f"the job failed (exit status {run.exit_code})"
            continue
        if run.report is None:
            skipped[index] = "no job report (the learner printed no memorybridge.calibration-run JSON)"
            continue
        if run.links is None:
            skipped[index] = run.unusable or "where the run ran is unknown"
            continue
        epochs = run.report.steady_epochs()

        def mean(values) -> float:
            return statistics.fmean(values)

        usable.append(
            Observation(
                index=index,
                machine=machine_of(run.links, run.report),
                report=run.report,
                epoch_s=mean(e.seconds for e in epochs),
                batches=mean(e.batches for e in epochs),
                compute_s=mean(e.compute_s for e in epochs),
                sample_busy_s=mean(e.stats.batch_creators.busy_s for e in epochs),
                load_busy_per_process_s=mean(
                    e.stats.vector_loaders.busy_s / e.stats.vector_loaders.processes for e in epochs
                ),
                hits=mean(e.stats.cache_hits for e in epochs),
                misses=mean(e.stats.cache_misses for e in epochs),
            )
        )
    if not usable:
        reasons = "; ".join(f"run {i}: {why}" for i, why in skipped.items())
        raise UsageError(f"no run in the runs file can be calibrated from ({reasons})")
    return usable, skipped


def ideal_stages(obs: Observation, co: Coefficients) -> dict[str, float]:
    """Seconds each stage would take at full efficiency, from what the run measured where the
    stats measure it (rows, misses) and from the model's expected batch elsewhere (edges)."""
    inputs, _ = model_inputs(obs.machine, obs.report.profile, obs.report.workload, co)
    batch, m, profile = inputs.batch, obs.machine, obs.report.profile
    misses_per_host = obs.misses / m.memory_hosts
    volume = max(
        misses_per_host * inputs.miss_bytes / (m.volume_mbps * 1e6),
        misses_per_host * math.ceil(profile.row_bytes / co.io_max_bytes) / m.volume_iops,
    )
    link = min(m.learner_gbit or m.link_gbit, m.memory_hosts * m.link_gbit)
    rows = obs.hits + obs.misses
    structure = rows * REQUEST_ID_BYTES if inputs.workload.sampling == "learner" else obs.batches * batch.id_wire_bytes
    wire = rows * profile.row_bytes + structure
    sampled_edges = obs.batches * batch.edges
    cpu = (sampled_edges / co.sample_edges_per_core_s + rows * profile.row_bytes / (co.gather_gbps_per_core * 1e9)) / (
        m.cores * m.memory_hosts
    )
    return {"volume": volume, "network": wire / (link * 1e9 / 8), "cpu": cpu, "gpu": obs.compute_s}


def _fit_learner(obs: list[Observation], co: Coefficients, fit_overhead: bool) -> tuple[list[FittedValue], dict]:
    """Each learner's step rate (a testbed's CPU, each GPU model of the clusters), and the step
    overhead where the runs allow: see ``_fit_one_learner``."""
    values: list[FittedValue] = []
    rates = dict(co.gpu_tflops)
    update: dict[str, object] = {"gpu_tflops": rates}
    learners = sorted({o.machine.learner for o in obs})
    for learner in learners:
        group = [o for o in obs if o.machine.learner == learner]
        fitted, rates[learner], overhead = _fit_one_learner(
            learner, group, co, fit_overhead=fit_overhead and len(learners) == 1
        )
        values += fitted
        if overhead is not None:
            update["gpu_step_overhead_s"] = overhead
    return values, update


def _fit_one_learner(
    learner: str, obs: list[Observation], co: Coefficients, fit_overhead: bool
) -> tuple[list[FittedValue], float, float | None]:
    """Learner step time = FLOPs / (TFLOPS x gpu_efficiency) + memory traffic at the GPU's bandwidth
    + overhead (a CPU has no bandwidth entry, so its traffic is not priced apart). The
    host-to-device copy is not in it: the loader copies on a side stream ahead of the step, and the
    model prices the longer of the two, so a learner-bound run's compute is the step alone. The
    overhead is shared by every learner, so it is fitted only when the runs have one learner, and
    only from steps of clearly different sizes (``OVERHEAD_FLOPS_SPREAD``), as the line through
    each workload's fastest run.

    The rate is the fastest run's. Whatever else runs beside the learner only ever lengthens its
    steps: on the testbed every emulated host shares the machine's cores, and the server's reads and
    gathering, the links' packet work and the learner's own receiving slowed the same step by up to
    2.4x between runs of one runs file (recorded fidelity runs: 14 to 33 ms). A median prices the
    typical disturbance into the learner's rate; the fastest run is the closest to the step alone,
    which is what a learner-bound epoch runs at (its server idle, its batches ready: the fidelity
    learner-cache runs' steps were as fast as any calibration run's, or faster)."""
    xs, ys = [], []
    # The batch shape and the FLOPs do not depend on the learner's rate, which is what is unknown yet.
    co = co.model_copy(update={"gpu_tflops": {learner: 1.0, **co.gpu_tflops}})
    memory_gbps = co.gpu_memory_gbps.get(learner, math.inf)
    for o in obs:
        inputs, _ = model_inputs(o.machine, o.report.profile, o.report.workload, co)
        work = step_work_of(inputs)
        memory_s = work.memory_bytes / (memory_gbps * 1e9 * co.gpu_memory_efficiency)
        xs.append(work.flops)
        ys.append(max(o.compute_s / o.batches - memory_s, 1e-9))
    x, y = np.array(xs), np.array(ys)
    overhead, how = co.gpu_step_overhead_s, "the fastest run's per-step compute seconds / FLOPs (overhead kept)"
    fitted_overhead = False
    if fit_overhead and x.max() >= OVERHEAD_FLOPS_SPREAD * x.min():
        # The line under the data: through each workload's fastest run, as the rate is the fastest's.
        sizes = np.round(x, -3)
        low = [int(np.flatnonzero(sizes == size)[np.argmin(y[sizes == size])]) for size in np.unique(sizes)]
        slope, intercept = np.linalg.lstsq(np.stack([x[low], np.ones(len(low))], 1), y[low], rcond=None)[0]
        if slope > 0 and 0 <= intercept < y.min():
            overhead, fitted_overhead = float(intercept), True
            how = "least-squares line of each workload's fastest step on FLOPs; the rate the fastest run's beyond it"
    per_flop = np.maximum(y - overhead, 1e-12) / x
    fastest = int(np.argmin(per_flop))
    tflops = 1.0 / (float(per_flop[fastest]) * 1e12 * co.gpu_efficiency)
    default = co.gpu_tflops.get(learner, float("nan")) if learner != TESTBED_LEARNER else float("nan")
    values = [
        FittedValue(name=f"gpu_tflops.{learner}", value=tflops, default=default, runs=[obs[fastest].index], how=how)
    ]
    if not fitted_overhead:
        return values, tflops, None
    runs = [o.index for o in obs]
    values.append(
        FittedValue(name="gpu_step_overhead_s", value=overhead, default=co.gpu_step_overhead_s, runs=runs, how=how)
    )
    return values, tflops, overhead


def _fit_data_parallel(
    obs: list[Observation], co: Coefficients, measured: set[str], skipped: dict[int, str]
) -> FittedValue | None:
    """``data_parallel_efficiency``: the median over the runs of one device's modelled step (at
    ``co``'s rates for the run's learner) over a data-parallel rank's measured step. Only a
    learner whose one-device rate these inputs ``measured`` counts: against a datasheet rate the
    efficiency would soak up that rate's error. Runs that cannot count go to ``skipped``."""
    shares, used = [], []
    for o in obs:
        if o.machine.learner not in measured:
            skipped[o.index] = (
                f"{o.report.learners} learners: fitting their efficiency needs the one-device rate of "
                f"{o.machine.learner!r} measured too (runs of one learner, or its GPU steps file)"
            )
            continue
        if o.compute_s <= 0:
            skipped[o.index] = f"{o.report.learners} learners: no compute time measured"
            continue
        inputs, _ = model_inputs(o.machine, o.report.profile, o.report.workload, co)
        memory_gbps = co.gpu_memory_gbps.get(o.machine.learner, math.inf)
        alone_s = float(step_work_of(inputs).seconds(co, co.gpu_tflops[o.machine.learner], memory_gbps))
        alone_s += inputs.batch.feature_bytes / (inputs.coefficients.pcie_gbps * 1e9)  # as the one-device fit counts it
        shares.append(min(1.0, alone_s / (o.compute_s / o.batches)))
        used.append(o.index)
    if not shares:
        return None
    return FittedValue(
        name="data_parallel_efficiency",
        value=statistics.median(shares),
        default=DEFAULT_COEFFICIENTS.data_parallel_efficiency,
        runs=used,
        how="one device's modelled step, at its rate fitted here / a data-parallel rank's measured step "
        "(all-reduce included), in runs with several learners",
    )


def _efficiency(
    name: str,
    stage: str,
    obs: list[Observation],
    ideal: dict[int, dict[str, float]],
    measured,
    default: float,
    how: str,
) -> FittedValue | None:
    """Median share ideal / measured over the runs whose slowest ideal stage is ``stage``."""
    bound = [o for o in obs if max(ideal[o.index].items(), key=itemgetter(1))[0] == stage]
    if not bound:
        return None
    share = statistics.median(min(1.0, ideal[o.index][stage] / measured(o)) for o in bound)
    return FittedValue(name=name, value=share, default=default, runs=[o.index for o in bound], how=how)


def fit(
    runs: Sequence[CalibrationRun],
    base: Coefficients = DEFAULT_COEFFICIENTS,
    source: str | None = None,
    gpu_steps: Sequence[tuple[str, GpuStepsFile]] = (),
) -> FitReport:
    """Every coefficient the inputs measure: GPUs' rates from their step files (``gpu_steps``, as
    (file name, file)), then each stage's from the runs."""
    gpu_fitted, base = fit_gpus(gpu_steps, base) if gpu_steps else ([], base)
    if not runs:
        if not gpu_steps:
            raise UsageError("no runs: give at least one runs file, job record or GPU steps file with --from")
        return _report(base, gpu_fitted, {}, source or gpu_provenance(gpu_steps))
    everything, skipped = observations(runs)
    obs = [o for o in everything if o.report.learners == 1]
    parallel = [o for o in everything if o.report.learners > 1]
    fitted, update = _fit_learner(obs, base, fit_overhead=not gpu_steps) if obs else ([], {})
    fitted = gpu_fitted + fitted
    co = base.model_copy(update=update)
    measured = {f.name.removeprefix("gpu_tflops.") for f in fitted if f.name.startswith("gpu_tflops.")}
    efficiency = _fit_data_parallel(parallel, co, measured, skipped)
    if efficiency is not None:
        fitted.append(efficiency)
        co = co.model_copy(update={efficiency.name: efficiency.value})
    if not obs:  # runs with several learners alone, of GPUs whose steps were measured
        if efficiency is None:
            reasons = "; ".join(f"run {i}: {why}" for i, why in skipped.items())
            raise UsageError(f"no run in the runs file can be calibrated from ({reasons})")
        used = [o for o in everything if o.index in efficiency.runs]
        names = sorted({f.name for f in fitted})
        return _report(co, fitted, skipped, source or provenance(runs, used, names, gpu_steps))

    inputs = {o.index: model_inputs(o.machine, o.report.profile, o.report.workload, co)[0] for o in obs}
    rate = sum(o.batches * inputs[o.index].batch.edges for o in obs) / sum(o.sample_busy_s for o in obs)
    fitted.append(
        FittedValue(
            name="sample_edges_per_core_s",
            value=rate,
            default=base.sample_edges_per_core_s,
            runs=[o.index for o in obs],
            how="expected sampled edges / batch creators' busy seconds",
        )
    )
    co = co.model_copy(update={"sample_edges_per_core_s": rate})

    ideal = {o.index: ideal_stages(o, co) for o in obs}
    for value in (
        _efficiency(
            "volume_efficiency",
            "volume",
            obs,
            ideal,
            lambda o: o.load_busy_per_process_s or o.epoch_s,
            base.volume_efficiency,
            "misses' pages at the blkio limits / vector loaders' busy seconds per process, in volume-bound runs",
        ),
        _efficiency(
            "network_efficiency",
            "network",
            obs,
            ideal,
            lambda o: o.epoch_s,
            base.network_efficiency,
            "wire bytes at the tbf rate / epoch seconds, in link-bound runs",
        ),
    ):
        if value is not None:
            fitted.append(value)
            co = co.model_copy(update={value.name: value.value})

    names = sorted({f.name for f in fitted})
    used = [o for o in everything if o.index not in skipped]
    return _report(co, fitted, skipped, source or provenance(runs, used, names, gpu_steps))


def _report(co: Coefficients, fitted: list[FittedValue], skipped: dict[int, str], source: str) -> FitReport:
    names = {f.name for f in fitted}
    kept = [
        f
        for f in Coefficients.model_fields
        if f not in names and f not in ("schema_version", "source", "calibrated", "gpu_tflops", "gpu_memory_gbps")
    ]
    co = co.model_copy(update={"source": source, "calibrated": True})
    return FitReport(
        coefficients=Coefficients.model_validate(co.model_dump()), fitted=fitted, kept_default=kept, skipped=skipped
    )


def gpu_provenance(gpu_steps: Sequence[tuple[str, GpuStepsFile]]) -> str:
    """What a fit's ``source`` says of the GPU step files it read."""
    gpus = sorted({f"{f.gpu} ({f.gpu_key})" for _, f in gpu_steps})
    return f"GPU steps of {', '.join(gpus)} from {', '.join(name for name, _ in gpu_steps)}"


def provenance(
    runs: Sequence[CalibrationRun],
    obs: list[Observation],
    names: list[str],
    gpu_steps: Sequence[tuple[str, GpuStepsFile]] = (),
) -> str:
    """When, where and from which runs: what the file's ``source`` says."""
    used = [runs[o.index] for o in obs]
    first, last = min(r.started_at for r in used), max(r.started_at for r in used)
    return (
        f"planner calibrate {datetime.now(UTC):%Y-%m-%dT%H:%M:%SZ} on {platform.node()}: "
        f"{len(used)} run(s) {first:%Y-%m-%dT%H:%M}..{last:%Y-%m-%dT%H:%M}Z "
        f"({', '.join(sorted({r.origin for r in used}))}); fitted {', '.join(names)}; "
        "other coefficients are defaults" + (f"; {gpu_provenance(gpu_steps)}" if gpu_steps else "")
    )
