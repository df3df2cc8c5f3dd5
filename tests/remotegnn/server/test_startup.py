"""A memory rank's start-up sweep: the learner's two tiers merged into chunks in node order, and
the memory cache read alongside, so each stretch of the file is read once."""

from __future__ import annotations

import numpy as np

from remotegnn.cache import FeatureCache, rank_nodes
from remotegnn.server import startup
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


def test_each_step_asks_the_kernel_for_exactly_the_windows_holding_its_rows(rmat, monkeypatch):
    """The read-ahead covers every row a step reads (so its faults find the pages cached) and no
    window without one (so a rank reads ahead only its own rows)."""
    advised: list[tuple[int, int]] = []
    monkeypatch.setattr(
        startup.os, "posix_fadvise", lambda fd, offset, length, advice: advised.append((offset, length))
    )
    monkeypatch.setattr(startup, "PREFETCH_WINDOW_BYTES", 4096)
    ranking = rank_nodes(rmat, "degree", fanouts=[5, 5], batch_size=64)
    memory = FeatureCache.build(rmat, 300 * rmat.meta.row_bytes, ranking[:1000], policy="degree", fill=False)
    chunks = fill_chunks(np.sort(ranking[1000:1100]), np.sort(ranking[1100:1500]), chunk_rows=128)
    wanted = np.union1d(np.flatnonzero(memory.slot >= 0), ranking[1000:1500])
    list(sweep(rmat, memory, chunks, np.dtype(np.float32)))
    row_bytes, offset = rmat.meta.row_bytes, rmat.features_offset
    windows = np.unique(
        np.concatenate([(offset + wanted * row_bytes) // 4096, (offset + (wanted + 1) * row_bytes - 1) // 4096])
    )
    covered = np.concatenate([np.arange(start // 4096, (start + length) // 4096) for start, length in advised])
    assert np.array_equal(np.unique(covered), windows)
    assert all(start % 4096 == 0 and length % 4096 == 0 for start, length in advised)


def test_without_learner_chunks_the_memory_cache_is_read_in_steps(rmat, monkeypatch):
    monkeypatch.setattr(startup, "chunk_rows", lambda row_bytes: 100)
    ranking = rank_nodes(rmat, "degree", fanouts=[5, 5], batch_size=64)
    memory = FeatureCache.build(rmat, 300 * rmat.meta.row_bytes, ranking[:1000], policy="degree", fill=False)
    steps = startup._steps(memory, [], rmat.meta.num_nodes, 100)
    assert len(steps) == -(-memory.capacity // 100) and steps[-1] == (rmat.meta.num_nodes, None)
    assert list(sweep(rmat, memory, [], np.dtype(np.float32))) == [] and memory.filled
    cached = np.flatnonzero(memory.slot >= 0)
    assert np.array_equal(memory.rows[memory.slot[cached]], rmat.features[cached])
