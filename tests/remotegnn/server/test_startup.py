"""A memory rank's start-up sweep: the learner's two tiers merged into chunks in node order, and
the memory cache read alongside, so each stretch of the file is read once."""

from __future__ import annotations

import numpy as np

from remotegnn.cache import FeatureCache, rank_nodes
from remotegnn.server.startup import fill_chunks, sweep


def test_chunks_merge_the_tiers_in_node_order_and_keep_each_row_in_its_tier():
    device, ram = np.array([3, 8, 20]), np.array([1, 2, 9, 10, 11, 30])
    chunks = fill_chunks(device, ram, chunk_rows=4)
    assert [(tier, nodes.tolist()) for tier, nodes in chunks] == [
        ("device", [3, 8]),
        ("ram", [1, 2]),
        ("device", [20]),
        ("ram", [9, 10, 11]),
        ("ram", [30]),
    ]
    assert fill_chunks(np.empty(0, np.int64), np.empty(0, np.int64), 4) == []


def test_the_sweep_reads_every_row_of_both_caches_and_the_memory_cache_keeps_pace(rmat):
    ranking = rank_nodes(rmat, "degree", fanouts=[5, 5], batch_size=64)
    memory = FeatureCache.build(rmat, 300 * rmat.meta.row_bytes, ranking[:1000], policy="degree", fill=False)
    learner = np.sort(ranking[1000:1500])
    chunks = fill_chunks(learner[:100], learner[100:], chunk_rows=128)
    for _tier, nodes, rows in sweep(rmat, memory, chunks, np.dtype(np.float16)):
        assert np.array_equal(rows, rmat.features[nodes].astype(np.float16))
        cached = np.flatnonzero(memory.slot >= 0)
        below = cached[cached <= nodes[-1]]
        assert np.array_equal(memory.rows[memory.slot[below]], rmat.features[below])  # read up to here
    assert memory.filled
    alone = FeatureCache.build(rmat, 300 * rmat.meta.row_bytes, ranking[:1000], policy="degree", fill=False)
    assert list(sweep(rmat, alone, [], np.dtype(np.float32))) == [] and alone.filled
