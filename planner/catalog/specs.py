"""Instance specs from EC2's describe-instance-types format: live (boto3) or moto's bundled copy.

Both sources yield the same record format, so one parser serves the offline build and the live
refresh.
"""

from __future__ import annotations

import gzip
import json
import re
from collections.abc import Iterable, Iterator
from importlib import resources
from typing import Any

from planner.catalog.models import InstanceSpec
from planner.errors import PricingSourceError

MIB_PER_GIB = 1024.0


def parse_instance_type(record: dict[str, Any]) -> InstanceSpec:
    """Turn one describe-instance-types record into an :class:`InstanceSpec`."""
    name = record["InstanceType"]
    archs = record.get("ProcessorInfo", {}).get("SupportedArchitectures", [])
    arch = "arm64" if "arm64" in archs and "x86_64" not in archs else "x86_64"
    gpus = record.get("GpuInfo", {}).get("Gpus", [])
    ebs = record.get("EbsInfo", {}).get("EbsOptimizedInfo", {})
    return InstanceSpec(
        name=name,
        family=name.split(".")[0],
        vcpus=record["VCpuInfo"]["DefaultVCpus"],
        memory_gib=record["MemoryInfo"]["SizeInMiB"] / MIB_PER_GIB,
        arch=arch,
        gpu_model=gpus[0]["Name"] if gpus else None,
        gpu_count=sum(g.get("Count", 0) for g in gpus),
        gpu_memory_gib=record.get("GpuInfo", {}).get("TotalGpuMemoryInMiB", 0) / MIB_PER_GIB,
        ebs_baseline_mbps=float(ebs.get("BaselineThroughputInMBps", 0.0)),
        ebs_max_mbps=float(ebs.get("MaximumThroughputInMBps", 0.0)),
        ebs_baseline_iops=float(ebs.get("BaselineIops", 0.0)),
        ebs_max_iops=float(ebs.get("MaximumIops", 0.0)),
        ena_express=bool(record.get("NetworkInfo", {}).get("EnaSrdSupported", False)),
        **_network_gbps(record.get("NetworkInfo", {})),
    )


def _network_gbps(info: dict[str, Any]) -> dict[str, float]:
    """Baseline and peak Gbit/s of the whole instance.

    Multi-card instances list each card's bandwidth; their sum can exceed what the instance
    offers (r6in.32xlarge: two cards, "200 Gigabit" in all), so the instance's own
    ``NetworkPerformance`` figure caps the baseline and is the peak when it states one.
    """
    cards = info.get("NetworkCards", [])
    baseline = float(sum(c.get("BaselineBandwidthInGbps", 0.0) for c in cards))
    peak = float(sum(c.get("PeakBandwidthInGbps", 0.0) for c in cards))
    label = re.fullmatch(r"(\d+(?:\.\d+)?) Gigabit", info.get("NetworkPerformance", ""))
    if len(cards) > 1 and label:
        peak = float(label[1])
        baseline = min(baseline, peak)
    return {"network_baseline_gbps": baseline, "network_peak_gbps": peak}


def parse_instance_types(records: Iterable[dict[str, Any]]) -> dict[str, InstanceSpec]:
    specs: dict[str, InstanceSpec] = {}
    for record in records:
        try:
            spec = parse_instance_type(record)
        except (KeyError, TypeError, ValueError) as exc:
            name = record.get("InstanceType", "?") if isinstance(record, dict) else "?"
            raise PricingSourceError(f"instance type record {name!r} is malformed: {exc}") from exc
        specs[spec.name] = spec
    return specs


def moto_bundle_records() -> list[dict[str, Any]]:
    """The describe-instance-types data that ships inside the ``moto`` package (offline source)."""
    try:
        bundle = resources.files("moto.ec2.resources").joinpath("instance_types.json.gz")
        with bundle.open("rb") as raw, gzip.open(raw, "rt", encoding="utf-8") as text:
            data = json.load(text)
    except ModuleNotFoundError as exc:
        raise PricingSourceError(
            "the offline spec source needs the moto package: pip install 'memorybridge[build]'"
        ) from exc
    except (OSError, ValueError) as exc:
        raise PricingSourceError(f"moto's instance_types.json.gz could not be read: {exc}") from exc
    return list(data.values()) if isinstance(data, dict) else list(data)


def live_records(ec2_client) -> Iterator[dict[str, Any]]:
    """Every instance type the region offers, paging through describe_instance_types."""
    paginator = ec2_client.get_paginator("describe_instance_types")
    for page in paginator.paginate():
        yield from page["InstanceTypes"]


def moto_version() -> str:
    try:
        from importlib.metadata import version

        return version("moto")
    except Exception:  # only used for a provenance string
        return "unknown"
