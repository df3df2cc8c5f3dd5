"""Instance specs from describe-instance-types records (moto's bundled copy of the real data)."""

from __future__ import annotations

import copy
import re

import pytest

from planner.catalog.specs import moto_bundle_records, parse_instance_types
from planner.errors import PricingSourceError


@pytest.fixture(scope="module")
def records() -> dict[str, dict]:
    return {r["InstanceType"]: r for r in moto_bundle_records()}


@pytest.fixture(scope="module")
def specs(records):
    return parse_instance_types(records.values())


def test_every_record_parses(records, specs):
    assert len(records) > 1000
    assert set(specs) == set(records)


def test_arm_gpu_and_bandwidth_fields(specs):
    assert specs["m7g.large"].arch == "arm64"
    assert specs["m7i.large"].arch == "x86_64"
    p4d = specs["p4d.24xlarge"]
    assert (p4d.gpu_model, p4d.gpu_count, p4d.gpu_memory_gib) == ("A100", 8, 320.0)
    c7i = specs["c7i.xlarge"]
    assert (c7i.network_baseline_gbps, c7i.network_peak_gbps) == (1.562, 12.5)  # "Up to 12.5 Gigabit"
    assert (c7i.ebs_baseline_mbps, c7i.ebs_max_mbps) == (156.25, 1250.0)
    assert (c7i.ebs_baseline_iops, c7i.ebs_max_iops) == (6000.0, 40000.0)
    assert c7i.family == "c7i" and specs["u-6tb1.112xlarge"].family == "u-6tb1"


@pytest.mark.parametrize("field", ["VCpuInfo", "MemoryInfo", "InstanceType"])
def test_malformed_record_is_a_pricing_source_error(records, field):
    bad = copy.deepcopy(records["m5.large"])
    del bad[field]
    with pytest.raises(PricingSourceError, match="is malformed"):
        parse_instance_types([records["c7i.xlarge"], bad])


def test_zero_vcpus_is_a_pricing_source_error(records):
    bad = copy.deepcopy(records["m5.large"])
    bad["VCpuInfo"]["DefaultVCpus"] = 0
    with pytest.raises(PricingSourceError, match="'m5.large' is malformed"):
        parse_instance_types([bad])


def test_single_card_types_report_their_card_bandwidth(records, specs):
    for name, record in records.items():
        cards = record["NetworkInfo"]["NetworkCards"]
        if len(cards) == 1:
            assert specs[name].network_baseline_gbps == cards[0].get("BaselineBandwidthInGbps", 0.0), name
            assert specs[name].network_peak_gbps == cards[0].get("PeakBandwidthInGbps", 0.0), name


def test_multi_card_bandwidth_is_the_instance_total(records, specs):
    wrong = {}
    for name, record in records.items():
        info = record["NetworkInfo"]
        label = re.fullmatch(r"(\d+) Gigabit", info["NetworkPerformance"])
        if len(info["NetworkCards"]) > 1 and label and specs[name].network_peak_gbps != float(label[1]):
            wrong[name] = (info["NetworkPerformance"], specs[name].network_peak_gbps)
    assert wrong == {}


def test_ena_express_support_is_read_from_each_record(records, specs):
    supported = {name for name, r in records.items() if r["NetworkInfo"].get("EnaSrdSupported")}
    assert {name for name, s in specs.items() if s.ena_express} == supported
    assert {"p5.48xlarge", "r6in.32xlarge", "g6e.12xlarge"} <= supported  # as EC2 reports them
    assert not specs["g4dn.xlarge"].ena_express and not specs["r6in.xlarge"].ena_express
