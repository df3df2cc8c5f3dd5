#!/usr/bin/env python
"""GraphSAGE node classification with RemoteGNN's DistributedGraphLoader (or PyG's NeighborLoader).

    python examples/train_graphsage.py --dataset synth --loader remote            # no data needed
    python -c "import torch; from torch_geometric.datasets import Planetoid; \\
               torch.save(Planetoid('pyg-data', 'Cora')[0].to_dict(), 'cora.pt')"   # downloads Cora
    remotegnn convert cora.pt data/cora --name cora
    python examples/train_graphsage.py --dataset data/cora --loader remote --batch-size 32 --epochs 3
    python examples/train_graphsage.py --dataset data/cora --loader pyg           # where PyG can sample

``--dataset`` is a RemoteGNN dataset directory (``remotegnn convert`` / ``remotegnn synth``) or
``synth`` (a small R-MAT graph with learnable features, written to a temporary directory). Each
epoch prints its time, batches/s, the learner's stall time (seconds it waited for a batch: the
server's ``PipelineStats.learner_stall_s`` for ``remote``; for ``pyg``, which samples in the
training process, the time spent inside the loader), the mean train loss and the test accuracy
(seed rows only, ``out[:batch.batch_size]``). ``--json`` prints one JSON document instead.

The training loop is the same for both loaders: only the loader's construction differs.
``--device cuda`` moves the model there and has DistributedGraphLoader copy batches through
pinned memory. The report ends with ``parameters_sha256``, a digest of the trained parameters.

``--checkpoint-dir DIR`` saves a checkpoint (model, optimizer, loaders' positions, random
generators: ``remotegnn.checkpoint``) every ``--checkpoint-every`` training batches and at the end
of each epoch; ``--resume`` goes on from the newest one in DIR (or starts afresh when DIR has
none), so the same command line, run again after the machine was reclaimed, finishes the job: on
the CPU with the parameters an uninterrupted run ends with.

Under ``remotegnn launch --learners N`` (``--loader remote``) the script trains data-parallel:
``remotegnn.distributed.init_learners`` joins the N learners in one process group (gloo on the
CPU, NCCL with ``--device cuda``, one GPU a rank), the model is wrapped in
``DistributedDataParallel``, and each learner's loader takes an equal share of every epoch's
seeds, so ``--batch-size`` is per learner (the global batch is N times it). The test accuracy is
over the whole test split (the learners' counts summed), and each learner prints its own JSON
document, one line each, with its ``rank`` and the ``world_size``; ``parameters_sha256`` is the
same on all.
With ``--checkpoint-dir DIR`` each learner keeps its checkpoints in ``DIR/rank-R``, saved at the
same steps, and ``--resume`` restores every learner to the same one.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import tempfile
import time
import warnings
from pathlib import Path

warnings.filterwarnings("ignore", message=r"`torch\.jit\.script` is deprecated", category=DeprecationWarning)

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel
from torch_geometric.nn import GraphSAGE

from foundation.errors import MemoryBridgeError
from remotegnn.blocks import seed_forward
from remotegnn.checkpoint import Checkpointer
from remotegnn.distributed import Learners, init_learners
from remotegnn.loader import DistributedGraphLoader
from remotegnn.store import GraphDataset
from remotegnn.synth import SynthSpec, synth

SYNTH = SynthSpec(nodes=8192, edges=80_000, dim=32, classes=4, seed=0, signal=0.5, train=0.2, test=0.2)
CHECKPOINT_EVERY = 100


class ExampleError(Exception):
    """A request this example cannot run: printed as one line, exit code 1."""


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dataset", required=True, help="RemoteGNN dataset directory, or 'synth'")
    parser.add_argument("--loader", choices=("remote", "pyg"), default="remote")
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=1024)
    parser.add_argument("--fanouts", default="15,10,5", help="neighbours per hop, comma-separated (-1 = all)")
    parser.add_argument("--hidden", type=int, default=128)
    parser.add_argument("--lr", type=float, default=0.01)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--device", default="cpu", help="cpu or cuda[:N]")
    parser.add_argument(
        "--learner-cache",
        default="auto",
        help="feature rows the learner keeps (--loader remote): auto (free RAM under `remotegnn launch`), "
        "none, or a size in bytes",
    )
    parser.add_argument(
        "--device-cache",
        default="none",
        help="feature rows kept on the device, above the learner cache (--loader remote, training loader): auto "
        "(the device memory training leaves free), none, or a size in bytes",
    )
    parser.add_argument(
        "--wire-dtype",
        choices=("float32", "float16", "bfloat16"),
        default="float32",
        help="precision feature rows travel in (--loader remote; float32 is exact)",
    )
    parser.add_argument(
        "--checkpoint-dir",
        type=Path,
        help="save checkpoints here (--loader remote): every --checkpoint-every batches and after each epoch",
    )
    parser.add_argument(
        "--checkpoint-every", type=int, default=CHECKPOINT_EVERY, help="training batches between checkpoints"
    )
    parser.add_argument(
        "--resume",
        action="store_true",
        help="go on from the newest checkpoint in --checkpoint-dir (start afresh when there is none)",
    )
    parser.add_argument("--json", action="store_true", help="print one JSON document instead of lines")
    args = parser.parse_args(argv)
    if args.checkpoint_every < 1:
        parser.error(f"--checkpoint-every {args.checkpoint_every}: give 1 or more batches")
    if args.resume and args.checkpoint_dir is None:
        parser.error("--resume reads the checkpoints of --checkpoint-dir: give it")
    if args.checkpoint_dir is not None and args.loader != "remote":
        parser.error("--checkpoint-dir: PyG's NeighborLoader cannot say where it is in an epoch; use --loader remote")
    try:
        args.fanouts = [int(f) for f in args.fanouts.split(",")]
    except ValueError:
        parser.error(f"--fanouts {args.fanouts!r}: expected integers like 15,10,5")
    for option in ("learner_cache", "device_cache"):
        value = getattr(args, option)
        if value not in ("auto", "none") and not value.isdigit():
            parser.error(f"--{option.replace('_', '-')} {value!r}: expected auto, none or a size in bytes")
        setattr(args, option, None if value == "none" else value if value == "auto" else int(value))
    return args


def open_dataset(name: str, workdir: Path) -> GraphDataset:
    if name == "synth":
        synth(SYNTH, workdir / "synth", progress=False)
        return GraphDataset.open(workdir / "synth")
    if not Path(name).is_dir():
        raise ExampleError(
            f"--dataset {name}: not a directory (make one with `remotegnn convert` or "
            "`remotegnn synth`, or pass 'synth')"
        )
    return GraphDataset.open(name)


def make_loaders(kind: str, dataset: GraphDataset, args: argparse.Namespace, device: torch.device):
    """(train loader, test loader): the only place where the two loaders differ."""
    common = dict(num_neighbors=args.fanouts, batch_size=args.batch_size)
    if kind == "remote":
        options = dict(
            common, device=str(device), seed=args.seed, wire_dtype=args.wire_dtype, learner_cache=args.learner_cache
        )
        return (
            DistributedGraphLoader(
                dataset.path, input_nodes="train", shuffle=True, device_cache=args.device_cache, **options
            ),
            DistributedGraphLoader(dataset.path, input_nodes="test", shuffle=False, **options),
        )
    from torch_geometric.loader import NeighborLoader

    from remotegnn.convert.pyg import to_pyg

    data = to_pyg(dataset)
    try:  # NeighborLoader is built lazily: draw one batch to learn whether PyG can sample here
        with warnings.catch_warnings():  # its "install pyg-lib" deprecation notice: the error says it
            warnings.simplefilter("ignore", UserWarning)
            train = NeighborLoader(data, input_nodes=data.train_mask, shuffle=True, **common)
            test = NeighborLoader(data, input_nodes=data.test_mask, shuffle=False, **common)
            next(iter(test))
    except ImportError as exc:
        raise ExampleError(f"--loader pyg: PyG cannot sample on this machine ({exc}); use --loader remote") from None
    return train, test


def timed(loader, device: torch.device):
    """Yield (batch on ``device``, seconds the loop waited for it)."""
    iterator = iter(loader)
    while True:
        started = time.perf_counter()
        try:
            batch = next(iterator)
        except StopIteration:
            return
        yield batch.to(device, non_blocking=True), time.perf_counter() - started


def stall_s(loader, waited: float) -> float:
    """The server's measure for DistributedGraphLoader; in-process sampling is all waiting."""
    stats = getattr(loader, "last_stats", None)
    return stats.learner_stall_s if stats is not None else waited


def mb_sent(loader) -> float | None:
    """MB of batches the memory server sent (DistributedGraphLoader only)."""
    stats = getattr(loader, "last_stats", None)
    return stats.bytes_sent / 1e6 if stats is not None else None


def seed_scores(model, batch):
    """The model's output rows for the batch's seeds: each layer computes only the rows the next
    layer reads (``remotegnn.blocks.seed_forward``), the same scores as
    ``model(batch.x, batch.edge_index)``'s for about a ninth of the arithmetic on a papers100M batch
    with fanouts 10,10,10. PyG's loader gives no hop counts when it samples with torch-sparse
    rather than pyg-lib: then every layer runs on the whole batch."""
    return seed_forward(model, batch)


def train_epoch(model, loader, optimizer, device, after_step=lambda: None) -> dict:
    model.train()
    started, waited, total_loss, seeds, batches = time.perf_counter(), 0.0, 0.0, 0, 0
    for batch, wait in timed(loader, device):
        waited += wait
        optimizer.zero_grad()
        out = seed_scores(model, batch)
        loss = F.cross_entropy(out, batch.y[: batch.batch_size])
        loss.backward()
        optimizer.step()
        after_step()
        total_loss += loss.item() * batch.batch_size
        seeds += batch.batch_size
        batches += 1
    seconds = time.perf_counter() - started
    return {
        "seconds": seconds,
        "batches": batches,
        "batches_per_s": batches / seconds,
        "stall_s": stall_s(loader, waited),
        "mb_sent": mb_sent(loader),
        "loss": total_loss / max(seeds, 1),
    }


@torch.no_grad()
def test_accuracy(model, loader, device, learners: Learners) -> float:
    """Accuracy over the test seeds of every learner (each one's loader holds a share of them)."""
    model.eval()
    correct = total = 0
    for batch, _ in timed(loader, device):
        pred = seed_scores(model, batch).argmax(dim=-1)
        correct += int((pred == batch.y[: batch.batch_size]).sum())
        total += batch.batch_size
    if learners.distributed:
        counts = torch.tensor([correct, total], dtype=torch.float64, device=learners.device)
        dist.all_reduce(counts)
        correct, total = int(counts[0]), int(counts[1])
    return correct / max(total, 1)


def parameters_sha256(model) -> str:
    """A digest of the model's parameters and buffers: equal exactly when they are."""
    digest = hashlib.sha256()
    for name, tensor in model.state_dict().items():
        digest.update(name.encode())
        digest.update(tensor.detach().cpu().contiguous().numpy().tobytes())
    return digest.hexdigest()


def run(args: argparse.Namespace, workdir: Path) -> dict:
    device = torch.device(args.device)
    if device.type == "cuda" and not torch.cuda.is_available():
        raise ExampleError(f"--device {args.device}: CUDA is not available on this machine")
    learners = init_learners(args.device) if args.loader == "remote" else Learners(0, 1, device)
    try:
        return train_and_test(args, workdir, learners)
    finally:
        if learners.distributed:
            dist.destroy_process_group()


def train_and_test(args: argparse.Namespace, workdir: Path, learners: Learners) -> dict:
    device = learners.device
    torch.manual_seed(args.seed)  # the same initial weights on every learner
    dataset = open_dataset(args.dataset, workdir)
    meta = dataset.meta
    if not meta.num_classes or not {"train", "test"} <= set(meta.splits):
        raise ExampleError(f"{dataset.path}: node classification needs labels and train/test splits")
    model = GraphSAGE(
        meta.feature_dim, args.hidden, num_layers=len(args.fanouts), out_channels=meta.num_classes, dropout=0.5
    ).to(device)  # before the loaders: device_cache="auto" leaves room for what is on the device
    train_loader, test_loader = make_loaders(args.loader, dataset, args, device)
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)
    trained = DistributedDataParallel(model, device_ids=learners.device_ids) if learners.distributed else model
    report = {
        "dataset": meta.name,
        "loader": args.loader,
        "device": str(device),
        "rank": learners.rank,
        "world_size": learners.size,
        "nodes": meta.num_nodes,
        "edges": meta.num_edges,
        "classes": meta.num_classes,
        "train_batches": len(train_loader),
        "test_batches": len(test_loader),
        "epochs": [],
    }
    loaders = {"train": train_loader, "test": test_loader}
    checkpoints = None
    if args.checkpoint_dir is not None:
        checkpoints = Checkpointer(args.checkpoint_dir, every_batches=args.checkpoint_every)

    def checkpoint_if_due() -> None:
        """After a training step; an epoch's last is saved after its test, with its report."""
        if checkpoints is not None and train_loader.state_dict()["batches_yielded"] < len(train_loader):
            checkpoints.step(model, optimizer, loaders, {"epochs": report["epochs"]})

    try:
        if args.resume and checkpoints is not None:
            resumed = checkpoints.restore(model, optimizer, loaders)
            if resumed is not None:
                report["epochs"], report["resumed_at_step"] = resumed["epochs"], checkpoints.steps
            elif not args.json:
                print(f"no checkpoint in {args.checkpoint_dir}: starting from the beginning", flush=True)
        for epoch in range(train_loader.state_dict()["epoch"] if args.loader == "remote" else 0, args.epochs):
            stats = train_epoch(trained, train_loader, optimizer, device, checkpoint_if_due)
            stats = {"epoch": epoch, **stats, "test_acc": test_accuracy(trained, test_loader, device, learners)}
            report["epochs"].append(stats)
            if checkpoints is not None:
                checkpoints.save(model, optimizer, loaders, {"epochs": report["epochs"]})
            if not args.json and learners.rank == 0:
                print(
                    f"epoch {epoch}: {stats['seconds']:.2f}s, {stats['batches_per_s']:.1f} batches/s, "
                    f"stall {stats['stall_s']:.3f}s, loss {stats['loss']:.4f}, test acc {stats['test_acc']:.4f}",
                    flush=True,
                )
    finally:
        for loader in (train_loader, test_loader):
            if hasattr(loader, "close"):
                loader.close()
    report["test_acc"] = report["epochs"][-1]["test_acc"] if report["epochs"] else None
    report["parameters_sha256"] = parameters_sha256(model)
    return report


def json_report(report: dict) -> str:
    """The report as JSON: indented for one learner; one line for each of several, whose outputs
    reach mpiexec's terminal side by side (a line is written whole, so documents never mix)."""
    return json.dumps(report) if report.get("world_size", 1) > 1 else json.dumps(report, indent=2)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="train-graphsage-") as workdir:
        try:
            report = run(args, Path(workdir))
        except (ExampleError, MemoryBridgeError) as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 1
    if args.json:
        print(json_report(report), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
