"""Spot interruptions, priced: a type AWS reclaims more often costs more time and money, and a
cluster whose spot bill after its interruptions is not below on demand runs on demand. Full-graph
training keeps no checkpoints, so there each interruption starts the job over; the paper's model
prices them as the pipeline does."""

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


def banded_workers(band: int) -> Catalog:
    shipped = load_catalog().snapshot
    names = {i.name: band for i in shipped.instances if i.family == "r6in"}
    return Catalog(with_bands(shipped, BANDS, names), f"workers-band-{band}")


def full_graph_on_spot(catalog: Catalog, method: str = "retexo"):
    request = PlanRequest(
        dataset="papers100M",
        method=method,
        spot=True,
        full_graph={"workers": 2},
        filters={"memory_families": ["r6in"]},
    )
    return recommend(request, catalog=catalog)


@pytest.mark.parametrize("method", ["retexo", "slicegcn"])
def test_full_graph_interruptions_start_the_job_over(method):
    """Without checkpoints, each interruption costs the work done so far: with n workers' hazard h,
    restart cost R and T hours of work, the wall time is (1/h + R)(e^(hT) - 1)."""
    plan = full_graph_on_spot(banded_workers(4), method).chosen
    assert plan is not None and plan.spot is not None and plan.spot.starts_over
    risk = plan.spot
    h = 2 * -math.log1p(-0.27) / HOURS_PER_MONTH  # two workers of the open top band
    spot_hours = plan.total_hours
    base = spot_hours - risk.added_hours
    r = risk.recovery_seconds / 3600
    assert spot_hours == pytest.approx((1 / h + r) * math.expm1(h * base), rel=1e-4)
    assert risk.interruptions == pytest.approx(h * spot_hours, abs=1e-6)  # rounded to 6 places
    assert risk.recovery_seconds == pytest.approx(DEFAULT_COEFFICIENTS.spot_replacement_s + plan.startup_seconds, abs=1)


def test_a_full_graph_cluster_of_prone_workers_costs_more_than_calm_ones():
    calm, prone = (full_graph_on_spot(banded_workers(band)).chosen for band in (0, 4))
    assert calm is not None and prone is not None and calm.label == prone.label
    assert prone.total_usd > calm.total_usd and prone.spot.interruptions > calm.spot.interruptions
    assert calm.spot.bands == {calm.memory.instance_type: "<5%"}


def test_the_papers_model_prices_interruptions_as_the_pipeline_does():
    rec = recommend(
        PlanRequest(
            dataset="papers100M",
            model="paper",
            spot=True,
            filters={"memory_families": ["r6in"], "max_memory_gib": 32},  # the graph does not fit: T2 > 0
        ),
        catalog=banded(4),
    )
    plan = rec.chosen
    assert plan is not None and plan.spot is not None and not plan.spot.starts_over
    assert plan.spot.interruptions > 0 and plan.spot.added_hours > 0
