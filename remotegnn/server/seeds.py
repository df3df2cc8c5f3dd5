"""What a pipeline's batches are built around: input nodes (``NeighborLoader``) or supervision
edges (``LinkNeighborLoader``).

Either way an epoch is a permutation of the items (nodes or edges) cut into batches, each
learner rank taking its contiguous slice (equal in size: ``epoch_order``), and each batch a list
of seed nodes to sample around.
``plan`` writes every batch's seeds one after another, with ``bounds`` saying where batch b
starts: node batches all hold ``batch_size`` seeds but the last, link batches as many as their
endpoints and negatives make.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from foundation.errors import UsageError
from remotegnn.sampling.links import LinkBatch, NegativeSampling, link_batch, most_seeds
from remotegnn.server.shard import Shard


def learner_share(count: int, learner: Shard = Shard()) -> int:
    """Items each learner rank takes an epoch: the same for every rank, so data-parallel ranks take
    the same number of steps and none waits at the all-reduce (``epoch_order``)."""
    return -(-count // learner.count)


def epoch_order(count: int, seed: int, epoch: int, shuffle: bool, learner: Shard = Shard()) -> np.ndarray:
    """Positions of the input items in the order epoch ``epoch`` visits them: ``learner``'s
    contiguous slice of one permutation. As PyTorch's ``DistributedSampler`` (which PyG's
    distributed training uses) does, a permutation that does not divide evenly among the ranks is
    padded with its own first items, so every rank takes ``learner_share`` items: every item at
    least once an epoch, fewer than one per rank twice."""
    order = np.random.default_rng([seed, epoch]).permutation(count) if shuffle else np.arange(count)
    if learner.whole:
        return order
    share = learner_share(count, learner)
    return np.resize(order, share * learner.count)[learner.index * share : (learner.index + 1) * share]


def batch_count(items: int, batch_size: int, drop_last: bool) -> int:
    return items // batch_size if drop_last else math.ceil(items / batch_size)


@dataclass(frozen=True)
class EpochPlan:
    """An epoch's seeds (row 0) and what each batch reports as ``input_id`` (row 1), batch b in
    columns ``bounds[b]:bounds[b + 1]``."""

    order: np.ndarray
    bounds: np.ndarray


@dataclass(frozen=True)
class NodeSeeds:
    """Input nodes and what each reports as ``input_id`` (its position, or its id for a mask)."""

    nodes: np.ndarray
    ids: np.ndarray

    def check(self, num_nodes: int) -> None:
        if len(self.nodes) and (self.nodes.min() < 0 or self.nodes.max() >= num_nodes):
            raise UsageError(f"input_nodes must be node ids in [0, {num_nodes})")

    @property
    def items(self) -> int:
        return len(self.nodes)

    @property
    def cache_seeds(self) -> np.ndarray:
        """The nodes a presampling cache ranking starts from."""
        return self.nodes

    def most_seeds(self, batch_size: int) -> int:
        return batch_size

    def plan(self, batch_size: int, drop_last: bool, positions: np.ndarray, keys: tuple[int, int]) -> EpochPlan:
        del keys  # node batches draw nothing beyond the permutation
        batches = batch_count(len(positions), batch_size, drop_last)
        used = positions[: min(len(positions), batches * batch_size)]
        bounds = np.minimum(np.arange(batches + 1, dtype=np.int64) * batch_size, len(used))
        return EpochPlan(np.stack([self.nodes[used], self.ids[used]]), bounds)


@dataclass(frozen=True)
class LinkSeeds:
    """Supervision edges [2, M] (source, destination); batches add ``negative`` examples, drawn
    from ``ranges`` (the ids of the source and destination types; all nodes when None)."""

    edges: np.ndarray
    negative: NegativeSampling | None
    num_nodes: int
    disjoint: bool
    ranges: tuple[tuple[int, int], tuple[int, int]] | None = None

    @property
    def negative_ranges(self) -> tuple[tuple[int, int], tuple[int, int]]:
        return self.ranges or ((0, self.num_nodes), (0, self.num_nodes))

    def check(self, num_nodes: int) -> None:
        if self.edges.ndim != 2 or self.edges.shape[0] != 2:
            raise UsageError(f"edge_label_index must have shape [2, num_edges], not {list(self.edges.shape)}")
        if self.edges.size and (self.edges.min() < 0 or self.edges.max() >= num_nodes):
            raise UsageError(f"edge_label_index must hold node ids in [0, {num_nodes})")

    @property
    def items(self) -> int:
        return self.edges.shape[1]

    @property
    def cache_seeds(self) -> np.ndarray:
        return np.unique(self.edges)

    def most_seeds(self, batch_size: int) -> int:
        return most_seeds(batch_size, self.negative)

    def batches(
        self, batch_size: int, drop_last: bool, positions: np.ndarray, keys: tuple[int, int]
    ) -> list[LinkBatch]:
        """The epoch's link batches; ``keys`` (seed, epoch) and the batch index fix the negatives."""
        count = batch_count(len(positions), batch_size, drop_last)
        return [
            link_batch(
                self.edges,
                positions[b * batch_size : (b + 1) * batch_size],
                self.negative,
                self.negative_ranges,
                self.disjoint,
                (*keys, b),
            )
            for b in range(count)
        ]

    def plan(self, batch_size: int, drop_last: bool, positions: np.ndarray, keys: tuple[int, int]) -> EpochPlan:
        batches = self.batches(batch_size, drop_last, positions, keys)
        seeds = np.concatenate([b.seeds for b in batches]) if batches else np.empty(0, dtype=np.int64)
        bounds = np.zeros(len(batches) + 1, dtype=np.int64)
        np.cumsum([len(b.seeds) for b in batches], out=bounds[1:])
        return EpochPlan(np.stack([seeds, seeds]), bounds)


SeedSource = NodeSeeds | LinkSeeds


def seeds_as_arrays(seeds: SeedSource) -> dict[str, np.ndarray]:
    """What travels in the MPI open frame (the negatives' settings are in the options)."""
    if isinstance(seeds, LinkSeeds):
        ranges = np.asarray(seeds.negative_ranges, dtype=np.int64)
        return {"input_edges": np.ascontiguousarray(seeds.edges, dtype=np.int64), "input_ranges": ranges}
    return {
        "input_nodes": np.ascontiguousarray(seeds.nodes, dtype=np.int64),
        "input_ids": np.ascontiguousarray(seeds.ids, dtype=np.int64),
    }


def seeds_from_arrays(arrays: dict[str, np.ndarray], options, num_nodes: int) -> SeedSource:
    """The memory rank's side of ``seeds_as_arrays``."""
    if "input_edges" in arrays:
        (src_lo, src_hi), (dst_lo, dst_hi) = arrays["input_ranges"].tolist()
        ranges = ((src_lo, src_hi), (dst_lo, dst_hi))
        return LinkSeeds(arrays["input_edges"], options.neg_sampling, num_nodes, options.disjoint, ranges)
    return NodeSeeds(arrays["input_nodes"], arrays["input_ids"])
