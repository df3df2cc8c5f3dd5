#!/usr/bin/env python
"""How fast RemoteGNN samples mini-batches and gathers their features, on one thread, side by side
with PyG's own NeighborLoader, in each node order.

The setting: an R-MAT graph (Graph500 a=0.57, b=c=0.19, ids permuted) with 2^20 nodes and
12M pairs stored in both directions, 128-dim float32 features, batch 1024, fanouts [15,10,5] and
[10,10,10]. For each fanout: batches/s and seeds/s for sampling alone and for sampling plus the
feature gather (every row in RAM, through the cache's gather path, into a reused buffer).

PyG side by side: NeighborLoader (torch-sparse or pyg-lib, whichever is importable; skipped with
the reason otherwise), one thread, the same graph, seeds and fanout [15,10,5], its own feature
slicing included, timed in the same run.

Node orders (``--orders``, default all of degree, dbg, bfs, rcm): the graph is also reordered
(``remotegnn reorder``; made once under the data directory, its cost kept beside it) and
sampled from the same seeds (in the user's ids, so the batches are the same); for each order:
the reordering's cost (seconds per million edges), batches/s against the id order's, and, for a
degree-ranked feature cache of 30% of the rows, its hit rate and the 4 KiB pages its misses touch
per batch (what a volume must read).

Memory-bandwidth limit: the same run measures a large sequential copy (the machine's memcpy
bandwidth) and a random 512-byte-row gather of the same number of rows a batch touches, and
reports how much of each batch's time the feature bytes alone would take at those rates. For
[15,10,5] it also times weighted (random edge weights) and disjoint sampling beside uniform.

Run: ``.venv/bin/python benchmarks/sampler.py [--batches 100] [--repeats 3] [--orders degree,bfs]
[--output F]``. The graph is made once (about 20 s) under $MEMORYBRIDGE_BENCH_DATA or
~/.cache/memorybridge/bench.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import common
import numpy as np

from contracts.workload import DEFAULT_FANOUTS

TARGET_VS_PYG = 15.0  # sampling + gather, fanout [15, 10, 5], against PyG's NeighborLoader
ORDERS = "degree,dbg,bfs,rcm"
CACHE_SHARE = 0.3  # the feature cache of the disk-based setting: 30% of the rows
PAGE_BYTES = 4096
MERGED_BATCHES = 4
"""Batches in flight whose misses a volume could read as one plan (the server ring's default depth)."""


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
        sampler = NeighborSampler(csc, list(DEFAULT_FANOUTS), **options)
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


def _pyg(dataset, seeds: np.ndarray, args) -> dict:
    """PyG's NeighborLoader on the same graph and seeds, one thread, its feature slicing included."""
    try:
        import torch
        import torch_geometric.typing as pyg_typing
        from torch_geometric.data import Data
        from torch_geometric.loader import NeighborLoader
    except ImportError as exc:
        return {"skipped": f"torch_geometric is not importable ({exc})"}
    if not (pyg_typing.WITH_PYG_LIB or pyg_typing.WITH_TORCH_SPARSE):
        return {"skipped": "PyG samples only with pyg-lib or torch-sparse; neither is installed"}
    torch.set_num_threads(1)
    data = Data(x=torch.from_numpy(np.array(dataset.features)), edge_index=torch.from_numpy(dataset.edge_index()))
    data.num_nodes = dataset.meta.num_nodes
    started = time.perf_counter()
    loader = NeighborLoader(
        data, num_neighbors=list(DEFAULT_FANOUTS), input_nodes=torch.from_numpy(seeds), batch_size=args.batch_size
    )
    setup = time.perf_counter() - started

    def run(batches: int) -> float:
        begin = time.perf_counter()
        for b, _ in enumerate(loader):
            if b + 1 == batches:
                break
        return time.perf_counter() - begin

    run(2)  # warm
    times = [run(args.pyg_batches) for _ in range(args.repeats)]
    per_s = args.pyg_batches / statistics.median(times)
    return {
        "backend": "pyg-lib" if pyg_typing.WITH_PYG_LIB else "torch-sparse",
        "batches": args.pyg_batches,
        "batches_per_s": round(per_s, 2),
        "ms_per_batch": round(1000 / per_s, 1),
        "setup_s": round(setup, 1),
    }


def _layouts(dataset, orders: list[str], data_dir: Path) -> dict:
    """The graph in id order and in each of ``orders`` (reordered once, with its cost kept)."""
    return {"id": (dataset, None), **{name: common.reordered(dataset, name, data_dir) for name in orders}}


def _in_ram(dataset):
    """Structure and every feature row in RAM, as on a memory machine (not page-cache mmaps)."""
    from remotegnn.cache import FeatureCache, degree_ranking
    from remotegnn.store.reader import Compressed

    meta = dataset.meta
    csc = Compressed(*(np.array(a) for a in dataset.csc))
    cache = FeatureCache.build(
        dataset, meta.num_nodes * meta.row_bytes, degree_ranking(dataset.degree), policy="degree", progress=False
    )
    return csc, cache


def _throughput(csc, cache, seeds: np.ndarray, fanouts, args, out) -> dict:
    from remotegnn.sampling import NeighborSampler

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
        times = [_run(sampler, cache, seeds, args.batch_size, args.batches, out, gather) for _ in range(args.repeats)]
        per_s = args.batches / statistics.median(times)
        result[label] = {
            "batches_per_s": round(per_s, 1),
            "seeds_per_s": round(per_s * args.batch_size),
            "ms_per_batch": round(1000 / per_s, 2),
        }
    return result


def _volume_reads(dataset, csc, seeds: np.ndarray, args) -> dict:
    """A 30% degree-ranked cache: its hit rate, the 4 KiB pages of features.npy its misses touch
    per batch (fanout [15, 10, 5]), and per batch when the misses of ``MERGED_BATCHES`` batches
    in flight are read together (pages two batches share read once)."""
    from remotegnn.cache import degree_ranking
    from remotegnn.sampling import NeighborSampler

    meta = dataset.meta
    cached = np.zeros(meta.num_nodes, dtype=bool)
    cached[degree_ranking(dataset.degree)[: int(CACHE_SHARE * meta.num_nodes)]] = True
    sampler = NeighborSampler(csc, list(DEFAULT_FANOUTS))
    hits = rows = 0
    batches = max(MERGED_BATCHES, min(args.batches, 20) // MERGED_BATCHES * MERGED_BATCHES)
    pages = []
    for b in range(batches):
        n_id = sampler.sample(seeds[b * args.batch_size : (b + 1) * args.batch_size], 0, b).n_id
        missed = n_id[~cached[n_id]]
        hits += len(n_id) - len(missed)
        rows += len(n_id)
        offsets = dataset.features_offset + missed * meta.row_bytes
        pages.append(np.unique(np.concatenate([offsets // PAGE_BYTES, (offsets + meta.row_bytes - 1) // PAGE_BYTES])))
    merged = sum(
        len(np.unique(np.concatenate(pages[b : b + MERGED_BATCHES]))) for b in range(0, batches, MERGED_BATCHES)
    )
    return {
        "cache_hit_rate": round(hits / rows, 4),
        "miss_pages_per_batch": round(sum(map(len, pages)) / batches),
        f"miss_pages_per_batch_merged_{MERGED_BATCHES}": round(merged / batches),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--batches", type=int, default=100, help="timed batches per run (default 100)")
    parser.add_argument("--pyg-batches", type=int, default=20, help="timed PyG batches per run (default 20)")
    parser.add_argument("--repeats", type=int, default=3, help="runs per figure; the median is reported")
    parser.add_argument("--batch-size", type=int, default=1024)
    parser.add_argument("--orders", default=ORDERS, help=f"node orders to compare (default {ORDERS}; '' for none)")
    parser.add_argument("--scale", type=int, default=20, help="2^SCALE nodes (default 20; smaller for a quick check)")
    parser.add_argument("--pairs", type=int, default=12_000_000, help="R-MAT pairs drawn (default 12M)")
    parser.add_argument("--data-dir", type=Path, default=common.DATA_DIR)
    parser.add_argument("--output", type=Path, help="also write the JSON here (atomically)")
    args = parser.parse_args(argv)

    dataset = common.rmat_benchmark_graph(args.data_dir, scale=args.scale, pairs=args.pairs)
    meta = dataset.meta
    user_seeds = np.random.default_rng(0).permutation(meta.num_nodes)
    need = max(args.batches, args.pyg_batches + 2) * args.batch_size
    if need > len(user_seeds):
        parser.error(f"--batches x --batch-size exceeds the {len(user_seeds):,} nodes")
    out = np.empty((1 << 18, meta.feature_dim), dtype=meta.feature_dtype)
    orders = [name for name in args.orders.split(",") if name]
    layouts = _layouts(dataset, orders, args.data_dir)
    pyg = _pyg(dataset, user_seeds[:need], args)

    figures, by_order = {}, {}
    for name, (layout, cost) in layouts.items():
        csc, cache = _in_ram(layout)
        seeds = layout.to_positions(user_seeds)
        result = _throughput(csc, cache, seeds, list(DEFAULT_FANOUTS), args, out)
        result.update(_volume_reads(layout, csc, seeds, args))
        if name == "id":
            figures["fanout_15_10_5"] = result
            figures["fanout_10_10_10"] = _throughput(csc, cache, seeds, [10, 10, 10], args, out)
            result["variants"] = _variants(csc, cache, seeds, args, out, result)
            bandwidth = _bandwidth(np.asarray(cache.rows), result["nodes_per_batch"])
        else:
            by_order[name] = {"reorder_cost": cost, **result}
        del csc, cache
    best = max(
        [("id", figures["fanout_15_10_5"])] + list(by_order.items()),
        key=lambda item: item[1]["sampling_and_gather"]["batches_per_s"],
    )
    id_rate = figures["fanout_15_10_5"]["sampling_and_gather"]["batches_per_s"]
    for result in by_order.values():
        result["speedup_vs_id_order"] = round(result["sampling_and_gather"]["batches_per_s"] / id_rate, 2)
    for result in [*figures.values(), *by_order.values()]:
        feature_bytes = result["nodes_per_batch"] * meta.row_bytes
        batch_s = result["sampling_and_gather"]["ms_per_batch"] / 1000
        result["memory_bound"] = {
            "feature_MB_per_batch": round(feature_bytes / 1e6, 1),
            "share_of_batch_time_at_memcpy": round(feature_bytes / (bandwidth["memcpy_GBps"] * 1e9) / batch_s, 3),
            "share_of_batch_time_at_random_gather": round(
                feature_bytes / (bandwidth["random_row_gather_GBps"] * 1e9) / batch_s, 3
            ),
        }
        if "batches_per_s" in pyg and result.get("nodes_per_batch"):
            result["speedup_vs_pyg"] = round(result["sampling_and_gather"]["batches_per_s"] / pyg["batches_per_s"], 1)
    summary = {"best_layout": best[0], "best_batches_per_s": best[1]["sampling_and_gather"]["batches_per_s"]}
    if "batches_per_s" in pyg:
        summary["best_speedup_vs_pyg"] = round(summary["best_batches_per_s"] / pyg["batches_per_s"], 1)
        summary["target_met"] = summary["best_speedup_vs_pyg"] >= TARGET_VS_PYG
    report = {
        "benchmark": "sampler",
        "parameters": {
            "graph": f"R-MAT 2^{args.scale} nodes, {meta.num_edges:,} directed edges ({args.pairs:,} pairs both "
            "ways, self loops and duplicate draws dropped)",
            "feature": f"{meta.feature_dim} x {meta.feature_dtype}",
            "batch_size": args.batch_size,
            "batches": args.batches,
            "repeats": args.repeats,
            "threads": 1,
        },
        "machine": common.machine(numba=__import__("numba").__version__),
        "bandwidth": bandwidth,
        "pyg": pyg,
        "figures": figures,
        "orders": by_order,
        "summary": summary,
    }
    return common.emit(report, args.output)


if __name__ == "__main__":
    sys.exit(main())
