"""The learner cache assembles exactly the batch the memory ranks would have sent whole."""

from __future__ import annotations

import numpy as np
import pytest

from remotegnn import wire
from remotegnn.cache.kernels import select_sent
from remotegnn.cache.learner import LearnerCache, held_mask, nodes_digest, read_rows

N, DIM = 1000, 6


def _features() -> np.ndarray:
    return np.random.default_rng(1).standard_normal((N, DIM)).astype(np.float32)


def _sent(n_id, held, rank, count, features, block_rows=1):
    """What memory rank ``rank`` of ``count`` sends for ``n_id``: the vector loaders' selection."""
    positions = np.empty(len(n_id), dtype=np.int64)
    k = select_sent(n_id, held, rank, count, block_rows, positions)
    return features[n_id[positions[:k]]]


@pytest.mark.parametrize("count", [1, 2, 3])
@pytest.mark.parametrize("held_share", [0.0, 0.3, 1.0])
@pytest.mark.parametrize("block_rows", [1, 37])
def test_assembled_rows_equal_the_whole_batch(count, held_share, block_rows):
    features = _features()
    rng = np.random.default_rng(2)
    nodes = np.sort(rng.choice(N, int(held_share * N), replace=False))
    held = held_mask(nodes, N)
    cache = LearnerCache.from_parts(N, [(nodes[::-1].copy(), features[nodes[::-1]])])  # any order in
    n_id = rng.integers(0, N, 400)
    parts = [_sent(n_id, held, r, count, features, block_rows) for r in range(count)]
    lacking = ~held[n_id] if len(held) else np.ones(len(n_id), dtype=bool)
    owner = (n_id // block_rows) % count
    assert [len(p) for p in parts] == [int((lacking & (owner == r)).sum()) for r in range(count)]
    x = cache.assemble(n_id, parts, block_rows=block_rows)
    assert np.array_equal(x, features[n_id])
    assert cache.hits == int(held[n_id].sum()) if len(held) else cache.hits == 0
    assert sum(len(p) for p in parts) + cache.hits == len(n_id)


def test_shares_from_several_ranks_make_one_cache():
    features = _features()
    nodes = np.arange(0, N, 7)
    parts = [(nodes[nodes % 2 == r], features[nodes[nodes % 2 == r]]) for r in range(2)]
    cache = LearnerCache.from_parts(N, parts)
    assert np.array_equal(np.sort(cache.nodes), nodes) and cache.digest() == nodes_digest(nodes)
    assert np.array_equal(cache.rows, features[cache.nodes])
    assert np.array_equal(cache.rows[cache.slot[nodes]], features[nodes])


def test_a_share_that_does_not_fit_is_refused():
    features = _features()
    cache = LearnerCache.allocate(N, 10, DIM, np.dtype(np.float32))
    cache.add(np.arange(6), features[:6])
    with pytest.raises(wire.FrameError, match="4 rows"):
        cache.add(np.arange(6, 12), features[6:12])
    with pytest.raises(wire.FrameError, match="float16"):
        cache.add(np.arange(6, 8), features[6:8].astype(np.float16))
    with pytest.raises(wire.FrameError, match=rf"nodes outside \[0, {N}\)"):
        cache.add(np.array([-1, 7]), features[6:8])
    assert cache.filled == 6


def test_a_rank_that_disagrees_about_the_held_rows_is_caught():
    features = _features()
    nodes = np.arange(100)
    cache = LearnerCache.from_parts(N, [(nodes, features[nodes])])
    n_id = np.arange(50, 150)
    whole = features[n_id]  # a rank that did not skip the learner's rows
    with pytest.raises(wire.FrameError, match="disagree on what the learner holds"):
        cache.assemble(n_id, [whole])


def test_read_rows_converts_to_the_wire_dtype(rmat):
    nodes = np.array([0, 5, 17, 4095])
    rows = read_rows(rmat, nodes, np.dtype(np.float16))
    assert rows.dtype == np.float16
    assert np.array_equal(rows, np.asarray(rmat.features)[nodes].astype(np.float16))
