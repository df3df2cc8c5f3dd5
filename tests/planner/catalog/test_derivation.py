"""Pricing sizes the price source lacks: a non-GPU size gets its family's median $/vCPU x its vCPUs
(provenance "derived"); a GPU size stays unpriced; a listed size keeps its listed prices."""

from __future__ import annotations

import csv
import statistics

import pytest

from planner.catalog.models import InstanceSpec
from planner.catalog.prices import PriceRecord, price_instances


def spec(name: str, vcpus: int, gpus: int = 0) -> InstanceSpec:
    return InstanceSpec(
        name=name,
        family=name.split(".")[0],
        vcpus=vcpus,
        memory_gib=4.0 * vcpus,
        arch="x86_64",
        gpu_model="T4" if gpus else None,
        gpu_count=gpus,
        gpu_memory_gib=16.0 * gpus,
    )


def price(name: str, ondemand: float, spot: float | None = None) -> PriceRecord:
    return PriceRecord(instance_type=name, ondemand_usd_per_hour=ondemand, spot_usd_per_hour=spot)


SPECS = {
    s.name: s
    for s in [
        spec("m5.large", 2),
        spec("m5.xlarge", 4),
        spec("m5.2xlarge", 8),
        spec("m5.4xlarge", 16),
        spec("m5.8xlarge", 32),
        spec("g4dn.xlarge", 4, gpus=1),
        spec("g4dn.2xlarge", 8, gpus=1),
        spec("g4dn.12xlarge", 48, gpus=4),
        spec("r9.large", 2),
        spec("r9.xlarge", 4),
    ]
}
# m5 rates per vCPU: 0.05, 0.06, 0.08 -> median 0.06; spot/on-demand ratios 0.4, 0.5 -> median 0.45.
PRICES = {
    p.instance_type: p
    for p in [
        price("m5.large", 0.10, 0.04),
        price("m5.2xlarge", 0.48, 0.24),
        price("m5.8xlarge", 2.56),
        price("g4dn.xlarge", 0.526, 0.2),
        price("g4dn.12xlarge", 3.912, 1.2875),
        price("zz1.large", 9.99),  # priced but no spec: cannot appear
    ]
}


@pytest.fixture(scope="module")
def priced():
    return {i.name: i for i in price_instances(SPECS, PRICES)}


def test_one_entry_per_spec_sorted_by_name():
    instances = price_instances(SPECS, PRICES)
    assert [i.name for i in instances] == sorted(SPECS)


def test_listed_sizes_keep_their_listed_prices(priced):
    for name in ("m5.large", "m5.2xlarge", "m5.8xlarge", "g4dn.xlarge", "g4dn.12xlarge"):
        assert priced[name].price_provenance == "listed"
        assert priced[name].ondemand_usd_per_hour == PRICES[name].ondemand_usd_per_hour
        assert priced[name].spot_usd_per_hour == PRICES[name].spot_usd_per_hour
    assert priced["m5.8xlarge"].spot_usd_per_hour is None  # listed without spot: not invented


@pytest.mark.parametrize(("name", "vcpus"), [("m5.xlarge", 4), ("m5.4xlarge", 16)])
def test_missing_non_gpu_size_is_family_median_rate_times_vcpus(priced, name, vcpus):
    inst = priced[name]
    assert inst.price_provenance == "derived"
    assert inst.ondemand_usd_per_hour == pytest.approx(0.06 * vcpus, abs=1e-12)  # median, not mean (0.0633)
    assert inst.spot_usd_per_hour == pytest.approx(0.06 * vcpus * 0.45, abs=1e-6)
    # Rounded to at most 6 decimals, as listed prices are.
    assert round(inst.ondemand_usd_per_hour, 6) == inst.ondemand_usd_per_hour
    assert round(inst.spot_usd_per_hour, 6) == inst.spot_usd_per_hour
    # The spec is carried over unchanged.
    assert inst.vcpus == vcpus and inst.memory_gib == SPECS[name].memory_gib


def test_missing_gpu_size_stays_unpriced(priced):
    inst = priced["g4dn.2xlarge"]
    assert inst.ondemand_usd_per_hour is None
    assert inst.spot_usd_per_hour is None
    assert inst.price_provenance is None
    assert inst.price(spot=False) is None and inst.price(spot=True) is None


def test_family_without_any_listed_price_stays_unpriced(priced):
    for name in ("r9.large", "r9.xlarge"):
        assert priced[name].price_provenance is None
        assert priced[name].ondemand_usd_per_hour is None


def test_priced_types_without_specs_are_left_out(priced):
    assert "zz1.large" not in priced


def test_no_spot_ratio_means_no_derived_spot():
    specs = {s.name: s for s in [spec("c9.large", 2), spec("c9.xlarge", 4)]}
    inst = {i.name: i for i in price_instances(specs, {"c9.large": price("c9.large", 0.1)})}
    assert inst["c9.xlarge"].price_provenance == "derived"
    assert inst["c9.xlarge"].ondemand_usd_per_hour == pytest.approx(0.2)
    assert inst["c9.xlarge"].spot_usd_per_hour is None


def test_derive_false_prices_only_listed_sizes():
    instances = {i.name: i for i in price_instances(SPECS, PRICES, derive=False)}
    assert {n for n, i in instances.items() if i.price_provenance is not None} == set(PRICES) - {"zz1.large"}
    assert instances["m5.xlarge"].ondemand_usd_per_hour is None
    assert all(i.price_provenance != "derived" for i in instances.values())


def test_gpu_prices_do_not_set_a_family_rate():
    """A GPU type's price says nothing about a GPU-less sibling (e.g. a family with both)."""
    specs = {s.name: s for s in [spec("x9.xlarge", 4, gpus=1), spec("x9.2xlarge", 8)]}
    inst = {i.name: i for i in price_instances(specs, {"x9.xlarge": price("x9.xlarge", 1.0)})}
    assert inst["x9.2xlarge"].price_provenance is None


# --- the real table with moto's specs -----------------------------------------------------------


def _csv_rows(path):
    with path.open(newline="", encoding="utf-8") as handle:
        return {row["instance_type"]: row for row in csv.DictReader(handle)}


def test_c7i_xlarge_is_derived_from_the_c7i_rows_of_the_real_table(real_offline_snapshot, real_price_csv):
    rows = [r for name, r in _csv_rows(real_price_csv).items() if name.startswith("c7i.")]
    assert len(rows) == 7 and not any(r["instance_type"] == "c7i.xlarge" for r in rows)
    rates = [float(r["ondemand_usd_per_hour"]) / int(r["vcpus"]) for r in rows]
    ratios = [float(r["spot_usd_per_hour_min"]) / float(r["ondemand_usd_per_hour"]) for r in rows]
    assert statistics.median(rates) == pytest.approx(0.357 / 8)  # every c7i size costs $0.044625/vCPU-h

    inst = {i.name: i for i in real_offline_snapshot.instances}
    xl = inst["c7i.xlarge"]
    assert xl.vcpus == 4 and xl.gpu_count == 0
    assert xl.price_provenance == "derived"
    assert xl.ondemand_usd_per_hour == 0.1785
    assert xl.spot_usd_per_hour == round(0.1785 * statistics.median(ratios), 6) == 0.058267
    assert inst["c7i.large"].ondemand_usd_per_hour == 0.08925
    assert inst["c7i.2xlarge"].price_provenance == "listed"
    assert inst["c7i.2xlarge"].ondemand_usd_per_hour == 0.357


def test_real_gpu_sizes_missing_from_the_table_stay_unpriced(real_offline_snapshot, real_price_csv):
    rows = _csv_rows(real_price_csv)
    inst = {i.name: i for i in real_offline_snapshot.instances}
    assert "g4dn.metal" not in rows and inst["g4dn.metal"].gpu_count == 8
    assert inst["g4dn.metal"].ondemand_usd_per_hour is None
    assert inst["g4dn.metal"].price_provenance is None
    assert inst["g4dn.xlarge"].price_provenance == "listed"
    assert inst["g4dn.xlarge"].ondemand_usd_per_hour == 0.526


def test_every_real_price_is_listed_derived_or_absent_as_the_rule_says(real_offline_snapshot, real_price_csv):
    """The whole snapshot against an oracle computed from the CSV's own vCPU column."""
    rows = _csv_rows(real_price_csv)
    inst = {i.name: i for i in real_offline_snapshot.instances}
    rates: dict[str, list[float]] = {}
    for name, row in rows.items():
        if name in inst and int(row["gpu_count"]) == 0:
            assert int(row["vcpus"]) == inst[name].vcpus, name
            rates.setdefault(name.split(".")[0], []).append(float(row["ondemand_usd_per_hour"]) / int(row["vcpus"]))

    counts = {"listed": 0, "derived": 0, None: 0}
    for name, i in inst.items():
        counts[i.price_provenance] += 1
        if name in rows:
            assert i.price_provenance == "listed", name
            assert i.ondemand_usd_per_hour == float(rows[name]["ondemand_usd_per_hour"]), name
        elif i.gpu_count == 0 and i.family in rates:
            assert i.price_provenance == "derived", name
            assert i.ondemand_usd_per_hour == pytest.approx(statistics.median(rates[i.family]) * i.vcpus, abs=5e-7), (
                name
            )
        else:
            assert i.price_provenance is None and i.ondemand_usd_per_hour is None, name
    assert counts["listed"] == len(set(rows) & set(inst))
    assert counts["derived"] > 0
    # The snapshot's note states the same counts.
    assert f"{counts['listed']} listed, {counts['derived']} derived" in real_offline_snapshot.meta.notes[-1]


def test_tiny_derived_spot_price_does_not_break_pricing():
    specs = {s.name: s for s in [spec("t9.large", 2), spec("t9.xlarge", 4)]}
    prices = {"t9.xlarge": price("t9.xlarge", 0.0104, 0.000001)}
    inst = {i.name: i for i in price_instances(specs, prices)}
    assert inst["t9.large"].ondemand_usd_per_hour == pytest.approx(0.0052)
    assert inst["t9.large"].spot_usd_per_hour is None or inst["t9.large"].spot_usd_per_hour > 0
