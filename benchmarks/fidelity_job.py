#!/usr/bin/env python
"""The calibration training job: the learner of a `testbed run`, printing a JobReport.

    testbed run -- python benchmarks/fidelity_job.py --dataset D --profile P.json \
        --fanouts 10,5 --batch-size 256 --cache-bytes 26843545 [--learner-cache-bytes B --wire-dtype float16]

Trains GraphSAGE with DistributedGraphLoader (batches over MPI from the memory ranks),
data-parallel (DistributedDataParallel over gloo) when launched with several learners, and the
first learner prints one JSON document (schema ``memorybridge.calibration-run`` v1,
planner/calibration/runs.py): the dataset profile, the workload, the server's cache and process
counts, the number of learners, and per epoch the loop's seconds, the learner's compute seconds
(forward, backward with its gradients' all-reduce, optimizer step) and the server's PipelineStats.
The testbed records it in the runs file, so `planner calibrate` finds in each run everything the
testbed's own record lacks.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import warnings
from typing import get_args

warnings.filterwarnings("ignore", message=r"`torch\.jit\.script` is deprecated", category=DeprecationWarning)

import torch
import torch.nn.functional as F
from inprocess import seed_scores
from torch.nn.parallel import DistributedDataParallel
from torch_geometric.nn import GraphSAGE

from contracts.profile import load_profile
from contracts.runs import JobReport
from contracts.shards import DEFAULT_LAYOUT, ShardLayoutName
from foundation.units import GIB
from remotegnn.distributed import init_learners
from remotegnn.loader import DistributedGraphLoader
from remotegnn.server import ServerOptions
from remotegnn.store import GraphDataset


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dataset", required=True, help="the dataset directory the memory ranks serve")
    parser.add_argument("--profile", required=True, help="its profile JSON (`remotegnn profile -o`)")
    parser.add_argument("--fanouts", default="10,5")
    parser.add_argument("--batch-size", type=int, default=256)
    parser.add_argument("--hidden", type=int, default=16)
    parser.add_argument("--epochs", type=int, default=2, help="the first is reported but calibration skips it")
    parser.add_argument("--cache-bytes", type=int, required=True, help="feature-cache bytes per memory rank")
    parser.add_argument(
        "--learner-cache-bytes",
        type=lambda v: v if v == "auto" else int(v),
        default=0,
        help="the learner's feature cache in bytes (0: none), or auto (the RAM available less a reserve)",
    )
    parser.add_argument("--wire-dtype", default="float32", choices=("float32", "float16", "bfloat16"))
    parser.add_argument(
        "--flows", type=int, default=1, help="the TCP flows the launch opened (`testbed run --flows`), as reported"
    )
    parser.add_argument(
        "--layout",
        default=DEFAULT_LAYOUT,
        choices=get_args(ShardLayoutName),
        help="how the memory ranks deal the rows (`testbed run --layout`), as reported: calibration prices "
        "each run's start-up in its own layout",
    )
    parser.add_argument("--batch-creators", type=int, default=1)
    parser.add_argument("--vector-loaders", type=int, default=1)
    return parser.parse_args(argv)


def train_epoch(model, loader, optimizer) -> dict:
    model.train()
    started, compute, batches = time.perf_counter(), 0.0, 0
    for batch in loader:
        step = time.perf_counter()
        optimizer.zero_grad()
        out = seed_scores(model, batch)
        F.cross_entropy(out, batch.y[: batch.batch_size]).backward()
        optimizer.step()
        compute += time.perf_counter() - step
        batches += 1
    return {
        "seconds": time.perf_counter() - started,
        "batches": batches,
        "compute_s": compute,
        "stats": loader.last_stats.model_dump(),
    }


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    torch.set_num_threads(1)  # one learner core, as the model's learner is one device
    learners = init_learners()
    fanouts = [int(f) for f in args.fanouts.split(",")]
    meta = GraphDataset.open(args.dataset).meta
    server = ServerOptions(
        cache_bytes=args.cache_bytes,
        cache_policy="degree",
        batch_creators=args.batch_creators,
        vector_loaders=args.vector_loaders,
    )
    loader = DistributedGraphLoader(
        args.dataset,
        num_neighbors=fanouts,
        input_nodes="train",
        shuffle=True,
        batch_size=args.batch_size,
        learner_cache=args.learner_cache_bytes,
        wire_dtype=args.wire_dtype,
        server=server,
    )
    model = GraphSAGE(meta.feature_dim, args.hidden, num_layers=len(fanouts), out_channels=meta.num_classes)
    if learners.distributed:
        model = DistributedDataParallel(model)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
    try:
        epochs = [train_epoch(model, loader, optimizer) for _ in range(args.epochs)]
    finally:
        loader.close()
    learner_gib = loader.caches[0].learner_bytes / GIB if loader.caches else 0.0  # "auto" as resolved
    report = JobReport(
        profile=load_profile(args.profile),
        server=server.model_dump(),  # the report's view keeps the cache and process counts
        learners=learners.size,
        epochs=epochs,
        workload={
            "fanouts": fanouts,
            "batch_size": args.batch_size,
            "hidden_dim": args.hidden,
            "cache_policy": "degree",
            "learner_cache": learner_gib if learner_gib else "none",
            "wire_dtype": args.wire_dtype,
            "flows": args.flows,
            "shard_layout": args.layout,
        },
    )
    if learners.rank == 0:
        print(json.dumps(report.model_dump(mode="json")))
    return 0


if __name__ == "__main__":
    sys.exit(main())
