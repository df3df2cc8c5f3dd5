"""A session's caches: the learner's rows first, the memory cache never repeats them."""

from __future__ import annotations

import numpy as np
import pytest

from remotegnn.server import PipelineOptions
from remotegnn.server.caches import build_caches
from remotegnn.server.shard import Shard


def _options(**kw) -> PipelineOptions:
    return PipelineOptions(num_neighbors=[5, 5], batch_size=64, batch_creators=1, vector_loaders=1, **kw)


def test_learner_rows_are_never_in_the_memory_cache(rmat):
    row = rmat.meta.row_bytes
    caches = build_caches(rmat, _options(learner_cache_bytes=300 * row, cache_bytes=500 * row), rmat.split("train"))
    assert len(caches.learner_nodes) == 300 and caches.memory.capacity == 500
    memory_nodes = np.flatnonzero(caches.memory.slot >= 0)
    assert not np.intersect1d(caches.learner_nodes, memory_nodes).size
    assert caches.held.sum() == 300 and caches.held[caches.learner_nodes].all()
    # by degree: the learner's 300 are the hottest, the memory cache's the next 500
    degree = np.asarray(rmat.degree)
    assert degree[caches.learner_nodes].min() >= degree[memory_nodes].max()
    assert caches.report.learner_rows == 300 and caches.report.memory_rows == 500


def test_half_precision_rows_double_what_the_learner_budget_holds(rmat):
    budget = 300 * rmat.meta.row_bytes
    full = build_caches(rmat, _options(learner_cache_bytes=budget), rmat.split("train"))
    half = build_caches(rmat, _options(learner_cache_bytes=budget, wire_dtype="float16"), rmat.split("train"))
    assert len(half.learner_nodes) == 2 * len(full.learner_nodes)
    assert half.report.wire_dtype == "float16" and half.report.learner_bytes == full.report.learner_bytes


@pytest.mark.parametrize("block_rows", [1, 32])
def test_every_memory_rank_agrees_on_the_learner_set_and_caches_its_own_rows(rmat, block_rows):
    options = _options(learner_cache_bytes=200 * rmat.meta.row_bytes, cache_bytes=100 * rmat.meta.row_bytes)
    ranks = [
        build_caches(rmat, options, rmat.split("train"), Shard(index=i, count=2, block_rows=block_rows))
        for i in range(2)
    ]
    assert np.array_equal(ranks[0].learner_nodes, ranks[1].learner_nodes)
    for i, caches in enumerate(ranks):
        cached = np.flatnonzero(caches.memory.slot >= 0)
        assert len(cached) and ((cached // block_rows) % 2 == i).all()


def test_no_budget_means_no_learner_cache(rmat):
    caches = build_caches(rmat, _options(), rmat.split("train"))
    assert len(caches.learner_nodes) == 0 and len(caches.held) == 0
    assert caches.report.learner_policy == "none"
