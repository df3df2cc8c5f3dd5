"""The no-pipeline baseline both RemoteGNN comparisons need: sampling in the training process.

``InProcessLoader`` builds the batches ``DistributedGraphLoader`` builds - the same
``NeighborSampler``, the same epoch permutation (``epoch_order``) and sampling keys (seed, epoch,
batch), the same feature gather (``FeatureCache.gather``, misses from a ``FeatureVolume`` when one
is given) - but one after another in the caller's thread, as PyG's ``NeighborLoader`` does with
``num_workers=0``: the training loop waits for every batch's sampling and feature reads. With the
same seed its batches equal the pipeline's, so a comparison measures the pipeline alone; a
different seed gives independent draws from the same distribution.

PyG's own ``NeighborLoader`` would be the natural baseline, but it cannot sample on this machine
(no pyg-lib or torch-sparse), so this loader stands in for it.

Also here, so every side of both benchmarks trains the same way: ``make_model`` (the model of
``examples/train_graphsage.py``), ``seed_scores`` (its forward pass, block by block) and ``train_epoch``
(its loop), which times the learner's waits for batches itself - around ``next()``, the only
place the learner can stall - rather than trust a loader's own count; ``warm_up``, the untimed
step each side takes first; and ``test_accuracy``, full-graph inference, the one measure of every
model.

Imported as ``inprocess`` (the scripts run as ``python benchmarks/NAME.py``).
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterator

import numpy as np
import torch
import torch.nn.functional as F
from torch_geometric.data import Data
from torch_geometric.nn import GraphSAGE

from remotegnn.blocks import seed_forward
from remotegnn.cache import FeatureCache
from remotegnn.sampling import NeighborSampler
from remotegnn.server.seeds import epoch_order
from remotegnn.store import GraphDataset

__all__ = ["InProcessLoader", "make_model", "seed_scores", "test_accuracy", "train_epoch", "warm_up"]


def make_model(dataset: GraphDataset, hidden: int, layers: int) -> GraphSAGE:
    """The example's model: PyG's GraphSAGE, one layer per hop, dropout 0.5."""
    meta = dataset.meta
    return GraphSAGE(meta.feature_dim, hidden, num_layers=layers, out_channels=meta.num_classes, dropout=0.5)


def seed_scores(model, batch) -> torch.Tensor:
    """The example's forward pass: the seeds' output rows, each layer computing only the rows the
    next one reads (``remotegnn.blocks.seed_forward``)."""
    return seed_forward(model, batch)


def train_epoch(model, loader, optimizer, device: torch.device) -> dict:
    """One epoch of the example's loop: cross-entropy on the seed rows (``out[:batch_size]``).

    ``stall_s`` is the time spent waiting in ``next(loader)``; ``compute_s`` the rest (moving the
    batch to ``device``, forward, backward, step); ``loss`` the mean over seeds."""
    model.train()
    started = time.perf_counter()
    stall = total_loss = 0.0
    seeds = batches = 0
    iterator = iter(loader)
    while True:
        waiting = time.perf_counter()
        batch = next(iterator, None)
        stall += time.perf_counter() - waiting
        if batch is None:
            break
        batch = batch.to(device, non_blocking=True)
        optimizer.zero_grad()
        out = seed_scores(model, batch)
        loss = F.cross_entropy(out, batch.y[: batch.batch_size])
        loss.backward()
        optimizer.step()
        total_loss += loss.item() * batch.batch_size
        seeds += batch.batch_size
        batches += 1
    seconds = time.perf_counter() - started
    return {
        "seconds": seconds,
        "batches": batches,
        "batches_per_s": batches / seconds,
        "stall_s": stall,
        "compute_s": seconds - stall,
        "loss": total_loss / max(seeds, 1),
    }


def warm_up(dataset: GraphDataset, args, device: torch.device) -> None:
    """One untimed training step on a throwaway model and a small random batch, so the side that
    runs first does not pay for torch's lazy start (code pages read from disk, kernel selection).
    ``args`` gives the model's ``hidden`` width and its layers (one per entry of ``fanouts``)."""
    meta = dataset.meta
    model = make_model(dataset, args.hidden, len(args.fanouts)).to(device)
    x = torch.randn(64, meta.feature_dim, device=device)
    edge_index = torch.randint(0, 64, (2, 256), device=device)
    F.cross_entropy(model(x, edge_index), torch.zeros(64, dtype=torch.long, device=device)).backward()


@torch.no_grad()
def test_accuracy(model, x: torch.Tensor, edge_index: torch.Tensor, labels: torch.Tensor, test: torch.Tensor) -> float:
    """Full-graph inference (every edge, no sampling): the same measure for every model."""
    model.eval()
    pred = model(x, edge_index)[test].argmax(dim=-1)
    return float((pred == labels[test]).float().mean())


class InProcessLoader:
    """Batches of a split's nodes, sampled and gathered in the calling thread (no overlap).

    Each batch is a PyG ``Data`` with NeighborLoader's fields - ``x``, ``y``, int64 local
    ``edge_index`` (row 0 the neighbour), ``n_id``, ``e_id``, ``input_id`` (global ids, as for a
    split), ``batch_size``, ``num_sampled_nodes``/``num_sampled_edges`` - and owns its memory.
    Feature rows come from ``volume`` (every row: there is no cache) or, without one, from
    features.npy through the page cache. ``seconds`` splits the last epoch's loader time into
    sampling and feature reads; ``counters`` counts the rows read.
    """

    def __init__(
        self,
        dataset: GraphDataset,
        num_neighbors,
        split: str,
        *,
        batch_size: int,
        shuffle: bool,
        seed: int = 0,
        volume=None,
    ):
        self.dataset, self.batch_size, self.shuffle, self.seed, self.volume = dataset, batch_size, shuffle, seed, volume
        self.input_nodes = np.asarray(dataset.split(split), dtype=np.int64)
        self.sampler = NeighborSampler(dataset.csc, num_neighbors)
        self.cache = FeatureCache.empty(dataset)  # no rows in RAM: gather sends every row to the volume
        self.labels = dataset.labels
        self.seconds = {"sampling": 0.0, "features": 0.0}
        self._epoch = 0

    def __len__(self) -> int:
        return math.ceil(len(self.input_nodes) / self.batch_size)

    @property
    def counters(self):
        """Rows gathered since construction (all misses: nothing is cached)."""
        return self.cache.totals

    def __iter__(self) -> Iterator[Data]:
        epoch, self._epoch = self._epoch, self._epoch + 1
        order = epoch_order(len(self.input_nodes), self.seed, epoch, self.shuffle)
        meta = self.dataset.meta
        self.seconds = {"sampling": 0.0, "features": 0.0}
        for b in range(len(self)):
            started = time.perf_counter()
            seeds = self.input_nodes[order[b * self.batch_size : (b + 1) * self.batch_size]]
            sub = self.sampler.sample(seeds, self.seed, epoch, b).copy()
            sampled = time.perf_counter()
            x = np.empty((len(sub.n_id), meta.feature_dim), dtype=meta.feature_dtype)
            self.cache.gather(sub.n_id, x, self.volume)
            self.seconds["sampling"] += sampled - started
            self.seconds["features"] += time.perf_counter() - sampled
            n_id = torch.from_numpy(sub.n_id)
            batch = Data(
                x=torch.from_numpy(x),
                y=torch.from_numpy(np.take(self.labels, sub.n_id)),
                edge_index=torch.from_numpy(sub.edge_index),
                n_id=n_id,
                e_id=torch.from_numpy(sub.e_id),
                input_id=torch.from_numpy(seeds.copy()),
            )
            batch.batch_size = len(seeds)
            batch.num_sampled_nodes, batch.num_sampled_edges = sub.num_sampled_nodes, sub.num_sampled_edges
            yield batch
