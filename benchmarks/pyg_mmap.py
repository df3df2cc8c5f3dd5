#!/usr/bin/env python
"""PyG with mmap, for real: PyG's own NeighborLoader trains the disk benchmark's GraphSAGE with
its features a ``numpy.memmap`` of features.npy, while the kernel holds this process to a cloud
volume's limits and a memory machine's RAM.

- **Volume**: the features are mapped from a loop device over (a copy padded to whole pages of)
  features.npy, with O_DIRECT to the backing file and the read-ahead of a cloud volume
  (``--read-ahead-kb``, 128: Linux's default, which EBS volumes keep; the local disk here uses
  8 MiB, which would make every fault read 8 MiB). The process joins a cgroup v1 blkio group
  limiting reads from the loop device to ``--mb-per-s`` and ``--iops``. Page faults are
  synchronous reads by the faulting thread, so the throttle applies to them, read-around
  included (PyG leaves a mapped file's advice at the default). The run reports the reads the
  group's counters saw and whether their rate stayed within the limits (the throttle "holds").
- **RAM**: the process then joins a memory group whose limit is ``--cache-fraction`` of the
  feature bytes plus room for a training step (1.5x the anonymous memory one step was measured to
  take before joining: SAGE's messages alone are hundreds of MB), so the page cache keeps about
  that share of the rows, as on the paper's memory machine (the structure, read before joining,
  stays charged outside).
- **Cold start**: features.npy's pages are dropped (this file only) before the first epoch.

The sampler is PyG's (torch-sparse or pyg-lib); the structure is in RAM; the model, loss and
optimiser are the disk benchmark's (``inprocess.py``). Prints one JSON document; without root,
cgroup v1 blkio and memory, or a PyG sampler it prints ``{"skipped": REASON}`` and exits 0.

Run by ``benchmarks/disk_based.py``; alone: ``.venv/bin/python benchmarks/pyg_mmap.py DATASET
[--epochs 1] [--cache-fraction 0.3] [--mb-per-s 125] [--iops 3000]``.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import shutil
import sys
import threading
import time
import warnings
from functools import partial
from pathlib import Path

import numpy as np
from kernel_limits import CGROUPS, Group, device_reads, loop_device

from contracts.workload import DEFAULT_FANOUTS

CLOUD_READ_AHEAD_KB = 128
HEADROOM = 1.5
"""The memory group's room for a training step: this times the step's measured peak of anonymous
memory (its batch, messages, activations and gradients), on top of the page-cache share."""
MIN_STEP_BYTES = 64 << 20
"""The least room given for a step: a tiny graph's step can finish between two polls."""
POLL_S = 0.002
HELD = 1.25  # a measured rate at most this times the limit counts as held (as the volume's probe)
THROTTLE_SLICE_S = 0.1
"""blk-throttle grants each group its budget in slices of this length (the kernel's default on a
rotational device; 20 ms on a solid-state one), so an epoch may read one slice's budget at once:
a tiny epoch that lasts a few milliseconds reads its first slice at full disk speed."""


def unavailable() -> str | None:
    """Why this machine cannot run the real baseline, or None."""
    if os.geteuid() != 0:
        return "needs root to create cgroups"
    for controller in ("blkio", "memory"):
        if not (CGROUPS / controller / "cgroup.procs").exists():
            return f"needs the cgroup v1 {controller} controller at {CGROUPS / controller}"
    try:
        import torch_geometric.typing as pyg_typing
    except ImportError as exc:
        return f"torch_geometric is not importable ({exc})"
    if not (pyg_typing.WITH_PYG_LIB or pyg_typing.WITH_TORCH_SPARSE):
        return "PyG samples only with pyg-lib or torch-sparse; neither is installed"
    if shutil.which("losetup") is None:
        return "needs losetup (util-linux) for the loop device"
    return None


def step_peak_anon_bytes(step) -> int:
    """Run ``step()``; how far this process's anonymous memory rose above where it began."""

    def anon() -> int:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("RssAnon:"):
                return int(line.split()[1]) * 1024
        return 0

    start, peak, done = anon(), [0], threading.Event()

    def watch() -> None:
        while not done.is_set():
            peak[0] = max(peak[0], anon())
            time.sleep(POLL_S)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    try:
        step()
    finally:
        done.set()
        watcher.join()
    return max(peak[0], anon()) - start


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("dataset", type=Path)
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--batch-size", type=int, default=1024)
    parser.add_argument("--fanouts", type=lambda s: [int(x) for x in s.split(",")], default=list(DEFAULT_FANOUTS))
    parser.add_argument("--hidden", type=int, default=64)
    parser.add_argument("--lr", type=float, default=0.01)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--cache-fraction", type=float, default=0.3)
    parser.add_argument("--mb-per-s", type=float, default=125.0)
    parser.add_argument("--iops", type=float, default=3000.0)
    parser.add_argument("--read-ahead-kb", type=int, default=CLOUD_READ_AHEAD_KB, help="the volume's read-ahead")
    args = parser.parse_args(argv)
    reason = unavailable()
    if reason is not None:
        sys.stdout.write(json.dumps({"skipped": reason}) + "\n")
        return 0

    from remotegnn.store import GraphDataset

    dataset = GraphDataset.open(args.dataset)
    with loop_device(dataset.features_path, args.read_ahead_kb) as (device_path, device):
        report = train(dataset, device_path, device, args)
    sys.stdout.write(json.dumps(report) + "\n")
    return 0


def one_step(model, loader) -> None:
    """A forward and backward pass on the loader's first batch (what a step allocates)."""
    import torch.nn.functional as F

    batch = next(iter(loader))
    out = model(batch.x, batch.edge_index)[: batch.batch_size]
    F.cross_entropy(out, batch.y[: batch.batch_size]).backward()


def train(dataset, device_path: Path, device: str, args) -> dict:
    """Set PyG up, then train ``args.epochs`` epochs inside the blkio and memory groups."""
    import torch
    import torch_geometric.typing as pyg_typing
    from common import evict
    from inprocess import make_model, train_epoch, warm_up
    from torch_geometric.data import Data
    from torch_geometric.loader import NeighborLoader

    meta = dataset.meta
    edge_index = torch.from_numpy(dataset.edge_index())
    labels = torch.from_numpy(np.array(dataset.labels))
    train_ids = torch.from_numpy(np.asarray(dataset.split("train"), dtype=np.int64))

    def pyg_loader() -> NeighborLoader:
        """PyG's loader over a fresh read-only mapping of the device (PyG only reads it)."""
        shape = (meta.num_nodes, meta.feature_dim)
        features = np.memmap(
            device_path, dtype=meta.feature_dtype, mode="r", offset=dataset.features_offset, shape=shape
        )
        with warnings.catch_warnings():  # the read-only map; NeighborSampler without pyg-lib
            warnings.simplefilter("ignore", UserWarning)
            data = Data(x=torch.from_numpy(features), edge_index=edge_index, y=labels, num_nodes=meta.num_nodes)
            return NeighborLoader(
                data, num_neighbors=args.fanouts, input_nodes=train_ids, batch_size=args.batch_size, shuffle=True
            )

    cpu = torch.device("cpu")
    warm_up(dataset, args, cpu)
    probe = pyg_loader()  # its own mapping: unmapped below, so the timed epochs start cold
    step_bytes = step_peak_anon_bytes(partial(one_step, make_model(dataset, args.hidden, len(args.fanouts)), probe))
    del probe
    gc.collect()
    evict(device_path)
    loader = pyg_loader()
    torch.manual_seed(args.seed)  # the disk benchmark's initial weights
    model = make_model(dataset, args.hidden, len(args.fanouts))
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)
    memory_limit = int(
        args.cache_fraction * meta.num_nodes * meta.row_bytes + max(HEADROOM * step_bytes, MIN_STEP_BYTES)
    )
    limits = {
        "blkio.throttle.read_bps_device": f"{device} {round(args.mb_per_s * 1e6)}",
        "blkio.throttle.read_iops_device": f"{device} {round(args.iops)}",
    }
    blkio = Group("blkio", limits)
    try:
        memory = Group("memory", {"memory.limit_in_bytes": str(memory_limit)})
        try:
            epochs = []
            for epoch in range(args.epochs):
                requests, nbytes = device_reads(blkio, device)
                stats = train_epoch(model, loader, optimizer, cpu)
                after_requests, after_bytes = device_reads(blkio, device)
                requests, nbytes = after_requests - requests, after_bytes - nbytes
                seconds = stats["seconds"]
                epochs.append(
                    {
                        "epoch": epoch,
                        **{k: round(v, 4) if isinstance(v, float) else v for k, v in stats.items()},
                        "read_requests": requests,
                        "read_bytes": nbytes,
                        "mean_request_bytes": round(nbytes / requests) if requests else 0,
                        "achieved_iops": round(requests / seconds, 1),
                        "achieved_mb_per_s": round(nbytes / 1e6 / seconds, 2),
                        "floor_s": round(max(nbytes / (args.mb_per_s * 1e6), requests / args.iops), 3),
                    }
                )
            peak_memory = int(memory.read("memory.max_usage_in_bytes"))
        finally:
            memory.leave()
    finally:
        blkio.leave()
    held = all(
        e["read_requests"] <= HELD * args.iops * (e["seconds"] + THROTTLE_SLICE_S)
        and e["read_bytes"] <= HELD * args.mb_per_s * 1e6 * (e["seconds"] + THROTTLE_SLICE_S)
        for e in epochs
    )
    return {
        "sampler": "pyg-lib" if pyg_typing.WITH_PYG_LIB else "torch-sparse",
        "volume": f"loop device {device} over features.npy (O_DIRECT backing), read-ahead {args.read_ahead_kb} KiB",
        "limits": {"mb_per_s": args.mb_per_s, "iops": args.iops},
        "throttle_held": held,
        "memory_limit_bytes": memory_limit,
        "step_peak_anon_bytes": step_bytes,
        "peak_memory_bytes": peak_memory,
        "epochs": epochs,
    }


if __name__ == "__main__":
    sys.exit(main())
