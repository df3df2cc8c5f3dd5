#!/usr/bin/env python
"""What PyG's store interface costs over RemoteGNN's direct path: feature rows/s and sampled batches/s.

Rows are the ``n_id`` of real sampled batches (R-MAT 2^20 nodes, 128 x float32, train seeds,
batch 1024, fanout [15,10,5]), so the access pattern is the one training sees. Each path fetches
``x`` and ``y`` for every batch:

- ``direct``: ``FeatureCache.gather`` into a reused buffer plus ``np.take`` of the labels (what
  the pipeline's vector loaders do), in this process;
- ``local_store``: ``RemoteFeatureStore.local(...).multi_get_tensor([x, y])`` (index handling,
  a new tensor per batch), in this process;
- ``remote_store``: the same call on ``RemoteFeatureStore.connect(...)`` to a store server in a
  child process on 127.0.0.1 (TCP, CRC-32 over every frame, one round trip per batch).

All three use the same degree cache (``--cache-fraction`` of the feature bytes). Sampling is timed
the same way: ``NeighborSampler.sample`` against ``RemoteGraphStore.sample`` locally and through
the server. Each figure is the median of ``--repeats`` passes over ``--batches`` batches after one
untimed pass; overhead is the store's time per batch over the direct path's, minus one. The server
and this process share the machine's cores, so on a small machine the remote figures include
their competition for CPU.

Run: ``.venv/bin/python benchmarks/stores.py [--batches 50] [--repeats 3] [--scale 20] [--output F]``.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import common
import numpy as np

from contracts.workload import DEFAULT_FANOUTS

FANOUTS = list(DEFAULT_FANOUTS)


def _median_s(run: Callable[[np.ndarray], object], batches: list[np.ndarray], repeats: int) -> float:
    """Median seconds for one pass over ``batches``, after an untimed pass (page cache, JIT)."""
    for item in batches:
        run(item)
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        for item in batches:
            run(item)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def _figure(seconds: float, batches: int, rows: int, row_bytes: int, direct_s: float | None) -> dict:
    out = {
        "ms_per_batch": round(1000 * seconds / batches, 3),
        "rows_per_s": round(rows / seconds),
        "MB_per_s": round(rows * row_bytes / seconds / 1e6, 1),
        "batches_per_s": round(batches / seconds, 1),
    }
    if direct_s is not None:
        out["overhead_pct"] = round(100 * (seconds / direct_s - 1), 1)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--batches", type=int, default=50, help="batches per pass (default 50)")
    parser.add_argument("--repeats", type=int, default=3, help="timed passes per figure; the median is reported")
    parser.add_argument("--batch-size", type=int, default=1024)
    parser.add_argument("--cache-fraction", type=float, default=0.3, help="share of feature bytes cached (0.3)")
    parser.add_argument("--scale", type=int, default=20, help="R-MAT 2^scale nodes, 12M * 2^(scale-20) pairs (20)")
    parser.add_argument("--data-dir", type=Path, default=common.DATA_DIR)
    parser.add_argument("--output", type=Path, help="also write the JSON here (atomically)")
    args = parser.parse_args(argv)

    import torch
    from torch_geometric.data import TensorAttr

    from remotegnn.cache import FeatureCache, degree_ranking
    from remotegnn.pyg import RemoteFeatureStore, RemoteGraphStore
    from remotegnn.pyg.server_process import ServerProcess
    from remotegnn.sampling import NeighborSampler

    dataset = common.rmat_benchmark_graph(args.data_dir, scale=args.scale, pairs=12_000_000 >> (20 - args.scale))
    meta = dataset.meta
    cache_bytes = int(args.cache_fraction * meta.num_nodes * meta.row_bytes)
    train = np.random.default_rng(0).permutation(np.asarray(dataset.split("train")))
    if args.batches * args.batch_size > len(train):
        parser.error(f"--batches x --batch-size exceeds the {len(train):,} training nodes")
    seeds = [train[b * args.batch_size : (b + 1) * args.batch_size] for b in range(args.batches)]
    sampler = NeighborSampler(dataset.csc, FANOUTS)
    n_ids = [sampler.sample(s, 0, 0, b).n_id.copy() for b, s in enumerate(seeds)]
    rows = sum(len(n) for n in n_ids)
    row_bytes = meta.row_bytes + 8  # a feature row and its int64 label

    cache = FeatureCache.build(dataset, cache_bytes, degree_ranking(dataset.degree), policy="degree", progress=False)
    out_x = np.empty((max(map(len, n_ids)), meta.feature_dim), dtype=meta.feature_dtype)
    out_y = np.empty(len(out_x), dtype=np.int64)
    labels = dataset.labels

    def direct(n_id: np.ndarray) -> None:
        cache.gather(n_id, out_x)
        np.take(labels, n_id, out=out_y[: len(n_id)])

    tensors = [torch.from_numpy(n) for n in n_ids]
    direct_s = _median_s(direct, n_ids, args.repeats)
    sample_s = _median_s(lambda s: sampler.sample(s, 0, 0, 0), seeds, args.repeats)
    features = {"direct": _figure(direct_s, args.batches, rows, row_bytes, None)}
    sampling = {"direct": {"batches_per_s": round(args.batches / sample_s, 1)}}

    def measure(label: str, fs, gs) -> None:
        """One store pair's figures: x and y of every batch, and sampling every batch."""

        def fetch(n_id):
            return fs.multi_get_tensor([TensorAttr(None, "x", n_id), TensorAttr(None, "y", n_id)])

        features[label] = _figure(_median_s(fetch, tensors, args.repeats), args.batches, rows, row_bytes, direct_s)
        seconds = _median_s(lambda s: gs.sample(None, s, FANOUTS, False, (0, 0, 0)), seeds, args.repeats)
        sampling[label] = {
            "batches_per_s": round(args.batches / seconds, 1),
            "overhead_pct": round(100 * (seconds / sample_s - 1), 1),
        }

    measure(
        "local_store",
        RemoteFeatureStore.local(dataset.path, cache_bytes=cache_bytes, policy="degree"),
        RemoteGraphStore.local(dataset.path),
    )
    with ServerProcess(dataset.path, cache_bytes=cache_bytes, policy="degree") as server:
        measure("remote_store", RemoteFeatureStore.connect(server.address), RemoteGraphStore.connect(server.address))

    report = {
        "benchmark": "stores",
        "parameters": {
            "graph": f"R-MAT 2^{args.scale} nodes, {meta.num_edges:,} directed edges",
            "feature": f"{meta.feature_dim} x {meta.feature_dtype}",
            "batch_size": args.batch_size,
            "fanouts": FANOUTS,
            "batches": args.batches,
            "repeats": args.repeats,
            "rows_per_batch": round(rows / args.batches),
            "cache_fraction": args.cache_fraction,
            "cache_policy": "degree",
            "transport": "TCP 127.0.0.1, full CRC-32 frames",
        },
        "machine": common.machine(torch=torch.__version__),
        "features": features,
        "sampling": sampling,
    }
    return common.emit(report, args.output)


if __name__ == "__main__":
    sys.exit(main())
