"""The live refresh path end to end with real boto3 clients over HTTP: EC2 specs and spot prices from
a moto server, on-demand prices from a local Price List endpoint answering GetProducts in pages."""

from __future__ import annotations

import datetime as dt
import json
import statistics
import subprocess
import sys

import boto3
import botocore.exceptions
import pytest

from planner.catalog.build import snapshot_bytes, write_snapshot
from planner.catalog.pricelist import LINUX_SHARED
from planner.catalog.snapshot import load_catalog
from planner.catalog.sources import live_snapshot
from planner.errors import PricingSourceError

from .conftest import FakePriceListServer, FileServer, advisor_document
from .pricelist_docs import product_document

TODAY = dt.date(2026, 11, 20)

# What the Price List API holds for us-east-1 in this test. Only the documents marked "plain"
# match the Linux/Shared/NA/Used filters; with page_size 4 they span exactly two pages.
DOCUMENTS = [
    product_document("c7i.2xlarge", "0.3570000000"),  # plain, rate 0.044625
    product_document("c7i.xlarge", "0.5000000000", tenancy="Dedicated"),
    product_document("c7i.4xlarge", "0.8000000000"),  # plain, rate 0.05
    product_document("m5.large", "0.1880000000", operatingSystem="Windows"),
    product_document("c7i.8xlarge", "2.2400000000"),  # plain, rate 0.07
    product_document("g4dn.xlarge", "0.5260000000"),  # plain (GPU)
    product_document("c7i.xlarge", "0.3000000000", operatingSystem="RHEL"),
    product_document("c7i.metal-24xl", "0.0000000000"),  # plain, $0 placeholder
    # ---- page 2 ----
    product_document("m5.xlarge", "0.5000000000", capacitystatus="AllocatedCapacityReservation"),
    product_document("m5.large", "0.0960000000"),  # plain
    product_document("m5.xlarge", "0.2100000000", regionCode="us-west-2", location="US West (Oregon)"),
    product_document("zz1.large", "1.0000000000"),  # plain, no such type
    product_document("g4dn.2xlarge", "0.7520000000"),  # plain (GPU)
]
LISTED = {
    "c7i.2xlarge": 0.357,
    "c7i.4xlarge": 0.8,
    "c7i.8xlarge": 2.24,
    "g4dn.xlarge": 0.526,
    "m5.large": 0.096,
    "g4dn.2xlarge": 0.752,
}
PAGE_SIZE = 4


def pricing_client(url: str):
    return boto3.client("pricing", endpoint_url=url, region_name="us-east-1")


def describe_all(ec2) -> dict[str, dict]:
    pages = ec2.get_paginator("describe_instance_types").paginate()
    return {r["InstanceType"]: r for page in pages for r in page["InstanceTypes"]}


def spot_minimums(ec2) -> dict[str, float]:
    lowest: dict[str, float] = {}
    for page in ec2.get_paginator("describe_spot_price_history").paginate(ProductDescriptions=["Linux/UNIX"]):
        for entry in page["SpotPriceHistory"]:
            price = float(entry["SpotPrice"])
            if price > 0:
                lowest[entry["InstanceType"]] = min(price, lowest.get(entry["InstanceType"], price))
    return lowest


BANDS = {"g4dn.xlarge": 1, "c7i.2xlarge": 0, "m5.large": 4, "zz1.large": 2}  # zz1: a type AWS does not have


@pytest.fixture(scope="module")
def refreshed(ec2_client):
    with (
        FakePriceListServer(DOCUMENTS, page_size=PAGE_SIZE) as server,
        FileServer(advisor_document(BANDS)) as advisor,
        pytest.MonkeyPatch.context() as mp,
    ):
        mp.setenv("MEMORYBRIDGE_SPOT_ADVISOR_URL", advisor.url)
        snapshot = live_snapshot("us-east-1", ec2_client, pricing_client(server.url), TODAY)
    return snapshot, server.requests


@pytest.fixture(scope="module")
def described(ec2_client):
    return describe_all(ec2_client)


def test_specs_come_from_describe_instance_types(refreshed, described):
    snapshot, _ = refreshed
    assert len(described) > 500  # moto knows hundreds of real types
    assert [i.name for i in snapshot.instances] == sorted(described)
    g = next(i for i in snapshot.instances if i.name == "g4dn.xlarge")
    record = described["g4dn.xlarge"]
    assert g.vcpus == record["VCpuInfo"]["DefaultVCpus"] == 4
    assert g.memory_gib == record["MemoryInfo"]["SizeInMiB"] / 1024 == 16.0
    assert g.gpu_model == record["GpuInfo"]["Gpus"][0]["Name"] == "T4"
    assert g.network_baseline_gbps == record["NetworkInfo"]["NetworkCards"][0]["BaselineBandwidthInGbps"] == 5.0
    assert g.ebs_baseline_mbps == record["EbsInfo"]["EbsOptimizedInfo"]["BaselineThroughputInMBps"] == 118.75
    assert snapshot.meta.spec_source == "EC2 describe_instance_types (live)"


def test_on_demand_prices_are_exactly_the_documents_prices(refreshed):
    snapshot, _ = refreshed
    listed = {i.name: i.ondemand_usd_per_hour for i in snapshot.instances if i.price_provenance == "listed"}
    assert listed == LISTED  # page 2 (m5.large, g4dn.2xlarge) included; variants and $0 left out


def test_both_pages_were_requested_with_the_linux_shared_filters(refreshed):
    _, requests = refreshed
    assert len(requests) == 2
    assert all(r["target"] == FakePriceListServer.TARGET for r in requests)
    first, second = (r["body"] for r in requests)
    assert "NextToken" not in first and second["NextToken"] == f"page-{PAGE_SIZE}"
    for body in (first, second):
        assert body["ServiceCode"] == "AmazonEC2" and body["FormatVersion"] == "aws_v1"
        filters = {(f["Type"], f["Field"], f["Value"]) for f in body["Filters"]}
        assert ("TERM_MATCH", "regionCode", "us-east-1") in filters
        assert {("TERM_MATCH", k, v) for k, v in LINUX_SHARED.items()} <= filters


def test_retrieval_date_and_sources_are_recorded(refreshed):
    snapshot, _ = refreshed
    assert snapshot.meta.retrieved_on == TODAY
    assert snapshot.meta.region == "us-east-1"
    assert "Price List" in snapshot.meta.price_source
    assert snapshot.meta.prices_without_specs == ["zz1.large"]
    assert snapshot.age_days(today=TODAY) == 0


def test_missing_sizes_are_derived_only_for_non_gpu_families_with_listed_prices(refreshed):
    snapshot, _ = refreshed
    inst = {i.name: i for i in snapshot.instances}
    # c7i: listed rates 0.044625, 0.05, 0.07 per vCPU -> median 0.05.
    assert inst["c7i.xlarge"].price_provenance == "derived"
    assert inst["c7i.xlarge"].ondemand_usd_per_hour == pytest.approx(0.2, abs=1e-9)  # not RHEL's/Dedicated's
    assert inst["c7i.large"].ondemand_usd_per_hour == pytest.approx(0.1, abs=1e-9)
    assert inst["c7i.metal-24xl"].price_provenance == "derived"  # its $0 document did not list it
    assert inst["c7i.metal-24xl"].ondemand_usd_per_hour == pytest.approx(0.05 * 96, abs=1e-9)
    assert inst["m5.xlarge"].ondemand_usd_per_hour == pytest.approx(0.192, abs=1e-9)  # not us-west-2's 0.21
    # GPU sizes without a document stay unpriced, as do families with no listed price.
    assert inst["g4dn.4xlarge"].price_provenance is None and inst["g4dn.4xlarge"].ondemand_usd_per_hour is None
    assert inst["r5.large"].price_provenance is None and inst["r5.large"].ondemand_usd_per_hour is None

    families = {inst[n].family for n in LISTED if inst[n].gpu_count == 0}
    for i in snapshot.instances:
        if i.name in LISTED:
            assert i.price_provenance == "listed"
        elif i.gpu_count == 0 and i.family in families:
            assert i.price_provenance == "derived", i.name
        else:
            assert i.price_provenance is None and i.ondemand_usd_per_hour is None, i.name


def test_spot_prices_are_the_lowest_spot_price_history_entries(refreshed, ec2_client):
    snapshot, _ = refreshed
    lowest = spot_minimums(ec2_client)
    inst = {i.name: i for i in snapshot.instances}
    for name in LISTED:
        assert inst[name].spot_usd_per_hour == lowest.get(name), name
    ratios = [lowest["c7i.2xlarge"] / 0.357, lowest["c7i.4xlarge"] / 0.8, lowest["c7i.8xlarge"] / 2.24]
    assert inst["c7i.large"].spot_usd_per_hour == round(0.1 * statistics.median(ratios), 6)


def test_each_types_spot_interruption_band_is_the_advisors_for_linux_in_the_region(refreshed):
    snapshot, _ = refreshed
    bands = {i.name: i.spot_interruption_band for i in snapshot.instances if i.spot_interruption_band is not None}
    assert bands == {name: band for name, band in BANDS.items() if name != "zz1.large"}
    source = snapshot.spot_interruptions
    assert source is not None and source.retrieved_on == TODAY and "Spot Instance Advisor" in source.source
    assert [b.label for b in source.bands] == ["<5%", "5-10%", "10-15%", "15-20%", ">20%"]
    assert source.source in snapshot.meta.sources


def test_without_the_advisor_the_prices_stand_and_the_snapshot_says_why(ec2_client):
    with FakePriceListServer(DOCUMENTS) as server:  # the advisor's address refuses (aws_env)
        snapshot = live_snapshot("us-east-1", ec2_client, pricing_client(server.url), TODAY)
    assert snapshot.spot_interruptions is None
    assert all(i.spot_interruption_band is None for i in snapshot.instances)
    assert any(n.startswith("No spot interruption bands") for n in snapshot.meta.notes)
    assert {i.name for i in snapshot.instances if i.price_provenance == "listed"} == set(LISTED)


def test_refreshed_snapshot_is_usable_as_a_snapshot_file(refreshed, tmp_path):
    snapshot, _ = refreshed
    path = write_snapshot(snapshot, tmp_path / "aws-us-east-1.json")
    catalog = load_catalog(path)
    assert catalog.snapshot == snapshot
    assert catalog.instance("m5.large").ondemand_usd_per_hour == 0.096
    assert path.read_bytes() == snapshot_bytes(snapshot)


# --- failures ------------------------------------------------------------------------------------


def test_no_products_is_a_pricing_source_error(ec2_client):
    with (
        FakePriceListServer([]) as server,
        pytest.raises(PricingSourceError, match="no Linux on-demand prices for us-east-1"),
    ):
        live_snapshot("us-east-1", ec2_client, pricing_client(server.url), TODAY)
    assert len(server.requests) == 1


def test_an_api_error_is_a_pricing_source_error_not_a_botocore_exception(ec2_client):
    error = (400, "InvalidParameterException", "Input parameters are invalid: Filters")
    with FakePriceListServer(DOCUMENTS, error=error) as server, pytest.raises(PricingSourceError) as info:
        live_snapshot("us-east-1", ec2_client, pricing_client(server.url), TODAY)
    assert not isinstance(info.value, botocore.exceptions.BotoCoreError | botocore.exceptions.ClientError)
    assert "InvalidParameterException" in str(info.value)
    assert isinstance(info.value.__cause__, botocore.exceptions.ClientError)


# --- the CLI, pointed at the local endpoints through boto3's standard endpoint variables ---------


def test_cli_refresh_end_to_end(aws_env, moto_url, tmp_path, described):
    out = tmp_path / "refreshed.json"
    with FakePriceListServer(DOCUMENTS, page_size=PAGE_SIZE) as server:
        env = {
            **aws_env,
            "AWS_ENDPOINT_URL_EC2": moto_url,
            "AWS_ENDPOINT_URL_PRICING": server.url,
            "HOME": str(tmp_path),
        }
        before = dt.date.today()
        proc = subprocess.run(
            [
                sys.executable,
                "-m",
                "planner.cli.main",
                "pricing",
                "refresh",
                "--region",
                "us-east-1",
                "-o",
                str(out),
                "--json",
            ],
            capture_output=True,
            text=True,
            timeout=120,
            env=env,
        )
        after = dt.date.today()
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    report = json.loads(proc.stdout)
    assert report["path"] == str(out)
    assert dt.date.fromisoformat(report["meta"]["retrieved_on"]) in {before, after}
    catalog = load_catalog(out)
    listed = {i.name: i.ondemand_usd_per_hour for i in catalog.snapshot.instances if i.price_provenance == "listed"}
    assert listed == LISTED
    assert len(catalog.snapshot.instances) == len(described)
    assert len(server.requests) == 2


def test_cli_refresh_reports_a_pricing_error_in_one_line(aws_env, moto_url, tmp_path):
    out = tmp_path / "refreshed.json"
    with FakePriceListServer([]) as server:
        env = {**aws_env, "AWS_ENDPOINT_URL_EC2": moto_url, "AWS_ENDPOINT_URL_PRICING": server.url}
        proc = subprocess.run(
            [sys.executable, "-m", "planner.cli.main", "pricing", "refresh", "-o", str(out)],
            capture_output=True,
            text=True,
            timeout=120,
            env=env,
        )
    assert proc.returncode == 1
    assert "Traceback" not in proc.stderr
    errors = [ln for ln in proc.stderr.splitlines() if ln.startswith("error:")]
    assert len(errors) == 1, proc.stderr
    assert "no Linux on-demand prices" in errors[0]
    assert not out.exists()
