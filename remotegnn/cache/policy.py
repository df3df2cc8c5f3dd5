"""Which nodes a memory machine caches: a ranking, hottest first, per policy.

- ``degree`` (the MemoryBridge paper): highest in-degree first; in-degree is how many targets can draw a
  node as a neighbour, so it predicts reads when training seeds are spread over the graph.
- ``presample`` (GNNLab): count how often each node appears in a few sampled epochs of the real
  training seeds and cache the most frequent. It follows where the training nodes actually are,
  which is what wins when they are clustered (GNNLab reports +20-60 points over degree). Nodes the
  presampling never touched follow in degree order, so spare cache space is still used well.
- ``auto``: score degree and presample on one more sampled epoch of the same seeds (a different
  draw than presampling learned from) at the cache's capacity and keep the better. Degree wins by a
  point or so where training seeds are spread over the graph; presample by tens of points where
  they cluster. Ties keep degree: it costs no sampling at start-up.
- ``none``: cache nothing.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

import numpy as np

from contracts.workload import DEFAULT_BATCH_SIZE, DEFAULT_FANOUTS
from foundation.errors import UsageError
from remotegnn.cache.kernels import count_accesses
from remotegnn.sampling import NeighborSampler
from remotegnn.store import GraphDataset
from remotegnn.store.orders import degree_ranking

Policy = Literal["degree", "presample", "auto", "none"]
POLICIES: tuple[str, ...] = ("degree", "presample", "auto", "none")
AUTO_CANDIDATES: tuple[str, ...] = ("degree", "presample")
"""What ``auto`` chooses between, in tie-break order."""


def access_counts(
    dataset: GraphDataset,
    seeds: np.ndarray,
    fanouts,
    *,
    batch_size: int = DEFAULT_BATCH_SIZE,
    epochs: int = 1,
    seed: int = 0,
    replace: bool = False,
) -> np.ndarray:
    """How many batches read each node's features over ``epochs`` shuffled epochs of ``seeds``
    (int32: a node is read at most once per batch, and 4 bytes a node is what a graph of 10^8
    nodes can spare)."""
    sampler = NeighborSampler(dataset.csc, fanouts, replace=replace)
    counts = np.zeros(dataset.meta.num_nodes, dtype=np.int32)
    seeds = np.asarray(seeds, dtype=np.int64)
    for epoch in range(epochs):
        order = np.random.default_rng([seed, epoch]).permutation(len(seeds))
        for b, start in enumerate(range(0, len(seeds), batch_size)):
            batch = seeds[order[start : start + batch_size]]
            count_accesses(counts, sampler.sample(batch, seed, epoch, b).n_id)
    return counts


def presample_ranking(
    dataset: GraphDataset,
    seeds: np.ndarray,
    fanouts,
    *,
    batch_size: int = DEFAULT_BATCH_SIZE,
    epochs: int = 1,
    seed: int = 0,
) -> np.ndarray:
    """Node ids by descending presampled access count, then by degree, then by ascending id.

    One stable sort of one key (count in the high 32 bits, degree in the low) holds two int64
    arrays per node; a lexsort of the three keys held five."""
    counts = access_counts(dataset, seeds, fanouts, batch_size=batch_size, epochs=epochs, seed=seed)
    key = counts.astype(np.int64) << 32
    del counts
    key |= np.asarray(dataset.degree, dtype=np.int64)  # an in-degree fits 32 bits (4 billion neighbours)
    np.negative(key, out=key)
    return np.argsort(key, kind="stable")


@dataclass
class Rankings:
    """The rankings of one set of training seeds, each computed once: the learner's cache and the
    memory machine's cache of a session share them (and ``auto``'s scoring epoch)."""

    dataset: GraphDataset
    seeds: np.ndarray
    fanouts: tuple[int, ...] = DEFAULT_FANOUTS
    batch_size: int = DEFAULT_BATCH_SIZE
    seed: int = 0
    _done: dict[str, np.ndarray] = field(default_factory=dict, init=False, repr=False)

    def ranking(self, policy: str) -> np.ndarray:
        """Node ids hottest first for ``degree`` or ``presample``."""
        if policy not in self._done:
            if policy == "degree":
                self._done[policy] = degree_ranking(self.dataset.degree)
            elif policy == "presample":
                self._done[policy] = presample_ranking(
                    self.dataset, self.seeds, self.fanouts, batch_size=self.batch_size, seed=self.seed
                )
            else:
                raise UsageError(f"unknown cache policy {policy!r}; use one of {', '.join(POLICIES)}")
        return self._done[policy]

    def probe_counts(self) -> np.ndarray:
        """Reads per node over one more sampled epoch, drawn apart from presampling's."""
        if "probe" not in self._done:
            self._done["probe"] = access_counts(
                self.dataset, self.seeds, self.fanouts, batch_size=self.batch_size, seed=self.seed + 1
            )
        return self._done["probe"]

    def choose(self, policy: str, capacity: int, exclude: np.ndarray | None = None) -> tuple[str, np.ndarray]:
        """(the policy used, its ranking without the nodes ``exclude`` marks) for a cache of
        ``capacity`` rows; ``auto`` keeps the candidate whose first ``capacity`` rows serve the
        most of the probe epoch's reads (those of excluded nodes are served elsewhere)."""
        if policy == "none" or capacity <= 0:
            return "none", np.empty(0, dtype=np.int64)
        candidates = AUTO_CANDIDATES if policy == "auto" else (policy,)
        rankings = {name: _without(self.ranking(name), exclude) for name in candidates}
        if len(candidates) == 1:
            return policy, rankings[policy]
        counts = self.probe_counts()
        served = {name: int(counts[ranking[:capacity]].sum()) for name, ranking in rankings.items()}
        best = max(candidates, key=lambda name: served[name])  # max keeps the first of equals
        return best, rankings[best]


def _without(ranking: np.ndarray, exclude: np.ndarray | None) -> np.ndarray:
    """``ranking`` less the nodes where the bool mask ``exclude`` is set, order kept."""
    return ranking if exclude is None else ranking[~exclude[ranking]]


def rank_nodes(
    dataset: GraphDataset,
    policy: str,
    *,
    seeds: np.ndarray | None = None,
    fanouts=DEFAULT_FANOUTS,
    batch_size: int = DEFAULT_BATCH_SIZE,
    seed: int = 0,
    capacity: int | None = None,
) -> np.ndarray:
    """The ranking for ``policy``; presample and auto need the training ``seeds`` (default: the
    train split, or every node without one), auto the cache's ``capacity`` in rows (default:
    every node)."""
    if policy not in POLICIES:
        raise UsageError(f"unknown cache policy {policy!r}; use one of {', '.join(POLICIES)}")
    if policy == "none":
        return np.empty(0, dtype=np.int64)
    if seeds is None:
        has_train = "train" in dataset.meta.splits
        seeds = dataset.split("train") if has_train else np.arange(dataset.meta.num_nodes, dtype=np.int64)
    rankings = Rankings(dataset, np.asarray(seeds, dtype=np.int64), tuple(fanouts), batch_size, seed)
    return rankings.choose(policy, dataset.meta.num_nodes if capacity is None else capacity)[1]
