"""The sampler against PyG's golden case, its contract, uniformity and determinism."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy.stats import chisquare

from foundation.errors import UsageError
from remotegnn.sampling import NeighborSampler
from remotegnn.sampling.kernels import _pick
from remotegnn.sampling.rng import seed_state
from remotegnn.store.reader import Compressed
from tests.remotegnn.conftest import write_dataset


def test_pyg_golden_case(golden):
    # PyG: NeighborLoader(num_neighbors=[1, 2, 4], batch_size=2) over nodes from 0, first batch.
    out = NeighborSampler(golden.csc, [1, 2, 4]).sample(np.array([0, 1]), 0)
    assert out.num_sampled_nodes == [2, 2, 3, 4]
    assert out.num_sampled_edges == [2, 4, 4]
    assert out.batch_size == 2
    assert out.n_id[:2].tolist() == [0, 1]
    assert sorted(out.n_id[2:4].tolist()) == [2, 3]
    assert sorted(out.n_id[4:7].tolist()) == [4, 5, 7]
    assert sorted(out.n_id[7:].tolist()) == [10, 11, 12, 13]


def _assert_valid(dataset, out, fanouts):
    """Every sampled edge is a real edge (by e_id), targets precede neighbours' hop, counts add up."""
    edges = dataset.edge_index()
    n_id, (row, col) = out.n_id, out.edge_index
    assert len(np.unique(n_id)) == len(n_id)
    assert sum(out.num_sampled_nodes) == len(n_id)
    assert sum(out.num_sampled_edges) == out.edge_index.shape[1] == len(out.e_id)
    np.testing.assert_array_equal(edges[0, out.e_id], n_id[row])
    np.testing.assert_array_equal(edges[1, out.e_id], n_id[col])
    # Per hop: the targets are exactly the previous hop's new nodes, each with <= fanout edges.
    node_bounds = np.cumsum([0] + out.num_sampled_nodes)
    edge_bounds = np.cumsum([0] + out.num_sampled_edges)
    for h, fanout in enumerate(fanouts):
        targets = col[edge_bounds[h] : edge_bounds[h + 1]]
        assert ((targets >= node_bounds[h]) & (targets < node_bounds[h + 1])).all()
        if fanout > 0:
            assert np.bincount(targets).max(initial=0) <= fanout
        new = np.arange(node_bounds[h + 1], node_bounds[h + 2])
        first_seen = row[edge_bounds[h] : edge_bounds[h + 1]]
        assert set(new.tolist()) <= set(first_seen.tolist())


@pytest.mark.parametrize("fanouts", [[15, 10, 5], [3, -1], [100, 2]])
@pytest.mark.parametrize("replace", [False, True])
def test_output_is_a_valid_directional_subgraph(rmat, fanouts, replace):
    sampler = NeighborSampler(rmat.csc, fanouts, replace=replace)
    seeds = np.asarray(rmat.split("train"))[:64]
    out = sampler.sample(seeds, 1, 2)
    np.testing.assert_array_equal(out.n_id[:64], seeds)
    _assert_valid(rmat, out, fanouts)


def test_all_neighbours_with_minus_one(rmat):
    seeds = np.array([0, 1, 2])
    out = NeighborSampler(rmat.csc, [-1]).sample(seeds, 0)
    degree = np.asarray(rmat.degree)
    assert out.num_sampled_edges == [int(degree[seeds].sum())]


def test_without_replacement_never_repeats_a_neighbour(rmat):
    out = NeighborSampler(rmat.csc, [10]).sample(np.arange(200), 3)
    pairs = set()
    for r, c in out.edge_index.T:
        assert (r, c) not in pairs
        pairs.add((r, c))


def test_replace_draws_exactly_fanout_per_target(rmat):
    seeds = np.flatnonzero(np.asarray(rmat.degree) > 0)[:50]
    out = NeighborSampler(rmat.csc, [7], replace=True).sample(seeds, 0)
    assert out.num_sampled_edges == [7 * len(seeds)]


def test_deterministic_for_the_same_keys(rmat):
    seeds = np.asarray(rmat.split("train"))[:128]
    a = NeighborSampler(rmat.csc, [15, 10, 5]).sample(seeds, 5, 0).copy()
    sampler = NeighborSampler(rmat.csc, [15, 10, 5])
    sampler.sample(seeds[::-1], 9)  # state left behind by another batch must not matter
    b = sampler.sample(seeds, 5, 0).copy()
    c = sampler.sample(seeds, 5, 1).copy()
    np.testing.assert_array_equal(a.n_id, b.n_id)
    np.testing.assert_array_equal(a.edge_index, b.edge_index)
    np.testing.assert_array_equal(a.e_id, b.e_id)
    assert not np.array_equal(a.e_id, c.e_id)


def _one_pass_reference(csc, seeds, fanouts, replace, keys):
    """The k-hop sample as a plain loop that resolves each pick as soon as it is drawn: the
    kernel draws a hop's picks first and resolves them in a second, prefetching pass, and must
    give exactly this (the same draws, nodes in order of first sight)."""
    indptr, indices, eid = (np.asarray(a) for a in csc)
    state = seed_state(*keys)
    picks, scratch = np.empty(max(fanouts), dtype=np.int64), np.empty(0, dtype=np.int64)
    weights = np.empty(0, dtype=np.float32)
    nodes, local, edges = list(seeds), {int(s): i for i, s in enumerate(seeds)}, []
    begin = 0
    for fanout in fanouts:
        end = len(nodes)
        for i in range(begin, end):
            start, stop = int(indptr[nodes[i]]), int(indptr[nodes[i] + 1])
            for p in picks[: _pick(state, start, stop - start, fanout, replace, weights, picks, scratch)]:
                neighbour = int(indices[p])
                if neighbour not in local:
                    local[neighbour] = len(nodes)
                    nodes.append(neighbour)
                edges.append((local[neighbour], local[int(nodes[i])], int(eid[p])))
        begin = end
    return np.array(nodes), np.array(edges).T


@pytest.mark.parametrize("replace", [False, True])
def test_the_two_pass_kernel_gives_what_one_pass_gives(rmat, replace):
    seeds = np.asarray(rmat.split("train"))[:64]
    out = NeighborSampler(rmat.csc, [15, 10, 5], replace=replace).sample(seeds, 3, 1)
    nodes, edges = _one_pass_reference(rmat.csc, seeds, [15, 10, 5], replace, (3, 1))
    np.testing.assert_array_equal(out.n_id, nodes)
    np.testing.assert_array_equal(out.edge_index, edges[:2])
    np.testing.assert_array_equal(out.e_id, edges[2])


def _star(tmp_path, degree):
    """Node 0 with incoming edges from nodes 1..degree."""
    return write_dataset(tmp_path / f"star{degree}", np.arange(1, degree + 1), np.zeros(degree, dtype=int), degree + 1)


@pytest.mark.parametrize(("degree", "fanout", "replace"), [(20, 5, False), (200, 100, False), (12, 4, True)])
def test_every_neighbour_equally_likely(tmp_path, degree, fanout, replace):
    star = _star(tmp_path, degree)
    sampler = NeighborSampler(star.csc, [fanout], replace=replace)
    trials = 4000
    counts = np.zeros(degree + 1, dtype=np.int64)
    for t in range(trials):
        out = sampler.sample(np.array([0]), 11, t)
        np.add.at(counts, out.n_id[out.edge_index[0]], 1)
    observed = counts[1:]
    assert observed.sum() == trials * fanout
    # Chi-square goodness of fit against the uniform expectation; p < 1e-4 would flag a bias.
    assert chisquare(observed).pvalue > 1e-4


def test_every_subset_equally_likely(tmp_path):
    # Floyd's algorithm must make all C(5, 2) = 10 neighbour pairs equally likely.
    star = _star(tmp_path, 5)
    sampler = NeighborSampler(star.csc, [2])
    index = {pair: i for i, pair in enumerate(itertools.combinations(range(1, 6), 2))}
    counts = np.zeros(len(index), dtype=np.int64)
    for t in range(5000):
        out = sampler.sample(np.array([0]), 3, t)
        counts[index[tuple(sorted(out.n_id[1:].tolist()))]] += 1
    assert chisquare(counts).pvalue > 1e-4


def test_bad_arguments_are_named(golden):
    with pytest.raises(UsageError, match="num_neighbors"):
        NeighborSampler(golden.csc, [0])
    with pytest.raises(UsageError, match="num_neighbors"):
        NeighborSampler(golden.csc, [])
    with pytest.raises(UsageError, match=r"\[0, 14\)"):
        NeighborSampler(golden.csc, [2]).sample(np.array([14]), 0)


def test_buffers_grow_beyond_their_initial_size():
    # A node with 100k incoming edges and fanout -1 outgrows the 64k initial buffers.
    n = 100_001
    indptr = np.zeros(n + 1, dtype=np.int64)
    indptr[1:] = n - 1
    csc = Compressed(indptr, np.arange(1, n, dtype=np.int32), np.arange(n - 1, dtype=np.int32))
    out = NeighborSampler(csc, [-1]).sample(np.array([0]), 0)
    assert out.num_sampled_nodes == [1, n - 1]
    assert out.edge_index.shape == (2, n - 1)


# -- weighted sampling ---------------------------------------------------------------------------
STAR_WEIGHTS = np.array([1.0, 2.0, 3.0, 4.0, 10.0], dtype=np.float32)


def _weighted_counts(star, weights, fanout: int, replace: bool, trials: int) -> np.ndarray:
    """How often each neighbour of the star's centre was drawn over ``trials`` batches."""
    sampler = NeighborSampler(star.csc, [fanout], replace=replace, weights=weights[np.asarray(star.csc.eid)])
    counts = np.zeros(len(weights), dtype=np.int64)
    for t in range(trials):
        out = sampler.sample(np.array([0]), 21, t)
        np.add.at(counts, out.n_id[out.edge_index[0]] - 1, 1)
    return counts


@pytest.mark.parametrize("replace", [False, True])
def test_one_weighted_draw_follows_the_weights(tmp_path, replace):
    counts = _weighted_counts(_star(tmp_path, 5), STAR_WEIGHTS, 1, replace, 6000)
    expected = counts.sum() * STAR_WEIGHTS / STAR_WEIGHTS.sum()
    assert chisquare(counts, expected).pvalue > 1e-4


def _inclusion(weights: np.ndarray, picks: int) -> np.ndarray:
    """Exact P(neighbour i is drawn) when ``picks`` distinct neighbours are drawn one at a time,
    each with probability proportional to its weight among those left (successive sampling)."""
    chance = np.zeros(len(weights))

    def walk(left: tuple[int, ...], probability: float, depth: int) -> None:
        if depth == picks:
            return
        total = sum(weights[j] for j in left)
        for i in left:
            p = probability * weights[i] / total
            chance[i] += p
            walk(tuple(j for j in left if j != i), p, depth + 1)

    walk(tuple(range(len(weights))), 1.0, 0)
    return chance


@pytest.mark.parametrize(
    "weights, fanout",
    [
        (STAR_WEIGHTS, 2),
        # One neighbour holds almost all the weight: repeats exhaust the draws, and the keys finish.
        (np.array([1000.0, 1.0, 2.0, 1.0, 3.0], dtype=np.float32), 3),
    ],
)
def test_weighted_draws_without_replacement_follow_successive_sampling(tmp_path, weights, fanout):
    trials = 6000
    counts = _weighted_counts(_star(tmp_path, 5), weights, fanout, False, trials)
    assert counts.sum() == fanout * trials  # always distinct neighbours, as many as the fanout
    assert chisquare(counts, _inclusion(weights.astype(np.float64), fanout) * trials).pvalue > 1e-4


def test_zero_weight_neighbours_are_never_drawn(tmp_path):
    weights = np.array([0.0, 1.0, 0.0, 1.0, 1.0], dtype=np.float32)
    for replace in (False, True):
        counts = _weighted_counts(_star(tmp_path / str(replace), 5), weights, 2, replace, 300)
        assert counts[[0, 2]].sum() == 0 and counts.sum() == 600


def test_weights_must_match_the_edges(golden):
    with pytest.raises(UsageError, match="one per edge"):
        NeighborSampler(golden.csc, [2], weights=np.ones(3, dtype=np.float32))


# -- disjoint sampling ---------------------------------------------------------------------------
def test_disjoint_sampling_gives_each_seed_its_own_tree(rmat):
    seeds = np.asarray(rmat.split("train"))[:32]
    fanouts = [5, 3]
    out = NeighborSampler(rmat.csc, fanouts, disjoint=True).sample(seeds, 4)
    edges = rmat.edge_index()
    row, col = out.edge_index
    np.testing.assert_array_equal(out.n_id[:32], seeds)
    np.testing.assert_array_equal(out.batch[:32], np.arange(32))
    np.testing.assert_array_equal(edges[0, out.e_id], out.n_id[row])  # every edge is a real edge
    np.testing.assert_array_equal(edges[1, out.e_id], out.n_id[col])
    np.testing.assert_array_equal(out.batch[row], out.batch[col])  # and stays inside one tree
    assert sum(out.num_sampled_nodes) == len(out.n_id) and sum(out.num_sampled_edges) == len(out.e_id)
    # PyG's order: by hop, then by seed; within a tree a node appears once.
    bounds = np.cumsum([0] + out.num_sampled_nodes)
    for h in range(len(fanouts) + 1):
        assert (np.diff(out.batch[bounds[h] : bounds[h + 1]]) >= 0).all()
    pairs = set(zip(out.batch.tolist(), out.n_id.tolist()))
    assert len(pairs) == len(out.n_id)
    # Each tree alone is a valid directional sample of its seed, fanouts respected.
    for tree in range(32):
        mine = out.batch[col] == tree
        assert np.bincount(col[mine]).max(initial=0) <= max(fanouts)
    assert len(np.unique(out.n_id)) < len(out.n_id)  # trees share nodes on this graph: repeated


def test_disjoint_sampling_with_all_neighbours_matches_each_seeds_own_subgraph(rmat):
    # With fanout -1 there is no randomness: tree i is exactly the subgraph sampled from seed i alone.
    seeds = np.array([3, 17, 3])
    out = NeighborSampler(rmat.csc, [-1, -1], disjoint=True).sample(seeds, 0)
    single = NeighborSampler(rmat.csc, [-1, -1])
    for tree, seed in enumerate(seeds):
        alone = single.sample(np.array([seed]), 0).copy()
        assert sorted(out.n_id[out.batch == tree].tolist()) == sorted(alone.n_id.tolist())
        assert sorted(out.e_id[out.batch[out.edge_index[1]] == tree].tolist()) == sorted(alone.e_id.tolist())
