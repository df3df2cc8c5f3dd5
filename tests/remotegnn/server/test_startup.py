"""A memory rank's start-up sweep: the learner's two tiers merged into chunks in node order, and
the memory cache read alongside, so each stretch of the file is read once."""

from __future__ import annotations

import numpy as np

from remotegnn.cache import FeatureCache, rank_nodes
from remotegnn.server import startup
from remotegnn.server.startup import fill_chunks, sweep
from tests.remotegnn.cache.direct_reads import record_reads


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


def test_a_step_reads_a_cuts_two_tiers_together_and_the_last_reads_to_the_end(rmat):
    """A cut's device and RAM rows interleave in the file: read in two steps, the windows they
    share would be read twice (no page cache keeps them between)."""
    chunks = fill_chunks(np.array([3, 8, 20]), np.array([1, 2, 9, 10, 11, 30]), chunk_rows=4)
    memory = FeatureCache.empty(rmat)
    steps = startup._steps(memory, chunks, 100, rows=4)
    assert [(stop, [tier for tier, _ in step]) for stop, step in steps] == [
        (9, ["device", "ram"]),
        (21, ["device", "ram"]),
        (100, ["ram"]),
    ]


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


def test_the_memory_cache_and_the_chunks_share_the_reads_of_each_window(rmat, monkeypatch):
    """Every window holding a row of either cache is read, no other, and each once but where a
    step or a read ends inside it: the two caches' rows are read together, not one sweep each."""
    window = 4096
    reads = record_reads(monkeypatch, window)
    ranking = rank_nodes(rmat, "degree", fanouts=[5, 5], batch_size=64)
    memory = FeatureCache.build(rmat, 300 * rmat.meta.row_bytes, ranking[:1000], policy="degree", fill=False)
    chunks = fill_chunks(np.sort(ranking[1000:1100]), np.sort(ranking[1100:1500]), chunk_rows=128)
    wanted = np.union1d(np.flatnonzero(memory.slot >= 0), ranking[1000:1500])
    steps = startup._steps(memory, chunks, rmat.meta.num_nodes, 128)
    list(sweep(rmat, memory, chunks, np.dtype(np.float32)))
    row_bytes, offset = rmat.meta.row_bytes, rmat.features_offset
    windows = np.unique(
        np.concatenate([(offset + wanted * row_bytes) // window, (offset + (wanted + 1) * row_bytes - 1) // window])
    )
    covered = np.concatenate([np.arange(start // window, -(-(start + size) // window)) for start, size in reads])
    assert np.array_equal(np.unique(covered), windows)
    assert len(covered) <= len(windows) + len(reads) + len(steps)


def test_without_learner_chunks_the_memory_cache_is_read_in_steps(rmat, monkeypatch):
    monkeypatch.setattr(startup, "chunk_rows", lambda row_bytes: 100)
    ranking = rank_nodes(rmat, "degree", fanouts=[5, 5], batch_size=64)
    memory = FeatureCache.build(rmat, 300 * rmat.meta.row_bytes, ranking[:1000], policy="degree", fill=False)
    steps = startup._steps(memory, [], rmat.meta.num_nodes, 100)
    assert len(steps) == -(-memory.capacity // 100) and steps[-1] == (rmat.meta.num_nodes, [])
    assert list(sweep(rmat, memory, [], np.dtype(np.float32))) == [] and memory.filled
    cached = np.flatnonzero(memory.slot >= 0)
    assert np.array_equal(memory.rows[memory.slot[cached]], rmat.features[cached])
