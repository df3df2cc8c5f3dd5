"""Load a price snapshot (the shipped one via importlib.resources, or a user's file) as a Catalog."""

from __future__ import annotations

import datetime as dt
import hashlib
from dataclasses import dataclass
from functools import cached_property, lru_cache
from importlib import resources
from pathlib import Path
from typing import ClassVar

import numpy as np
from pydantic import ValidationError

from contracts.plan import SnapshotInfo
from foundation.errors import NotFoundError
from planner.catalog.interruptions import representative_shares
from planner.catalog.models import DataTransferPrices, InstanceType, PriceSnapshot, VolumeType
from planner.catalog.transfer import US_EAST_1_TRANSFER
from planner.errors import SnapshotError

SHIPPED_SNAPSHOT = "aws-us-east-1.json"
STALE_AFTER_DAYS = 30


class Catalog:
    """A validated snapshot plus lookups and the column arrays the vectorised solver works on."""

    def __init__(self, snapshot: PriceSnapshot, sha256: str):
        self.snapshot = snapshot
        self.sha256 = sha256
        self.by_name: dict[str, InstanceType] = {i.name: i for i in snapshot.instances}
        self.volumes: dict[str, VolumeType] = {v.name: v for v in snapshot.volumes}

    def instance(self, name: str) -> InstanceType:
        try:
            return self.by_name[name]
        except KeyError:
            raise NotFoundError("instance type", name, self.by_name) from None

    @property
    def transfer(self) -> DataTransferPrices:
        """The snapshot's transfer prices; a snapshot built before they were added gets us-east-1's."""
        return self.snapshot.transfer or US_EAST_1_TRANSFER

    @cached_property
    def families(self) -> set[str]:
        return {i.family for i in self.snapshot.instances}

    def info(self, today: dt.date | None = None) -> SnapshotInfo:
        age = self.snapshot.age_days(today)
        return SnapshotInfo(
            region=self.snapshot.meta.region,
            retrieved_on=self.snapshot.meta.retrieved_on,
            age_days=age,
            stale=age > STALE_AFTER_DAYS,
            sha256=self.sha256,
        )

    @cached_property
    def columns(self) -> InstanceColumns:
        return InstanceColumns.from_instances(
            self.snapshot.instances, representative_shares(self.snapshot.spot_interruptions)
        )


@dataclass(frozen=True)
class InstanceColumns:
    """The catalog as numpy columns (one entry per instance type, in snapshot order)."""

    instances: list[InstanceType]
    vcpus: np.ndarray
    memory_gib: np.ndarray
    gpu_count: np.ndarray
    gpu_memory_gib: np.ndarray
    ebs_baseline_mbps: np.ndarray
    ebs_baseline_iops: np.ndarray
    network_baseline_gbps: np.ndarray
    ena_express: np.ndarray  # bool: the type supports ENA Express
    spot_monthly_share: np.ndarray  # of its spot instances, the share AWS reclaims in a month (NaN: no band)
    ondemand: np.ndarray  # USD/h, NaN where the snapshot has no price
    spot: np.ndarray
    name_rank: np.ndarray  # each type's place among the names sorted A to Z (ties between plans go by it)

    SPEC_FIELDS: ClassVar[tuple[str, ...]] = (
        "vcpus",
        "memory_gib",
        "gpu_count",
        "gpu_memory_gib",
        "ebs_baseline_mbps",
        "ebs_baseline_iops",
        "network_baseline_gbps",
    )

    @classmethod
    def from_instances(
        cls, instances: list[InstanceType], band_shares: dict[int, float] | None = None
    ) -> InstanceColumns:
        specs = {f: np.array([getattr(i, f) for i in instances], dtype=float) for f in cls.SPEC_FIELDS}
        nan = float("nan")
        shares = band_shares or {}
        return cls(
            instances,
            **specs,
            ena_express=np.array([i.ena_express for i in instances], dtype=bool),
            spot_monthly_share=np.array(
                [nan if i.spot_interruption_band is None else shares[i.spot_interruption_band] for i in instances]
            ),
            ondemand=np.array([i.ondemand_usd_per_hour or nan for i in instances]),
            spot=np.array([i.spot_usd_per_hour or nan for i in instances]),
            name_rank=np.argsort(np.argsort([i.name for i in instances], kind="stable")),
        )

    def price(self, spot: bool) -> np.ndarray:
        return self.spot if spot else self.ondemand


def load_catalog(path: str | Path | None = None) -> Catalog:
    """The shipped snapshot when ``path`` is None, else the snapshot file at ``path``.

    Loads are cached per file version (path, size, mtime), so a refreshed file is re-read.

    Args:
        path: A price snapshot file (as `planner pricing refresh` writes), or None for the shipped one.
    """
    if path is None:
        return _load(None, None)
    try:
        stat = Path(path).stat()
        version = (stat.st_size, stat.st_mtime_ns)
    except OSError:
        version = None  # _load reports the unreadable file
    return _load(str(path), version)


@lru_cache(maxsize=8)
def _load(path: str | None, version: tuple[int, int] | None) -> Catalog:
    if path is None:
        resource = resources.files("pricing_data").joinpath(SHIPPED_SNAPSHOT)
        try:
            raw = resource.read_bytes()
        except OSError as exc:
            raise SnapshotError(f"the shipped price snapshot is missing ({exc}); reinstall memorybridge") from exc
        origin = f"shipped snapshot {SHIPPED_SNAPSHOT}"
    else:
        try:
            raw = Path(path).read_bytes()
        except OSError as exc:
            raise SnapshotError(f"price snapshot {path} cannot be read: {exc.strerror}") from exc
        origin = f"price snapshot {path}"
    try:
        snapshot = PriceSnapshot.model_validate_json(raw)
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(p) for p in err["loc"])
        raise SnapshotError(
            f"{origin} is not a valid snapshot ({where}: {err['msg']}); rebuild it with `planner pricing build`"
        ) from exc
    return Catalog(snapshot, hashlib.sha256(raw).hexdigest())
