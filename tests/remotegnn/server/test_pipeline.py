"""The local pipeline: real worker processes, batches checked against the sampler run directly."""

from __future__ import annotations

import time

import numpy as np
import pytest

from remotegnn import wire
from remotegnn.sampling import NeighborSampler
from remotegnn.server import LocalPipeline, PipelineError, PipelineOptions
from remotegnn.server.seeds import NodeSeeds


def options(**changes) -> PipelineOptions:
    return PipelineOptions(**({"batch_size": 64, "batch_creators": 1, "vector_loaders": 1, "timeout_s": 20} | changes))


def epoch_frames(pipeline: LocalPipeline, epoch: int) -> list[dict]:
    batches = []
    for b in range(pipeline.start_epoch(epoch)):
        batches.append({k: v.copy() for k, v in pipeline.frame(b).tensors.items()})
        pipeline.release(b)
    return batches


def test_batches_match_the_sampler_and_cover_every_seed_once(rmat):
    train = np.asarray(rmat.split("train"))
    sampler = NeighborSampler(rmat.csc, [15, 10, 5])
    with LocalPipeline(
        rmat, NodeSeeds(train, np.arange(len(train))), options(batch_creators=2, vector_loaders=2, edge_ids=True)
    ) as pipeline:
        for epoch in range(2):
            frames = epoch_frames(pipeline, epoch)
            assert len(frames) == pipeline.num_batches == -(-len(train) // 64)
            positions = np.concatenate([f["input_id"] for f in frames])
            assert np.array_equal(np.sort(positions), np.arange(len(train)))  # exactly once
            for b, frame in enumerate(frames):
                expected = sampler.sample(train[frame["input_id"]], 0, epoch, b)
                for name in ("n_id", "edge_index", "e_id"):
                    np.testing.assert_array_equal(frame[name], getattr(expected, name))
                assert frame["num_sampled_nodes"].tolist() == expected.num_sampled_nodes
                np.testing.assert_array_equal(frame["x"], rmat.features[frame["n_id"]])
                np.testing.assert_array_equal(frame["y"], rmat.labels[frame["n_id"]])
            stats = pipeline.stats()
            assert stats.batches == stats.batch_creators.batches == stats.vector_loaders.batches == len(frames)


def test_same_seed_same_batches_whatever_the_process_count(rmat):
    train = np.asarray(rmat.split("train"))
    runs = []
    for creators, loaders in [(1, 1), (2, 3)]:
        with LocalPipeline(
            rmat, NodeSeeds(train, train), options(batch_creators=creators, vector_loaders=loaders, seed=5)
        ) as pipeline:
            runs.append(epoch_frames(pipeline, 3))
    for one, other in zip(*runs, strict=True):
        assert one.keys() == other.keys()
        assert all(np.array_equal(one[k], other[k]) for k in one)


def test_unshuffled_order_and_drop_last(rmat):
    seeds = np.arange(100, 300)
    with LocalPipeline(rmat, NodeSeeds(seeds, seeds), options(shuffle=False, drop_last=True)) as pipeline:
        frames = epoch_frames(pipeline, 0)
    assert len(frames) == 3
    np.testing.assert_array_equal(np.concatenate([f["input_id"] for f in frames]), seeds[:192])


def test_backpressure_stops_sampling_when_the_learner_does_not_read(rmat):
    seeds = np.arange(1024)
    with LocalPipeline(rmat, NodeSeeds(seeds, seeds), options(ring_slots=2, batch_size=32)) as pipeline:
        pipeline.start_epoch(0)
        pipeline.frame(0)
        pipeline.frame(1)  # both slots full; nothing else was handed out
        assert pipeline.stats().batch_creators.batches == 2
        pipeline.release(0)
        pipeline.frame(2)
        assert pipeline.stats().batch_creators.batches == 3


def test_cache_counters_reach_the_stats(rmat):
    seeds = np.asarray(rmat.split("train"))
    row_bytes = rmat.meta.row_bytes
    with LocalPipeline(
        rmat, NodeSeeds(seeds, seeds), options(cache_bytes=1024 * row_bytes, cache_policy="degree")
    ) as pipeline:
        frames = epoch_frames(pipeline, 0)
        stats = pipeline.stats()
    reads = sum(len(f["n_id"]) for f in frames)
    assert stats.cache_hits + stats.cache_misses == reads
    assert 0.25 < stats.cache_hit_rate < 1  # a quarter of the nodes by degree serve more than a quarter of reads
    assert "cache hit" in stats.line()


@pytest.mark.parametrize("fills_learner", [True, False])
def test_only_the_learners_side_reports_the_learner_cache(fills_learner, rmat):
    """A memory rank's pipeline neither fills the learner's cache nor sees its waits: its stats
    line said 'learner cache hit 0.0%' while the learner's loader reported its real rate."""
    seeds = np.asarray(rmat.split("train"))
    held = options(learner_cache_bytes=256 * rmat.meta.row_bytes, cache_policy="degree")
    with LocalPipeline(rmat, NodeSeeds(seeds, seeds), held, fills_learner=fills_learner) as pipeline:
        epoch_frames(pipeline, 0)
        stats = pipeline.stats()
    assert stats.learner_side is fills_learner
    assert ("learner cache hit" in stats.line()) is fills_learner
    if fills_learner:
        assert stats.rows_from_learner_cache > 0 and stats.learner_hit_rate > 0


def test_volume_counters_reach_the_stats(rmat):
    from remotegnn.volume import VolumeLimits

    seeds = np.asarray(rmat.split("train"))
    row_bytes = rmat.meta.row_bytes
    with LocalPipeline(
        rmat,
        NodeSeeds(seeds, seeds),
        options(cache_bytes=1024 * row_bytes, cache_policy="degree"),
        volume_limits=VolumeLimits(mb_per_s=2000, iops=200_000),
    ) as pipeline:
        epoch_frames(pipeline, 0)
        stats = pipeline.stats()
    volume = stats.volume
    assert stats.cache_misses > 0 and 0 < volume.requests <= stats.cache_misses  # misses merged into requests
    assert volume.bytes >= 4096 * volume.requests and volume.mean_request_bytes == volume.bytes / volume.requests
    assert volume.io_s > 0
    assert f"volume {volume.requests:,} reads" in stats.line()
    assert stats.model_dump()["volume"]["mean_request_bytes"] == volume.mean_request_bytes  # in --json too


def test_an_abandoned_epoch_is_drained_before_the_next(rmat):
    seeds = np.arange(2048)
    with LocalPipeline(rmat, NodeSeeds(seeds, seeds), options(batch_size=32)) as pipeline:
        pipeline.start_epoch(0)
        pipeline.frame(0)
        assert len(epoch_frames(pipeline, 1)) == 64


def test_options_are_validated():
    with pytest.raises(ValueError, match="fanout"):
        PipelineOptions(num_neighbors=[0])
    with pytest.raises(ValueError):
        PipelineOptions(ring_slots=1)


def test_a_forged_batch_frame_stops_the_pipeline_with_its_reason(rmat):
    """A frame whose payload was changed after it was written (the header CRC does not cover it)
    is refused when the learner widens it, and the pipeline stops instead of handing it on."""
    seeds = np.arange(256)
    pipeline = LocalPipeline(rmat, NodeSeeds(seeds, seeds), options(ring_slots=2, batch_size=32, timeout_s=30))
    with pipeline:
        pipeline.start_epoch(0, limit=1)
        deadline = time.monotonic() + 30
        while pipeline.stats().ready_frames == 0:  # batch 0's frame is written and not yet read
            assert time.monotonic() < deadline, "batch 0 was never written"
            time.sleep(0.01)
        src = wire.decode(pipeline.frame_slot(0))["src"]
        src[-1] = np.iinfo(src.dtype).max  # a source past the batch's nodes
        with pytest.raises(PipelineError, match=r"batch 0: batch frame tensor 'src': .* fall outside"):
            pipeline.received(0)
        with pytest.raises(PipelineError, match="closed"):
            pipeline.received(1)
