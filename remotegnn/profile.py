"""``remotegnn profile``: measure a dataset's degree skew and cache curves for the planner.

The result is the planner's dataset-profile schema (planner/datasets/profile.py), so
``planner recommend --dataset-file`` prices clusters for the user's own graph with curves
measured on it rather than assumed. Curves are measured, not modelled: one sampled epoch of
the split's seeds counts how often each node's row is read; presample ranks from a different
sampled run (another seed) so it is not scored on the data it learned from.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from planner.datasets.profile import DatasetProfile, csr_csc_bytes
from remotegnn.cache.hitrate import degree_skew, hit_rate_curve
from remotegnn.cache.policy import access_counts, degree_ranking, presample_ranking
from remotegnn.sampling.sampler import check_fanouts
from remotegnn.store import GraphDataset

CURVE_FRACTIONS = (0.01, 0.02, 0.05, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0)
SKEW_FRACTIONS = (0.01, 0.05, 0.10, 0.30)


@dataclass(frozen=True)
class ProfileResult:
    profile: DatasetProfile
    skew: dict[float, float]


def profile_dataset(dataset: GraphDataset, *, fanouts=(15, 10, 5), split: str = "train", batch_size: int = 1024,
                    epochs: int = 1, presample_epochs: int = 1, seed: int = 0) -> ProfileResult:
    fanouts = check_fanouts(fanouts).tolist()
    seeds = np.asarray(dataset.split(split), dtype=np.int64)
    counts = access_counts(dataset, seeds, fanouts, batch_size=batch_size, epochs=epochs, seed=seed + 1)
    rankings = {
        "degree": degree_ranking(dataset.degree),
        "presample": presample_ranking(dataset, seeds, fanouts, batch_size=batch_size, epochs=presample_epochs, seed=seed),
    }
    curves = {policy: [(x, y) for x, y in zip(CURVE_FRACTIONS, hit_rate_curve(counts, ranking, CURVE_FRACTIONS))]
              for policy, ranking in rankings.items()}
    meta = dataset.meta
    index_bytes = 4 if meta.index_dtype == "int32" else 8
    profile = DatasetProfile(
        name=meta.name, num_nodes=meta.num_nodes, num_edges=meta.num_edges, feature_rows=meta.num_nodes,
        feature_dim=meta.feature_dim, feature_dtype=meta.feature_dtype, index_bytes=index_bytes,
        num_train=max(1, len(seeds)), structure_bytes=csr_csc_bytes(meta.num_nodes, meta.num_edges, index_bytes),
        cache_curves=curves,
        source=(f"remotegnn profile: split {split} ({len(seeds):,} seeds), fanouts {fanouts}, batch {batch_size}, "
                f"{epochs} measured epoch(s), presample from {presample_epochs} other epoch(s), seed {seed}"),
    )
    return ProfileResult(profile, degree_skew(dataset, SKEW_FRACTIONS))
