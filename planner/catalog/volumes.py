"""EBS volume types for the snapshot: us-east-1 prices and per-volume limits.

Prices: the MemoryBridge paper's Table II (AWS N. Virginia, Dec 2024).
Limits: the paper's Table I (gp2 128-250 MB/s, 100-16,000 IOPS; gp3 125-1,000 MB/s, 3,000-16,000 IOPS)
plus AWS's documented size and ratio limits (gp2 3 IOPS/GB; gp3 500 IOPS/GB and 0.25 MB/s per
IOPS; io2 1,000 IOPS/GB). AWS no longer charges gp3 above 1,000 MB/s as a distinct tier, so the
planner caps gp3 at the paper's 1,000 MB/s / 16,000 IOPS.
"""

from __future__ import annotations

from contracts.plan import GP3_MAX_IOPS, GP3_MAX_MBPS, GP3_MBPS_PER_IOPS, GP3_MIN_IOPS, GP3_MIN_MBPS
from planner.catalog.models import VolumeType

_TABLE_II = "MemoryBridge paper Table II (AWS us-east-1, Dec 2024); limits from its Table I and AWS EBS docs"

VOLUME_TYPES: tuple[VolumeType, ...] = (
    VolumeType(
        name="gp2",
        usd_per_gb_month=0.10,
        min_size_gb=1,
        max_size_gb=16384,
        min_iops=100,
        max_iops=16000,
        min_mbps=128,
        max_mbps=250,
        max_iops_per_gb=3.0,
        source=_TABLE_II,
    ),
    VolumeType(
        name="gp3",
        usd_per_gb_month=0.08,
        usd_per_iops_month=0.005,
        usd_per_mbps_month=0.04,
        free_iops=GP3_MIN_IOPS,
        free_mbps=GP3_MIN_MBPS,
        min_size_gb=1,
        max_size_gb=16384,
        min_iops=GP3_MIN_IOPS,
        max_iops=GP3_MAX_IOPS,
        min_mbps=GP3_MIN_MBPS,
        max_mbps=GP3_MAX_MBPS,
        max_iops_per_gb=500.0,
        max_mbps_per_iops=GP3_MBPS_PER_IOPS,
        source=_TABLE_II,
    ),
    VolumeType(
        name="io2",
        usd_per_gb_month=0.125,
        usd_per_iops_month=0.046,
        min_size_gb=4,
        max_size_gb=65536,
        min_iops=100,
        max_iops=256000,
        min_mbps=0.001,
        max_mbps=4000,
        max_iops_per_gb=1000.0,
        source=_TABLE_II,
    ),
)
