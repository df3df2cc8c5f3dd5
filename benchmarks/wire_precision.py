#!/usr/bin/env python
"""Wire precision vs accuracy: GraphSAGE trained with feature rows sent as float32, float16, bfloat16.

``DistributedGraphLoader(wire_dtype=...)`` sends feature rows in half precision and widens them
back to float32 on the learner, so the model trains on rounded features. For each dataset and seed
(0, 1, 2 by default) the same GraphSAGE (``benchmarks/inprocess.py``'s model and training loop,
initial weights from ``torch.manual_seed(seed)``, Adam) is trained three times, once per wire
dtype, with the same sampling seed, so the batches differ only in the features' precision (training
is deterministic: with features the wire carries exactly, the three runs are bit-identical). Test
accuracy is full-graph inference over all edges on the exact float32 features
(``inprocess.test_accuracy``), the same for every model, so the differences come from training alone;
``test_acc_wire_inputs`` scores the same model on the features rounded to its wire dtype (what
inference through the loader would see).

Datasets: Cora and CiteSeer (Planetoid's standard split, 140/120 train, 1,000 test), Facebook
(MUSAE; no standard split, so the converter's seeded 60/20/20 split) from ``../shared/datasets``
via ``common.real_datasets`` (skipped with a reason when absent), and a synthetic R-MAT graph
(``remotegnn.synth``: 16,384 nodes, 64 Gaussian features around a class centre, 8 classes, 20%
train / 20% test; made once in the data directory). The real graphs' stored features are 0/1 bag
of words, which float16 and bfloat16 hold exactly, so on them the wire changes nothing; by default
(``--features row-normalised``) they are trained on row-normalised features instead, each row
divided by its sum as PyG's ``NormalizeFeatures`` does (a copy of the dataset made once in the data
directory), where the rounding is real. ``--features stored`` trains on the 0/1 features as stored.

Per dataset ``figures`` gives the mean test accuracy per dtype, the difference of float16 and
bfloat16 from float32 in points (mean over seeds), ``within_1_point``, the largest per-seed
difference and the spread of float32's accuracy over seeds (the noise a difference is judged
against), and the features' rounding error per dtype: the largest |x - rounded x| over the largest
|x| (``remotegnn.precision.to_wire``, widened back as the learner does).

Epochs default per dataset: 10, except Facebook's 13,482 training nodes with 4,714-dimensional rows
(about 4 GB of float32 rows sent per epoch, some 14 s an epoch on 2 cores), which get 2 so that the
default run stays under 10 minutes; ``--epochs`` sets one count for all.

Run: ``.venv/bin/python benchmarks/wire_precision.py [--datasets cora,synthetic] [--seeds 0,1,2]
[--epochs E] [--features row-normalised|stored] [--output FILE]``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import time
from pathlib import Path

import common
import numpy as np
import torch
from common import row_normalise, with_features
from inprocess import make_model, test_accuracy, train_epoch

from remotegnn.learner.device_cache import as_tensor
from remotegnn.loader import DistributedGraphLoader
from remotegnn.precision import WIRE_DTYPES, to_wire, wire_numpy_dtype
from remotegnn.store import GraphDataset
from remotegnn.synth import SynthSpec, synth

DTYPES = WIRE_DTYPES  # float32 (the reference), float16, bfloat16
TOLERANCE_POINTS = 1.0
REAL = ("cora", "citeseer", "facebook")
DATASETS = (*REAL, "synthetic")
FEATURES = ("row-normalised", "stored")
SYNTHETIC = SynthSpec(nodes=16384, edges=160_000, dim=64, classes=8, seed=0, signal=0.3, train=0.2, val=0.1, test=0.2)
# Batch size per dataset: Planetoid's 120-140 training nodes need small batches to take steps.
BATCH_SIZE = {"cora": 32, "citeseer": 32, "facebook": 512, "synthetic": 256}
# Epochs per dataset (``--epochs`` overrides): Facebook's epochs are some 10x the others' cost.
EPOCHS = {"cora": 10, "citeseer": 10, "facebook": 2, "synthetic": 10}


def synthetic(data_dir: Path) -> GraphDataset:
    path = data_dir / "wire-precision-synthetic"
    if not (path / "meta.json").exists():
        synth(SYNTHETIC, path, overwrite=True, progress=False)
    return GraphDataset.open(path)


def row_normalised(dataset: GraphDataset, data_dir: Path) -> GraphDataset:
    """``dataset`` with every feature row divided by its sum, as PyG's ``NormalizeFeatures``. Made once."""
    path = data_dir / "wire-precision" / f"{dataset.meta.name}-row-normalised"
    return with_features(dataset, path, dataset.meta.feature_dim, row_normalise, "feature rows divided by their sums")


def rounded(features: np.ndarray, dtype: str) -> np.ndarray:
    """``features`` as the learner receives them with ``wire_dtype=dtype``: rounded for the wire, then
    widened to float32 (exactly) through the learner's own view of the wire's rows."""
    wire = np.empty(features.shape, dtype=wire_numpy_dtype(dtype, features.dtype))
    to_wire(features, wire)
    return as_tensor(wire).float().numpy()


def rounding_error(features: np.ndarray) -> dict[str, float]:
    """Largest |x - rounded x| over the largest |x|, per wire dtype."""
    scale = float(np.abs(features).max()) or 1.0
    return {d: float(f"{float(np.abs(rounded(features, d) - features).max()) / scale:.3g}") for d in DTYPES}


def train(dataset: GraphDataset, args, seed: int, wire_dtype: str, graph: tuple, epochs: int, batch_size: int) -> dict:
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
        losses = [train_epoch(model, loader, optimizer, torch.device("cpu"))["loss"] for _ in range(epochs)]
        sent = loader.last_stats.bytes_sent
    seconds = time.perf_counter() - started
    x, edge_index, labels, test = graph
    wire_x = x if wire_dtype == "float32" else torch.from_numpy(rounded(x.numpy(), wire_dtype))
    return {
        "test_acc": round(test_accuracy(model, x, edge_index, labels, test), 4),
        "test_acc_wire_inputs": round(test_accuracy(model, wire_x, edge_index, labels, test), 4),
        "final_loss": round(losses[-1], 4),
        "mb_sent_last_epoch": round(sent / 1e6, 2),
        "seconds": round(seconds, 2),
    }


def measure(name: str, dataset: GraphDataset, args, stored: GraphDataset | None = None) -> dict:
    """Train per seed and wire dtype on ``dataset``; ``stored`` is the dataset as converted, when
    ``dataset`` is its row-normalised copy."""
    features = np.array(dataset.features)
    graph = (
        torch.from_numpy(features),
        torch.from_numpy(dataset.edge_index()),
        torch.from_numpy(np.array(dataset.labels)),
        torch.from_numpy(np.asarray(dataset.split("test"), dtype=np.int64)),
    )
    epochs = args.epochs or EPOCHS[name]
    batch_size = args.batch_size or BATCH_SIZE[name]
    runs = [
        {"seed": seed, **{d: train(dataset, args, seed, d, graph, epochs, batch_size) for d in DTYPES}}
        for seed in args.seeds
    ]

    def mean(dtype: str, field: str = "test_acc") -> float:
        return sum(run[dtype][field] for run in runs) / len(runs)

    difference = {d: round(100 * (mean(d) - mean("float32")), 2) for d in DTYPES[1:]}
    float32 = [run["float32"]["test_acc"] for run in runs]
    meta = dataset.meta
    figures = {
        "mean_test_acc": {d: round(mean(d), 4) for d in DTYPES},
        "difference_points": difference,
        "within_1_point": {d: abs(v) <= TOLERANCE_POINTS for d, v in difference.items()},
        "largest_seed_difference_points": {
            d: round(max(100 * abs(run[d]["test_acc"] - run["float32"]["test_acc"]) for run in runs), 2)
            for d in DTYPES[1:]
        },
        "float32_seed_spread_points": round(100 * (max(float32) - min(float32)), 2),
        "mean_test_acc_wire_inputs": {d: round(mean(d, "test_acc_wire_inputs"), 4) for d in DTYPES},
        "max_relative_rounding_error": rounding_error(features),
    }
    if stored is not None:
        figures["stored_features_max_relative_rounding_error"] = rounding_error(np.array(stored.features))
    return {
        "dataset": f"{meta.name}: {meta.num_nodes:,} nodes, {meta.num_edges:,} edges, {meta.feature_dim} features, "
        f"{meta.num_classes} classes, {len(dataset.split('train'))} train / {len(graph[3])} test nodes",
        "features": "as generated (Gaussian)" if name == "synthetic" else args.features,
        "epochs": epochs,
        "batch_size": batch_size,
        "runs": runs,
        "figures": figures,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--datasets", type=lambda s: s.split(","), default=list(DATASETS))
    parser.add_argument("--epochs", type=int, help="one count for every dataset (default: 10; Facebook 2)")
    parser.add_argument("--batch-size", type=int, help="one batch size for every dataset (default: per dataset)")
    parser.add_argument(
        "--fanouts",
        type=lambda s: [int(x) for x in s.split(",")],
        default=[10, 5],
        help="neighbours sampled per hop (default 10,5)",
    )
    parser.add_argument("--hidden", type=int, default=64)
    parser.add_argument("--lr", type=float, default=0.01)
    parser.add_argument("--seeds", type=lambda s: [int(x) for x in s.split(",")], default=[0, 1, 2])
    parser.add_argument(
        "--features",
        choices=FEATURES,
        default="row-normalised",
        help="the real graphs' features: row-normalised (default) or stored (0/1, exact on the wire)",
    )
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
        help=f"where the converted datasets are kept (default {common.DATA_DIR})",
    )
    parser.add_argument("--output", type=Path, help="also write the JSON here (atomically)")
    args = parser.parse_args(argv)
    unknown = sorted(set(args.datasets) - set(DATASETS))
    if unknown:
        parser.error(f"unknown datasets {', '.join(unknown)}: choose from {', '.join(DATASETS)}")
    if (args.epochs is not None and args.epochs < 1) or (args.batch_size is not None and args.batch_size < 1):
        parser.error("need --epochs >= 1 and --batch-size >= 1")
    if not args.seeds:
        parser.error("need at least one seed")
    started = time.perf_counter()
    report: dict = {"benchmark": "wire_precision", "when": dt.datetime.now(dt.UTC).isoformat(timespec="seconds")}
    wanted_real = [name for name in args.datasets if name in REAL]
    real = common.real_datasets(args.data_dir, args.shared) if wanted_real else {}
    results, skipped = {}, {}
    for name in args.datasets:
        if name == "synthetic":
            results[name] = measure(name, synthetic(args.data_dir), args)
        elif name not in real:
            skipped[name] = f"needs the shared datasets at {args.shared} (absent on this checkout)"
        elif args.features == "row-normalised":
            results[name] = measure(name, row_normalised(real[name], args.data_dir), args, stored=real[name])
        else:
            results[name] = measure(name, real[name], args)
    report.update(
        {
            "parameters": {
                "model": f"PyG GraphSAGE, {len(args.fanouts)} layers, hidden {args.hidden}, dropout 0.5; "
                f"Adam lr {args.lr}",
                "epochs": args.epochs or {name: EPOCHS[name] for name in args.datasets},
                "batch_size": args.batch_size or {name: BATCH_SIZE[name] for name in args.datasets},
                "fanouts": args.fanouts,
                "seeds": args.seeds,
                "wire_dtypes": list(DTYPES),
                "real_features": f"{args.features}: "
                + (
                    "each row divided by its sum (PyG's NormalizeFeatures); the stored 0/1 features are exact "
                    "in float16 and bfloat16"
                    if args.features == "row-normalised"
                    else "0/1 as stored, exact in float16 and bfloat16: the three dtypes' runs must be identical"
                ),
                "splits": "Cora, CiteSeer: Planetoid's standard split; Facebook: the converter's seeded 60/20/20 "
                "split; synthetic: remotegnn.synth's 20/10/20 split",
                "evaluation": "full-graph inference on the test split (all edges, no sampling) with the exact "
                "float32 features, the same for every model; test_acc_wire_inputs: the same with the features "
                "rounded to the run's wire dtype",
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
