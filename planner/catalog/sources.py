"""Where a snapshot's inputs come from: offline (moto's spec bundle + a CSV) or live AWS (boto3)."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

from planner.catalog.build import SHIPPED_PRICE_NOTE, build_snapshot
from planner.catalog.interruptions import live_advisor_url, read_spot_advisor, with_bands
from planner.catalog.models import PriceSnapshot
from planner.catalog.pricelist import (
    PRICE_LIST_ENDPOINT_REGION,
    combine,
    fetch_price_list,
    fetch_spot_minimums,
    parse_price_list,
)
from planner.catalog.prices import read_price_csv
from planner.catalog.specs import live_records, moto_bundle_records, moto_version, parse_instance_types
from planner.errors import PricingSourceError


def offline_snapshot(
    prices_csv: str | Path,
    retrieved_on: dt.date,
    region: str = "us-east-1",
    specs: str = "moto",
    ec2_client=None,
    spot_advisor: str | Path | None = None,
) -> PriceSnapshot:
    """Specs from moto's bundled describe-instance-types data (or live EC2), prices from a CSV table,
    and, given ``spot_advisor`` (a saved Spot Instance Advisor data file or its URL), each type's
    interruption band."""
    records, spec_source = _spec_records(specs, ec2_client)
    note = [SHIPPED_PRICE_NOTE] if Path(prices_csv).name == "aws-ec2-prices-us-east-1.csv" else []
    snapshot = build_snapshot(
        parse_instance_types(records),
        read_price_csv(prices_csv),
        region=region,
        retrieved_on=retrieved_on,
        spec_source=spec_source,
        price_source=f"CSV price table {Path(prices_csv).name}",
        notes=note,
    )
    if spot_advisor is None:
        return snapshot
    return with_bands(snapshot, *read_spot_advisor(spot_advisor, region, retrieved_on))


def live_snapshot(region: str, ec2_client, pricing_client, today: dt.date) -> PriceSnapshot:
    """Everything live: describe_instance_types, Price List get_products and spot price history."""
    records, spec_source = _spec_records("aws", ec2_client)
    specs = parse_instance_types(records)
    try:
        ondemand = parse_price_list(fetch_price_list(pricing_client, region))
        spot = fetch_spot_minimums(ec2_client)
    except PricingSourceError:
        raise
    except Exception as exc:  # botocore errors: credentials, throttling, endpoint
        raise PricingSourceError(f"AWS pricing could not be read: {exc}") from exc
    if not ondemand:
        raise PricingSourceError(f"the Price List API returned no Linux on-demand prices for {region}")
    snapshot = build_snapshot(
        specs,
        combine(ondemand, spot),
        region=region,
        retrieved_on=today,
        spec_source=spec_source,
        price_source=f"AWS Price List API (get_products, endpoint {PRICE_LIST_ENDPOINT_REGION}) "
        "+ EC2 spot price history",
    )
    try:
        return with_bands(snapshot, *read_spot_advisor(live_advisor_url(), region, today))
    except PricingSourceError as exc:  # the prices stand without the bands; the snapshot says so
        note = f"No spot interruption bands (spot plans are priced at the planner's assumed rate): {exc}"
        return snapshot.model_copy(
            update={"meta": snapshot.meta.model_copy(update={"notes": [*snapshot.meta.notes, note]})}
        )


def _spec_records(specs: str, ec2_client):
    if specs == "moto":
        return moto_bundle_records(), f"moto {moto_version()} bundled describe-instance-types data"
    if specs == "aws":
        if ec2_client is None:
            raise PricingSourceError("live specs need an EC2 client (AWS credentials)")
        try:
            return list(live_records(ec2_client)), "EC2 describe_instance_types (live)"
        except Exception as exc:  # botocore errors: credentials, throttling, endpoint
            raise PricingSourceError(f"EC2 describe_instance_types failed: {exc}") from exc
    raise PricingSourceError(f"unknown spec source {specs!r}: use moto or aws")
