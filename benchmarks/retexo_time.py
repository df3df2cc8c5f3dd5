#!/usr/bin/env python
"""Standard training vs RETEXO on the testbed's limited links: total and message-passing seconds.

The shape of the RETEXO paper's Table 4 (training time, and the part spent passing messages),
measured here on ``testbed``: a learner host (the master) and one memory host per
worker, each with ``--link-gbit`` each way (tbf; no added latency: this kernel has no netem, see
docs/testbed.md). Each run is one MPI job (``testbed mpiexec``, rank i on m<i>, the
master on l0) of ``python -m fullgraph.retexo.mpi``, so rows and gradients cross the emulated
network as they would between machines.

Graph: a synthetic R-MAT graph (``remotegnn.synth``: 65,536 nodes, 600k pairs stored both ways,
64 features; made once in the data directory), dealt at random to the workers. Model: GraphSAGE,
2 layers, hidden 256, ``--rounds`` rounds (per layer for RETEXO), the paper's other
hyperparameters.

Per link rate and method: ``seconds`` (the master's wall time from its first weights to the last
result), ``message_passing_seconds`` (the slowest worker's time in worker-to-worker exchanges,
waiting for peers included), ``aggregation_seconds`` (its time sending gradients and waiting for
weights: this includes waiting for the slowest worker), the bytes, and ``bandwidth_floor_s``:
the busiest host's bytes in its busier direction over its link rate, the time the transfers
alone need at full rate.

``planner``: the planner's full-graph model for each run (``planner.calibration.testbed``: a
worker host is a machine with the link's rate and its share of the CPU), its seconds and
message-passing seconds beside the measured ones. The CPU rates are fitted on one run (standard
at the first link rate: one scale on both default rates, from its compute time = seconds less
message passing and aggregation), and the other three are predicted; the uncalibrated defaults'
figures are there too.

Needs root (namespaces, tc) and Open MPI; prints ``skipped`` with the reason otherwise.
``--predict FILE`` adds the predictions to a recorded report without measuring (no root).

Run: ``sudo .venv/bin/python benchmarks/retexo_time.py [--links 1,0.1] [--workers 2] [--rounds 10]
[--output FILE]``, or ``.venv/bin/python benchmarks/retexo_time.py --predict results/retexo_time.json``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import subprocess
import tempfile
from pathlib import Path

import common
from fullgraph_setup import CORES, JOB_TIMEOUT_S, RETEXO_HIDDEN, TESTBED, bandwidth_floor, retexo_graph, testbed

from contracts.calibration import DEFAULT_COEFFICIENTS, Coefficients
from contracts.workload import FullGraphJob, Method, Workload
from fullgraph.partitioner import write_partition
from fullgraph.retexo import mpi as retexo_mpi
from fullgraph.retexo.config import TrainConfig
from fullgraph.retexo.mpi import RetexoSpec
from fullgraph.retexo.training import TrainResult
from planner.calibration.testbed import EmulatedWorkers, predict_full_graph
from planner.costmodel.evaluation import Evaluation
from remotegnn.profile import profile_dataset


def run_job(bed: str, partition: Path, workers: int, config: TrainConfig) -> TrainResult:
    with tempfile.TemporaryDirectory(prefix="retexo-time-") as tmp:
        result = Path(tmp) / "result.json"
        program = retexo_mpi.program(RetexoSpec(partition=partition, config=config), result)
        command = [*TESTBED, "mpiexec", "--name", bed, "--", "-n", str(workers + 1), *program]
        done = subprocess.run(command, capture_output=True, text=True, timeout=JOB_TIMEOUT_S)
        if done.returncode != 0 or not result.exists():
            raise RuntimeError(f"the job failed ({done.returncode}): {done.stderr[-2000:]}")
        return TrainResult.model_validate_json(result.read_text())


def summary(result: TrainResult, gbit: float) -> dict:
    return {
        "seconds": round(result.seconds, 2),
        "message_passing_seconds": round(result.message_passing_seconds, 2),
        "aggregation_seconds": round(result.aggregation_seconds, 2),
        "bytes": result.measured.model_dump(),
        "bandwidth_floor_s": round(bandwidth_floor(result, gbit), 2),
        "test_acc": result.test_acc,
    }


def _predicted(ev: Evaluation) -> dict:
    """Seconds of the measured span (start-up is only the one-time exchanges: loading takes no time here)."""
    rounds, once = ev.epochs, float(ev.startup_s[0])
    return {
        "seconds": round(rounds * float(ev.epoch_s[0]) + once, 2),
        "message_passing_seconds": round(rounds * float(ev.stages["exchange"][0]) + once, 2),
        "compute_seconds": round(rounds * float(ev.stages["compute"][0]), 2),
    }


def planner_predictions(report: dict, data_dir: Path) -> dict:
    """The planner's figures for every recorded run: calibrated on one, predicted for the others."""
    setting, links = report["setting"], report["links"]
    profile = profile_dataset(retexo_graph(data_dir), fanouts=(5, 5), batch_size=64).profile
    job = FullGraphJob(
        gnn="sage",
        rounds=setting["rounds"],
        workers=setting["workers"],
        boundary_rows=report["graph"]["boundary_rows"],
    )
    workload = Workload(hidden_dim=RETEXO_HIDDEN)

    def evaluate(link: str, method: Method, coefficients: Coefficients) -> Evaluation:
        machine = EmulatedWorkers(
            workers=setting["workers"], cores=CORES / setting["workers"], link_gbit=float(link.split()[0])
        )
        return predict_full_graph(machine, profile, workload, job, method, coefficients)

    cal_link, cal_method = next(iter(links)), "standard"
    measured = links[cal_link][cal_method]
    measured_compute = measured["seconds"] - measured["message_passing_seconds"] - measured["aggregation_seconds"]
    default_compute = _predicted(evaluate(cal_link, cal_method, DEFAULT_COEFFICIENTS))["compute_seconds"]
    scale = measured_compute / default_compute
    fitted = DEFAULT_COEFFICIENTS.model_copy(
        update={
            "cpu_dense_gflops_per_vcpu": DEFAULT_COEFFICIENTS.cpu_dense_gflops_per_vcpu / scale,
            "cpu_sparse_gflops_per_vcpu": DEFAULT_COEFFICIENTS.cpu_sparse_gflops_per_vcpu / scale,
        }
    )
    out: dict = {
        "calibrated_on": f"{cal_link} {cal_method}",
        "cpu_rate_scale": round(1 / scale, 4),
        "cores_per_worker": CORES / setting["workers"],
        "runs": {},
    }
    errors = []
    for link, runs in links.items():
        for method in ("standard", "retexo"):
            row = {
                "predicted": _predicted(evaluate(link, method, fitted)),
                "uncalibrated": _predicted(evaluate(link, method, DEFAULT_COEFFICIENTS)),
                "calibration_run": (link, method) == (cal_link, cal_method),
            }
            for figure in ("seconds", "message_passing_seconds"):
                got, want = row["predicted"][figure], runs[method][figure]
                row[f"{figure}_ape"] = round(abs(got - want) / want, 3)
            if not row["calibration_run"]:
                errors.append(row["seconds_ape"])
            out["runs"][f"{link} {method}"] = row
    out["held_out_seconds_ape"] = {"median": round(sorted(errors)[len(errors) // 2], 3), "max": max(errors)}
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--links", default="1,0.1", help="link rates in Gbit/s")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--data-dir", type=Path, default=common.DATA_DIR)
    parser.add_argument("--output", type=Path)
    parser.add_argument("--predict", type=Path, help="a recorded report: add the planner's figures, measure nothing")
    args = parser.parse_args(argv)
    if args.predict:
        report = json.loads(args.predict.read_text())
        report["planner"] = planner_predictions(report, args.data_dir)
        return common.emit(report, args.output)
    report = {"benchmark": "retexo_time", "date": dt.date.today().isoformat(), "machine": common.machine()}
    if os.geteuid() != 0:
        report["skipped"] = "needs root for the testbed's namespaces and tc (run with sudo)"
        return common.emit(report, args.output)
    dataset = retexo_graph(args.data_dir)
    partition = args.data_dir / "retexo" / f"rmat-65k-random{args.workers}"
    meta = write_partition(dataset, partition, args.workers, "random", seed=0, overwrite=True)
    report["graph"] = {"nodes": meta.num_nodes, "edges": meta.num_edges, "boundary_rows": meta.boundary_rows}
    report["setting"] = {"model": "sage, 2 layers, hidden 256", "rounds": args.rounds, "workers": args.workers}
    report["links"] = {}
    for gbit in (float(g) for g in args.links.split(",")):
        runs = {}
        with testbed(args.workers, gbit) as name:
            for method in ("standard", "retexo"):
                config = TrainConfig(method=method, model="sage", rounds=args.rounds, split="random")
                runs[method] = summary(run_job(name, partition, args.workers, config), gbit)
        runs["speedup"] = round(runs["standard"]["seconds"] / runs["retexo"]["seconds"], 2)
        runs["message_passing_speedup"] = round(
            runs["standard"]["message_passing_seconds"] / max(runs["retexo"]["message_passing_seconds"], 1e-9), 1
        )
        report["links"][f"{gbit:g} Gbit/s"] = runs
    report["planner"] = planner_predictions(report, args.data_dir)
    return common.emit(report, args.output)


if __name__ == "__main__":
    raise SystemExit(main())
