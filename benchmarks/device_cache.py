#!/usr/bin/env python
"""The learner's device cache: what it saves the host-to-device copy, beside the planner's model.

For each device-cache size (shares of the feature rows; 0 is the cache off) one loader over the
R-MAT benchmark graph (local transport, fanouts 10,10,10, batch 1024, as DGL GraphBolt's
papers100M example) runs the first batches of a warm-up epoch and then one whole epoch, and
reports batches/s, host-to-device bytes per batch (feature rows, and the ids and positions
beside them), the device cache's hit rate, the copies' seconds and the share of them the step
hid. The planner's prediction for the same graph (its profile, measured offline by
`remotegnn profile`) is beside each: the hit rate from the profile's degree curve at the cache's
share of the rows, the bytes from the profile's measured batch shape.

On a CUDA device (--device cuda) each batch also trains a 3-layer GraphSAGE (hidden 256, Adam),
so the copies have a step to hide behind, and the copy figures come from CUDA events. On a CPU
the bytes and the hit rate are counted exactly as a GPU would see them (a separate tensor stands
in for device memory); the timings there are the host's and not the point.

Run: ``.venv/bin/python benchmarks/device_cache.py [--device cuda] [--shares 0,0.1,0.3]
[--scale 20 --pairs 12000000] [--output F]``. Prints one JSON document.
"""

from __future__ import annotations

import argparse
import itertools
import sys
import time
from pathlib import Path

import common

FANOUTS = [10, 10, 10]
BATCH_SIZE, HIDDEN = 1024, 256
WARMUP_BATCHES = 5


def _model(dataset, device):
    import torch
    from torch_geometric.nn import GraphSAGE

    meta = dataset.meta
    model = GraphSAGE(meta.feature_dim, HIDDEN, len(FANOUTS), out_channels=max(2, meta.num_classes)).to(device)
    return model, torch.optim.Adam(model.parameters(), lr=0.01)


def _step(model, optimizer, batch) -> None:
    import torch.nn.functional as F

    optimizer.zero_grad()
    out = model(batch.x, batch.edge_index)[: batch.batch_size]
    F.cross_entropy(out, batch.y[: batch.batch_size].long()).backward()
    optimizer.step()


def run(dataset, share: float, device: str) -> dict:
    """One measured epoch with a device cache of ``share`` of the rows."""
    import torch

    from remotegnn.loader import DistributedGraphLoader
    from remotegnn.server import ServerOptions

    meta = dataset.meta
    model = optimizer = None
    if device == "cuda":
        model, optimizer = _model(dataset, device)
    budget = int(share * meta.num_nodes) * meta.row_bytes
    with DistributedGraphLoader(
        dataset.path,
        FANOUTS,
        input_nodes="train",
        batch_size=BATCH_SIZE,
        shuffle=True,
        seed=0,
        device=device,
        device_cache=budget,
        learner_cache=None,
        server=ServerOptions(batch_creators=1, vector_loaders=1),
        timeout=300,
    ) as loader:
        for batch in itertools.islice(loader, WARMUP_BATCHES):
            if model is not None:
                _step(model, optimizer, batch)
        count, started = 0, time.perf_counter()
        for batch in loader:
            if model is not None:
                _step(model, optimizer, batch)
            count += 1
        if device == "cuda":
            torch.cuda.synchronize()
        seconds = time.perf_counter() - started
        stats = loader.last_stats
    assert stats is not None
    return {
        "share": share,
        "device_cache_bytes": budget,
        "batches": count,
        "batches_per_s": round(count / seconds, 2),
        "host_to_device_bytes_per_batch": round(stats.host_to_device_bytes / count),
        "host_to_device_index_bytes_per_batch": round(stats.host_to_device_index_bytes / count),
        "device_cache_hit_rate": round(stats.device_cache_hit_rate, 4),
        "copy_s_per_batch": round(stats.copy_s / count, 6),
        "copy_hidden_share": stats.copy_hidden_share,
    }


def predicted(profile, share: float) -> dict:
    """The planner's model of the same: hit rate from the degree curve, bytes from the batch shape."""
    from contracts.workload import Workload
    from planner.costmodel.batch import estimate_batch

    shape = estimate_batch(profile, Workload(fanouts=FANOUTS, batch_size=BATCH_SIZE))
    hit = float(profile.curve("degree").hit_rate(share)) if share else 0.0
    return {
        "device_cache_hit_rate": round(hit, 4),
        "host_to_device_bytes_per_batch": round(shape.nodes * (1 - hit) * profile.row_bytes),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    parser.add_argument("--shares", default="0,0.05,0.1,0.2,0.3", help="device cache sizes, shares of the rows")
    parser.add_argument("--scale", type=int, default=20, help="R-MAT graph of 2^scale nodes (default 20)")
    parser.add_argument("--pairs", type=int, default=12_000_000, help="R-MAT node pairs (default 12M)")
    parser.add_argument("--data-dir", type=Path, default=common.DATA_DIR)
    parser.add_argument("--output", type=Path, help="also write the JSON here (atomically)")
    args = parser.parse_args(argv)

    from remotegnn.profile import profile_dataset

    dataset = common.rmat_benchmark_graph(args.data_dir, scale=args.scale, pairs=args.pairs)
    profile = profile_dataset(dataset, fanouts=FANOUTS, batch_size=BATCH_SIZE).profile
    rows = []
    for share in (float(s) for s in args.shares.split(",")):
        measured = run(dataset, share, args.device)
        rows.append({**measured, "planner": predicted(profile, share)})
    report = {
        "graph": dataset.meta.name,
        "nodes": dataset.meta.num_nodes,
        "row_bytes": dataset.meta.row_bytes,
        "fanouts": FANOUTS,
        "batch_size": BATCH_SIZE,
        "device": args.device,
        "machine": common.machine(),
        "sizes": rows,
    }
    return common.emit(report, args.output)


if __name__ == "__main__":
    sys.exit(main())
