"""Seed sources: node batches of batch_size seeds, link batches of their endpoints, one epoch plan."""

from __future__ import annotations

import numpy as np
import pytest

from foundation.errors import UsageError
from remotegnn.sampling.links import NegativeSampling
from remotegnn.server.seeds import (
    LinkSeeds,
    NodeSeeds,
    epoch_order,
    learner_share,
    seeds_as_arrays,
    seeds_from_arrays,
)
from remotegnn.server.shard import Shard


@pytest.mark.parametrize(("drop_last", "bounds"), [(False, [0, 4, 8, 10]), (True, [0, 4, 8])])
def test_node_plan_cuts_the_permutation_into_batches(drop_last, bounds):
    nodes = np.arange(100, 110)
    seeds = NodeSeeds(nodes, np.arange(10))
    positions = epoch_order(10, seed=3, epoch=1, shuffle=True)
    plan = seeds.plan(4, drop_last, positions, (3, 1))
    assert plan.bounds.tolist() == bounds
    np.testing.assert_array_equal(plan.order[0], nodes[positions[: bounds[-1]]])
    np.testing.assert_array_equal(plan.order[1], positions[: bounds[-1]])


def test_learner_ranks_slice_one_permutation_padded_to_equal_shares_as_distributed_sampler_does():
    """11 items over 3 ranks: 4 each, the permutation's first item again at the end (PyTorch's
    DistributedSampler pads the same way), so every rank takes as many steps as the others."""
    whole = epoch_order(11, 0, 2, True)
    slices = [epoch_order(11, 0, 2, True, Shard(index=i, count=3)) for i in range(3)]
    assert [len(s) for s in slices] == [learner_share(11, Shard(index=0, count=3))] * 3 == [4, 4, 4]
    assert np.concatenate(slices).tolist() == [*whole.tolist(), whole[0]]
    assert [len(epoch_order(12, 0, 2, True, Shard(index=i, count=3))) for i in range(3)] == [4, 4, 4]
    assert np.array_equal(
        np.concatenate([epoch_order(2, 0, 0, True, Shard(index=i, count=3)) for i in range(3)]),
        np.resize(epoch_order(2, 0, 0, True), 3),
    )  # fewer items than ranks: each still one


def test_link_plan_holds_each_batchs_seeds_in_turn():
    edges = np.random.default_rng(1).integers(0, 30, (2, 25))
    seeds = LinkSeeds(edges, NegativeSampling(mode="binary", amount=1), 30, disjoint=False)
    positions = epoch_order(25, 0, 0, True)
    batches = seeds.batches(10, False, positions, (0, 0))
    plan = seeds.plan(10, False, positions, (0, 0))
    assert len(batches) == 3 and len(plan.bounds) == 4
    for b, batch in enumerate(batches):
        np.testing.assert_array_equal(plan.order[0, plan.bounds[b] : plan.bounds[b + 1]], batch.seeds)
        assert len(batch.seeds) <= seeds.most_seeds(10)
    np.testing.assert_array_equal(seeds.cache_seeds, np.unique(edges))


def test_seed_sources_travel_as_arrays():
    edges = np.array([[0, 1], [2, 3]])
    options = type("Options", (), {"neg_sampling": None, "disjoint": True})()
    back = seeds_from_arrays(seeds_as_arrays(LinkSeeds(edges, None, 4, True)), options, 4)
    assert isinstance(back, LinkSeeds) and back.disjoint
    np.testing.assert_array_equal(back.edges, edges)
    nodes = seeds_from_arrays(seeds_as_arrays(NodeSeeds(np.array([2, 3]), np.array([0, 1]))), options, 4)
    assert isinstance(nodes, NodeSeeds) and nodes.nodes.tolist() == [2, 3]


def test_out_of_range_seeds_are_refused():
    with pytest.raises(UsageError, match=r"input_nodes must be node ids in \[0, 4\)"):
        NodeSeeds(np.array([4]), np.array([0])).check(4)
    with pytest.raises(UsageError, match="shape"):
        LinkSeeds(np.zeros((3, 2), dtype=np.int64), None, 4, False).check(4)
