"""Assemble a price snapshot from a spec source and a price source, byte-for-byte reproducibly.

The same inputs always give the same bytes: instances are sorted, keys are sorted, floats are
rounded at the source and nothing time-dependent goes in except the retrieval date the caller
states.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Mapping
from pathlib import Path

from foundation.fileio import atomic_write_bytes
from planner.catalog.models import InstanceSpec, PriceSnapshot, SnapshotMeta
from planner.catalog.prices import PriceRecord, price_instances
from planner.catalog.transfer import TRANSFER_REGION, US_EAST_1_TRANSFER
from planner.catalog.volumes import VOLUME_TYPES

SHIPPED_PRICE_NOTE = (
    "Prices: public SkyPilot catalog (skypilot-org/skypilot-catalog catalogs/v8/aws/vms.csv, commit "
    "00148f2a), saved as the price table aws-ec2-prices-us-east-1.csv; spot = lowest over the "
    "region's availability zones (local zones excluded)."
)


def build_snapshot(
    specs: Mapping[str, InstanceSpec],
    prices: Mapping[str, PriceRecord],
    *,
    region: str,
    retrieved_on: dt.date,
    spec_source: str,
    price_source: str,
    notes: list[str] | None = None,
) -> PriceSnapshot:
    instances = price_instances(specs, prices)
    derived = sum(1 for i in instances if i.price_provenance == "derived")
    meta = SnapshotMeta(
        region=region,
        retrieved_on=retrieved_on,
        spec_source=spec_source,
        price_source=price_source,
        sources=[spec_source, price_source, VOLUME_TYPES[0].source, US_EAST_1_TRANSFER.source],
        prices_without_specs=sorted(set(prices) - set(specs)),
        notes=[
            *(notes or []),
            *(
                []
                if region == TRANSFER_REGION
                else [f"Data transfer prices are {TRANSFER_REGION}'s; {region}'s may differ."]
            ),
            f"{len(instances)} instance types; {len(instances) - derived - _unpriced(instances)} listed, "
            f"{derived} derived linearly by vCPUs from their family, {_unpriced(instances)} without a price "
            "(never recommended).",
        ],
    )
    return PriceSnapshot(meta=meta, volumes=list(VOLUME_TYPES), instances=instances, transfer=US_EAST_1_TRANSFER)


def _unpriced(instances) -> int:
    return sum(1 for i in instances if i.price_provenance is None)


def snapshot_bytes(snapshot: PriceSnapshot) -> bytes:
    """Canonical serialisation: sorted keys, one instance per line (readable diffs), trailing newline."""
    data = snapshot.model_dump(mode="json")
    instances = data.pop("instances")
    head = json.dumps(data, sort_keys=True, indent=1)
    lines = ",\n".join("  " + json.dumps(i, sort_keys=True, separators=(",", ":")) for i in instances)
    return (head[:-2] + ',\n "instances": [\n' + lines + "\n ]\n}\n").encode("utf-8")


def write_snapshot(snapshot: PriceSnapshot, path: str | Path) -> Path:
    return atomic_write_bytes(path, snapshot_bytes(snapshot))
