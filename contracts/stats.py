"""What an epoch of the sampled pipeline cost, stage by stage: the memory server reports it, the
learner's loader gets it, progress events and calibration runs carry it."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, computed_field

from foundation.models import StrictModel, StrictMutableModel


class StageStats(BaseModel):
    """One stage's counters over an epoch, summed over its processes."""

    processes: int
    batches: int = 0
    busy_s: float = Field(0.0, description="seconds spent working")
    stall_s: float = Field(0.0, description="seconds waiting for input (the stage before was slower)")


class VolumeCounters(BaseModel):
    """The memory ranks' reads from their volumes over an epoch (all zero without volume limits)."""

    bytes: int = Field(0, description="bytes read: whole 4 KiB pages, merged gaps included")
    requests: int = Field(0, description="read requests (each one I/O as the volume counts them)")
    io_s: float = Field(0.0, description="seconds spent in reads, summed over requests in flight")
    throttled_s: float = Field(0.0, description="wall-clock seconds reads waited for the emulated limits")

    @computed_field  # type: ignore[prop-decorator]  # pydantic's documented use on a property
    @property
    def mean_request_bytes(self) -> float:
        return self.bytes / self.requests if self.requests else 0.0

    def __add__(self, other: VolumeCounters) -> VolumeCounters:
        return VolumeCounters(
            bytes=self.bytes + other.bytes,
            requests=self.requests + other.requests,
            io_s=self.io_s + other.io_s,
            throttled_s=self.throttled_s + other.throttled_s,
        )


class EpochCounters(BaseModel):
    """What calibration reads of an epoch: a calibration run records these (``PipelineStats``
    carries them and more; fields it does not know are ignored, so a full dump validates)."""

    model_config = ConfigDict(extra="ignore")

    batches: int = Field(ge=0)
    seconds: float = Field(ge=0)
    batch_creators: StageStats
    vector_loaders: StageStats
    cache_hits: int = Field(ge=0, description="feature rows the memory ranks' RAM caches served")
    cache_misses: int = Field(ge=0, description="feature rows read from the volume (or the page cache without one)")
    bytes_sent: int = Field(0, ge=0, description="bytes of batch frames the memory ranks sent (what crosses the link)")


class FeedCounters(StrictMutableModel):
    """The learner's feed stage over an epoch: what its device cache served and what it copied."""

    rows_from_device_cache: int = 0
    host_to_device_bytes: int = 0
    host_to_device_index_bytes: int = 0
    copy_s: float = 0.0
    copy_hidden_share: float | None = None


class PipelineStats(EpochCounters, StrictModel):
    """What one epoch cost, stage by stage; ``remotegnn serve`` prints it, the learner's loader gets
    it (``last_stats``) and reports it in its progress events.

    An :class:`EpochCounters`, so a calibration run's epoch holds it as it is, yet strict: pydantic
    merges the bases' configs in order, so ``StrictModel`` after ``EpochCounters`` wins."""

    epoch: int
    batches_per_s: float
    blueprint_queue_depth: int = Field(description="blueprints waiting for a vector loader at the last look")
    ready_frames: int = Field(description="finished batches waiting for the learner at the last look")
    cache_hit_rate: float = Field(description="the memory caches' share of the rows the memory ranks sent")
    learner_stall_s: float = Field(0.0, description="seconds the training loop waited for a batch")
    rows_sent: int = Field(0, description="feature rows the memory ranks sent (the rest came from the learner cache)")
    request_bytes: int = Field(
        0,
        description="bytes the learner sent asking for rows: with sampling='learner', its batches' ids of the rows "
        "it lacks (what crosses the link the other way; 0 when the memory ranks sample)",
    )
    rows_from_learner_cache: int = Field(0, description="feature rows the learner's own cache served")
    learner_hit_rate: float = Field(0.0, description="share of the batches' feature rows the learner's cache served")
    rows_from_device_cache: int = Field(0, description="feature rows the learner's device cache served")
    device_cache_hit_rate: float = Field(0.0, description="share of the batches' feature rows the device cache served")
    host_to_device_bytes: int = Field(
        0,
        description="bytes of feature rows copied from host memory to the loader's device (the device cache's hits "
        "are not); on a CPU device, the rows taken from host memory rather than the cache's tensor",
    )
    host_to_device_index_bytes: int = Field(
        0, description="bytes of ids, edges, labels and cache positions copied to the device (every batch has them)"
    )
    copy_s: float = Field(
        0.0, description="seconds the host-to-device copies took (CUDA events; on a CPU, the feed stage)"
    )
    copy_hidden_share: float | None = Field(
        None,
        description="share of copy_s the training step hid (copies done before the step needed them); "
        "measured with CUDA events, None on a CPU device",
    )
    learner_side: bool = Field(
        False,
        description="whether the learner's figures (its cache's rows, its waits) are in: a memory rank's own "
        "stats cannot have them, and its line leaves them out rather than print zeros the learner contradicts",
    )
    volume: VolumeCounters = Field(default_factory=VolumeCounters, description="what the cache misses cost the volume")

    @property
    def rows_from_memory_cache(self) -> int:
        """Rows the memory ranks' RAM caches served (``cache_hits``)."""
        return self.cache_hits

    @property
    def rows_from_volume(self) -> int:
        """Rows read from the volume, or the page cache without one (``cache_misses``)."""
        return self.cache_misses

    def with_learner(self, rows_from_learner_cache: int, learner_stall_s: float) -> PipelineStats:
        """These counters with the learner's side added (its cache's rows and its stall)."""
        total = rows_from_learner_cache + self.rows_sent
        return self.model_copy(
            update={
                "rows_from_learner_cache": rows_from_learner_cache,
                "learner_hit_rate": rows_from_learner_cache / total if total else 0.0,
                "learner_stall_s": learner_stall_s,
                "learner_side": True,
            }
        )

    def with_feed(self, feed: FeedCounters) -> PipelineStats:
        """These counters with the learner's feed stage added (its device cache and its copies);
        the learner cache's hit rate is then a share of every row, device hits included."""
        total = feed.rows_from_device_cache + self.rows_from_learner_cache + self.rows_sent
        return self.model_copy(
            update={
                **feed.model_dump(),
                "device_cache_hit_rate": feed.rows_from_device_cache / total if total else 0.0,
                "learner_hit_rate": self.rows_from_learner_cache / total if total else 0.0,
            }
        )

    @classmethod
    def combine(cls, parts: list[PipelineStats]) -> PipelineStats:
        """One epoch over several memory ranks: every rank sends its share of every batch, so
        counters add up and the epoch lasts as long as the slowest rank."""
        first = parts[0]
        seconds = max(p.seconds for p in parts)
        hits, misses = sum(p.cache_hits for p in parts), sum(p.cache_misses for p in parts)

        def stage(name: str) -> StageStats:
            stages = [getattr(p, name) for p in parts]
            return StageStats(
                processes=sum(s.processes for s in stages),
                batches=sum(s.batches for s in stages),
                busy_s=sum(s.busy_s for s in stages),
                stall_s=sum(s.stall_s for s in stages),
            )

        return cls(
            epoch=first.epoch,
            batches=first.batches,
            seconds=seconds,
            batches_per_s=first.batches / seconds if seconds > 0 else 0.0,
            batch_creators=stage("batch_creators"),
            vector_loaders=stage("vector_loaders"),
            blueprint_queue_depth=sum(p.blueprint_queue_depth for p in parts),
            ready_frames=sum(p.ready_frames for p in parts),
            cache_hits=hits,
            cache_misses=misses,
            cache_hit_rate=hits / (hits + misses) if hits + misses else 0.0,
            learner_stall_s=max(p.learner_stall_s for p in parts),
            rows_sent=sum(p.rows_sent for p in parts),
            bytes_sent=sum(p.bytes_sent for p in parts),
            volume=sum((p.volume for p in parts), VolumeCounters()),
        )

    def line(self) -> str:
        """The periodic one-line summary."""
        return (
            f"epoch {self.epoch}: {self.batches} batches in {self.seconds:.2f}s ({self.batches_per_s:.1f}/s) | "
            f"sample busy {self.batch_creators.busy_s:.2f}s stall {self.batch_creators.stall_s:.2f}s | "
            f"load busy {self.vector_loaders.busy_s:.2f}s stall {self.vector_loaders.stall_s:.2f}s | "
            f"queue {self.blueprint_queue_depth} ready {self.ready_frames} | "
            f"cache hit {self.cache_hit_rate:.1%} | sent {self.rows_sent:,} rows {self.bytes_sent / 1e6:.1f} MB"
            + (f" | requested {self.request_bytes / 1e6:.1f} MB" if self.request_bytes else "")
            + (
                f" | learner cache hit {self.learner_hit_rate:.1%} | learner stall {self.learner_stall_s:.2f}s"
                if self.learner_side
                else ""
            )
            + (
                f" | device cache hit {self.device_cache_hit_rate:.1%} | to device "
                f"{(self.host_to_device_bytes + self.host_to_device_index_bytes) / 1e6:.1f} MB in {self.copy_s:.2f}s"
                + (f" ({self.copy_hidden_share:.0%} hidden)" if self.copy_hidden_share is not None else "")
                if self.learner_side and (self.host_to_device_bytes or self.rows_from_device_cache)
                else ""
            )
            + (
                f" | volume {self.volume.requests:,} reads {self.volume.bytes / 1e6:.1f} MB "
                f"(mean {self.volume.mean_request_bytes / 1024:.0f} KiB) throttled {self.volume.throttled_s:.2f}s"
                if self.volume.requests
                else ""
            )
        )
