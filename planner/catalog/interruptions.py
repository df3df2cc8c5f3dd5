"""How often AWS reclaims each type's spot instances: the Spot Instance Advisor's bands.

AWS publishes, per region, operating system and instance type, a frequency-of-interruption band
(the share of its spot instances reclaimed over the trailing month: <5%, 5-10%, 10-15%, 15-20%,
>20%) in the data file its Spot Instance Advisor page reads. ``planner pricing build
--spot-advisor FILE`` takes a saved copy, ``planner pricing refresh`` fetches it; the snapshot
keeps each type's band and where the bands came from.
"""

from __future__ import annotations

import datetime as dt
import os
import urllib.request
from pathlib import Path

from pydantic import BaseModel, ConfigDict, ValidationError

from foundation.errors import format_validation_error
from planner.catalog.models import InterruptionBand, PriceSnapshot, SpotInterruptions
from planner.errors import PricingSourceError

SPOT_ADVISOR_URL = "https://spot-bid-advisor.s3.amazonaws.com/spot-advisor-data.json"
SPOT_ADVISOR_URL_ENV = "MEMORYBRIDGE_SPOT_ADVISOR_URL"  # a mirror (or a test's server) instead
OPERATING_SYSTEM = "Linux"
FETCH_TIMEOUT_S = 30


class _Lenient(BaseModel):
    model_config = ConfigDict(extra="ignore")  # the file has more than the bands; only these are read


class _Range(_Lenient):
    index: int
    label: str
    max: float


class _Entry(_Lenient):
    r: int  # the band's index


class _AdvisorFile(_Lenient):
    ranges: list[_Range]
    spot_advisor: dict[str, dict[str, dict[str, _Entry]]]  # region -> operating system -> type


def parse_spot_advisor(
    raw: bytes, region: str, source: str, retrieved_on: dt.date
) -> tuple[SpotInterruptions, dict[str, int]]:
    """The bands and each type's band (Linux, ``region``) from the advisor's data file."""
    try:
        advisor = _AdvisorFile.model_validate_json(raw)
    except ValidationError as exc:
        raise PricingSourceError(
            f"{source} is not Spot Instance Advisor data: {format_validation_error(exc)}"
        ) from None
    try:
        bands = [InterruptionBand(index=r.index, label=r.label, max_percent=min(r.max, 100)) for r in advisor.ranges]
    except ValidationError as exc:
        raise PricingSourceError(f"{source}: a band is malformed: {format_validation_error(exc)}") from None
    types = advisor.spot_advisor.get(region, {}).get(OPERATING_SYSTEM)
    if not types:
        raise PricingSourceError(f"{source} has no {OPERATING_SYSTEM} bands for {region}")
    known = {b.index for b in bands}
    unknown = sorted({e.r for e in types.values()} - known)
    if unknown:
        raise PricingSourceError(f"{source} puts types in band(s) {unknown} that its ranges do not define")
    return SpotInterruptions(source=source, retrieved_on=retrieved_on, bands=bands), {t: e.r for t, e in types.items()}


def read_spot_advisor(
    where: str | Path, region: str, retrieved_on: dt.date
) -> tuple[SpotInterruptions, dict[str, int]]:
    """The advisor's data from a saved file, or fetched from an http(s) URL."""
    text = str(where)
    if text.startswith(("https://", "http://")):
        try:
            with urllib.request.urlopen(text, timeout=FETCH_TIMEOUT_S) as response:  # an http(s) URL, checked above
                raw = response.read()
        except OSError as exc:
            raise PricingSourceError(f"the Spot Instance Advisor data could not be fetched from {text}: {exc}") from exc
        source = f"AWS Spot Instance Advisor data ({text})"
    else:
        try:
            raw = Path(where).read_bytes()
        except OSError as exc:
            raise PricingSourceError(f"spot advisor file {where} cannot be read: {exc.strerror}") from exc
        source = f"AWS Spot Instance Advisor data (saved copy {Path(where).name})"
    return parse_spot_advisor(raw, region, source, retrieved_on)


OPEN_BAND_SPAN_PERCENT = 10.0
"""The top band is open (">20%"): it is priced as if it spanned this many points above its floor."""


def representative_shares(interruptions: SpotInterruptions | None) -> dict[int, float]:
    """Each band's share of instances reclaimed in a month, as priced: the midpoint of the band's
    bounds (the previous band's top and its own), the open top band's floor plus half its assumed
    span."""
    if interruptions is None:
        return {}
    shares, floor = {}, 0.0
    for band in sorted(interruptions.bands, key=lambda b: b.index):
        top = min(band.max_percent, floor + OPEN_BAND_SPAN_PERCENT)
        shares[band.index] = (floor + top) / 2 / 100
        floor = band.max_percent
    return shares


def live_advisor_url() -> str:
    return os.environ.get(SPOT_ADVISOR_URL_ENV) or SPOT_ADVISOR_URL


def with_bands(snapshot: PriceSnapshot, interruptions: SpotInterruptions, bands: dict[str, int]) -> PriceSnapshot:
    """``snapshot`` with each type's band and the bands' source."""
    instances = [i.model_copy(update={"spot_interruption_band": bands.get(i.name)}) for i in snapshot.instances]
    meta = snapshot.meta.model_copy(update={"sources": [*snapshot.meta.sources, interruptions.source]})
    return PriceSnapshot.model_validate(
        {
            **snapshot.model_dump(),
            "meta": meta.model_dump(),
            "instances": [i.model_dump() for i in instances],
            "spot_interruptions": interruptions.model_dump(),
        }
    )
