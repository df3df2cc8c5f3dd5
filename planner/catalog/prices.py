"""Instance prices: the CSV price table (offline), and sizes derived from their family's listed prices.

Within a non-GPU EC2 family the on-demand price is proportional to vCPUs (the shipped table
shows it exactly, up to rounding), so a size missing from the price source can be priced from its
siblings; such prices are marked ``derived``. GPU sizes are not proportional and are never derived.
"""

from __future__ import annotations

import csv
import io
import statistics
from collections import defaultdict
from collections.abc import Mapping
from pathlib import Path

from pydantic import Field, ValidationError

from foundation.models import StrictModel
from planner.catalog.models import InstanceSpec, InstanceType, PriceProvenance
from planner.errors import PricingSourceError

CSV_COLUMNS = ("instance_type", "ondemand_usd_per_hour", "spot_usd_per_hour_min")
PRICE_DECIMALS = 6


class PriceRecord(StrictModel):
    """One instance type's listed prices from a price source."""

    instance_type: str = Field(min_length=1)
    ondemand_usd_per_hour: float = Field(gt=0, allow_inf_nan=False)
    spot_usd_per_hour: float | None = Field(None, gt=0, allow_inf_nan=False)


# CSV column for each PriceRecord field, so errors name what the user has to edit.
CSV_COLUMN_FOR_FIELD = {"spot_usd_per_hour": "spot_usd_per_hour_min"}


def read_price_csv(path: str | Path) -> dict[str, PriceRecord]:
    """Read a price table with at least the columns in :data:`CSV_COLUMNS`.

    Errors name the file, the line and the column so a hand-edited table can be fixed.
    """
    path = Path(path)
    try:
        # utf-8-sig: a table saved by a spreadsheet starts with a byte-order mark.
        text = path.read_text(encoding="utf-8-sig")
    except OSError as exc:
        raise PricingSourceError(f"price table {path} cannot be read: {exc.strerror}") from exc
    except UnicodeDecodeError as exc:
        raise PricingSourceError(f"price table {path} is not UTF-8 text (byte {exc.start}); save it as UTF-8") from exc
    reader = csv.DictReader(io.StringIO(text, newline=""))
    missing = [c for c in CSV_COLUMNS if c not in (reader.fieldnames or [])]
    if missing:
        raise PricingSourceError(f"price table {path} lacks the column(s) {', '.join(missing)}")
    records: dict[str, PriceRecord] = {}
    for row in reader:
        line = reader.line_num  # the file line, blank lines included
        spot = (row.get("spot_usd_per_hour_min") or "").strip()
        try:
            record = PriceRecord(
                instance_type=(row["instance_type"] or "").strip(),
                ondemand_usd_per_hour=row["ondemand_usd_per_hour"],
                spot_usd_per_hour=spot or None,
            )
        except ValidationError as exc:
            err = exc.errors()[0]
            field = CSV_COLUMN_FOR_FIELD.get(str(err["loc"][0]), str(err["loc"][0]))
            raise PricingSourceError(f"{path}:{line}: {field}: {err['msg']}") from exc
        if record.instance_type in records:
            raise PricingSourceError(f"{path}:{line}: {record.instance_type} is listed twice")
        records[record.instance_type] = record
    return records


def price_instances(
    specs: Mapping[str, InstanceSpec], prices: Mapping[str, PriceRecord], derive: bool = True
) -> list[InstanceType]:
    """Attach prices to specs: listed where the source has them, derived for missing non-GPU sizes."""
    per_vcpu, spot_ratio = _family_rates(specs, prices) if derive else ({}, {})
    priced: list[InstanceType] = []
    for name in sorted(specs):
        spec = specs[name]
        ondemand: float | None = None
        spot: float | None = None
        provenance: PriceProvenance | None = None
        if name in prices:
            ondemand, spot, provenance = prices[name].ondemand_usd_per_hour, prices[name].spot_usd_per_hour, "listed"
        elif not spec.has_gpu and spec.family in per_vcpu:
            ondemand = round(per_vcpu[spec.family] * spec.vcpus, PRICE_DECIMALS)
            ratio = spot_ratio.get(spec.family)
            # A derived price that rounds to zero is no price (placeholder spot data can be tiny).
            spot = round(ondemand * ratio, PRICE_DECIMALS) if ratio else None
            spot = spot or None
            provenance = "derived"
        priced.append(
            InstanceType(
                **spec.model_dump(), ondemand_usd_per_hour=ondemand, spot_usd_per_hour=spot, price_provenance=provenance
            )
        )
    return priced


def _family_rates(
    specs: Mapping[str, InstanceSpec], prices: Mapping[str, PriceRecord]
) -> tuple[dict[str, float], dict[str, float]]:
    """Median on-demand $/vCPU-hour and median spot/on-demand ratio of each non-GPU family."""
    by_vcpu: dict[str, list[float]] = defaultdict(list)
    ratios: dict[str, list[float]] = defaultdict(list)
    for name, record in prices.items():
        spec = specs.get(name)
        if spec is None or spec.has_gpu:
            continue
        by_vcpu[spec.family].append(record.ondemand_usd_per_hour / spec.vcpus)
        if record.spot_usd_per_hour:
            ratios[spec.family].append(record.spot_usd_per_hour / record.ondemand_usd_per_hour)
    return (
        {f: statistics.median(v) for f, v in by_vcpu.items()},
        {f: statistics.median(v) for f, v in ratios.items()},
    )
