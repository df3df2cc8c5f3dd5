"""Data transfer prices in the snapshot: shipped with their source, and older snapshots still load."""

from __future__ import annotations

import json

from planner.catalog.snapshot import load_catalog
from planner.catalog.transfer import US_EAST_1_TRANSFER

from .conftest import SHIPPED_SNAPSHOT_FILE


def test_the_shipped_snapshot_carries_transfer_prices_and_names_their_source():
    catalog = load_catalog()
    assert catalog.snapshot.transfer == US_EAST_1_TRANSFER
    assert US_EAST_1_TRANSFER.source in catalog.snapshot.meta.sources
    assert catalog.transfer.cross_az_usd_per_gb < catalog.transfer.internet_egress_usd_per_gb


def test_a_snapshot_built_before_transfer_prices_loads_with_us_east_1s(tmp_path):
    data = json.loads(SHIPPED_SNAPSHOT_FILE.read_text())
    del data["transfer"]
    older = tmp_path / "older.json"
    older.write_text(json.dumps(data))
    catalog = load_catalog(older)
    assert catalog.snapshot.transfer is None and catalog.transfer == US_EAST_1_TRANSFER


def test_another_regions_snapshot_says_its_transfer_prices_are_us_east_1s(real_price_csv):
    import datetime as dt

    from planner.catalog.sources import offline_snapshot

    snapshot = offline_snapshot(real_price_csv, dt.date(2026, 11, 1), region="eu-west-1")
    assert any("Data transfer prices are us-east-1's; eu-west-1's may differ" in n for n in snapshot.meta.notes)
