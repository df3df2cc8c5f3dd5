#!/usr/bin/env python
"""GraphSAGE training steps on a GPU, per batch shape: what `planner calibrate` fits a GPU's rate from.

For each fanout list and batch size, ``DistributedGraphLoader`` (the local transport, copying to
the GPU through pinned memory) draws --warmup + --steps batches from an R-MAT graph; those
batches, kept on the GPU, then train the example's GraphSAGE (``inprocess.make_model``: one
SAGEConv per hop, dropout 0.5, Adam) at each hidden width and precision. A step is forward,
cross-entropy on the seed rows, backward and the optimizer step, timed with CUDA events; the
median and 90th percentile of the --steps timed ones are kept. Replaying drawn batches times the
GPU alone: the loader's rate on this machine is not the memory machine's, and the planner prices
the host-to-device copy and the link apart. Mixed precision is ``torch.autocast`` in bfloat16
where the GPU has it (float16 with a gradient scaler elsewhere).

The default graph has papers100M's feature width (128) and a mean degree near its 29: 2^21 nodes,
30M R-MAT pairs stored both ways. Writes a ``memorybridge.gpu-steps`` file (--output) and prints a
JSON summary: per shape the step time, the planner's FLOPs for it, the achieved TFLOPS, and the
mixed-precision speed-up.

Run on a GPU machine: ``python benchmarks/gpu_steps.py --output gpu-steps.json``, then
``planner calibrate --from gpu-steps.json``. ``--device cpu`` with a small --scale checks the
script anywhere.
"""

from __future__ import annotations

import argparse
import functools
import itertools
import json
import shlex
import statistics
import sys
import time
from pathlib import Path

import common
import torch
import torch.nn.functional as F
from inprocess import make_model

from contracts.calibration import NVIDIA_FP32_TFLOPS
from contracts.gpu_steps import GpuStep, GpuStepsFile
from foundation.fileio import write_model
from planner.calibration.gpu import measured_work
from remotegnn.blocks import seed_forward
from remotegnn.loader import DistributedGraphLoader


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scale", type=int, default=21, help="R-MAT graph of 2^SCALE nodes")
    parser.add_argument("--pairs", type=int, default=30_000_000, help="R-MAT draws (each stored both ways)")
    parser.add_argument("--dim", type=int, default=128)
    parser.add_argument("--fanouts", default=f"{common.FANOUTS_TEXT};10,10,10", help="fanout lists, ';'-separated")
    parser.add_argument("--batch-sizes", default="512,1024,2048,4096")
    parser.add_argument("--hidden", default="128,256,512")
    parser.add_argument("--precisions", default="float32,mixed")
    parser.add_argument(
        "--forms",
        default="blocks,trimmed,whole",
        help="blocks (each layer computes only the rows the next reads), trimmed (layer i skips the last i hops), "
        "whole (every layer on all)",
    )
    parser.add_argument("--warmup", type=int, default=3, help="untimed steps per shape (cuDNN/cuBLAS choices)")
    parser.add_argument("--steps", type=int, default=10, help="timed steps per shape")
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--data-dir", type=Path, default=common.DATA_DIR)
    parser.add_argument("--output", type=Path, default=Path("gpu-steps.json"))
    args = parser.parse_args(argv)
    args.fanout_lists = [[int(f) for f in part.split(",")] for part in args.fanouts.split(";")]
    args.batch_size_list = [int(b) for b in args.batch_sizes.split(",")]
    args.hidden_list = [int(h) for h in args.hidden.split(",")]
    args.precision_list = args.precisions.split(",")
    args.form_list = args.forms.split(",")
    if not set(args.precision_list) <= {"float32", "mixed"}:
        parser.error(f"--precisions {args.precisions!r}: choose from float32 and mixed")
    if not set(args.form_list) <= {"blocks", "trimmed", "whole"}:
        parser.error(f"--forms {args.forms!r}: choose from blocks, trimmed and whole")
    return args


def gpu_key(name: str) -> str | None:
    """The coefficients' key for a CUDA device name ("NVIDIA H100 80GB HBM3" -> "H100"): the
    longest key that is a whole word of the name."""
    words = name.replace("-", " ").split()
    found = [key for key in NVIDIA_FP32_TFLOPS if all(w in words for w in key.split())]
    return max(found, key=len) if found else None


def mixed_dtype(device: torch.device) -> torch.dtype:
    if device.type == "cuda" and not torch.cuda.is_bf16_supported():
        return torch.float16
    return torch.bfloat16


class Clock:
    """Seconds of GPU work between two points: CUDA events on a GPU, the wall clock elsewhere."""

    def __init__(self, device: torch.device):
        self.cuda = device.type == "cuda"

    def time(self, work) -> float:
        if not self.cuda:
            started = time.perf_counter()
            work()
            return time.perf_counter() - started
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        work()
        end.record()
        end.synchronize()
        return start.elapsed_time(end) / 1e3


def draw(dataset, fanouts: list[int], batch_size: int, count: int, device: torch.device) -> tuple[list, float]:
    """``count`` training batches through DistributedGraphLoader, on ``device``; and its batches/s."""
    batches = []
    with DistributedGraphLoader(
        dataset.path,
        fanouts,
        input_nodes="train",
        batch_size=batch_size,
        shuffle=True,
        seed=0,
        device=str(device),
        transport="local",
        learner_cache=None,
    ) as loader:
        started = time.perf_counter()
        for batch in loader:
            batches.append(batch.clone())  # a batch may view the loader's buffers, which closing frees
            if len(batches) == count:
                break
        rate = len(batches) / (time.perf_counter() - started)
    if len(batches) < count:
        raise SystemExit(f"the graph's train split gives {len(batches)} batches of {batch_size}; need {count}")
    return batches, rate


def forward(model, batch, form: str) -> torch.Tensor:
    """The seeds' output rows, the layers run in ``form`` (``contracts.gpu_steps.StepForm``)."""
    if form == "blocks":
        return seed_forward(model, batch)
    hops = {"num_sampled_nodes_per_hop": batch.num_sampled_nodes, "num_sampled_edges_per_hop": batch.num_sampled_edges}
    return model(batch.x, batch.edge_index, **(hops if form == "trimmed" else {}))[: batch.batch_size]


def time_steps(
    dataset, batches: list, hidden: int, precision: str, form: str, args, device: torch.device
) -> list[float]:
    """Seconds of each step after the warm-up, the example's training step on each batch in turn."""
    torch.manual_seed(0)
    model = make_model(dataset, hidden, len(batches[0].num_sampled_edges)).to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
    mixed = precision != "float32"
    dtype = mixed_dtype(device)
    scaler = torch.amp.GradScaler(device.type, enabled=mixed and dtype == torch.float16)
    clock = Clock(device)

    def step(batch) -> None:
        optimizer.zero_grad(set_to_none=True)
        with torch.autocast(device.type, dtype=dtype, enabled=mixed):
            out = forward(model, batch, form)
            loss = F.cross_entropy(out.float(), batch.y[: batch.batch_size].long())
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()

    model.train()
    seconds = []
    for i, batch in enumerate(batches):
        elapsed = clock.time(functools.partial(step, batch))
        if i >= args.warmup:
            seconds.append(elapsed)
    return seconds


def measure(dataset, args, device: torch.device) -> list[GpuStep]:
    results = []
    for fanouts in args.fanout_lists:
        for batch_size in args.batch_size_list:
            batches, rate = draw(dataset, fanouts, batch_size, args.warmup + args.steps, device)
            nodes = [statistics.fmean(b.num_sampled_nodes[h] for b in batches) for h in range(len(fanouts) + 1)]
            edges = [statistics.fmean(b.num_sampled_edges[h] for b in batches) for h in range(len(fanouts))]
            for hidden, precision, form in itertools.product(args.hidden_list, args.precision_list, args.form_list):
                seconds = time_steps(dataset, batches, hidden, precision, form, args, device)
                name = "float32" if precision == "float32" else str(mixed_dtype(device)).removeprefix("torch.")
                results.append(
                    GpuStep(
                        fanouts=fanouts,
                        batch_size=batch_size,
                        hidden_dim=hidden,
                        precision=name,
                        trimmed=form != "whole",
                        form=form,
                        nodes_per_hop=nodes,
                        edges_per_hop=edges,
                        steps=len(seconds),
                        step_s=statistics.median(seconds),
                        step_s_p90=statistics.quantiles(seconds, n=10)[-1] if len(seconds) > 1 else seconds[0],
                    )
                )
                print(
                    json.dumps(
                        {
                            "fanouts": fanouts,
                            "batch": batch_size,
                            "hidden": hidden,
                            "precision": name,
                            "form": form,
                            "step_ms": round(1e3 * results[-1].step_s, 3),
                            "loader_batches_per_s": round(rate, 2),
                        }
                    ),
                    file=sys.stderr,
                    flush=True,
                )
            del batches
            if device.type == "cuda":
                torch.cuda.empty_cache()
    return results


def summary(measured: GpuStepsFile) -> dict:
    """Per shape: the step, the planner's FLOPs and memory bytes for it, and mixed precision's speed-up."""
    rows = []

    def key(m: GpuStep) -> tuple:
        return tuple(m.fanouts), m.batch_size, m.hidden_dim, m.step_form

    float32 = {key(m): m for m in measured.measurements if m.precision == "float32"}
    for m in measured.measurements:
        work = measured_work(measured, m)
        base = float32.get(key(m))
        rows.append(
            {
                "fanouts": m.fanouts,
                "batch_size": m.batch_size,
                "hidden": m.hidden_dim,
                "precision": m.precision,
                "form": m.step_form,
                "nodes": round(sum(m.nodes_per_hop)),
                "edges": round(sum(m.edges_per_hop)),
                "step_ms": round(1e3 * m.step_s, 3),
                "gflops": round(work.flops / 1e9, 2),
                "memory_gb": round(work.memory_bytes / 1e9, 3),
                "speedup_vs_float32": round(base.step_s / m.step_s, 3) if base and m.precision != "float32" else None,
            }
        )
    return {"gpu": measured.gpu, "gpu_key": measured.gpu_key, "torch": measured.torch, "rows": rows}


def main(argv=None) -> int:
    args = parse_args(argv)
    device = torch.device(args.device)
    if device.type == "cuda" and not torch.cuda.is_available():
        raise SystemExit("--device cuda: no CUDA device here (use --device cpu to check the script)")
    dataset = common.rmat_benchmark_graph(args.data_dir, scale=args.scale, pairs=args.pairs, dim=args.dim)
    name = torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu"
    measured = GpuStepsFile(
        gpu=name,
        gpu_key=gpu_key(name),
        torch=torch.__version__,
        feature_dim=dataset.meta.feature_dim,
        classes=dataset.meta.num_classes,
        command="python benchmarks/gpu_steps.py " + shlex.join(argv if argv is not None else sys.argv[1:]),
        measurements=measure(dataset, args, device),
    )
    write_model(args.output, measured)
    print(json.dumps(summary(measured), indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
