#!/usr/bin/env python
"""Does the training loop wait for batches? In-process sampling vs DistributedGraphLoader over the
local transport vs over MPI (a `remotegnn launch` job: 1 memory rank + 1 learner rank).

Each side trains the same small GraphSAGE (the example's model and loop, on CPU) over the same
R-MAT graph (the sampler benchmark's: 2^20 nodes, 12M pairs stored both ways, 128-dim features;
smaller with --scale/--pairs), same seeds, batch size and fanouts. Per side: batches/s, and the
learner's stall - the time the training loop spent waiting for its next batch - per step and as a
share of step time. Targets: stall < 5% of step time when the server keeps up; MPI within 10% of
local (batches/s).

In-process sampling is PyG NeighborLoader's num_workers=0 mode (PyG itself cannot sample here;
``inprocess.InProcessLoader`` builds the same batches in the training thread), so its stall is the
whole loader time. The last of --epochs epochs is measured (the first pays start-up and JIT).

Torch gets --torch-threads threads (default 1): on a real cluster the memory machine's vCPUs
are its own, so here the other core is left to the server's processes.

Run: ``.venv/bin/python benchmarks/loader.py [--scale 20] [--epochs 2] [--output F]``.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

import common
import torch
from inprocess import InProcessLoader, make_model, train_epoch

STALL_TARGET = 0.05
MPI_TARGET = 0.10


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scale", type=int, default=20, help="R-MAT graph of 2^SCALE nodes")
    parser.add_argument("--pairs", type=int, default=12_000_000, help="R-MAT draws (each stored both ways)")
    parser.add_argument("--dim", type=int, default=128)
    parser.add_argument("--batch-size", type=int, default=1024)
    parser.add_argument("--fanout", default=common.FANOUTS_TEXT)
    parser.add_argument("--hidden", type=int, default=64)
    parser.add_argument("--epochs", type=int, default=2, help="epochs per side; the last is measured")
    parser.add_argument("--torch-threads", type=int, default=1)
    parser.add_argument("--sides", default="inprocess,local,mpi")
    parser.add_argument("--learner", choices=("mpi",), help=argparse.SUPPRESS)  # inside the launch job
    parser.add_argument("--dataset", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--output", type=Path)
    return parser.parse_args(argv)


def train(loader, dataset, args) -> dict:
    """Train --epochs epochs with the example's loop; the last one's batches/s, stall and step times."""
    torch.manual_seed(0)
    model = make_model(dataset, args.hidden, len(args.fanouts))
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
    for _ in range(args.epochs):
        epoch = train_epoch(model, loader, optimizer, torch.device("cpu"))
    steps = epoch["batches"]
    return {
        "batches": steps,
        "seconds": round(epoch["seconds"], 3),
        "batches_per_s": round(epoch["batches_per_s"], 2),
        "stall_ms_per_step": round(1e3 * epoch["stall_s"] / steps, 2),
        "step_ms": round(1e3 * epoch["compute_s"] / steps, 2),
        "stall_share": round(epoch["stall_s"] / epoch["seconds"], 4),
    }


def run_inprocess(dataset, args) -> dict:
    loader = InProcessLoader(dataset, args.fanouts, "train", batch_size=args.batch_size, shuffle=True, seed=0)
    return train(loader, dataset, args)


def run_loader(dataset, args, transport: str) -> dict:
    from remotegnn.loader import DistributedGraphLoader

    with DistributedGraphLoader(
        dataset.path,
        args.fanouts,
        input_nodes="train",
        batch_size=args.batch_size,
        shuffle=True,
        seed=0,
        transport=transport,
    ) as loader:
        result = train(loader, dataset, args)
        result["server"] = loader.last_stats.model_dump(include={"batches_per_s", "batch_creators", "vector_loaders"})
    return result


def run_mpi(dataset, args) -> dict:
    """This script again, as the learner of a 2-rank launch job; its JSON is the last stdout line."""
    command = [
        sys.executable,
        "-m",
        "remotegnn.cli.main",
        "launch",
        "--memory",
        "1",
        "--",
        sys.executable,
        __file__,
        "--learner",
        "mpi",
        "--dataset",
        str(dataset.path),
        "--batch-size",
        str(args.batch_size),
        "--fanout",
        args.fanout,
        "--hidden",
        str(args.hidden),
        "--epochs",
        str(args.epochs),
        "--torch-threads",
        str(args.torch_threads),
    ]
    job = subprocess.run(command, capture_output=True, text=True)
    if job.returncode != 0:
        raise SystemExit(f"the MPI job failed ({job.returncode}):\n{job.stderr[-3000:]}")
    return json.loads(job.stdout.strip().splitlines()[-1])


def main(argv=None) -> int:
    args = parse_args(argv)
    args.fanouts = [int(v) for v in args.fanout.split(",")]
    torch.set_num_threads(args.torch_threads)
    if args.learner == "mpi":
        from remotegnn.store import GraphDataset

        print(json.dumps(run_loader(GraphDataset.open(args.dataset), args, "mpi")))
        return 0
    dataset = common.rmat_benchmark_graph(scale=args.scale, pairs=args.pairs, dim=args.dim)
    sides = args.sides.split(",")
    runners = {
        "inprocess": lambda: run_inprocess(dataset, args),
        "local": lambda: run_loader(dataset, args, "local"),
        "mpi": lambda: run_mpi(dataset, args),
    }
    results = {side: runners[side]() for side in sides}
    summary = {}
    for side, result in results.items():
        if side != "inprocess":
            summary[f"{side}_stall_under_5pct"] = result["stall_share"] < STALL_TARGET
    if "local" in results and "mpi" in results:
        ratio = results["mpi"]["batches_per_s"] / results["local"]["batches_per_s"]
        summary["mpi_vs_local_batches_per_s"] = round(ratio, 3)
        summary["mpi_within_10pct"] = ratio >= 1 - MPI_TARGET
    if "inprocess" in results and "local" in results:
        summary["local_vs_inprocess_speedup"] = round(
            results["local"]["batches_per_s"] / results["inprocess"]["batches_per_s"], 2
        )
    meta = dataset.meta
    report = {
        "benchmark": "loader",
        "machine": common.machine(),
        "parameters": {
            "graph": meta.name,
            "nodes": meta.num_nodes,
            "edges": meta.num_edges,
            "dim": meta.feature_dim,
            "train_seeds": len(dataset.split("train")),
            "batch_size": args.batch_size,
            "fanout": args.fanouts,
            "hidden": args.hidden,
            "epochs": args.epochs,
            "measured_epoch": args.epochs - 1,
            "torch_threads": args.torch_threads,
        },
        "sides": results,
        "summary": summary,
    }
    return common.emit(report, args.output)


if __name__ == "__main__":
    sys.exit(main())
