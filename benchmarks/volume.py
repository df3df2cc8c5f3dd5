#!/usr/bin/env python
"""Feature-fetch time per epoch on an emulated gp3 volume (125 MB/s, 3,000 IOPS) vs the bare disk.

For each cache fraction (0/10/30%: the highest-degree rows are "cached") a fixed number of
batches' cache misses are read through ``FeatureVolume`` twice: with the gp3 limits (the
emulation ``auto`` picks, or ``--emulation``) and with ``emulation="none"`` (the bare disk:
O_DIRECT, unpaced, the same requests). Both runs read the same node ids in the same order.

The miss stream is real: batches of 1,024 training seeds sampled by ``NeighborSampler``
(``--fanouts``, default 15,10,5), minus the rows a degree-ordered ``FeatureCache`` of that size
holds. On the default 2^18-node graph a batch touches a large share of all rows, so misses are
dense and the volume merges them into large reads (bandwidth-bound); ``--nodes 2097152`` makes
them sparse, closer to papers100M, where the IOPS limit binds.

Prints one JSON document: parameters, machine, the emulation each run used and why, and per
cache fraction the hit rate, seconds per batch and per epoch (an epoch is the stated number of
batches: one pass over the training split in batches of 1,024 seeds), MB/s, IOPS, rows/s, the
over-read, the floor the limits imply (max of bytes/MB/s and requests/IOPS per batch) and the
emulated/bare ratio. Nothing is asserted.

Run: ``.venv/bin/python benchmarks/volume.py [--quick] [--output FILE]``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import math
import platform
import time
from collections.abc import Iterable, Iterator
from pathlib import Path

import common
import numpy as np

from contracts.workload import DEFAULT_FANOUTS
from remotegnn.store import GraphDataset
from remotegnn.volume import FeatureVolume, VolumeLimits, detect_emulation

SEEDS_PER_BATCH = 1024


def benchmark_graph(data_dir: Path, nodes: int, dim: int) -> GraphDataset:
    """An R-MAT power-law graph (remotegnn synth: 8 draws per node, stored both ways), made once."""
    from remotegnn.synth import SynthSpec, synth

    path = data_dir / f"volume-rmat-{nodes}-{dim}"
    if not (path / "meta.json").exists():
        synth(
            SynthSpec(nodes=nodes, edges=8 * nodes, dim=dim, classes=16, seed=0), path, overwrite=True, progress=False
        )
    return GraphDataset.open(path)


def miss_batches(
    dataset: GraphDataset, cache_fraction: float, batches: int, fanouts: list[int], seed: int
) -> Iterator[tuple[np.ndarray, int]]:
    """(sorted unique missed node ids, nodes in the batch) per batch: the real sampler's batches
    of 1,024 training seeds, against a real degree-ordered FeatureCache of ``cache_fraction``."""
    from remotegnn.cache import FeatureCache, degree_ranking
    from remotegnn.sampling import NeighborSampler

    cache = FeatureCache.build(
        dataset,
        int(cache_fraction * dataset.meta.num_nodes) * dataset.meta.row_bytes,
        degree_ranking(dataset.degree),
        policy="degree",
    )
    sampler = NeighborSampler(dataset.csc, fanouts)
    seeds = np.random.default_rng(seed).permutation(np.asarray(dataset.split("train")))
    for b in range(batches):
        n_id = sampler.sample(seeds[b * SEEDS_PER_BATCH : (b + 1) * SEEDS_PER_BATCH], seed, b).n_id
        yield np.unique(n_id[cache.slot[n_id] < 0]), len(n_id)


def read_batches(volume: FeatureVolume, batches: Iterable[np.ndarray], limits: VolumeLimits) -> dict:
    """Read each batch's misses into one reused buffer; totals, and the floor the limits imply."""
    batches = list(batches)
    meta = volume.dataset.meta
    out = np.empty((max(1, *map(len, batches)), meta.feature_dim), dtype=meta.feature_dtype)
    volume.read_rows(np.zeros(1, dtype=np.int64), out[:1])  # warm-up (loads the compiled gather), not counted
    volume.stats.reset()
    floor = 0.0
    for nodes in batches:
        before = volume.stats.snapshot()
        volume.read_rows(nodes, out[: len(nodes)])
        done = volume.stats.since(before)
        floor += limits.seconds_for(done.bytes_read, done.requests)
    stats = volume.stats.as_dict()
    rows_bytes = stats["rows"] * meta.row_bytes
    return {
        **{k: round(v, 4) if isinstance(v, float) else v for k, v in stats.items()},
        "seconds_per_batch": round(stats["seconds"] / len(batches), 4),
        "requests_per_batch": round(stats["requests"] / len(batches), 1),
        "over_read": round(stats["bytes_read"] / rows_bytes, 2) if rows_bytes else None,
        "floor_seconds": round(floor, 4),
        "seconds_over_floor": round(stats["seconds"] / floor, 3) if floor else None,
    }


def run_fraction(
    volumes: dict[str, FeatureVolume], fraction: float, args, limits: VolumeLimits, epoch_batches: int
) -> dict:
    dataset = volumes["bare"].dataset
    drawn = list(miss_batches(dataset, fraction, args.batches, args.fanouts, args.seed))
    batches = [nodes for nodes, _ in drawn]
    misses, total = sum(map(len, batches)), sum(n for _, n in drawn)
    result: dict = {
        "cache_fraction": fraction,
        "hit_rate": round(1 - misses / total, 4),
        "miss_rows_per_batch": round(misses / len(batches), 1),
    }
    for label, volume in volumes.items():
        figures = read_batches(volume, batches, limits)
        figures["epoch_seconds"] = round(figures["seconds_per_batch"] * epoch_batches, 2)
        result[label] = figures
    bare = result["bare"]["seconds"]
    result["emulated_over_bare"] = round(result["emulated"]["seconds"] / bare, 2) if bare else None
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="2^16 nodes, 3 batches")
    parser.add_argument("--nodes", type=int, default=1 << 18)
    parser.add_argument("--dim", type=int, default=128, help="float32 features per node (default 128: 512 B rows)")
    parser.add_argument(
        "--fanouts",
        type=lambda s: [int(x) for x in s.split(",")],
        default=list(DEFAULT_FANOUTS),
        help=f"neighbours sampled per hop (default {common.FANOUTS_TEXT})",
    )
    parser.add_argument("--batches", type=int, default=8, help="batches measured per cache fraction (default 8)")
    parser.add_argument("--fractions", default="0,0.1,0.3", help="cache fractions (default 0,0.1,0.3)")
    parser.add_argument("--emulation", default="auto", help="emulation of the limited run (default auto)")
    parser.add_argument("--mb-per-s", type=float, default=125.0)
    parser.add_argument("--iops", type=float, default=3000.0)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--data-dir",
        type=Path,
        default=common.DATA_DIR,
        help=f"where the graph is made once and kept (default {common.DATA_DIR}); must be a real disk",
    )
    parser.add_argument("--output", type=Path, help="also write the JSON here (atomically)")
    args = parser.parse_args(argv)
    if args.quick:
        args.nodes, args.batches = 1 << 16, 3
    if args.batches < 1:
        parser.error("need --batches >= 1")
    fractions = [float(f) for f in args.fractions.split(",")]
    limits = VolumeLimits(mb_per_s=args.mb_per_s, iops=args.iops)

    start = time.perf_counter()
    dataset = benchmark_graph(args.data_dir, args.nodes, args.dim)
    setup_s = time.perf_counter() - start
    support = detect_emulation(dataset.features_path)
    train = len(dataset.split("train"))
    epoch_batches = math.ceil(train / SEEDS_PER_BATCH)

    with FeatureVolume(dataset, limits, args.emulation) as emulated, FeatureVolume(dataset, limits, "none") as bare:
        volumes = {"emulated": emulated, "bare": bare}
        figures = [run_fraction(volumes, f, args, limits, epoch_batches) for f in fractions]
        used = {label: volume.describe() for label, volume in volumes.items()}
    result = {
        "benchmark": "volume",
        "when": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "parameters": {
            "graph": f"R-MAT (remotegnn synth, seed 0), {args.nodes:,} nodes, {dataset.meta.num_edges:,} stored edges",
            "features": f"{args.dim} x float32 ({dataset.meta.row_bytes} B rows), "
            f"{dataset.features_path.stat().st_size / 1e6:.1f} MB",
            "limits": limits.model_dump(),
            "merge_gap_pages": limits.merge_gap_pages,
            "seeds_per_batch": SEEDS_PER_BATCH,
            "fanouts": args.fanouts,
            "batches_measured": args.batches,
            "fractions": fractions,
            "epoch": f"{epoch_batches} batches (the {train:,}-node train split in batches of {SEEDS_PER_BATCH})",
            "epoch_batches": epoch_batches,
            "seed": args.seed,
            "dataset_setup_s": round(setup_s, 2),
        },
        "machine": common.machine(
            kernel=platform.release(),
            filesystem=support.filesystem,
            mount_source=support.mount_source,
            device=support.device,
        ),
        "emulation": {"requested": args.emulation, "support": support.model_dump(exclude={"path"}), **used},
        "figures": figures,
    }
    return common.emit(result, args.output)


if __name__ == "__main__":
    raise SystemExit(main())
