#!/usr/bin/env python
"""Wire precision vs accuracy: GraphSAGE trained with feature rows sent as float32, float16, bfloat16.

``DistributedGraphLoader(wire_dtype=...)`` sends feature rows in half precision and widens them
back on the learner, so the model trains on rounded features. For each dataset and seed the same
GraphSAGE (``benchmarks/inprocess.py``'s model and training loop, initial weights from
``torch.manual_seed(seed)``, Adam) is trained three times, once per wire dtype, with the same
sampling seed, so the batches differ only in the features' precision. Test accuracy is full-graph
inference over all edges on the exact float32 features (``parity.test_accuracy``), the same for
every model, so the differences come from training alone.

Datasets: Cora and CiteSeer (Planetoid splits), Facebook (MUSAE, 60/20/20 splits) from
``../shared/datasets`` (skipped with a reason when absent), and a synthetic R-MAT graph whose
features carry a class signal (``remotegnn synth``, made once in the data directory). Per dataset
it also reports how large the rounding is: the largest |x - rounded x| over the largest |x|.

Run: ``.venv/bin/python benchmarks/wire_precision.py [--datasets cora,synthetic] [--seeds 0,1,2]
[--epochs E] [--output FILE]``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import time
from pathlib import Path

import common
import numpy as np
import torch
from inprocess import make_model, train_epoch
from parity import test_accuracy

from remotegnn.loader import DistributedGraphLoader
from remotegnn.precision import to_float32, to_wire, wire_numpy_dtype
from remotegnn.store import GraphDataset
from remotegnn.synth import SynthSpec, synth

DTYPES = ("float32", "float16", "bfloat16")
TOLERANCE_POINTS = 1.0
DATASETS = ("cora", "citeseer", "facebook", "synthetic")
SYNTHETIC = SynthSpec(nodes=16384, edges=160_000, dim=64, classes=8, seed=0, signal=0.3, train=0.2, val=0.1, test=0.2)
# Batch size per dataset: Planetoid's 120-140 training nodes need small batches to take steps.
BATCH_SIZE = {"cora": 32, "citeseer": 32, "facebook": 512, "synthetic": 256}


def synthetic(data_dir: Path) -> GraphDataset:
    path = data_dir / "wire-precision-synthetic"
    if not (path / "meta.json").exists():
        synth(SYNTHETIC, path, overwrite=True, progress=False)
    return GraphDataset.open(path)


def rounding_error(features: np.ndarray) -> dict[str, float]:
    """Largest |x - rounded x| over the largest |x|, per wire dtype."""
    scale = float(np.abs(features).max()) or 1.0
    out = {}
    for name in DTYPES:
        wire = np.empty(features.shape, dtype=wire_numpy_dtype(name, features.dtype))
        to_wire(features, wire)
        out[name] = float(np.abs(to_float32(wire) - features).max()) / scale
    return out


def train(dataset: GraphDataset, args, seed: int, wire_dtype: str, graph: tuple, batch_size: int) -> dict:
    torch.manual_seed(seed)
    model = make_model(dataset, args.hidden, len(args.fanouts))
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)
    started = time.perf_counter()
    with DistributedGraphLoader(
        dataset.path,
        args.fanouts,
        input_nodes="train",
        batch_size=batch_size,
        shuffle=True,
        seed=seed,
        wire_dtype=wire_dtype,
    ) as loader:
        losses = [train_epoch(model, loader, optimizer, torch.device("cpu"))["loss"] for _ in range(args.epochs)]
        sent = loader.last_stats.bytes_sent
    return {
        "test_acc": round(test_accuracy(model, *graph), 4),
        "final_loss": round(losses[-1], 4),
        "mb_sent_last_epoch": round(sent / 1e6, 2),
        "seconds": round(time.perf_counter() - started, 2),
    }


def measure(name: str, dataset: GraphDataset, args) -> dict:
    features = np.array(dataset.features)
    graph = (
        torch.from_numpy(features),
        torch.from_numpy(dataset.edge_index()),
        torch.from_numpy(np.array(dataset.labels)),
        torch.from_numpy(np.asarray(dataset.split("test"), dtype=np.int64)),
    )
    batch_size = args.batch_size or BATCH_SIZE[name]
    runs = [
        {"seed": seed, **{d: train(dataset, args, seed, d, graph, batch_size) for d in DTYPES}} for seed in args.seeds
    ]
    mean = {d: sum(run[d]["test_acc"] for run in runs) / len(runs) for d in DTYPES}
    difference = {d: round(100 * (mean[d] - mean["float32"]), 2) for d in DTYPES[1:]}
    meta = dataset.meta
    return {
        "dataset": f"{meta.name}: {meta.num_nodes:,} nodes, {meta.num_edges:,} edges, {meta.feature_dim} features, "
        f"{meta.num_classes} classes, {len(dataset.split('train'))} train / {len(graph[3])} test nodes",
        "batch_size": batch_size,
        "runs": runs,
        "figures": {
            "mean_test_acc": {d: round(v, 4) for d, v in mean.items()},
            "difference_points": difference,
            "within_1_point": {d: abs(v) <= TOLERANCE_POINTS for d, v in difference.items()},
            "max_relative_rounding_error": {d: float(f"{v:.3g}") for d, v in rounding_error(features).items()},
        },
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--datasets", type=lambda s: s.split(","), default=list(DATASETS))
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--batch-size", type=int, help="one batch size for every dataset (default: per dataset)")
    parser.add_argument("--fanouts", type=lambda s: [int(x) for x in s.split(",")], default=[10, 5])
    parser.add_argument("--hidden", type=int, default=64)
    parser.add_argument("--lr", type=float, default=0.01)
    parser.add_argument("--seeds", type=lambda s: [int(x) for x in s.split(",")], default=[0, 1, 2])
    parser.add_argument("--shared", type=Path, default=common.SHARED_DATASETS)
    parser.add_argument("--data-dir", type=Path, default=common.DATA_DIR)
    parser.add_argument("--output", type=Path, help="also write the JSON here (atomically)")
    args = parser.parse_args(argv)
    unknown = sorted(set(args.datasets) - set(DATASETS))
    if unknown or args.epochs < 1 or not args.seeds:
        parser.error(f"datasets are {', '.join(DATASETS)} (not {unknown}); need --epochs >= 1 and a seed")
    started = time.perf_counter()
    report: dict = {"benchmark": "wire_precision", "when": dt.datetime.now(dt.UTC).isoformat(timespec="seconds")}
    real = common.real_datasets(args.data_dir, args.shared) if set(args.datasets) - {"synthetic"} else {}
    results, skipped = {}, {}
    for name in args.datasets:
        if name == "synthetic":
            results[name] = measure(name, synthetic(args.data_dir), args)
        elif name in real:
            results[name] = measure(name, real[name], args)
        else:
            skipped[name] = f"needs the shared datasets at {args.shared} (absent on this checkout)"
    report.update(
        {
            "parameters": {
                "model": f"PyG GraphSAGE, {len(args.fanouts)} layers, hidden {args.hidden}, dropout 0.5; "
                f"Adam lr {args.lr}",
                "epochs": args.epochs,
                "fanouts": args.fanouts,
                "seeds": args.seeds,
                "evaluation": "full-graph inference on the test split with float32 features, the same for every model",
                "tolerance_points": TOLERANCE_POINTS,
            },
            "machine": common.machine(torch=torch.__version__),
            "datasets": results,
            "skipped": skipped,
            "seconds": round(time.perf_counter() - started, 1),
        }
    )
    return common.emit(report, args.output)


if __name__ == "__main__":
    raise SystemExit(main())
