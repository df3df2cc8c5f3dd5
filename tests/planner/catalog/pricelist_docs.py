"""Build AWS Price List ``get_products`` documents for tests, in the real format.

The template (data/pricelist_m5_large_linux.json) is one EC2 product document as the Price List
Query API returns it: product.attributes, terms.OnDemand.<sku>.<offer>.priceDimensions.<rateCode>,
and Reserved terms with their own (lower) hourly prices, which a parser must never read.
"""

from __future__ import annotations

import copy
import hashlib
import json
from pathlib import Path
from typing import Any

TEMPLATE_FILE = Path(__file__).resolve().parent / "data" / "pricelist_m5_large_linux.json"
_TEMPLATE: dict[str, Any] = json.loads(TEMPLATE_FILE.read_text(encoding="utf-8"))
ONDEMAND_OFFER = "JRTCKXETXF"
HOURLY_RATE = "6YS6EN2CT7"


def product_document(instance_type: str, ondemand_usd: str, **attributes: str) -> dict[str, Any]:
    """A Price List document for ``instance_type`` with one on-demand hourly dimension.

    ``ondemand_usd`` is the string AWS puts in pricePerUnit.USD (e.g. "0.0960000000");
    ``attributes`` override product attributes (operatingSystem="Windows", tenancy="Dedicated", ...).
    The SKU is derived from the inputs so that variants of one type get distinct SKUs, as on AWS.
    """
    doc = copy.deepcopy(_TEMPLATE)
    attrs = doc["product"]["attributes"]
    attrs.update(instanceType=instance_type, usagetype=f"BoxUsage:{instance_type}")
    attrs.update(attributes)
    sku = hashlib.sha1(json.dumps([instance_type, ondemand_usd, sorted(attributes.items())]).encode())
    sku = sku.hexdigest()[:16].upper()
    doc["product"]["sku"] = sku

    old = next(iter(doc["terms"]["OnDemand"].values()))
    dimension = next(iter(old["priceDimensions"].values()))
    rate_code = f"{sku}.{ONDEMAND_OFFER}.{HOURLY_RATE}"
    dimension.update(
        rateCode=rate_code,
        pricePerUnit={"USD": ondemand_usd},
        description=f"${float(ondemand_usd):g} per On Demand {attrs['operatingSystem']} {instance_type} Instance Hour",
    )
    old.update(sku=sku, priceDimensions={rate_code: dimension})
    doc["terms"]["OnDemand"] = {f"{sku}.{ONDEMAND_OFFER}": old}

    reserved = {}
    for term in doc["terms"]["Reserved"].values():
        term["sku"] = sku
        term["priceDimensions"] = {
            f"{sku}.{term['offerTermCode']}.{code.rsplit('.', 1)[1]}": {
                **dim,
                "rateCode": f"{sku}.{term['offerTermCode']}.{code.rsplit('.', 1)[1]}",
            }
            for code, dim in term["priceDimensions"].items()
        }
        reserved[f"{sku}.{term['offerTermCode']}"] = term
    doc["terms"]["Reserved"] = reserved
    return doc


def add_ondemand_dimension(doc: dict[str, Any], usd: str, unit: str = "Hrs") -> dict[str, Any]:
    """A copy of ``doc`` with a second on-demand price dimension (another rate code) added."""
    doc = copy.deepcopy(doc)
    term = next(iter(doc["terms"]["OnDemand"].values()))
    first = next(iter(term["priceDimensions"].values()))
    code = f"{term['sku']}.{ONDEMAND_OFFER}.EXTRA{len(term['priceDimensions'])}"
    term["priceDimensions"][code] = {**first, "rateCode": code, "unit": unit, "pricePerUnit": {"USD": usd}}
    return doc
