"""Live prices for users with AWS credentials: the Price List API and EC2 spot price history.

``parse_price_list`` is pure (it reads Price List JSON documents), so it is tested on documents in
the Price List format; ``fetch_*`` only page through boto3 clients.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from typing import Any

from planner.catalog.prices import PriceRecord
from planner.errors import PricingSourceError

# The attributes that select the plain on-demand Linux price of a shared-tenancy instance.
LINUX_SHARED = {
    "operatingSystem": "Linux",
    "tenancy": "Shared",
    "preInstalledSw": "NA",
    "capacitystatus": "Used",
}
PRICE_LIST_ENDPOINT_REGION = "us-east-1"  # the Price List API is served from a few regions only


def parse_price_list(documents: Iterable[str | dict[str, Any]]) -> dict[str, float]:
    """On-demand USD/hour per instance type from Price List ``get_products`` documents.

    Documents for other operating systems, tenancies or capacity states are ignored, as are
    zero prices (AWS lists $0 for some reservation placeholders).
    """
    prices: dict[str, float] = {}
    for index, document in enumerate(documents):
        try:
            doc = json.loads(document) if isinstance(document, str) else document
            attributes = doc["product"]["attributes"]
        except (ValueError, KeyError, TypeError) as exc:
            raise PricingSourceError(f"price list document {index} is not a product document: {exc}") from exc
        if any(attributes.get(k) != v for k, v in LINUX_SHARED.items()) or "instanceType" not in attributes:
            continue
        try:
            price = _hourly_ondemand(doc.get("terms", {}).get("OnDemand", {}))
        except (AttributeError, TypeError) as exc:
            raise PricingSourceError(f"price list document {index} has malformed OnDemand terms: {exc}") from exc
        if price:
            prices[attributes["instanceType"]] = price
    return prices


def _hourly_ondemand(terms: dict[str, Any]) -> float | None:
    for term in terms.values():
        for dimension in term.get("priceDimensions", {}).values():
            if dimension.get("unit") == "Hrs":
                try:
                    value = float(dimension["pricePerUnit"]["USD"])
                except (KeyError, ValueError):
                    continue
                if 0 < value < float("inf"):
                    return value
    return None


def fetch_price_list(pricing_client, region: str) -> Iterator[str]:
    """Page through ``get_products`` for the region's Linux shared-tenancy instances."""
    filters = [{"Type": "TERM_MATCH", "Field": "regionCode", "Value": region}] + [
        {"Type": "TERM_MATCH", "Field": k, "Value": v} for k, v in LINUX_SHARED.items()
    ]
    paginator = pricing_client.get_paginator("get_products")
    for page in paginator.paginate(ServiceCode="AmazonEC2", Filters=filters, FormatVersion="aws_v1"):
        yield from page["PriceList"]


def fetch_spot_minimums(ec2_client, instance_types: Iterable[str] | None = None) -> dict[str, float]:
    """The lowest current Linux spot price per instance type over the region's availability zones."""
    paginator = ec2_client.get_paginator("describe_spot_price_history")
    kwargs: dict[str, Any] = {"ProductDescriptions": ["Linux/UNIX"]}
    if instance_types is not None:
        kwargs["InstanceTypes"] = sorted(instance_types)
    lowest: dict[str, float] = {}
    for page in paginator.paginate(**kwargs):
        for entry in page["SpotPriceHistory"]:
            price = float(entry["SpotPrice"])
            name = entry["InstanceType"]
            if price > 0 and price < lowest.get(name, float("inf")):
                lowest[name] = price
    return lowest


def combine(ondemand: dict[str, float], spot: dict[str, float]) -> dict[str, PriceRecord]:
    return {
        name: PriceRecord(instance_type=name, ondemand_usd_per_hour=price, spot_usd_per_hour=spot.get(name))
        for name, price in sorted(ondemand.items())
    }
