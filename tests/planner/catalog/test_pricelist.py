"""Price List parsing: of the many EC2 product documents per instance type only the plain Linux,
shared-tenancy, no-software, used-capacity on-demand hourly price counts; Reserved terms, other
OS/tenancy/capacity variants and $0 placeholders are ignored; a non-product document is an error."""

from __future__ import annotations

import copy
import json

import pytest

from planner.catalog.pricelist import combine, parse_price_list
from planner.catalog.prices import PriceRecord
from planner.errors import PricingSourceError

from .pricelist_docs import TEMPLATE_FILE, add_ondemand_dimension, product_document


def as_strings(*docs):
    """get_products returns each document as a JSON string."""
    return [json.dumps(d) for d in docs]


def test_the_verbatim_template_gives_its_on_demand_price_not_a_reserved_one():
    # The template carries Reserved Hrs dimensions at $0.06 and $0.02: only OnDemand's $0.096 counts.
    assert parse_price_list([TEMPLATE_FILE.read_text()]) == {"m5.large": 0.096}


def test_linux_shared_prices_for_several_types():
    docs = as_strings(
        product_document("m5.large", "0.0960000000"),
        product_document("c7i.2xlarge", "0.3570000000"),
        product_document("g4dn.xlarge", "0.5260000000"),
    )
    assert parse_price_list(docs) == {"m5.large": 0.096, "c7i.2xlarge": 0.357, "g4dn.xlarge": 0.526}


def test_parsed_dicts_are_accepted_as_well_as_strings():
    assert parse_price_list([product_document("m5.large", "0.0960000000")]) == {"m5.large": 0.096}


@pytest.mark.parametrize(
    "variant",
    [
        {"operatingSystem": "Windows", "licenseModel": "No License required", "operation": "RunInstances:0002"},
        {"operatingSystem": "RHEL", "operation": "RunInstances:0010"},
        {"operatingSystem": "SUSE", "operation": "RunInstances:000g"},
        {"tenancy": "Dedicated", "usagetype": "DedicatedUsage:m5.large"},
        {"tenancy": "Host", "usagetype": "HostUsage:m5.large"},
        {"preInstalledSw": "SQL Std", "operation": "RunInstances:0004"},
        {"capacitystatus": "AllocatedCapacityReservation", "usagetype": "Reservation:m5.large"},
        {"capacitystatus": "UnusedCapacityReservation", "usagetype": "UnusedBox:m5.large"},
    ],
    ids=["windows", "rhel", "suse", "dedicated", "host", "sql", "allocated-cr", "unused-cr"],
)
def test_other_variants_are_ignored(variant):
    plain = product_document("m5.large", "0.0960000000")
    other = product_document("m5.large", "0.1880000000", **variant)
    # Whichever order AWS returns them in, the variant never replaces the plain price ...
    assert parse_price_list(as_strings(plain, other)) == {"m5.large": 0.096}
    assert parse_price_list(as_strings(other, plain)) == {"m5.large": 0.096}
    # ... and alone it prices nothing.
    assert parse_price_list(as_strings(other)) == {}


def test_document_without_instance_type_is_ignored():
    doc = product_document("m5.large", "0.0960000000")
    del doc["product"]["attributes"]["instanceType"]
    assert parse_price_list(as_strings(doc)) == {}


def test_zero_dollar_dimension_is_ignored():
    zero = product_document("m5.large", "0.0000000000")
    assert parse_price_list(as_strings(zero)) == {}
    # A $0 dimension next to a real hourly one: the real one is the price.
    assert parse_price_list(as_strings(add_ondemand_dimension(zero, "0.0960000000"))) == {"m5.large": 0.096}


def test_only_hourly_dimensions_count():
    doc = product_document("m5.large", "0.0960000000")
    term = next(iter(doc["terms"]["OnDemand"].values()))
    next(iter(term["priceDimensions"].values()))["unit"] = "Quantity"
    assert parse_price_list(as_strings(doc)) == {}


def test_reserved_terms_alone_price_nothing():
    doc = product_document("m5.large", "0.0960000000")
    del doc["terms"]["OnDemand"]
    assert doc["terms"]["Reserved"]  # still has hourly Reserved prices
    assert parse_price_list(as_strings(doc)) == {}


@pytest.mark.parametrize(
    "document",
    [
        '{"product": {"attributes": {"instanceType": "m5.la',
        "not json",
        "null",
        "[]",
        '{"terms": {}}',
        '{"product": {"sku": "X"}}',
        json.dumps({"product": None}),
    ],
    ids=["truncated", "not-json", "null", "list", "no-product", "no-attributes", "product-null"],
)
def test_malformed_document_is_a_pricing_source_error(document):
    good = json.dumps(product_document("m5.large", "0.0960000000"))
    with pytest.raises(PricingSourceError, match="price list document 1 is not a product document"):
        parse_price_list([good, document])


def test_malformed_terms_are_a_pricing_source_error():
    doc = product_document("m5.large", "0.0960000000")
    doc["terms"]["OnDemand"] = []
    with pytest.raises(PricingSourceError):
        parse_price_list(as_strings(doc))


def test_combine_pairs_on_demand_with_spot_minimums():
    records = combine({"m5.large": 0.096, "c7i.2xlarge": 0.357}, {"m5.large": 0.04, "t3.nano": 0.001})
    assert records == {
        "c7i.2xlarge": PriceRecord(instance_type="c7i.2xlarge", ondemand_usd_per_hour=0.357),
        "m5.large": PriceRecord(instance_type="m5.large", ondemand_usd_per_hour=0.096, spot_usd_per_hour=0.04),
    }


def test_documents_are_not_modified():
    doc = product_document("m5.large", "0.0960000000")
    before = copy.deepcopy(doc)
    parse_price_list([doc])
    assert doc == before
