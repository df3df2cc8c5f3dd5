"""Link batches: PyG's negative sampling counts, endpoints that map back, keyed draws."""

from __future__ import annotations

import numpy as np
import pytest
from pydantic import ValidationError

from remotegnn.sampling.links import NegativeSampling, link_batch, most_seeds

EDGES = np.random.default_rng(0).integers(0, 50, (2, 40))
ALL = ((0, 50), (0, 50))  # negatives drawn from every node


@pytest.mark.parametrize(
    "negative, expected_negatives",
    [(None, 0), (NegativeSampling(mode="binary", amount=0.5), 5), (NegativeSampling(mode="triplet", amount=2), 18)],
)
def test_endpoints_map_back_to_the_edges_and_the_negatives(negative, expected_negatives):
    positions = np.arange(3, 12)
    batch = link_batch(EDGES, positions, negative, ALL, disjoint=False, keys=(1, 2, 3))
    ends = batch.seeds[batch.endpoints]
    assert batch.positives == 9 and batch.negatives == expected_negatives
    binary = negative is not None and negative.mode == "binary"
    sources, destinations = (
        (ends[: 9 + expected_negatives], ends[9 + expected_negatives :]) if binary else (ends[:9], ends[9:18])
    )
    np.testing.assert_array_equal(sources[:9], EDGES[0, positions])
    np.testing.assert_array_equal(destinations[:9], EDGES[1, positions])
    assert len(ends) == 18 + (2 if binary else 1) * expected_negatives
    assert (np.diff(batch.seeds) > 0).all()  # unique and sorted, as torch.unique
    assert len(batch.seeds) <= most_seeds(9, negative)


def test_binary_negatives_are_pairs_after_the_positives():
    negative = NegativeSampling(mode="binary", amount=1)
    batch = link_batch(EDGES, np.arange(10), negative, ALL, disjoint=False, keys=(0, 0, 0))
    ends = batch.seeds[batch.endpoints].reshape(2, -1)  # PyG's edge_label_index layout
    np.testing.assert_array_equal(ends[:, :10], EDGES[:, :10])


def test_negatives_are_fixed_by_the_keys_alone():
    negative = NegativeSampling(mode="binary", amount=2)
    a = link_batch(EDGES, np.arange(10), negative, ALL, disjoint=False, keys=(5, 1, 0))
    b = link_batch(EDGES, np.arange(10), negative, ALL, disjoint=False, keys=(5, 1, 0))
    c = link_batch(EDGES, np.arange(10), negative, ALL, disjoint=False, keys=(5, 1, 1))
    np.testing.assert_array_equal(a.seeds, b.seeds)
    assert not np.array_equal(a.seeds, c.seeds)


def test_disjoint_keeps_every_endpoint_as_its_own_seed():
    batch = link_batch(EDGES, np.arange(4), None, ALL, disjoint=True, keys=(0, 0, 0))
    np.testing.assert_array_equal(batch.seeds, np.concatenate([EDGES[0, :4], EDGES[1, :4]]))
    np.testing.assert_array_equal(batch.endpoints, np.arange(8))


def test_negative_sampling_is_validated():
    with pytest.raises(ValidationError):
        NegativeSampling(mode="ternary")
    with pytest.raises(ValidationError):
        NegativeSampling(mode="binary", amount=0)


def test_negatives_come_from_their_types_ranges():
    negative = NegativeSampling(mode="binary", amount=3)
    batch = link_batch(EDGES, np.arange(10), negative, ((0, 5), (40, 45)), disjoint=False, keys=(0, 0, 0))
    ends = batch.seeds[batch.endpoints].reshape(2, -1)[:, 10:]
    assert ((ends[0] >= 0) & (ends[0] < 5)).all() and ((ends[1] >= 40) & (ends[1] < 45)).all()
