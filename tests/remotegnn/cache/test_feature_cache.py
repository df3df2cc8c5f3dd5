"""Feature caches: counters on a hand-built graph, rankings, and gathers that return the right rows."""

from __future__ import annotations

import os

import numpy as np
import pytest

from foundation.errors import UsageError
from remotegnn.cache import FeatureCache, degree_ranking, rank_nodes
from remotegnn.cache.hitrate import degree_skew, hit_rate_curve
from remotegnn.cache.policy import access_counts
from remotegnn.sampling import NeighborSampler
from tests.remotegnn.conftest import write_dataset

ROW_BYTES = 16  # 4 float32 features per node in the test datasets


def test_degree_ranking_breaks_ties_by_id(golden):
    # In-degrees: node 7 has 4, nodes 2 and 3 have 2, nodes 0 and 1 have 1.
    assert degree_ranking(golden.degree)[:5].tolist() == [7, 2, 3, 0, 1]


def test_counters_on_a_hand_built_graph(golden):
    cache = FeatureCache.build(golden, 2 * ROW_BYTES, rank_nodes(golden, "degree"), policy="degree")
    assert cache.capacity == 2 and cache.slot[[7, 2]].tolist() == [1, 0]  # stored in file order
    out = np.zeros((8, 4), dtype=np.float32)
    counters = cache.gather(np.array([0, 7, 2, 13, 5]), out)
    assert (counters.hits, counters.misses) == (2, 3)
    np.testing.assert_array_equal(out[:5, 0], [0, 7, 2, 13, 5])
    cache.gather(np.array([7, 7, 1]), out)
    assert (cache.totals.hits, cache.totals.misses) == (4, 4)
    assert cache.totals.hit_rate == 0.5


def test_budget_is_in_bytes_and_never_exceeds_the_graph(golden):
    ranking = rank_nodes(golden, "degree")
    assert FeatureCache.build(golden, 2 * ROW_BYTES - 1, ranking, policy="degree").capacity == 1
    assert FeatureCache.build(golden, 10**9, ranking, policy="degree").capacity == 14
    with pytest.raises(UsageError, match=">= 0"):
        FeatureCache.build(golden, -1, ranking, policy="degree")


def test_none_policy_caches_nothing(golden):
    cache = FeatureCache.build(golden, 10**9, rank_nodes(golden, "none"), policy="none")
    out = np.zeros((3, 4), dtype=np.float32)
    assert cache.gather(np.array([3, 1, 2]), out).hits == 0
    np.testing.assert_array_equal(out[:, 0], [3, 1, 2])


@pytest.mark.parametrize("policy", ["degree", "presample", "none"])
def test_gathered_rows_equal_the_features(rmat, policy):
    ranking = rank_nodes(rmat, policy, fanouts=[5, 5], batch_size=64)
    cache = FeatureCache.build(rmat, rmat.meta.num_nodes * 64 // 3, ranking, policy=policy)
    sampler = NeighborSampler(rmat.csc, [5, 5])
    out = np.empty((4096, 16), dtype=np.float32)
    for b in range(3):
        n_id = sampler.sample(np.arange(b * 64, (b + 1) * 64), 0, b).n_id
        counters = cache.gather(n_id, out)
        np.testing.assert_array_equal(out[: len(n_id)], rmat.features[n_id])
        assert counters.hits + counters.misses == len(n_id)


def test_gather_checks_the_output_buffer(golden):
    cache = FeatureCache.empty(golden)
    with pytest.raises(UsageError, match="out must be"):
        cache.gather(np.array([1, 2]), np.zeros((1, 4), dtype=np.float32))
    with pytest.raises(UsageError, match="out must be"):
        cache.gather(np.array([1]), np.zeros((1, 4), dtype=np.float64))


def test_presample_ranks_what_the_seeds_reach(tmp_path):
    # Two stars: seeds are only ever in star A, so presample must rank A's leaves first even
    # though star B's leaves have higher in-degree.
    src = [1, 2, 3, 11, 12, 13, 14, 15, 15, 15, 16, 16, 16]
    dst = [0, 0, 0, 10, 10, 10, 10, 1, 2, 3, 11, 12, 13]
    ds = write_dataset(tmp_path / "stars", src, dst, 17, train=[0])
    top = rank_nodes(ds, "presample", fanouts=[-1], batch_size=1)[:4]
    assert sorted(top.tolist()) == [0, 1, 2, 3]
    assert rank_nodes(ds, "degree")[0] == 10


def test_hit_rate_curve_matches_a_real_cache(rmat):
    seeds = np.asarray(rmat.split("train"))
    counts = access_counts(rmat, seeds, [5, 5], batch_size=64, seed=3)
    ranking = rank_nodes(rmat, "degree")
    predicted = hit_rate_curve(counts, ranking, [0.25])[0]
    cache = FeatureCache.build(rmat, rmat.meta.num_nodes // 4 * 64, ranking, policy="degree")
    sampler = NeighborSampler(rmat.csc, [5, 5])
    out = np.empty((4096, 16), dtype=np.float32)
    for epoch in range(1):  # replay the same run access_counts measured
        order = np.random.default_rng([3, epoch]).permutation(len(seeds))
        for b, start in enumerate(range(0, len(seeds), 64)):
            cache.gather(sampler.sample(seeds[order[start : start + 64]], 3, epoch, b).n_id, out)
    assert cache.totals.hit_rate == pytest.approx(predicted, abs=1e-12)


def test_degree_skew_of_a_star(tmp_path):
    ds = write_dataset(tmp_path / "star", np.arange(1, 100), np.zeros(99, dtype=int), 100)
    skew = degree_skew(ds, (0.01, 0.5))
    assert skew[0.01] == pytest.approx(0.5)  # the hub holds one endpoint of every edge
    assert skew[0.5] == pytest.approx((99 + 49) / 198)


def test_misses_are_read_from_the_volume(rmat):
    from remotegnn.volume import FeatureVolume

    cache = FeatureCache.build(rmat, 500 * 64, rank_nodes(rmat, "degree"), policy="degree")
    sampler = NeighborSampler(rmat.csc, [5, 5])
    out = np.empty((4096, 16), dtype=np.float32)
    with FeatureVolume(rmat, limits=None, emulation="none") as volume:
        n_id = sampler.sample(np.arange(64), 0).n_id
        counters = cache.gather(n_id, out, volume)
        assert volume.stats.rows == counters.misses > 0
    np.testing.assert_array_equal(out[: len(n_id)], rmat.features[n_id])


def test_a_deferred_fill_reads_in_stretches_and_forked_workers_see_the_rows(rmat):
    """A memory rank's cache is allocated before its workers fork and read afterwards, stretch by
    stretch of the file: the workers' gathers then see every row the eager build would hold."""
    ranking = rank_nodes(rmat, "degree", fanouts=[5, 5], batch_size=64)
    budget = 500 * rmat.meta.row_bytes
    eager = FeatureCache.build(rmat, budget, ranking, policy="degree")
    deferred = FeatureCache.build(rmat, budget, ranking, policy="degree", fill=False)
    assert not deferred.filled and not deferred.rows.any()
    reader, writer = os.pipe()
    child = os.fork()
    if child == 0:  # the worker: waits for the parent's fill, then gathers from its inherited cache
        os.read(reader, 1)
        n_id = np.arange(rmat.meta.num_nodes)
        out = np.empty((len(n_id), rmat.meta.feature_dim), dtype=rmat.meta.feature_dtype)
        deferred.gather(n_id, out)
        os._exit(0 if np.array_equal(out, np.asarray(rmat.features)) and deferred.rows.any() else 1)
    half = rmat.meta.num_nodes // 2
    deferred.fill_until(half)
    cached = np.flatnonzero(deferred.slot >= 0)
    assert np.array_equal(deferred.rows[deferred.slot[cached[cached < half]]], rmat.features[cached[cached < half]])
    assert not deferred.filled
    deferred.fill_until(rmat.meta.num_nodes)
    assert deferred.filled and np.array_equal(deferred.rows, eager.rows)
    os.write(writer, b"x")
    assert os.waitpid(child, 0)[1] == 0
