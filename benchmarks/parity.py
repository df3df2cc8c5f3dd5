#!/usr/bin/env python
"""Accuracy parity: GraphSAGE trained through DistributedGraphLoader vs with in-process sampling.

The pipeline must not change what a model learns. For each seed (0, 1, 2 by default) the same
GraphSAGE (``examples/train_graphsage.py``'s model and training loop, initial weights from
``torch.manual_seed(seed)``, Adam, same epochs and batch size) is trained on a real graph three
times:

- ``remotegnn``: batches from ``DistributedGraphLoader`` (server processes, shared-memory ring),
  sampling seed ``seed``;
- ``inprocess``: batches from ``benchmarks/inprocess.py`` (the same ``NeighborSampler`` in the
  training process building the same PyG ``Data`` batches, no pipeline) with its own draws
  (sampling seed ``seed + 100``), as PyG's ``NeighborLoader`` would draw its own: the check is
  that both reach the same test accuracy within 1 point, mean of the seeds;
- ``inprocess_same_draws``: the in-process loader with the pipeline's seed, so it builds the
  very batches the pipeline delivers; any accuracy gap here is the pipeline's fault (a wrong
  row, label or edge), not sampling noise.

Test accuracy is measured the same way for every model - full-graph inference over all edges,
no sampling - so the differences come from training alone. PyG's ``NeighborLoader`` cannot
sample on this machine (no pyg-lib or torch-sparse), hence the in-process loader as the
reference.

The dataset (``--dataset cora``, or ``citeseer``) is converted once from
``../shared/datasets/planetoid`` into the benchmark data directory. Without ``../shared/datasets``
the script prints ``{"skipped": reason}`` and exits 0.

Run: ``.venv/bin/python benchmarks/parity.py [--epochs E] [--seeds 0,1,2] [--output FILE]``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import time
from pathlib import Path

import common
import numpy as np
import torch
from inprocess import InProcessLoader, make_model, test_accuracy, train_epoch

from contracts.workload import DEFAULT_FANOUTS
from remotegnn.loader import DistributedGraphLoader
from remotegnn.store import GraphDataset

TOLERANCE_POINTS = 1.0
INDEPENDENT_DRAWS = 100  # the in-process loader's sampling seed is seed + this: draws unrelated to the pipeline's
VARIANTS = ("remotegnn", "inprocess", "inprocess_same_draws")


def planetoid(name: str, data_dir: Path, shared: Path) -> GraphDataset:
    """``name`` from ``shared``/planetoid in the RemoteGNN format, converted once (where the other
    benchmarks keep it)."""
    from remotegnn.convert import from_planetoid

    path = data_dir / "real" / name
    if not (path / "meta.json").exists():
        from_planetoid(shared / "planetoid", path, name=name)
    return GraphDataset.open(path)


def make_loader(variant: str, dataset: GraphDataset, args, seed: int):
    options = dict(batch_size=args.batch_size, shuffle=True)
    if variant == "remotegnn":
        return DistributedGraphLoader(dataset.path, args.fanouts, input_nodes="train", seed=seed, **options)
    draws = seed + INDEPENDENT_DRAWS if variant == "inprocess" else seed
    return InProcessLoader(dataset, args.fanouts, "train", seed=draws, **options)


def train(variant: str, dataset: GraphDataset, args, seed: int, graph: tuple) -> dict:
    torch.manual_seed(seed)
    model = make_model(dataset, args.hidden, len(args.fanouts))
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)
    loader = make_loader(variant, dataset, args, seed)
    started = time.perf_counter()
    try:
        losses = [train_epoch(model, loader, optimizer, torch.device("cpu"))["loss"] for _ in range(args.epochs)]
    finally:
        if hasattr(loader, "close"):
            loader.close()
    return {
        "test_acc": round(test_accuracy(model, *graph), 4),
        "final_loss": round(losses[-1], 4),
        "seconds": round(time.perf_counter() - started, 2),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dataset", choices=("cora", "citeseer"), default="cora")
    parser.add_argument("--epochs", type=int, default=30)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument(
        "--fanouts",
        type=lambda s: [int(x) for x in s.split(",")],
        default=list(DEFAULT_FANOUTS),
        help=f"neighbours sampled per hop (default {common.FANOUTS_TEXT})",
    )
    parser.add_argument("--hidden", type=int, default=128)
    parser.add_argument("--lr", type=float, default=0.01)
    parser.add_argument("--seeds", type=lambda s: [int(x) for x in s.split(",")], default=[0, 1, 2])
    parser.add_argument(
        "--shared",
        type=Path,
        default=common.SHARED_DATASETS,
        help=f"the shared datasets folder (default {common.SHARED_DATASETS})",
    )
    parser.add_argument(
        "--data-dir",
        type=Path,
        default=common.DATA_DIR,
        help=f"where the converted dataset is kept (default {common.DATA_DIR})",
    )
    parser.add_argument("--output", type=Path, help="also write the JSON here (atomically)")
    args = parser.parse_args(argv)
    if args.epochs < 1 or args.batch_size < 1 or not args.seeds:
        parser.error("need --epochs >= 1, --batch-size >= 1 and at least one seed")
    report = {"benchmark": "parity", "when": dt.datetime.now(dt.UTC).isoformat(timespec="seconds")}
    if not (args.shared / "planetoid").is_dir():
        report["skipped"] = f"needs the Planetoid files at {args.shared / 'planetoid'} (absent on this checkout)"
        return common.emit(report, args.output)

    dataset = planetoid(args.dataset, args.data_dir, args.shared)
    meta = dataset.meta
    test = torch.from_numpy(np.asarray(dataset.split("test"), dtype=np.int64))
    graph = (
        torch.from_numpy(np.array(dataset.features)),
        torch.from_numpy(dataset.edge_index()),
        torch.from_numpy(np.array(dataset.labels)),
        test,
    )
    runs = [
        {"seed": seed, **{variant: train(variant, dataset, args, seed, graph) for variant in VARIANTS}}
        for seed in args.seeds
    ]

    def mean(variant: str) -> float:
        return sum(run[variant]["test_acc"] for run in runs) / len(runs)

    difference = 100 * (mean("remotegnn") - mean("inprocess"))
    report.update(
        {
            "parameters": {
                "dataset": f"{meta.name}: {meta.num_nodes:,} nodes, {meta.num_edges:,} edges, "
                f"{meta.num_classes} classes, {len(dataset.split('train'))} train / {len(test)} test nodes",
                "model": f"PyG GraphSAGE, {len(args.fanouts)} layers, hidden {args.hidden}, dropout 0.5; "
                f"Adam lr {args.lr}",
                "epochs": args.epochs,
                "batch_size": args.batch_size,
                "fanouts": args.fanouts,
                "seeds": args.seeds,
                "inprocess_sampling_seed": f"seed + {INDEPENDENT_DRAWS}",
                "evaluation": "full-graph inference on the test split (all edges, no sampling), "
                "the same for every model",
                "reference": "PyG cannot sample here: benchmarks/inprocess.py's loader stands in for NeighborLoader",
            },
            "machine": common.machine(torch=torch.__version__),
            "runs": runs,
            "figures": {
                "mean_test_acc": {variant: round(mean(variant), 4) for variant in VARIANTS},
                "difference_points": round(difference, 2),
                "tolerance_points": TOLERANCE_POINTS,
                "within_tolerance": abs(difference) <= TOLERANCE_POINTS,
                "same_draws_max_difference_points": round(
                    max(
                        100 * abs(run["remotegnn"]["test_acc"] - run["inprocess_same_draws"]["test_acc"])
                        for run in runs
                    ),
                    2,
                ),
            },
        }
    )
    return common.emit(report, args.output)


if __name__ == "__main__":
    raise SystemExit(main())
