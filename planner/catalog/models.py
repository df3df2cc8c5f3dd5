"""Pydantic models of a price snapshot: instance types, EBS volume types and provenance metadata.

A snapshot is the planner's only view of AWS: every estimate names the snapshot it used, so a
recommendation can be reproduced later from the same file.
"""

from __future__ import annotations

import datetime as dt
from typing import Literal

from pydantic import Field, model_validator

from contracts.plan import Arch
from foundation.models import StrictModel

SNAPSHOT_SCHEMA_VERSION = 1
HOURS_PER_MONTH = 730.0  # AWS bills EBS per GB-month and converts with 730 hours per month.

PriceProvenance = Literal["listed", "derived"]


class InstanceSpec(StrictModel):
    """Hardware of one EC2 instance type, as describe-instance-types reports it.

    Bandwidths are the *baseline* (sustained) figures: "Up to 25 Gigabit" on g4dn.xlarge is a
    5 Gbit/s baseline, and a sustained-throughput model must not use the burst peak.
    """

    name: str
    family: str
    vcpus: int = Field(gt=0)
    memory_gib: float = Field(gt=0)
    arch: Arch
    gpu_model: str | None = None
    gpu_count: int = Field(0, ge=0)
    gpu_memory_gib: float = Field(0.0, ge=0, description="total over all GPUs")
    ebs_baseline_mbps: float = Field(0.0, ge=0, description="EBS baseline throughput, MB/s")
    ebs_max_mbps: float = Field(0.0, ge=0)
    ebs_baseline_iops: float = Field(0.0, ge=0)
    ebs_max_iops: float = Field(0.0, ge=0)
    network_baseline_gbps: float = Field(0.0, ge=0)
    network_peak_gbps: float = Field(0.0, ge=0)
    ena_express: bool = Field(
        False, description="supports ENA Express (AWS's SRD transport: 25 Gbit/s per flow instead of 10 or 5)"
    )

    @property
    def has_gpu(self) -> bool:
        return self.gpu_count > 0


class InstanceType(InstanceSpec):
    """An instance spec with its us-east-1 prices. A type without a price is never recommended."""

    ondemand_usd_per_hour: float | None = Field(None, gt=0)
    spot_usd_per_hour: float | None = Field(None, gt=0, description="lowest over the region's AZs")
    price_provenance: PriceProvenance | None = Field(
        None, description="listed: from the price source; derived: priced linearly by vCPUs from its family"
    )
    spot_interruption_band: int | None = Field(
        None, ge=0, description="index into the snapshot's spot_interruptions.bands (None: no band for this type)"
    )

    def price(self, spot: bool) -> float | None:
        return self.spot_usd_per_hour if spot else self.ondemand_usd_per_hour


class VolumeType(StrictModel):
    """An EBS volume type's prices and limits (per volume)."""

    name: Literal["gp2", "gp3", "io2"]
    usd_per_gb_month: float = Field(gt=0)
    usd_per_iops_month: float = Field(0.0, ge=0, description="per provisioned IOPS above free_iops")
    usd_per_mbps_month: float = Field(0.0, ge=0, description="per provisioned MB/s above free_mbps")
    free_iops: float = Field(0.0, ge=0)
    free_mbps: float = Field(0.0, ge=0)
    min_size_gb: float = Field(gt=0)
    max_size_gb: float = Field(gt=0)
    min_iops: float = Field(ge=0)
    max_iops: float = Field(gt=0)
    min_mbps: float = Field(ge=0)
    max_mbps: float = Field(gt=0)
    max_iops_per_gb: float = Field(gt=0)
    max_mbps_per_iops: float | None = Field(None, gt=0, description="gp3: 0.25 MB/s per provisioned IOPS")
    source: str

    def hourly_usd(self, size_gb, iops, mbps):
        """Hourly price of a volume; works elementwise on numpy arrays as well as on floats."""
        monthly = (
            size_gb * self.usd_per_gb_month
            + _above(iops, self.free_iops) * self.usd_per_iops_month
            + _above(mbps, self.free_mbps) * self.usd_per_mbps_month
        )
        return monthly / HOURS_PER_MONTH


def _above(value, free):
    # (value - free) clipped at zero, for floats and arrays alike.
    diff = value - free
    return diff * (diff > 0)


class DataTransferPrices(StrictModel):
    """What AWS charges per GB moved between machines, by where they are (the first pricing tier).

    Cross-AZ traffic is billed on both sides (out of the sender's AZ and into the receiver's);
    inter-region and internet traffic only on the way out. Within one AZ over private addresses
    it is free.
    """

    same_az_usd_per_gb: float = Field(ge=0, description="between instances in one AZ (private IPs)")
    cross_az_usd_per_gb: float = Field(ge=0, description="between AZs of the region, each direction")
    cross_region_usd_per_gb: float = Field(ge=0, description="out of the region to another AWS region")
    internet_egress_usd_per_gb: float = Field(ge=0, description="out to the internet (first 10 TB a month)")
    source: str = Field(min_length=1)


class InterruptionBand(StrictModel):
    """One of AWS's frequency-of-interruption bands: the share of a type's spot instances that AWS
    reclaimed over the trailing month lies below ``max_percent`` (and above the band before)."""

    index: int = Field(ge=0)
    label: str = Field(min_length=1, description='as AWS shows it, e.g. "5-10%"')
    max_percent: float = Field(gt=0, le=100)


class SpotInterruptions(StrictModel):
    """Where the snapshot's interruption bands come from, and the bands themselves."""

    source: str = Field(min_length=1)
    retrieved_on: dt.date
    bands: list[InterruptionBand] = Field(min_length=1)


class SnapshotMeta(StrictModel):
    schema_version: int = SNAPSHOT_SCHEMA_VERSION
    provider: Literal["aws"] = "aws"
    region: str
    retrieved_on: dt.date = Field(description="when the prices were retrieved from their source")
    spec_source: str
    price_source: str
    sources: list[str]
    prices_without_specs: list[str] = Field(
        default_factory=list, description="priced types the spec source does not describe (left out)"
    )
    notes: list[str] = Field(default_factory=list)


class PriceSnapshot(StrictModel):
    meta: SnapshotMeta
    volumes: list[VolumeType]
    instances: list[InstanceType]
    transfer: DataTransferPrices | None = Field(
        None, description="data transfer prices; absent from snapshots built before they were added"
    )
    spot_interruptions: SpotInterruptions | None = Field(
        None, description="spot interruption bands' source (each type's band is on the type); None: none known"
    )

    @model_validator(mode="after")
    def _bands_exist(self) -> PriceSnapshot:
        known = {b.index for b in self.spot_interruptions.bands} if self.spot_interruptions else set()
        unknown = sorted({i.name for i in self.instances if i.spot_interruption_band not in (None, *known)})
        if unknown:
            raise ValueError(f"spot_interruption_band of {', '.join(unknown[:5])} names no band of spot_interruptions")
        return self

    def age_days(self, today: dt.date | None = None) -> int:
        return ((today or dt.date.today()) - self.meta.retrieved_on).days
