"""Degrees fitted to a profile's size and skew: the lognormal's closed forms against sampled degrees."""

from __future__ import annotations

import numpy as np
import pytest

from planner.costmodel.degrees import MAX_SIGMA, LognormalDegrees
from planner.datasets.builtin import builtin_profile


def test_papers100m_skew_fits_one_sigma_for_every_published_point():
    profile = builtin_profile("papers100M")
    fitted = LognormalDegrees.fit(profile.avg_degree, profile.cache_curves["degree"])
    assert fitted.mean == pytest.approx(profile.avg_degree)
    assert fitted.sigma == pytest.approx(1.116, abs=0.01)  # each point alone gives 0.95 to 1.21


@pytest.mark.parametrize("along_edge", [False, True])
@pytest.mark.parametrize("fanout", [1, 5, 10, 25, -1])
def test_expected_min_matches_sampled_degrees(fanout, along_edge):
    degrees = LognormalDegrees(mean=14.5, sigma=1.1)
    rng = np.random.default_rng(0)
    mu = np.log(degrees.mean) - degrees.sigma**2 / 2
    sample = rng.lognormal(mu, degrees.sigma, 2_000_000)
    weights = sample / sample.sum() if along_edge else np.full(len(sample), 1 / len(sample))  # reached along edges
    capped = sample if fanout == -1 else np.minimum(fanout, sample)
    assert degrees.expected_min(fanout, along_edge=along_edge) == pytest.approx(float(weights @ capped), rel=0.02)


def test_without_skew_every_node_has_the_mean_degree():
    flat = LognormalDegrees.fit(8.0, [(1.0, 1.0)])  # no point inside (0, 1) says anything of the skew
    assert flat.sigma == 0.0
    assert flat.expected_min(5, along_edge=True) == flat.expected_min(5, along_edge=False) == 5.0
    assert flat.expected_min(10, along_edge=False) == 8.0


def test_an_absurd_curve_is_held_to_a_real_graphs_skew():
    assert LognormalDegrees.fit(10.0, [(0.01, 0.999999)]).sigma == MAX_SIGMA
