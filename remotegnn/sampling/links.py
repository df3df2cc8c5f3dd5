"""Link batches: PyG's ``LinkNeighborLoader`` seeds, computed the same way on both sides.

A link batch is a slice of the epoch's supervision edges (``edge_label_index``), with negative
examples drawn as PyG draws them: "binary" adds ``ceil(amount * positives)`` random node pairs
labelled 0, "triplet" adds ``amount`` random destinations per source. The nodes to sample around
are every endpoint, made unique (sorted, as ``torch.unique``) unless sampling is disjoint, where
each endpoint gets its own tree. The draws are keyed by (seed, epoch, batch), so the memory
server (which samples around the seeds) and the learner (which labels the edges) compute the same
batch from the same inputs and nothing but the node batch crosses the network.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

import numpy as np
from pydantic import Field

from foundation.models import StrictModel

NEGATIVE_STREAM = 0x4E4547  # "NEG": keeps the negatives' draws apart from every other stream


class NegativeSampling(StrictModel):
    """PyG's ``NegativeSampling``: the mode and the negatives per positive edge."""

    mode: Literal["binary", "triplet"]
    amount: float = Field(1.0, gt=0, description="negatives per positive (triplet: a whole number)")

    def count(self, positives: int) -> int:
        """How many negatives a batch of ``positives`` edges gets (PyG: ceil(positives x amount))."""
        return math.ceil(positives * self.amount)


@dataclass(frozen=True)
class LinkBatch:
    """One batch's supervision: the seeds to sample around and where each endpoint landed."""

    positions: np.ndarray  # positions of the batch's edges in edge_label_index (input_id)
    seeds: np.ndarray  # the node batch's seeds
    endpoints: np.ndarray  # index into seeds of each of cat(src, dst, negatives...)
    positives: int
    negatives: int


def link_batch(
    edges: np.ndarray,
    positions: np.ndarray,
    negative: NegativeSampling | None,
    ranges: tuple[tuple[int, int], tuple[int, int]],
    disjoint: bool,
    keys: tuple[int, ...],
) -> LinkBatch:
    """The batch of the edges at ``positions`` (``edges`` is [2, M]); negative sources and
    destinations are drawn from ``ranges`` (the node ids of the edges' source and destination
    types: every node on a homogeneous graph); ``keys`` fix them."""
    src, dst = edges[0, positions], edges[1, positions]
    positives, negatives = len(positions), 0
    parts = [src, dst]
    if negative is not None:
        negatives = negative.count(positives)
        rng = np.random.default_rng([*keys, NEGATIVE_STREAM])
        sources, destinations = ranges
        if negative.mode == "binary":
            parts += [rng.integers(*sources, negatives), rng.integers(*destinations, negatives)]
            parts = [np.concatenate([parts[0], parts[2]]), np.concatenate([parts[1], parts[3]])]
        else:
            parts.append(rng.integers(*destinations, negatives))
    nodes = np.concatenate(parts).astype(np.int64)
    if disjoint:
        return LinkBatch(positions, nodes, np.arange(len(nodes)), positives, negatives)
    seeds, endpoints = np.unique(nodes, return_inverse=True)
    return LinkBatch(positions, seeds, endpoints, positives, negatives)


def most_seeds(batch_size: int, negative: NegativeSampling | None) -> int:
    """The most seeds one batch of ``batch_size`` edges can have (every endpoint distinct)."""
    negatives = negative.count(batch_size) if negative is not None else 0
    if negative is not None and negative.mode == "binary":
        return 2 * (batch_size + negatives)
    return 2 * batch_size + negatives
