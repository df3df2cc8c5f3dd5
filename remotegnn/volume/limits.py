"""What the emulated volume promises: gp3's baseline throughput and IOPS, and how I/Os are counted.

EBS counts one I/O per request of up to 256 KiB on SSD volumes: a larger request counts as one
I/O per 256 KiB unit (a 1024 KiB request is 4), and small sequential requests are merged up to
that size (AWS EBS user guide, "I/O characteristics and monitoring"; CloudWatch's
VolumeConsumedReadWriteOps). The volume reads whole 4 KiB pages (the OS page and the O_DIRECT unit; a
papers100M row is only 512 B: 128 x float32), so a request is a run of contiguous pages of at most
``max_request_bytes`` and counts as one I/O, and every page read counts in full towards MB/s.
"""

from __future__ import annotations

from pydantic import Field, model_validator

from foundation.models import StrictModel

PAGE = 4096
"""Bytes per page: what the page cache and the O_DIRECT reads move, and what the volume bills."""


class VolumeLimits(StrictModel):
    """A provisioned cloud volume's sustained limits (gp3 baseline by default). MB = 10**6 bytes."""

    mb_per_s: float = Field(125.0, gt=0, description="sustained read throughput, MB/s (gp3 baseline: 125)")
    iops: float = Field(3000.0, gt=0, description="I/O operations per second (gp3 baseline: 3,000)")
    max_request_bytes: int = Field(
        256 * 1024, ge=PAGE, description="largest request counted as one I/O (EBS: 256 KiB on SSD volumes)"
    )

    @model_validator(mode="after")
    def _whole_pages(self) -> VolumeLimits:
        if self.max_request_bytes % PAGE:
            raise ValueError(f"max_request_bytes must be a multiple of the {PAGE}-byte page")
        return self

    @property
    def bytes_per_s(self) -> float:
        return self.mb_per_s * 1e6

    @property
    def merge_gap_pages(self) -> int:
        """Unwanted pages worth reading to join two requests into one: reading a gap of g pages
        costs g*4096/bytes_per_s seconds, an extra I/O 1/iops, so merge while the gap is cheaper
        (10 pages on gp3's 125 MB/s and 3,000 IOPS)."""
        return int(self.bytes_per_s / self.iops // PAGE)

    def seconds_for(self, nbytes: float, requests: float) -> float:
        """The least time the volume needs for this much traffic: whichever limit binds."""
        return max(nbytes / self.bytes_per_s, requests / self.iops)
