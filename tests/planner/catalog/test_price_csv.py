"""The CSV price table: the real us-east-1 table reads completely, and a broken hand-edited table
fails with a PricingSourceError that says where (file, line, column) so it can be fixed."""

from __future__ import annotations

import csv

import pytest

from foundation.errors import MemoryBridgeError
from planner.catalog.prices import CSV_COLUMNS, PriceRecord, read_price_csv
from planner.errors import PricingSourceError

HEADER = "instance_type,ondemand_usd_per_hour,spot_usd_per_hour_min"


def write(tmp_path, text: str, name: str = "prices.csv"):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


# --- the real table ---------------------------------------------------------------------------


def test_real_table_reads_every_row_with_its_prices(real_price_csv):
    records = read_price_csv(real_price_csv)
    with real_price_csv.open(newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))

    assert len(rows) == 232
    assert len(records) == 232
    assert list(records) == [r["instance_type"] for r in rows]  # file order, nothing dropped
    for row in rows:
        record = records[row["instance_type"]]
        assert record.ondemand_usd_per_hour == float(row["ondemand_usd_per_hour"])
        assert record.spot_usd_per_hour == float(row["spot_usd_per_hour_min"])


def test_real_table_spot_check(real_price_csv):
    records = read_price_csv(real_price_csv)
    assert records["g4dn.xlarge"] == PriceRecord(
        instance_type="g4dn.xlarge", ondemand_usd_per_hour=0.526, spot_usd_per_hour=0.2
    )
    assert records["c7i.2xlarge"].ondemand_usd_per_hour == 0.357
    assert "c7i.xlarge" not in records  # the size the derivation tests rely on being absent


def test_extra_columns_are_ignored_and_empty_spot_is_none(tmp_path):
    path = write(
        tmp_path,
        "vcpus,spot_usd_per_hour_min,instance_type,ondemand_usd_per_hour,arch\n"
        "8, ,c7i.2xlarge,0.357,x86_64\n"
        "4,0.1,  m5.xlarge ,0.192,x86_64\n",
    )
    records = read_price_csv(path)
    assert records == {
        "c7i.2xlarge": PriceRecord(instance_type="c7i.2xlarge", ondemand_usd_per_hour=0.357),
        "m5.xlarge": PriceRecord(instance_type="m5.xlarge", ondemand_usd_per_hour=0.192, spot_usd_per_hour=0.1),
    }
    assert records["c7i.2xlarge"].spot_usd_per_hour is None


# --- broken tables ----------------------------------------------------------------------------


@pytest.mark.parametrize("missing", CSV_COLUMNS)
def test_missing_column_names_file_and_column(tmp_path, missing):
    columns = [c for c in CSV_COLUMNS if c != missing]
    values = {"instance_type": "m5.large", "ondemand_usd_per_hour": "0.096", "spot_usd_per_hour_min": "0.04"}
    path = write(tmp_path, ",".join(columns) + "\n" + ",".join(values[c] for c in columns) + "\n")

    with pytest.raises(PricingSourceError) as info:
        read_price_csv(path)
    message = str(info.value)
    assert str(path) in message
    assert missing in message
    assert info.value.exit_code == 1


def test_empty_file_reports_all_columns_missing(tmp_path):
    path = write(tmp_path, "")
    with pytest.raises(PricingSourceError, match="lacks the column") as info:
        read_price_csv(path)
    assert str(path) in str(info.value)
    for column in CSV_COLUMNS:
        assert column in str(info.value)


@pytest.mark.parametrize(
    ("bad_row", "column"),
    [
        ("m5.xlarge,abc,0.05", "ondemand_usd_per_hour"),
        ("m5.xlarge,-0.192,0.05", "ondemand_usd_per_hour"),
        ("m5.xlarge,0,0.05", "ondemand_usd_per_hour"),
        ("m5.xlarge,,0.05", "ondemand_usd_per_hour"),
        ("m5.xlarge,nan,0.05", "ondemand_usd_per_hour"),
        ("m5.xlarge,$0.19,0.05", "ondemand_usd_per_hour"),
    ],
)
def test_bad_ondemand_price_names_file_line_and_column(tmp_path, bad_row, column):
    path = write(tmp_path, f"{HEADER}\nm5.large,0.096,0.04\nm5.2xlarge,0.384,0.15\n{bad_row}\n")
    with pytest.raises(PricingSourceError) as info:
        read_price_csv(path)
    message = str(info.value)
    assert message.startswith(f"{path}:4: ")  # the bad row is the file's 4th line
    assert column in message


@pytest.mark.parametrize("spot", ["-0.05", "cheap"])
def test_bad_spot_price_names_file_and_line(tmp_path, spot):
    path = write(tmp_path, f"{HEADER}\nm5.large,0.096,{spot}\n")
    with pytest.raises(PricingSourceError) as info:
        read_price_csv(path)
    assert str(info.value).startswith(f"{path}:2: ")
    assert "spot_usd_per_hour" in str(info.value)


def test_bad_spot_price_names_the_csv_column(tmp_path):
    path = write(tmp_path, f"{HEADER}\nm5.large,0.096,-0.05\n")
    with pytest.raises(PricingSourceError, match="spot_usd_per_hour_min"):
        read_price_csv(path)


def test_duplicate_instance_type_names_file_line_and_type(tmp_path):
    path = write(tmp_path, f"{HEADER}\nm5.large,0.096,0.04\nm5.xlarge,0.192,0.08\nm5.large,0.097,0.04\n")
    with pytest.raises(PricingSourceError) as info:
        read_price_csv(path)
    message = str(info.value)
    assert message.startswith(f"{path}:4: ")
    assert "m5.large" in message and "twice" in message


def test_duplicate_detection_ignores_surrounding_spaces(tmp_path):
    path = write(tmp_path, f"{HEADER}\nm5.large,0.096,0.04\n m5.large ,0.096,0.04\n")
    with pytest.raises(PricingSourceError, match=r":3: m5\.large is listed twice"):
        read_price_csv(path)


def test_missing_file_is_a_pricing_source_error(tmp_path):
    path = tmp_path / "nope" / "prices.csv"
    with pytest.raises(PricingSourceError) as info:
        read_price_csv(path)
    assert str(path) in str(info.value)
    assert "cannot be read" in str(info.value)
    assert isinstance(info.value, MemoryBridgeError)


def test_directory_instead_of_file_is_a_pricing_source_error(tmp_path):
    with pytest.raises(PricingSourceError, match="cannot be read") as info:
        read_price_csv(tmp_path)
    assert str(tmp_path) in str(info.value)


# --- edge cases that were once bugs: blank lines, inf, empty names, other encodings ----------


def test_line_number_counts_blank_lines(tmp_path):
    path = write(tmp_path, f"{HEADER}\nm5.large,0.096,0.04\n\nm5.xlarge,abc,0.08\n")
    with pytest.raises(PricingSourceError) as info:
        read_price_csv(path)
    assert str(info.value).startswith(f"{path}:4: ")


def test_infinite_price_is_rejected(tmp_path):
    path = write(tmp_path, f"{HEADER}\nm5.large,inf,0.04\n")
    with pytest.raises(PricingSourceError, match=r":2: ondemand_usd_per_hour"):
        read_price_csv(path)


def test_empty_instance_type_is_rejected(tmp_path):
    path = write(tmp_path, f"{HEADER}\n,0.096,0.04\n")
    with pytest.raises(PricingSourceError, match=r":2: instance_type"):
        read_price_csv(path)


def test_non_utf8_file_is_a_pricing_source_error(tmp_path):
    path = tmp_path / "latin1.csv"
    path.write_bytes(f"{HEADER}\nm5.large,0.096,0.04\n".encode() + b"caf\xe9.large,0.1,0.05\n")
    with pytest.raises(PricingSourceError) as info:
        read_price_csv(path)
    assert str(path) in str(info.value)
