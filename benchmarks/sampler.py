#!/usr/bin/env python
"""How fast RemoteGNN samples mini-batches and gathers their features, on one thread.

The setting: an R-MAT graph (Graph500 a=0.57, b=c=0.19, ids permuted) with 2^20 nodes and
12M pairs stored in both directions, 128-dim float32 features, batch 1024, fanouts [15,10,5] and
[10,10,10]. For each fanout: batches/s and seeds/s for sampling alone and for sampling plus the
feature gather (every row in RAM, through the cache's gather path, into a reused buffer). The
reference is PyG's NeighborLoader with torch-sparse, one thread, same graph and fanout [15,10,5]:
about 7.7 batches/s on the development machines (PyG cannot sample here without pyg-lib or
torch-sparse, so the figure is quoted, not re-run - unless one of them is importable, in which case it
is measured in the same run).

Memory-bandwidth limit: the same run measures a large sequential copy (the machine's memcpy
bandwidth) and a random 512-byte-row gather of the same number of rows a batch touches, and
reports how much of each batch's time the feature bytes alone would take at those rates. For
[15,10,5] it also times weighted (random edge weights) and disjoint sampling beside uniform.

Run: ``.venv/bin/python benchmarks/sampler.py [--batches 100] [--repeats 3] [--output F]``.
The graph is made once (about 20 s) under $MEMORYBRIDGE_BENCH_DATA or ~/.cache/memorybridge/bench.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import common
import numpy as np

PYG_REFERENCE_BATCHES_PER_S = 7.7
TARGET_BATCHES_PER_S = 30.0  # 4x PyG, including the feature gather


def _run(sampler, cache, seeds, batch_size, batches, out, gather: bool) -> float:
    start = time.perf_counter()
    for b in range(batches):
        sub = sampler.sample(seeds[b * batch_size : (b + 1) * batch_size], 0, b)
        if gather:
            cache.gather(sub.n_id, out)
    return time.perf_counter() - start


def _bandwidth(features: np.ndarray, rows: int) -> dict:
    from remotegnn.cache.kernels import gather_rows

    big = np.ones(256 << 20, dtype=np.uint8)
    dst = np.empty_like(big)
    np.copyto(dst, big)
    start = time.perf_counter()
    for _ in range(3):
        np.copyto(dst, big)
    memcpy = 3 * big.nbytes / (time.perf_counter() - start)
    # A fresh random set of rows each time, so the CPU caches do not serve repeats.
    rng = np.random.default_rng(0)
    indices = [rng.integers(0, features.shape[0], rows) for _ in range(6)]
    out = np.empty((rows, features.shape[1]), dtype=features.dtype)
    gather_rows(features, indices[0], out)
    start = time.perf_counter()
    for idx in indices[1:]:
        gather_rows(features, idx, out)
    random_rows = 5 * out.nbytes / (time.perf_counter() - start)
    return {"memcpy_GBps": round(memcpy / 1e9, 2), "random_row_gather_GBps": round(random_rows / 1e9, 2)}


def _variants(csc, cache, seeds, args, out, uniform: dict) -> dict:
    """Weighted (random edge weights) and disjoint sampling, fanout [15, 10, 5], sampling alone:
    their time per batch beside uniform sampling's in the same run."""
    from remotegnn.sampling import NeighborSampler

    weights = np.random.default_rng(1).random(len(csc.indices)).astype(np.float32)
    variants = {}
    for name, options in (("weighted", {"weights": weights}), ("disjoint", {"disjoint": True})):
        sampler = NeighborSampler(csc, [15, 10, 5], **options)
        _run(sampler, cache, seeds, args.batch_size, 3, out, gather=False)  # compile
        times = [_run(sampler, cache, seeds, args.batch_size, args.batches, out, False) for _ in range(args.repeats)]
        ms = 1000 * statistics.median(times) / args.batches
        nodes = len(sampler.sample(seeds[: args.batch_size], 0, 0).n_id)
        variants[name] = {
            "ms_per_batch": round(ms, 2),
            "relative_to_uniform": round(ms / uniform["sampling"]["ms_per_batch"], 2),
            "nodes_in_first_batch": nodes,  # disjoint trees repeat nodes: many more per batch
        }
    return variants


def _pyg_available() -> bool:
    for name in ("pyg_lib", "torch_sparse"):
        try:
            __import__(name)
            return True
        except ImportError:
            pass
    return False


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--batches", type=int, default=100, help="timed batches per run (default 100)")
    parser.add_argument("--repeats", type=int, default=3, help="runs per figure; the median is reported")
    parser.add_argument("--batch-size", type=int, default=1024)
    parser.add_argument("--data-dir", type=Path, default=common.DATA_DIR)
    parser.add_argument("--output", type=Path, help="also write the JSON here (atomically)")
    args = parser.parse_args(argv)

    from remotegnn.cache import FeatureCache, degree_ranking
    from remotegnn.sampling import NeighborSampler
    from remotegnn.store.reader import Compressed

    dataset = common.rmat_benchmark_graph(args.data_dir)
    meta = dataset.meta
    # Structure and features in RAM, as on a memory machine (not page-cache-backed mmaps).
    csc = Compressed(*(np.array(a) for a in dataset.csc))
    cache = FeatureCache.build(
        dataset, meta.num_nodes * meta.row_bytes, degree_ranking(dataset.degree), policy="degree"
    )
    seeds = np.random.default_rng(0).permutation(meta.num_nodes)
    need = args.batches * args.batch_size
    if need > len(seeds):
        parser.error(f"--batches x --batch-size exceeds the {len(seeds):,} nodes")
    out = np.empty((1 << 18, meta.feature_dim), dtype=meta.feature_dtype)

    figures = {}
    for fanouts in ([15, 10, 5], [10, 10, 10]):
        sampler = NeighborSampler(csc, fanouts)
        _run(sampler, cache, seeds, args.batch_size, 5, out, gather=True)  # compile + warm caches
        nodes = (
            sum(
                len(sampler.sample(seeds[b * args.batch_size : (b + 1) * args.batch_size], 0, b).n_id)
                for b in range(args.batches)
            )
            / args.batches
        )
        result = {"nodes_per_batch": round(nodes)}
        for label, gather in (("sampling", False), ("sampling_and_gather", True)):
            times = [
                _run(sampler, cache, seeds, args.batch_size, args.batches, out, gather) for _ in range(args.repeats)
            ]
            per_s = args.batches / statistics.median(times)
            result[label] = {
                "batches_per_s": round(per_s, 1),
                "seeds_per_s": round(per_s * args.batch_size),
                "ms_per_batch": round(1000 / per_s, 2),
            }
        result["speedup_vs_pyg_reference"] = round(
            result["sampling_and_gather"]["batches_per_s"] / PYG_REFERENCE_BATCHES_PER_S, 1
        )
        result["target_met"] = result["sampling_and_gather"]["batches_per_s"] >= TARGET_BATCHES_PER_S
        figures["fanout_" + "_".join(map(str, fanouts))] = result

    figures["fanout_15_10_5"]["variants"] = _variants(csc, cache, seeds, args, out, figures["fanout_15_10_5"])
    bandwidth = _bandwidth(np.asarray(cache.rows), round(figures["fanout_15_10_5"]["nodes_per_batch"]))
    for result in figures.values():
        feature_bytes = result["nodes_per_batch"] * meta.row_bytes
        batch_s = result["sampling_and_gather"]["ms_per_batch"] / 1000
        result["memory_bound"] = {
            "feature_MB_per_batch": round(feature_bytes / 1e6, 1),
            "share_of_batch_time_at_memcpy": round(feature_bytes / (bandwidth["memcpy_GBps"] * 1e9) / batch_s, 3),
            "share_of_batch_time_at_random_gather": round(
                feature_bytes / (bandwidth["random_row_gather_GBps"] * 1e9) / batch_s, 3
            ),
        }
    report = {
        "benchmark": "sampler",
        "parameters": {
            "graph": f"R-MAT 2^20 nodes, {meta.num_edges:,} directed edges (12M pairs both ways, "
            "self loops and duplicate draws dropped)",
            "feature": f"{meta.feature_dim} x {meta.feature_dtype}",
            "batch_size": args.batch_size,
            "batches": args.batches,
            "repeats": args.repeats,
            "threads": 1,
        },
        "machine": common.machine(numba=__import__("numba").__version__),
        "bandwidth": bandwidth,
        "pyg_reference": {
            "batches_per_s": PYG_REFERENCE_BATCHES_PER_S,
            "source": "quoted (torch-sparse, one thread, fanout 15,10,5)",
            "measurable_here": _pyg_available(),
        },
        "figures": figures,
    }
    return common.emit(report, args.output)


if __name__ == "__main__":
    sys.exit(main())
