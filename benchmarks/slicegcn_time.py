#!/usr/bin/env python
"""SliceGCN on the testbed's limited links: seconds and bytes per epoch, measured and predicted.

Each run is one MPI job (``testbed mpiexec``) of ``python -m fullgraph.slicegcn.mpi``
on a testbed with one memory host per slice: slice rank i on m<i>, the learner on l0, every
host's link limited to ``--link-gbit`` each way (tbf; no added latency, see docs/testbed.md), so
the slices' outputs and their gradients cross the emulated network as they would between
machines. As ``retexo_time.py`` does for RETEXO.

Graph: Tolokers, split 0 (from the shared datasets, converted once into the data directory).
Model: the SliceGCN of "Slicing Input Features to Accelerate Deep Learning: A Case Study with
Graph Neural Networks", 4 layers, hidden 128 (ceil(128/p) per slice), ``--epochs`` epochs, for
each p of ``--parts``, and with feature fusion at p = 2.

Per run: ``seconds_per_epoch`` (the learner's wall time over the epochs), each slice rank's
compute and exchange seconds per epoch, the bytes each rank sends and receives per epoch, and
``bandwidth_floor_s_per_epoch``: the busiest host's bytes in its busier direction over the link
rate, the time the transfers alone need at full rate. Beside them: ``reference``, the
single-process reference (``train_reference``, the same configuration in this process), and
``planner``: ``planner.costmodel.slicegcn``'s bytes per worker and epoch (both ways) and its
predicted epoch seconds and stages (``predict_full_graph``, method slicegcn, the default
coefficients: a worker host is a machine with the link's rate and the machine's cores over p).
Every run has one thread per process (OMP_NUM_THREADS=1).

Needs root (namespaces, tc), Open MPI and the shared datasets; prints ``skipped`` with the
reason otherwise.

Run: ``sudo .venv/bin/python benchmarks/slicegcn_time.py [--parts 2,3] [--link-gbit 0.1]
[--epochs 20] [--output FILE]``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import subprocess
import tempfile
from pathlib import Path

import common
from fullgraph_setup import CORES, JOB_TIMEOUT_S, TESTBED, bandwidth_floor, dataset_path, testbed

from contracts.calibration import DEFAULT_COEFFICIENTS
from contracts.profile import DatasetProfile
from contracts.workload import FullGraphJob, Workload
from fullgraph.slicegcn import mpi as slicegcn_mpi
from fullgraph.slicegcn.config import SliceConfig
from fullgraph.slicegcn.mpi import SliceSpec
from fullgraph.slicegcn.training import SliceResult, train_reference
from planner.calibration.testbed import EmulatedWorkers, predict_full_graph
from planner.costmodel import slicegcn
from remotegnn.mpmd import find_mpiexec
from remotegnn.profile import profile_dataset
from remotegnn.store import GraphDataset

HIDDEN = 128
LAYERS = 4
THREADS = "1"  # OMP_NUM_THREADS of every run: p + 1 ranks share the machine's cores
TOLOKERS = common.SHARED_DATASETS / "tolokers" / "tolokers.npz"
NOTES = [
    "The planner's model puts the master on worker 0's machine, so worker 0's share never crosses a "
    "link and p - 1 workers' bytes go through that machine's link; on the testbed the learner has its "
    "own host l0, so all p slice ranks' bytes cross, through l0's link. The model is priced as it is.",
    "Planner bytes are per worker and epoch, both ways (sent + received of a slice rank); its epoch "
    "seconds use the default coefficients, uncalibrated, with the machine's cores over p per worker.",
    "The testbed's hosts share this machine's cores; every process runs one thread.",
]


def skip_reason() -> str | None:
    if os.geteuid() != 0:
        return "needs root for the testbed's namespaces and tc (run with sudo)"
    if not TOLOKERS.is_file():
        return "needs the shared datasets (tolokers/tolokers.npz)"
    try:
        find_mpiexec(None)
    except Exception as exc:  # UsageError: no mpiexec
        return f"needs Open MPI: {exc}"
    return None


def run_job(name: str, dataset: Path, config: SliceConfig) -> SliceResult:
    with tempfile.TemporaryDirectory(prefix="slicegcn-time-") as tmp:
        result = Path(tmp) / "result.json"
        program = slicegcn_mpi.program(SliceSpec(dataset=dataset, config=config), result)
        ranks = ["-n", str(config.parts + 1), "-x", f"OMP_NUM_THREADS={THREADS}", *program]
        command = [*TESTBED, "mpiexec", "--name", name, "--", *ranks]
        done = subprocess.run(command, capture_output=True, text=True, timeout=JOB_TIMEOUT_S)
        if done.returncode != 0 or not result.exists():
            raise RuntimeError(f"the job failed ({done.returncode}): {done.stderr[-2000:]}")
        return SliceResult.model_validate_json(result.read_text())


def measured(result: SliceResult, gbit: float) -> dict:
    epochs = result.config.epochs
    parts = result.config.parts
    return {
        "seconds_per_epoch": round(result.seconds / epochs, 3),
        "ranks": [
            {
                "rank": t.rank,
                "compute_s_per_epoch": round(t.compute_s / epochs, 3),
                "exchange_s_per_epoch": round(t.exchange_s / epochs, 3),
            }
            for t in result.times
        ],
        "bytes_per_epoch": {
            ("learner" if rank == parts else f"slice {rank}"): {
                "sent": round(result.bytes_per_epoch(rank, "sent")),
                "received": round(result.bytes_per_epoch(rank, "received")),
            }
            for rank in range(parts + 1)
        },
        "bandwidth_floor_s_per_epoch": round(bandwidth_floor(result, gbit) / epochs, 3),
        "test": round(result.test, 4),
    }


def planner_figures(profile: DatasetProfile, config: SliceConfig, gbit: float) -> dict:
    p = config.parts
    columns, width = slicegcn.slice_widths(profile.feature_dim, config.hidden, p)
    machine = EmulatedWorkers(workers=p, cores=CORES / p, link_gbit=gbit)
    job = FullGraphJob(gnn="gcn", layers=LAYERS, rounds=config.epochs, workers=p, feature_fusion=config.fusion)
    ev = predict_full_graph(machine, profile, Workload(hidden_dim=config.hidden), job, "slicegcn", DEFAULT_COEFFICIENTS)
    return {
        "bytes_per_epoch_per_worker": round(float(slicegcn.bytes_per_worker(profile, columns, width, config.fusion))),
        "seconds_per_epoch": round(float(ev.epoch_s[0]), 3),
        "stages_s_per_epoch": {stage: round(float(s[0]), 3) for stage, s in ev.stages.items()},
        "cores_per_worker": CORES / p,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--parts", default="2,3", help="p, slices (memory hosts)")
    parser.add_argument("--link-gbit", type=float, default=0.1, help="every host's link rate, Gbit/s")
    parser.add_argument("--epochs", type=int, default=20)
    parser.add_argument("--hidden", type=int, default=HIDDEN, help="the model's width (quick checks: narrower)")
    parser.add_argument("--data-dir", type=Path, default=common.DATA_DIR / "slicegcn")
    parser.add_argument("--output", type=Path)
    args = parser.parse_args(argv)
    report: dict = {"benchmark": "slicegcn_time", "date": dt.date.today().isoformat(), "machine": common.machine()}
    reason = skip_reason()
    if reason:
        report["skipped"] = reason
        return common.emit(report, args.output)
    import torch

    os.environ["OMP_NUM_THREADS"] = THREADS
    torch.set_num_threads(int(THREADS))
    args.data_dir.mkdir(parents=True, exist_ok=True)
    path = dataset_path("tolokers", 0, common.SHARED_DATASETS, args.data_dir)
    dataset = GraphDataset.open(path)
    profile = profile_dataset(dataset, fanouts=(5, 5)).profile
    meta = dataset.meta
    report["graph"] = {
        "name": "tolokers split 0",
        "nodes": meta.num_nodes,
        "edges": meta.num_edges,
        "features": meta.feature_dim,
        "train": profile.num_train,
    }
    report["setting"] = {
        "model": f"gcn, {LAYERS} layers, hidden {args.hidden}",
        "epochs": args.epochs,
        "link_gbit": args.link_gbit,
        "omp_num_threads": int(THREADS),
    }
    report["notes"] = NOTES
    report["runs"] = []
    for p in (int(x) for x in args.parts.split(",")):
        configs = [SliceConfig(parts=p, epochs=args.epochs, hidden=args.hidden, layers=LAYERS)]
        if p == 2:
            configs.append(configs[0].model_copy(update={"fusion": True}))
        with testbed(p, args.link_gbit) as name:
            results = [run_job(name, path, config) for config in configs]
        for config, result in zip(configs, results):
            reference = train_reference(path, config)
            row = {"parts": p, "fusion": config.fusion, **measured(result, args.link_gbit)}
            row["reference_seconds_per_epoch"] = round(reference.seconds / config.epochs, 3)
            row["planner"] = planner_figures(profile, config, args.link_gbit)
            report["runs"].append(row)
            if args.output:
                common.save(report, args.output)  # progress so far
    return common.emit(report, args.output)


if __name__ == "__main__":
    raise SystemExit(main())
