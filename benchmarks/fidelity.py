#!/usr/bin/env python
"""How well the planner's models predict epoch time: testbed runs, calibrate on some, predict the rest.

    sudo .venv/bin/python benchmarks/fidelity.py                     # measure (~10 min), fit, predict
    .venv/bin/python benchmarks/fidelity.py --runs RUNS.json         # refit and predict recorded runs
    .venv/bin/python benchmarks/fidelity.py --runs RUNS.json --profile PROFILE.json   # ... with this graph's profile
    .venv/bin/python benchmarks/fidelity.py --runs RUNS.json --calibration pricing_data/calibration-testbed.json

Each configuration gets its own testbed (`testbed`: tbf links, blkio volume) and one
training job (benchmarks/fidelity_job.py, two epochs, the first skipped as warm-up) whose record
goes to the runs file. The memory server reads cache misses with O_DIRECT paced to the same MB/s
and IOPS as the blkio group (`serve --volume-mbps/--volume-iops`): without that a miss read once
would stay in the page cache and the "volume" would be RAM from then on. `planner calibrate`'s fit
runs on the CALIBRATE configurations; both models then predict every configuration, and the
errors are reported on the held-out ones (and on all, for reference). Prints one JSON document.

Both modes predict with the profile of the workdir's synthetic graph (made and profiled there if
missing), which holds batch shapes measured by sampling for every configuration's fanouts
(`remotegnn profile --shape-fanouts`): offline, before planning, never from the runs' own
counters. With --runs it replaces the profile each recorded job embedded, after checking it
describes the same graph, so recorded runs are re-predicted with the current profile schema.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from dataclasses import asdict, dataclass, replace
from pathlib import Path

import common
from common import machine

from contracts.profile import DatasetProfile, load_profile
from foundation.fileio import write_model
from planner.calibration.fit import fit, observations
from planner.calibration.runs import CalibrationRun, load_runs
from planner.calibration.testbed import predict

ROOT = Path(__file__).resolve().parents[1]
WORKDIR = Path("/tmp/memorybridge-fidelity")
STATE_DIR = Path("/run/memorybridge/fidelity")  # its own testbeds only: down --all never meets another's
PREFIX = "mbfid"
EPOCHS = 2
VOLUME_IOPS = 64000  # above 250 MB/s in 4 KiB pages (61k/s): the MB/s figures are the volume's limit, not the IOPS


@dataclass(frozen=True)
class Config:
    name: str
    volume_mbps: float
    link_gbit: float
    cache: float  # share of the feature bytes the cache holds
    fanouts: str
    learner_cache: float = 0.0  # share of the rows the learner holds (at the wire dtype)
    wire_dtype: str = "float32"


CONFIGS = [
    Config("v62-l1-c10-f10x5", 62.5, 1, 0.10, "10,5"),
    Config("v62-l5-c10-f10x5", 62.5, 5, 0.10, "10,5"),
    Config("v125-l5-c10-f10x5", 125, 5, 0.10, "10,5"),
    Config("v62-l5-c30-f10x5", 62.5, 5, 0.30, "10,5"),
    Config("v250-l1-c60-f10x5", 250, 1, 0.60, "10,5"),
    Config("v125-l1-c30-f5x5", 125, 1, 0.30, "5,5"),
    Config("v62-l5-c10-f5x5", 62.5, 5, 0.10, "5,5"),
    Config("v250-l5-c30-f5x5", 250, 5, 0.30, "5,5"),
    # What crosses a 1 Gbit/s link (network-bound), with the learner cache and half precision;
    # v250-l1-c60-f10x5 above is the same job with neither.
    Config("v250-l1-c60-f10x5-L30", 250, 1, 0.60, "10,5", learner_cache=0.30),
    Config("v250-l1-c60-f10x5-f16", 250, 1, 0.60, "10,5", wire_dtype="float16"),
    Config("v250-l1-c60-f10x5-L30-f16", 250, 1, 0.60, "10,5", learner_cache=0.30, wire_dtype="float16"),
    # The learner alone: it caches 60% of the rows (96% of the reads), the memory cache the rest, so
    # the server only samples and the link carries 4% of the rows. Last, so older runs files
    # (without it) keep their positions.
    Config("v250-l1-c60-f5x5-L60", 250, 1, 0.60, "5,5", learner_cache=0.60),
]
BYTES_BASELINE = "v250-l1-c60-f10x5"
BYTES_GROUP = (BYTES_BASELINE, "v250-l1-c60-f10x5-L30", "v250-l1-c60-f10x5-f16", "v250-l1-c60-f10x5-L30-f16")
WIRE_BYTES = {"float32": 4, "float16": 2, "bfloat16": 2}
# A volume-bound and a link-bound configuration of each fanout: every fitted coefficient sees its stage.
# And the learner's rate where the learner runs alone: every emulated host shares the machine's
# cores, so in the other runs the server's work and the learner's receiving slow its steps (the
# fit takes the fastest run's rate); the held-out learner-cache rows train with the server idle.
CALIBRATE = (
    "v62-l5-c10-f10x5",
    "v250-l1-c60-f10x5",
    "v62-l5-c10-f5x5",
    "v125-l1-c30-f5x5",
    "v250-l5-c30-f5x5",
    "v250-l1-c60-f5x5-L60",
)


def with_profile(runs: list[CalibrationRun], profile: DatasetProfile) -> list[CalibrationRun]:
    """The runs with ``profile`` in place of the one each job embedded, which must be the same graph."""
    replaced = []
    for i, run in enumerate(runs):
        if run.report is None:
            replaced.append(run)
            continue
        old = run.report.profile
        if (old.name, old.num_nodes, old.num_edges, old.num_train) != (
            profile.name,
            profile.num_nodes,
            profile.num_edges,
            profile.num_train,
        ):
            raise SystemExit(
                f"run {i} was measured on {old.name} ({old.num_nodes:,} nodes, {old.num_edges:,} edges, "
                f"{old.num_train:,} train), not on the profiled graph; pass its --workdir"
            )
        replaced.append(replace(run, report=run.report.model_copy(update={"profile": profile})))
    return replaced


def measure(config: Config, graph: Path, profile: Path, feature_bytes: int, runs_file: Path) -> None:
    # feature_bytes is at float32; the learner keeps its rows at the wire dtype
    learner_bytes = int(config.learner_cache * feature_bytes * WIRE_BYTES[config.wire_dtype] / 4)
    """One testbed, one job, the testbed removed whatever happens."""
    from contracts.testbed import TestbedSpec
    from testbed import job, lifecycle
    from testbed.state import new_name

    spec = TestbedSpec(
        name=new_name(PREFIX),
        link_gbit=config.link_gbit,
        dataset=graph,
        volume_mbps=config.volume_mbps,
        volume_iops=VOLUME_IOPS,
    )
    train = common.fidelity_job_argv(
        graph,
        profile,
        fanouts=config.fanouts,
        batch_size=common.CALIBRATION_BATCH_SIZE,
        hidden=common.CALIBRATION_HIDDEN,
        epochs=EPOCHS,
        cache_bytes=int(config.cache * feature_bytes),
        learner_cache_bytes=learner_bytes,
        wire_dtype=config.wire_dtype,
    )
    serve = ["--volume-mbps", str(config.volume_mbps), "--volume-iops", str(VOLUME_IOPS)]
    try:
        bed = lifecycle.up(spec, STATE_DIR)
        with common.job_output_to_stderr():
            job.run_training(STATE_DIR, bed, train, runs_file, serve_args=serve)
    finally:
        lifecycle.down_all(STATE_DIR, PREFIX)


def ape(predicted: float, measured: float) -> float:
    return abs(predicted - measured) / measured * 100.0


def summary(rows: list[dict], model: str) -> dict:
    errors = [r[f"{model}_ape"] for r in rows]
    return {"median_ape": round(statistics.median(errors), 1), "max_ape": round(max(errors), 1)} if errors else {}


def evaluate(runs: list[CalibrationRun], names: list[str]) -> dict:
    """Fit on the CALIBRATE runs, predict every run with both models."""
    index = {name: i for i, name in enumerate(names)}
    report = fit([runs[index[n]] for n in CALIBRATE if n in index])
    obs, skipped = observations(runs)
    rows = []
    for o in obs:
        evaluations = predict(o.machine, o.report.profile, o.report.workload, report.coefficients)
        predicted = {name: float(ev.epoch_s[0]) for name, ev in evaluations.items()}  # seconds per epoch
        wire_gb = float(evaluations["pipeline"].details["epoch_wire_gb"][0])
        sent = statistics.fmean(e.stats.bytes_sent for e in o.report.steady_epochs())
        rows.append(
            {
                "config": names[o.index],
                "calibration": names[o.index] in CALIBRATE,
                "measured_s": round(o.epoch_s, 2),
                "pipeline_s": round(predicted["pipeline"], 2),
                "paper_s": round(predicted["paper"], 2),
                "pipeline_ape": round(ape(predicted["pipeline"], o.epoch_s), 1),
                "paper_ape": round(ape(predicted["paper"], o.epoch_s), 1),
                "hit_rate_measured": round(o.hits / (o.hits + o.misses), 3),
                "measured_gb_sent": round(sent / 1e9, 3),
                "pipeline_gb_sent": round(wire_gb, 3),
            }
        )
    held_out = [r for r in rows if not r["calibration"]]
    figures = {m: {"held_out": summary(held_out, m), "all": summary(rows, m)} for m in ("pipeline", "paper")}
    pipeline = figures["pipeline"]["held_out"]
    return {
        "rows": rows,
        "errors": figures,
        "bytes": bytes_figures(rows),
        "skipped": {names[i]: why for i, why in skipped.items()},
        "target_met": bool(pipeline) and pipeline["median_ape"] <= 15 and pipeline["max_ape"] <= 30,
        "fit": report.model_dump(mode="json"),
    }


def bytes_figures(rows: list[dict]) -> dict:
    """The learner cache and half precision against neither, on the same network-bound job."""
    by_name = {r["config"]: r for r in rows if r["config"] in BYTES_GROUP}
    base = by_name.get(BYTES_BASELINE)
    if base is None or base["measured_gb_sent"] == 0:
        return {}
    out = {
        name: {
            "bytes_ratio": round(base["measured_gb_sent"] / r["measured_gb_sent"], 2),
            "epoch_ratio": round(base["measured_s"] / r["measured_s"], 2),
            "predicted_bytes_ratio": round(base["pipeline_gb_sent"] / r["pipeline_gb_sent"], 2),
            "predicted_epoch_ratio": round(base["pipeline_s"] / r["pipeline_s"], 2),
        }
        for name, r in by_name.items()
        if name != BYTES_BASELINE and r["measured_gb_sent"] > 0
    }
    both = out.get(BYTES_GROUP[-1])
    if both:
        out["targets_met"] = both["bytes_ratio"] >= 3 and both["epoch_ratio"] >= 2
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=Path, help="evaluate this runs file (from an earlier measurement) instead")
    parser.add_argument("--workdir", type=Path, default=WORKDIR)
    parser.add_argument(
        "--profile",
        type=Path,
        help="with --runs: predict with this profile of the graph the runs were measured on, instead of making "
        "and profiling that graph in --workdir",
    )
    parser.add_argument("--output", type=Path, help="also write the JSON here")
    parser.add_argument(
        "--calibration",
        type=Path,
        help="write the coefficients fitted on all runs, with the profiled batch shapes, here",
    )
    args = parser.parse_args(argv)
    parameters = {
        "graph": common.CALIBRATION_GRAPH,
        "batch_size": common.CALIBRATION_BATCH_SIZE,
        "hidden": common.CALIBRATION_HIDDEN,
        "epochs": EPOCHS,
        "volume_iops": VOLUME_IOPS,
        "configs": [asdict(c) for c in CONFIGS],
        "calibrate": list(CALIBRATE),
    }
    runs_file = args.runs
    if args.profile is not None and runs_file is None:
        parser.error("--profile goes with --runs: a measurement profiles the graph it makes")
    if runs_file is None:
        reason = common.testbed_unsupported()
        if reason:
            print(json.dumps({"skipped": reason, "parameters": parameters}))
            return 0
    if args.profile is not None:
        profile = args.profile
    else:
        args.workdir.mkdir(parents=True, exist_ok=True)
        graph, profile, feature_bytes = common.calibration_graph(args.workdir, (c.fanouts for c in CONFIGS))
    if runs_file is None:
        runs_file = args.workdir / "runs.json"
        runs_file.unlink(missing_ok=True)
        for config in CONFIGS:
            measure(config, graph, profile, feature_bytes, runs_file)
    runs = with_profile(load_runs(runs_file), load_profile(profile))
    names = [c.name for c in CONFIGS][: len(runs)]
    shapes = {"-".join(map(str, m.fanouts)): round(sum(m.nodes_per_hop)) for m in load_profile(profile).batch_shapes}
    result = {
        "parameters": parameters,
        "runs_file": str(runs_file),
        "profile": str(profile),
        "profiled_nodes_per_batch": shapes,
        "machine": machine(),
        **evaluate(runs, names),
    }
    if args.calibration:
        report = fit(runs)
        source = f"{report.coefficients.source}; batch shapes from {load_profile(profile).source}"
        write_model(args.calibration, report.coefficients.model_copy(update={"source": source}))
    return common.emit(result, args.output)


if __name__ == "__main__":
    sys.exit(main())
