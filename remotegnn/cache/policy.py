"""Which nodes a memory machine caches: a ranking, hottest first, per policy.

- ``degree`` (the MemoryBridge paper): highest in-degree first; in-degree is how many targets can draw a
  node as a neighbour, so it predicts reads when training seeds are spread over the graph.
- ``presample`` (GNNLab): count how often each node appears in a few sampled epochs of the real
  training seeds and cache the most frequent. It follows where the training nodes actually are,
  which is what wins when they are clustered (GNNLab reports +20-60 points over degree). Nodes the
  presampling never touched follow in degree order, so spare cache space is still used well.
- ``none``: cache nothing.
"""

from __future__ import annotations

from typing import Literal

import numpy as np

from foundation.errors import UsageError
from remotegnn.cache.kernels import count_accesses
from remotegnn.sampling import NeighborSampler
from remotegnn.store import GraphDataset

Policy = Literal["degree", "presample", "none"]
POLICIES: tuple[str, ...] = ("degree", "presample", "none")


def degree_ranking(degree: np.ndarray) -> np.ndarray:
    """Node ids by descending degree, ties by ascending id (stable, reproducible)."""
    return np.argsort(-np.asarray(degree, dtype=np.int64), kind="stable")


def access_counts(
    dataset: GraphDataset,
    seeds: np.ndarray,
    fanouts,
    *,
    batch_size: int = 1024,
    epochs: int = 1,
    seed: int = 0,
    replace: bool = False,
) -> np.ndarray:
    """How many batches read each node's features over ``epochs`` shuffled epochs of ``seeds``."""
    sampler = NeighborSampler(dataset.csc, fanouts, replace=replace)
    counts = np.zeros(dataset.meta.num_nodes, dtype=np.int64)
    seeds = np.asarray(seeds, dtype=np.int64)
    for epoch in range(epochs):
        order = np.random.default_rng([seed, epoch]).permutation(len(seeds))
        for b, start in enumerate(range(0, len(seeds), batch_size)):
            batch = seeds[order[start : start + batch_size]]
            count_accesses(counts, sampler.sample(batch, seed, epoch, b).n_id)
    return counts


def presample_ranking(
    dataset: GraphDataset, seeds: np.ndarray, fanouts, *, batch_size: int = 1024, epochs: int = 1, seed: int = 0
) -> np.ndarray:
    """Node ids by descending presampled access count, then by degree."""
    counts = access_counts(dataset, seeds, fanouts, batch_size=batch_size, epochs=epochs, seed=seed)
    degree = np.asarray(dataset.degree, dtype=np.int64)
    return np.lexsort((np.arange(len(counts)), -degree, -counts))


def rank_nodes(
    dataset: GraphDataset,
    policy: str,
    *,
    seeds: np.ndarray | None = None,
    fanouts=(15, 10, 5),
    batch_size: int = 1024,
    epochs: int = 1,
    seed: int = 0,
) -> np.ndarray:
    """The ranking for ``policy``; presample needs the training ``seeds`` (default: the train split)."""
    if policy == "degree":
        return degree_ranking(dataset.degree)
    if policy == "presample":
        if seeds is None:
            seeds = dataset.split("train")
        return presample_ranking(dataset, seeds, fanouts, batch_size=batch_size, epochs=epochs, seed=seed)
    if policy == "none":
        return np.empty(0, dtype=np.int64)
    raise UsageError(f"unknown cache policy {policy!r}; use one of {', '.join(POLICIES)}")
