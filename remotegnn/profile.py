"""``remotegnn profile``: measure a dataset's degree skew and cache curves for the planner.

The result is the planner's dataset-profile schema (contracts/profile.py), so
``planner recommend --dataset-file`` prices clusters for the user's own graph with curves
measured on it rather than assumed. Curves are measured, not modelled: one sampled epoch of
the split's seeds counts how often each node's row is read; presample ranks from a different
sampled run (another seed) so it is not scored on the data it learned from.

The profile also records the in-degree histogram and the mean batch shape (distinct nodes and
sampled edges per hop) for the curves' fanouts and any ``shape_fanouts``, measured by sampling
batches of the split's seeds: the planner's batch-size estimate uses them in place of its model.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from contracts.profile import DatasetProfile, MeasuredBatch, csr_csc_bytes, degree_histogram
from contracts.workload import DEFAULT_BATCH_SIZE, DEFAULT_FANOUTS
from remotegnn.cache.hitrate import degree_skew, hit_rate_curve
from remotegnn.cache.policy import access_counts, degree_ranking, presample_ranking
from remotegnn.sampling import NeighborSampler
from remotegnn.sampling.sampler import check_fanouts
from remotegnn.store import GraphDataset

CURVE_FRACTIONS = (0.01, 0.02, 0.05, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0)
SKEW_FRACTIONS = (0.01, 0.05, 0.10, 0.30)
SHAPE_BATCHES = 64  # batches a shape's means are over: enough for a stable mean, cheap next to an epoch


@dataclass(frozen=True)
class ProfileResult:
    profile: DatasetProfile
    skew: dict[float, float]


def measure_batch_shape(
    dataset: GraphDataset,
    seeds: np.ndarray,
    fanouts,
    *,
    batch_size: int,
    seed: int = 0,
    max_batches: int = SHAPE_BATCHES,
) -> MeasuredBatch:
    """Mean nodes and edges per hop over up to ``max_batches`` full batches of shuffled ``seeds``
    (a short last batch would understate the shape; it counts only when no batch is full)."""
    fanouts = check_fanouts(fanouts).tolist()
    sampler = NeighborSampler(dataset.csc, fanouts)
    order = np.random.default_rng([seed, len(fanouts)]).permutation(len(seeds))
    starts = range(0, max(1, len(seeds) - batch_size + 1), batch_size)[:max_batches]
    nodes = np.zeros(len(fanouts) + 1)
    edges = np.zeros(len(fanouts))
    for b, start in enumerate(starts):
        sub = sampler.sample(seeds[order[start : start + batch_size]], seed, b)
        nodes += sub.num_sampled_nodes
        edges += sub.num_sampled_edges
    return MeasuredBatch(
        fanouts=fanouts,
        batch_size=batch_size,
        nodes_per_hop=(nodes / len(starts)).tolist(),
        edges_per_hop=(edges / len(starts)).tolist(),
        batches=len(starts),
    )


def profile_dataset(
    dataset: GraphDataset,
    *,
    fanouts=DEFAULT_FANOUTS,
    shape_fanouts=(),
    split: str = "train",
    batch_size: int = DEFAULT_BATCH_SIZE,
    epochs: int = 1,
    presample_epochs: int = 1,
    seed: int = 0,
) -> ProfileResult:
    """Profile ``dataset``; ``fanouts`` drive the cache curves, and the batch shape is measured for
    them and for each of ``shape_fanouts`` (other workloads the planner will be asked about)."""
    fanouts = check_fanouts(fanouts).tolist()
    seeds = np.asarray(dataset.split(split), dtype=np.int64)
    counts = access_counts(dataset, seeds, fanouts, batch_size=batch_size, epochs=epochs, seed=seed + 1)
    rankings = {  # made one at a time and dropped once scored: a ranking holds 8 bytes a node
        "degree": lambda: degree_ranking(dataset.degree),
        "presample": lambda: presample_ranking(
            dataset, seeds, fanouts, batch_size=batch_size, epochs=presample_epochs, seed=seed
        ),
    }
    curves = {
        policy: list(zip(CURVE_FRACTIONS, hit_rate_curve(counts, rank(), CURVE_FRACTIONS)))
        for policy, rank in rankings.items()
    }
    del counts
    shape_sets = [fanouts]
    for extra in (check_fanouts(f).tolist() for f in shape_fanouts):
        if extra not in shape_sets:
            shape_sets.append(extra)
    shapes = [measure_batch_shape(dataset, seeds, f, batch_size=batch_size, seed=seed + 2) for f in shape_sets]
    meta = dataset.meta
    index_bytes = 4 if meta.index_dtype == "int32" else 8
    profile = DatasetProfile(
        name=meta.name,
        num_nodes=meta.num_nodes,
        num_edges=meta.num_edges,
        feature_rows=meta.num_nodes,
        feature_dim=meta.feature_dim,
        feature_dtype=meta.feature_dtype,
        index_bytes=index_bytes,
        num_train=max(1, len(seeds)),
        num_classes=meta.num_classes or None,
        structure_bytes=csr_csc_bytes(meta.num_nodes, meta.num_edges, index_bytes),
        cache_curves=curves,
        batch_shapes=shapes,
        in_degree=degree_histogram(dataset.degree),
        source=(
            f"remotegnn profile: split {split} ({len(seeds):,} seeds), fanouts {fanouts}, batch {batch_size}, "
            f"{epochs} measured epoch(s), presample from {presample_epochs} other epoch(s), seed {seed}; "
            f"batch shapes for fanouts {[s.fanouts for s in shapes]} over {shapes[0].batches} batch(es) each"
        ),
    )
    return ProfileResult(profile, degree_skew(dataset, SKEW_FRACTIONS))
