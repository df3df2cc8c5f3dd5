"""The shipped snapshot (loaded through importlib.resources) holds sane specs and prices, and a broken
snapshot file fails with a SnapshotError naming the file (one line from the CLI, no traceback)."""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import statistics
import subprocess
import sys

import numpy as np
import pytest

from foundation.errors import NotFoundError
from planner.catalog.snapshot import STALE_AFTER_DAYS, load_catalog
from planner.errors import SnapshotError

from .conftest import SHIPPED_SNAPSHOT_FILE


@pytest.fixture(scope="module")
def shipped():
    return load_catalog()


# --- contents -----------------------------------------------------------------------------------


def test_shipped_snapshot_is_the_pricing_data_file(shipped):
    raw = SHIPPED_SNAPSHOT_FILE.read_bytes()
    assert shipped.sha256 == hashlib.sha256(raw).hexdigest()
    assert shipped.snapshot.meta.region == "us-east-1"
    assert shipped.snapshot.meta.retrieved_on == dt.date(2026, 11, 1)


def test_instance_count_is_about_1300_and_matches_its_note(shipped):
    instances = shipped.snapshot.instances
    assert 1200 <= len(instances) <= 1500
    assert len(shipped.by_name) == len(instances)  # names are unique
    assert [i.name for i in instances] == sorted(i.name for i in instances)
    assert shipped.snapshot.meta.notes[-1].startswith(f"{len(instances)} instance types;")


def test_g4dn_xlarge_specs_and_price(shipped):
    g = shipped.instance("g4dn.xlarge")
    assert (g.vcpus, g.memory_gib, g.arch) == (4, 16.0, "x86_64")
    assert (g.gpu_model, g.gpu_count, g.gpu_memory_gib) == ("T4", 1, 16.0)
    assert g.network_baseline_gbps == 5.0  # the sustained figure ...
    assert g.network_peak_gbps == 25.0  # ... not the "Up to 25 Gigabit" burst
    assert g.ebs_baseline_mbps == 118.75
    assert g.ebs_max_mbps == 437.5
    assert g.ondemand_usd_per_hour == 0.526
    assert g.spot_usd_per_hour == 0.2
    assert g.price_provenance == "listed"


def test_priced_types_without_specs_are_recorded_not_invented(shipped):
    meta = shipped.snapshot.meta
    assert "p3.2xlarge" in meta.prices_without_specs
    assert meta.prices_without_specs == sorted(meta.prices_without_specs)
    assert not set(meta.prices_without_specs) & set(shipped.by_name)


def test_price_provenance_agrees_with_the_prices(shipped):
    seen = set()
    for inst in shipped.snapshot.instances:
        seen.add(inst.price_provenance)
        assert inst.price_provenance in ("listed", "derived", None)
        if inst.price_provenance is None:
            assert inst.ondemand_usd_per_hour is None and inst.spot_usd_per_hour is None, inst.name
        else:
            assert inst.ondemand_usd_per_hour is not None and inst.ondemand_usd_per_hour > 0, inst.name
        if inst.price_provenance == "derived":
            assert inst.gpu_count == 0, inst.name  # GPU sizes are never derived
    assert seen == {"listed", "derived", None}


def test_derived_prices_follow_their_family_listed_rates(shipped):
    rates: dict[str, list[float]] = {}
    for inst in shipped.snapshot.instances:
        if inst.price_provenance == "listed" and inst.gpu_count == 0:
            rates.setdefault(inst.family, []).append(inst.ondemand_usd_per_hour / inst.vcpus)
    derived = [i for i in shipped.snapshot.instances if i.price_provenance == "derived"]
    assert derived
    for inst in derived:
        assert inst.family in rates, inst.name
        expected = statistics.median(rates[inst.family]) * inst.vcpus
        assert inst.ondemand_usd_per_hour == pytest.approx(expected, abs=5e-7), inst.name
    # Unpriced non-GPU types belong to families with no listed price at all.
    for inst in shipped.snapshot.instances:
        if inst.price_provenance is None and inst.gpu_count == 0:
            assert inst.family not in rates, inst.name


def test_gp3_prices_and_free_allowance(shipped):
    gp3 = shipped.volumes["gp3"]
    assert gp3.usd_per_gb_month == 0.08
    assert (gp3.free_iops, gp3.free_mbps) == (3000, 125)
    assert gp3.hourly_usd(100, 3000, 125) == pytest.approx(100 * 0.08 / 730, rel=1e-12)
    # Above the free allowance: $0.005 per IOPS-month and $0.04 per MB/s-month.
    assert gp3.hourly_usd(100, 4000, 225) == pytest.approx((8 + 1000 * 0.005 + 100 * 0.04) / 730, rel=1e-12)
    # Below the allowance costs the same as at it, and numpy arrays work elementwise.
    sizes = np.array([100.0, 100.0, 200.0])
    hourly = gp3.hourly_usd(sizes, np.array([1000.0, 3000.0, 3000.0]), np.array([125.0, 125.0, 500.0]))
    assert hourly == pytest.approx([8 / 730, 8 / 730, (16 + 375 * 0.04) / 730], rel=1e-12)
    assert set(shipped.volumes) == {"gp2", "gp3", "io2"}


def test_staleness_is_measured_from_the_retrieval_date(shipped):
    day = shipped.snapshot.meta.retrieved_on
    fresh = shipped.info(today=day + dt.timedelta(days=STALE_AFTER_DAYS))
    stale = shipped.info(today=day + dt.timedelta(days=STALE_AFTER_DAYS + 1))
    assert (fresh.age_days, fresh.stale) == (30, False)
    assert (stale.age_days, stale.stale) == (31, True)
    assert stale.sha256 == shipped.sha256


def test_unknown_instance_suggests_close_names(shipped):
    with pytest.raises(NotFoundError) as info:
        shipped.instance("g4dn.xlarg")
    assert "g4dn.xlarge" in info.value.suggestions
    assert info.value.exit_code == 2


def test_columns_mark_unpriced_types_nan(shipped):
    cols = shipped.columns
    names = [i.name for i in cols.instances]
    assert cols.ondemand.shape == (len(names),)
    assert cols.ondemand[names.index("g4dn.xlarge")] == 0.526
    assert np.isnan(cols.ondemand[names.index("g4dn.metal")])
    assert np.array_equal(np.isnan(cols.ondemand), np.array([i.ondemand_usd_per_hour is None for i in cols.instances]))


# --- broken snapshot files ----------------------------------------------------------------------


@pytest.fixture()
def truncated(tmp_path):
    path = tmp_path / "truncated.json"
    raw = SHIPPED_SNAPSHOT_FILE.read_bytes()
    path.write_bytes(raw[: len(raw) // 2])
    return path


@pytest.fixture()
def missing_field(tmp_path):
    data = json.loads(SHIPPED_SNAPSHOT_FILE.read_bytes())
    del data["instances"][5]["vcpus"]
    path = tmp_path / "missing-field.json"
    path.write_text(json.dumps(data))
    return path


def test_truncated_json_is_a_snapshot_error_naming_the_file(truncated):
    with pytest.raises(SnapshotError) as info:
        load_catalog(truncated)
    assert str(truncated) in str(info.value)
    assert "not a valid snapshot" in str(info.value)
    assert info.value.exit_code == 1


def test_missing_field_is_a_snapshot_error_naming_file_and_field(missing_field):
    with pytest.raises(SnapshotError) as info:
        load_catalog(missing_field)
    assert str(missing_field) in str(info.value)
    assert "instances.5.vcpus" in str(info.value)


def test_missing_meta_field_is_named(tmp_path):
    data = json.loads(SHIPPED_SNAPSHOT_FILE.read_bytes())
    del data["meta"]["retrieved_on"]
    path = tmp_path / "no-date.json"
    path.write_text(json.dumps(data))
    with pytest.raises(SnapshotError, match=r"meta\.retrieved_on"):
        load_catalog(path)


def test_absent_file_is_a_snapshot_error(tmp_path):
    path = tmp_path / "absent.json"
    with pytest.raises(SnapshotError) as info:
        load_catalog(path)
    assert str(path) in str(info.value) and "cannot be read" in str(info.value)


def _show(*args, env_snapshot=None):
    import os

    env = dict(os.environ)
    env.pop("MEMORYBRIDGE_SNAPSHOT", None)
    if env_snapshot is not None:
        env["MEMORYBRIDGE_SNAPSHOT"] = str(env_snapshot)
    return subprocess.run(
        [sys.executable, "-m", "planner.cli.main", "pricing", "show", *args],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )


@pytest.mark.parametrize("bad", ["truncated", "missing_field"])
def test_cli_show_on_a_broken_snapshot_prints_one_error_line(request, bad):
    path = request.getfixturevalue(bad)
    proc = _show("--snapshot", str(path))
    assert proc.returncode == 1
    assert proc.stdout == ""
    lines = proc.stderr.splitlines()
    assert len(lines) == 1, proc.stderr  # long tmp paths must not be wrapped either
    assert lines[0].startswith(f"error: price snapshot {path} is not a valid snapshot")
    assert "Traceback" not in proc.stderr


def test_cli_show_reads_the_snapshot_from_the_environment(truncated):
    proc = _show(env_snapshot=truncated)
    assert proc.returncode == 1
    assert proc.stderr.splitlines() == [proc.stderr.strip()]
    assert str(truncated) in proc.stderr


def test_cli_show_json_describes_the_shipped_snapshot(shipped):
    proc = _show("--json")
    assert proc.returncode == 0, proc.stderr
    shown = json.loads(proc.stdout)
    assert shown["meta"] == shipped.snapshot.meta.model_dump(mode="json")
    assert shown["info"]["sha256"] == shipped.sha256
    assert [v["name"] for v in shown["volumes"]] == ["gp2", "gp3", "io2"]
