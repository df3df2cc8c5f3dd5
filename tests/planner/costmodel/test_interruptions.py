"""Spot interruptions, priced: a type AWS reclaims more often costs more time and money, and a
cluster whose spot bill after its interruptions is not below on demand runs on demand."""

from __future__ import annotations

import dataclasses
import datetime as dt
import math

import numpy as np
import pytest

from contracts.calibration import DEFAULT_COEFFICIENTS
from contracts.plan import PlanRequest
from planner.catalog.interruptions import representative_shares, with_bands
from planner.catalog.models import HOURS_PER_MONTH, InterruptionBand, SpotInterruptions
from planner.catalog.snapshot import Catalog, load_catalog
from planner.costmodel import pipeline
from planner.solver.recommend import recommend
from tests.planner.conftest import make_clusters
from tests.planner.costmodel.test_pipeline import inputs_for

# AWS's ranges as the Spot Instance Advisor's data file gives them.
BANDS = SpotInterruptions(
    source="test bands",
    retrieved_on=dt.date(2026, 11, 1),
    bands=[
        InterruptionBand(index=i, label=label, max_percent=top)
        for i, label, top in [(0, "<5%", 5), (1, "5-10%", 11), (2, "10-15%", 16), (3, "15-20%", 22), (4, ">20%", 100)]
    ],
)
CLUSTER = ("g4dn.xlarge", "r6in.2xlarge", 1, 125, 3000)


def banded(band: int) -> Catalog:
    """The shipped catalog with every g4dn and r6in type (the cluster's families) in ``band``."""
    shipped = load_catalog().snapshot
    names = {i.name: band for i in shipped.instances if i.family in ("g4dn", "r6in")}
    return Catalog(with_bands(shipped, BANDS, names), f"band-{band}")


def spot_evaluation(catalog: Catalog, coefficients=DEFAULT_COEFFICIENTS):
    index = {inst.name: i for i, inst in enumerate(catalog.columns.instances)}
    inputs = dataclasses.replace(inputs_for(catalog, coefficients=coefficients, epochs=50), spot=True)
    return pipeline.evaluate(inputs, make_clusters(index, [CLUSTER]))


def test_bands_are_priced_at_their_midpoints_and_the_open_one_ten_points_wide():
    assert representative_shares(BANDS) == pytest.approx({0: 0.025, 1: 0.08, 2: 0.135, 3: 0.19, 4: 0.27})


def test_an_interruption_prone_type_is_priced_above_a_calm_one():
    calm, prone = spot_evaluation(banded(0)), spot_evaluation(banded(4))
    assert prone.total_hours[0] > calm.total_hours[0] and prone.total_usd[0] > calm.total_usd[0]
    calm_d, prone_d = calm.detail_at(0), prone.detail_at(0)
    assert calm_d["spot"] == prone_d["spot"] == 1.0  # spot still pays in both
    hazard = {share: -math.log1p(-share) / HOURS_PER_MONTH for share in (0.025, 0.27)}
    assert prone_d["interruptions"] / calm_d["interruptions"] == pytest.approx(
        hazard[0.27] / hazard[0.025] * prone.total_hours[0] / calm.total_hours[0]
    )


def test_two_machines_each_bring_their_hazard_and_each_recovery_costs_what_it_says():
    ev = spot_evaluation(banded(2))
    d = ev.detail_at(0)
    co = DEFAULT_COEFFICIENTS
    assert d["recovery_s"] == pytest.approx(co.spot_replacement_s + ev.startup_s[0] + co.checkpoint_interval_s / 2)
    hazard = 2 * -math.log1p(-0.135) / HOURS_PER_MONTH  # the learner and one memory machine
    base = ev.total_hours[0] - d["interruption_hours"]
    assert ev.total_hours[0] == pytest.approx(base / (1 - hazard * d["recovery_s"] / 3600))
    assert d["interruptions"] == pytest.approx(hazard * ev.total_hours[0])


def test_spot_that_loses_after_its_interruptions_runs_on_demand():
    slow_recovery = DEFAULT_COEFFICIENTS.model_copy(update={"spot_replacement_s": 40 * 24 * 3600.0})
    catalog = banded(4)
    ev = spot_evaluation(catalog, slow_recovery)
    assert ev.detail_at(0)["spot"] == 0.0 and ev.time_factor[0] == 1.0
    on_demand = pipeline.evaluate(inputs_for(catalog, coefficients=slow_recovery, epochs=50), ev_clusters(catalog))
    np.testing.assert_allclose(ev.hourly_usd, on_demand.hourly_usd)
    assert ev.total_usd[0] == pytest.approx(on_demand.total_usd[0])

    rec = recommend(
        PlanRequest(dataset="papers100M", spot=True, filters={"gpu_families": ["g4dn"], "memory_families": ["r6in"]}),
        catalog=catalog,
        coefficients=slow_recovery,
    )
    plans = [rec.chosen, *rec.alternatives]
    assert all(p.spot is not None for p in plans)
    for plan in plans:  # the recommendation's markets follow the comparison, and say why
        market = "spot" if plan.spot.runs_spot else "on-demand"
        assert plan.learner.market == market and (plan.memory is None or plan.memory.market == market)
        assert plan.total_usd == pytest.approx(min(plan.spot.spot_usd, plan.spot.on_demand_usd), rel=1e-3)
    two_level = rec.two_level  # two machines, twice one's interruptions: on demand wins
    assert two_level is not None and not two_level.spot.runs_spot and two_level.learner.market == "on-demand"
    assert set(two_level.spot.bands.values()) == {">20%"}


def ev_clusters(catalog: Catalog):
    index = {inst.name: i for i, inst in enumerate(catalog.columns.instances)}
    return make_clusters(index, [CLUSTER])


def test_on_demand_requests_carry_no_interruptions(catalog, index):
    ev = pipeline.evaluate(inputs_for(catalog), make_clusters(index, [CLUSTER]))
    assert "spot" not in ev.detail_at(0) and ev.time_factor == 1.0
