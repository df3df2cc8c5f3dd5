"""Seed 004's equations (3)-(8), against values computed by hand from the printed formulas."""

from __future__ import annotations

import pytest

from contracts.calibration import DEFAULT_COEFFICIENTS
from contracts.plan import Unrunnable
from contracts.workload import Workload
from planner.costmodel import paper
from planner.costmodel.evaluation import FEASIBLE, ModelInputs
from planner.datasets.builtin import builtin_profile
from tests.planner.conftest import make_clusters

GIB_IN_GB = 2**30 / 1e9


def test_phi_is_the_slower_of_instance_and_volume():
    assert paper.phi(125, 1000) == pytest.approx(1 / 125)
    assert paper.phi(1000, 250) == pytest.approx(1 / 250)


def test_single_machine_equations_3_to_5():
    # |G| = 71.565 GB through min(125 MB/s instance, 1000 MB/s volume): 71,565 MB * 0.008 s/MB.
    t1 = paper.t1(71.565, 125, 1000)
    assert t1 == pytest.approx(572.52)
    p1 = paper.p1(0.1, 0.526)
    assert p1 == pytest.approx(0.626)
    assert paper.c1(t1, p1) == pytest.approx(572.52 / 3600 * 0.626)


def test_two_level_equations_6_to_8():
    # 64 GiB memory machine, |G| = 100 GB, 312.5 MB/s instance, 125 MB/s volume.
    m_l = 64 * GIB_IN_GB
    t2 = paper.t2(100.0, m_l, 312.5, 125)
    assert t2 == pytest.approx((1 - m_l / 100.0) * 100.0 * 1000 / 125)
    assert t2 == pytest.approx(250.25, abs=0.01)
    p2 = paper.p2(0.05, 0.526, 0.471)
    assert p2 == pytest.approx(1.047)
    assert paper.c2(t2, p2) == pytest.approx(t2 / 3600 * 1.047)


def test_t2_is_negative_as_printed_when_memory_exceeds_the_dataset():
    assert paper.t2(50.0, 64 * GIB_IN_GB, 312.5, 125) < 0


def test_table_iii_hourly_saving_of_two_level_over_g4dn_8xlarge(catalog):
    """Seed 004 Table III: g4dn.xlarge + r8g.2xlarge saves 54% per hour over g4dn.8xlarge."""
    price = {n: catalog.instance(n).ondemand_usd_per_hour for n in ("g4dn.xlarge", "r8g.2xlarge", "g4dn.8xlarge")}
    # The snapshot's prices are Table III's (Dec 2024) to within 0.1%.
    for name, table_iii in {"g4dn.xlarge": 0.526, "r8g.2xlarge": 0.471, "g4dn.8xlarge": 2.176}.items():
        assert price[name] == pytest.approx(table_iii, rel=1e-3)
    saving = 1 - paper.p2(0.0, price["g4dn.xlarge"], price["r8g.2xlarge"]) / paper.p1(0.0, price["g4dn.8xlarge"])
    assert round(saving * 100) == 54


def test_evaluate_applies_the_equations_to_catalog_clusters(catalog, index):
    profile = builtin_profile("papers100M")
    inputs = ModelInputs(
        columns=catalog.columns,
        volume=catalog.volumes["gp3"],
        profile=profile,
        workload=Workload(epochs=3),
        coefficients=DEFAULT_COEFFICIENTS,
    )
    clusters = make_clusters(
        index, [("g4dn.xlarge", "r8g.2xlarge", 1, 125, 3000), ("g4dn.8xlarge", None, 0, 250, 3000)]
    )
    ev = paper.evaluate(inputs, clusters)
    g = profile.total_bytes / 1e9
    r8g = catalog.instance("r8g.2xlarge")
    g4dn8 = catalog.instance("g4dn.8xlarge")
    expected_t2 = paper.t2(g, r8g.memory_gib * GIB_IN_GB, r8g.ebs_baseline_mbps, 125)
    expected_t1 = paper.t1(g, g4dn8.ebs_baseline_mbps, 250)
    assert ev.epoch_s[0] == pytest.approx(expected_t2)
    assert ev.epoch_s[1] == pytest.approx(expected_t1)
    omega = catalog.volumes["gp3"].hourly_usd(ev.volume_gb, clusters.volume_iops, clusters.volume_mbps)
    assert ev.hourly_usd[0] == pytest.approx(omega[0] + 0.526 + r8g.ondemand_usd_per_hour)
    assert ev.total_usd[0] == pytest.approx(paper.c2(3 * expected_t2, ev.hourly_usd[0]))
    assert ev.total_usd[1] == pytest.approx(paper.c1(3 * expected_t1, ev.hourly_usd[1]))


def test_evaluate_clips_t2_at_zero_and_allows_one_memory_machine(catalog, index):
    inputs = ModelInputs(
        columns=catalog.columns,
        volume=catalog.volumes["gp3"],
        profile=builtin_profile("arxiv"),
        workload=Workload(),
        coefficients=DEFAULT_COEFFICIENTS,
    )
    ev = paper.evaluate(
        inputs,
        make_clusters(
            index, [("g4dn.xlarge", "r8g.2xlarge", 1, 125, 3000), ("g4dn.xlarge", "r8g.2xlarge", 2, 125, 3000)]
        ),
    )
    assert ev.epoch_s[0] == 0.0
    assert ev.infeasible[0] == FEASIBLE
    assert ev.infeasible[1] == Unrunnable.SEVERAL_MEMORY_MACHINES
