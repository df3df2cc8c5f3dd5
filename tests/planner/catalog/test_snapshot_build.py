"""Snapshot reproducibility: the same inputs give the same bytes, from the library and from
`planner pricing build`, and those bytes are the shipped pricing_data/aws-us-east-1.json."""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import subprocess
import sys

import pytest

from planner.catalog.build import build_snapshot, snapshot_bytes, write_snapshot
from planner.catalog.models import PriceSnapshot
from planner.catalog.prices import read_price_csv
from planner.catalog.snapshot import load_catalog
from planner.catalog.sources import offline_snapshot
from planner.catalog.specs import moto_bundle_records, moto_version, parse_instance_types

from .conftest import OFFLINE_RETRIEVED_ON, REPO_ROOT, SHIPPED_SNAPSHOT_FILE, advisor_document

# The command the shipped snapshot was built with (README.md, "pricing build"), run from the repo root.
SHIPPED_BUILD_ARGS = [
    "pricing",
    "build",
    "--prices-csv",
    "../shared/reference/aws-ec2-prices-us-east-1.csv",
    "--retrieved-on",
    OFFLINE_RETRIEVED_ON,
]


def _strict_json(raw: bytes):
    """json.loads that refuses the non-standard constants Python would otherwise accept."""

    def reject(name):
        raise ValueError(f"non-standard JSON constant {name}")

    return json.loads(raw, parse_constant=reject)


@pytest.fixture(scope="module")
def built_bytes(real_offline_snapshot) -> bytes:
    return snapshot_bytes(real_offline_snapshot)


@pytest.fixture(scope="module")
def cli_built(real_price_csv, tmp_path_factory):
    """`planner pricing build ...` exactly as documented, run in a subprocess from the repo root."""
    out = tmp_path_factory.mktemp("cli-build") / "aws-us-east-1.json"
    proc = subprocess.run(
        [sys.executable, "-m", "planner.cli.main", *SHIPPED_BUILD_ARGS, "-o", str(out)],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    return proc, out


def test_building_twice_gives_identical_bytes(real_price_csv, built_bytes):
    again = snapshot_bytes(offline_snapshot(real_price_csv, dt.date(2026, 11, 1)))
    assert again == built_bytes


def test_bytes_are_canonical_json_with_one_instance_per_line(built_bytes, real_offline_snapshot):
    data = _strict_json(built_bytes)
    assert built_bytes.endswith(b"\n ]\n}\n")
    assert PriceSnapshot.model_validate(data) == real_offline_snapshot
    lines = built_bytes.decode().splitlines()
    instance_lines = [ln for ln in lines if ln.startswith('  {"arch":')]
    assert len(instance_lines) == len(real_offline_snapshot.instances)  # diff-friendly: one per line
    names = [json.loads(ln.rstrip(","))["name"] for ln in instance_lines]
    assert names == sorted(names)


def test_input_order_does_not_change_the_bytes(real_price_csv, built_bytes, real_offline_snapshot):
    specs = parse_instance_types(moto_bundle_records())
    prices = read_price_csv(real_price_csv)
    meta = real_offline_snapshot.meta
    shuffled = build_snapshot(
        dict(reversed(list(specs.items()))),
        dict(reversed(list(prices.items()))),
        region=meta.region,
        retrieved_on=meta.retrieved_on,
        spec_source=meta.spec_source,
        price_source=meta.price_source,
        notes=meta.notes[:-1],
    )
    assert snapshot_bytes(shuffled) == built_bytes


def test_a_different_retrieval_date_changes_only_that_field(real_price_csv, built_bytes):
    other = snapshot_bytes(offline_snapshot(real_price_csv, dt.date(2026, 11, 2)))
    assert other != built_bytes
    a, b = json.loads(built_bytes), json.loads(other)
    assert (a["meta"]["retrieved_on"], b["meta"]["retrieved_on"]) == ("2026-11-01", "2026-11-02")
    b["meta"]["retrieved_on"] = a["meta"]["retrieved_on"]
    assert a == b


def test_cli_build_writes_the_same_bytes_as_the_library(cli_built, built_bytes):
    proc, out = cli_built
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    assert out.read_bytes() == built_bytes
    assert str(out) in proc.stdout


def test_cli_build_rejects_a_bad_date_without_traceback(real_price_csv, tmp_path):
    out = tmp_path / "x.json"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "planner.cli.main",
            "pricing",
            "build",
            "--prices-csv",
            str(real_price_csv),
            "--retrieved-on",
            "01/11/2026",
            "-o",
            str(out),
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2
    assert proc.stderr.strip().startswith("error:") and "--retrieved-on" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert not out.exists()


def test_cli_build_reports_a_broken_price_table_in_one_line(tmp_path):
    bad = tmp_path / "prices.csv"
    bad.write_text("instance_type,ondemand_usd_per_hour,spot_usd_per_hour_min\nm5.large,-1,0.04\n")
    out = tmp_path / "x.json"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "planner.cli.main",
            "pricing",
            "build",
            "--prices-csv",
            str(bad),
            "--retrieved-on",
            "2026-11-01",
            "-o",
            str(out),
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 1
    assert proc.stderr.splitlines() == [proc.stderr.strip()]
    assert proc.stderr.startswith(f"error: {bad}:2: ondemand_usd_per_hour")
    assert not out.exists()


def test_written_snapshot_loads_back_with_the_digest_of_its_bytes(real_offline_snapshot, built_bytes, tmp_path):
    path = write_snapshot(real_offline_snapshot, tmp_path / "snap.json")
    assert path.read_bytes() == built_bytes
    catalog = load_catalog(path)
    assert catalog.snapshot == real_offline_snapshot
    assert catalog.sha256 == hashlib.sha256(built_bytes).hexdigest()


def test_shipped_snapshot_is_exactly_what_the_build_command_writes(cli_built, built_bytes):
    proc, out = cli_built
    shipped = SHIPPED_SNAPSHOT_FILE.read_bytes()
    shipped_specs = json.loads(shipped)["meta"]["spec_source"]
    # The spec source names the moto version whose bundled data it used; another version
    # describes other types, so the bytes can only match with the pinned one.
    assert shipped_specs == f"moto {moto_version()} bundled describe-instance-types data", (
        f"the shipped snapshot was built from {shipped_specs!r}; install the pinned moto or rebuild it"
    )
    assert built_bytes == shipped
    assert out.read_bytes() == shipped


def test_a_saved_spot_advisor_file_gives_each_type_its_band(real_price_csv, tmp_path):
    advisor = tmp_path / "spot-advisor-data.json"
    advisor.write_bytes(advisor_document({"g4dn.xlarge": 3, "r6in.2xlarge": 0}))
    out = tmp_path / "snapshot.json"
    args = [*SHIPPED_BUILD_ARGS, "--spot-advisor", str(advisor), "-o", str(out)]
    args[args.index("--prices-csv") + 1] = str(real_price_csv)
    proc = subprocess.run(
        [sys.executable, "-m", "planner.cli.main", *args], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    catalog = load_catalog(out)
    assert catalog.instance("g4dn.xlarge").spot_interruption_band == 3
    assert catalog.instance("r6in.2xlarge").spot_interruption_band == 0
    assert catalog.instance("g5.xlarge").spot_interruption_band is None  # the file names no band for it
    source = catalog.snapshot.spot_interruptions
    assert source is not None and source.retrieved_on == dt.date.fromisoformat(OFFLINE_RETRIEVED_ON)
    assert "saved copy spot-advisor-data.json" in source.source
    shown = subprocess.run(
        [sys.executable, "-m", "planner.cli.main", "pricing", "show", "--snapshot", str(out)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert "Spot interruption bands" in shown.stdout and "saved copy spot-advisor-data.json" in shown.stdout


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"{ not json", "is not Spot Instance Advisor data"),
        (json.dumps({"ranges": [], "spot_advisor": {}}).encode(), "has no Linux bands for us-east-1"),
    ],
)
def test_a_broken_spot_advisor_file_is_a_one_line_error(real_price_csv, tmp_path, content, message):
    advisor = tmp_path / "advisor.json"
    advisor.write_bytes(content)
    args = ["pricing", "build", "--prices-csv", str(real_price_csv), "--retrieved-on", "2026-11-01"]
    args += ["--spot-advisor", str(advisor), "-o", str(tmp_path / "out.json")]
    proc = subprocess.run(
        [sys.executable, "-m", "planner.cli.main", *args], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert message in proc.stderr and not (tmp_path / "out.json").exists()
