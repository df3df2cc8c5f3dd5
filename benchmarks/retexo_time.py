#!/usr/bin/env python
"""Standard training vs RETEXO on the testbed's limited links: total and message-passing seconds.

The shape of the RETEXO paper's Table 4 (training time, and the part spent passing messages),
measured here on ``remotegnn testbed``: a learner host (the master) and one memory host per
worker, each with ``--link-gbit`` each way (tbf; no added latency: this kernel has no netem, see
docs/testbed.md). Each run is one MPI job (``remotegnn testbed mpiexec``, rank i on m<i>, the
master on l0) of ``python -m remotegnn.retexo.mpi``, so rows and gradients cross the emulated
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
alone need at full rate. There is no planner prediction for these methods yet.

Needs root (namespaces, tc) and Open MPI; prints ``skipped`` with the reason otherwise.

Run: ``sudo .venv/bin/python benchmarks/retexo_time.py [--links 1,0.1] [--workers 2] [--rounds 10]
[--output FILE]``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path

import common

from remotegnn.retexo.partition import write_partition
from remotegnn.retexo.training import TrainConfig, TrainResult
from remotegnn.store import GraphDataset
from remotegnn.synth import SynthSpec, synth

SYNTHETIC = SynthSpec(nodes=65_536, edges=600_000, dim=64, classes=8, seed=0, train=0.2, val=0.1, test=0.7)
CLI = [sys.executable, "-m", "remotegnn.cli.main"]
JOB_TIMEOUT_S = 3600


def graph(data_dir: Path) -> GraphDataset:
    path = data_dir / "retexo" / "rmat-65k"
    if not (path / "meta.json").exists():
        synth(SYNTHETIC, path, overwrite=True, progress=False)
    return GraphDataset.open(path)


def run_job(testbed: str, partition: Path, workers: int, config: TrainConfig) -> TrainResult:
    with tempfile.TemporaryDirectory(prefix="retexo-time-") as tmp:
        result = Path(tmp) / "result.json"
        program = [sys.executable, "-m", "remotegnn.retexo.mpi", str(partition), config.model_dump_json(), str(result)]
        command = [*CLI, "testbed", "mpiexec", "--name", testbed, "--", "-n", str(workers + 1), *program]
        done = subprocess.run(command, capture_output=True, text=True, timeout=JOB_TIMEOUT_S)
        if done.returncode != 0 or not result.exists():
            raise RuntimeError(f"the job failed ({done.returncode}): {done.stderr[-2000:]}")
        return TrainResult.model_validate_json(result.read_text())


def bandwidth_floor(result: TrainResult, gbit: float) -> float:
    """The busiest host's bytes in its busier direction over the link rate (full duplex links)."""
    busiest = max(max(sum(e.sent for e in t.entries), sum(e.received for e in t.entries)) for t in result.traffic)
    return busiest * 8 / (gbit * 1e9)


def summary(result: TrainResult, gbit: float) -> dict:
    return {
        "seconds": round(result.seconds, 2),
        "message_passing_seconds": round(result.message_passing_seconds, 2),
        "aggregation_seconds": round(result.aggregation_seconds, 2),
        "bytes": result.measured.model_dump(),
        "bandwidth_floor_s": round(bandwidth_floor(result, gbit), 2),
        "test_acc": result.test_acc,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--links", default="1,0.1", help="link rates in Gbit/s")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--data-dir", type=Path, default=common.DATA_DIR)
    parser.add_argument("--output", type=Path)
    args = parser.parse_args(argv)
    report: dict = {"benchmark": "retexo_time", "date": dt.date.today().isoformat(), "machine": common.machine()}
    if os.geteuid() != 0:
        report["skipped"] = "needs root for the testbed's namespaces and tc (run with sudo)"
        return common.emit(report, args.output)
    dataset = graph(args.data_dir)
    partition = args.data_dir / "retexo" / f"rmat-65k-random{args.workers}"
    meta = write_partition(dataset, partition, args.workers, "random", seed=0, overwrite=True)
    report["graph"] = {"nodes": meta.num_nodes, "edges": meta.num_edges, "boundary_rows": meta.boundary_rows}
    report["setting"] = {"model": "sage, 2 layers, hidden 256", "rounds": args.rounds, "workers": args.workers}
    report["links"] = {}
    for gbit in (float(g) for g in args.links.split(",")):
        name = f"mbtb-{uuid.uuid4().hex[:6]}"
        up = [*CLI, "testbed", "up", "--name", name, "--memory-hosts", str(args.workers), "--link-gbit", str(gbit)]
        subprocess.run(up, check=True, capture_output=True, text=True)
        try:
            runs = {}
            for method in ("standard", "retexo"):
                config = TrainConfig(method=method, model="sage", rounds=args.rounds, split="random")
                runs[method] = summary(run_job(name, partition, args.workers, config), gbit)
        finally:
            subprocess.run([*CLI, "testbed", "down", "--name", name], capture_output=True, text=True)
        runs["speedup"] = round(runs["standard"]["seconds"] / runs["retexo"]["seconds"], 2)
        runs["message_passing_speedup"] = round(
            runs["standard"]["message_passing_seconds"] / max(runs["retexo"]["message_passing_seconds"], 1e-9), 1
        )
        report["links"][f"{gbit:g} Gbit/s"] = runs
    return common.emit(report, args.output)


if __name__ == "__main__":
    raise SystemExit(main())
