"""ROC-AUC by ranks, against its definition: the share of (positive, negative) pairs ordered right."""

from __future__ import annotations

import itertools
import math

import numpy as np

from fullgraph.slicegcn.metrics import roc_auc


def pairwise_auc(scores: np.ndarray, positive: np.ndarray) -> float:
    pairs = list(itertools.product(scores[positive], scores[~positive]))
    return sum(1.0 if p > n else 0.5 if p == n else 0.0 for p, n in pairs) / len(pairs)


def test_rank_auc_equals_the_pairwise_definition_with_ties():
    rng = np.random.default_rng(0)
    for _ in range(20):
        scores = rng.integers(0, 6, size=40).astype(np.float64)  # many ties
        positive = rng.random(40) < 0.4
        assert math.isclose(roc_auc(scores, positive), pairwise_auc(scores, positive))


def test_one_class_has_no_auc():
    assert math.isnan(roc_auc(np.array([0.1, 0.9]), np.array([True, True])))
