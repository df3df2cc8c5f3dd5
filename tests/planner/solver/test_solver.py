"""The solver: both methods find one optimum, constraints and filters hold, answers are reproducible."""

from __future__ import annotations

import datetime as dt

import numpy as np
import pytest

from contracts.calibration import DEFAULT_COEFFICIENTS
from contracts.plan import Constraints, Filters, PlanRequest, read_plan, write_plan
from foundation.errors import NotFoundError, UsageError
from planner.solver.milp import _prune
from planner.solver.recommend import recommend
from planner.solver.solution import Solution

TODAY = dt.date(2026, 11, 20)
SMALL = Filters(gpu_families=["g4dn", "g5", "g6"], memory_families=["r8g", "r7i", "x2gd", "r6in"])


def request(**kw) -> PlanRequest:
    base = {"dataset": "papers100M", "filters": SMALL}
    base.update(kw)
    return PlanRequest(**base)


@pytest.mark.parametrize(
    "constraints",
    [
        Constraints(budget_usd=50),
        Constraints(budget_usd=50, deadline_hours=0.5),
        Constraints(budget_usd=50, max_hourly_usd=2.0),
        Constraints(max_hourly_usd=1.2),
        Constraints(budget_usd=3.0, deadline_hours=2.0, max_hourly_usd=3.0),
    ],
)
@pytest.mark.parametrize("max_memory_gib", [None, 64])
def test_enumeration_and_milp_find_the_same_optimum(catalog, constraints, max_memory_gib):
    filters = SMALL.model_copy(update={"max_memory_gib": max_memory_gib})
    by_enum = recommend(request(constraints=constraints, filters=filters), catalog=catalog, today=TODAY)
    by_milp = recommend(request(constraints=constraints, filters=filters, solver="milp"), catalog=catalog, today=TODAY)
    assert by_enum.feasible == by_milp.feasible
    if by_enum.feasible:
        assert by_milp.chosen.total_usd == pytest.approx(by_enum.chosen.total_usd)
        c = constraints
        for plan in (by_enum.chosen, by_milp.chosen):
            assert c.budget_usd is None or plan.total_usd <= c.budget_usd
            assert c.deadline_hours is None or plan.total_hours <= c.deadline_hours + 1e-6
            assert c.max_hourly_usd is None or plan.usd_per_hour <= c.max_hourly_usd + 1e-6


def test_dominance_pruning_never_drops_a_constrained_optimum():
    rng = np.random.default_rng(7)
    attrs = rng.integers(1, 30, size=(3, 5, 4, 3, 6)).astype(float)  # ties on purpose
    keep = _prune(attrs)
    flat = attrs.reshape(3, -1)
    kept = keep.ravel()
    assert kept.sum() < kept.size  # it prunes something
    for _ in range(300):
        bounds = rng.integers(1, 35, size=3)
        ok = np.all(flat <= bounds[:, None], axis=0)
        if ok.any():
            assert flat[0, ok].min() == flat[0, ok & kept].min()


def test_chosen_plan_is_the_cheapest_candidate_that_fits(catalog):
    req = request(constraints=Constraints(budget_usd=50, deadline_hours=1.0))
    sol = Solution(req, catalog, DEFAULT_COEFFICIENTS)
    rec = recommend(req, catalog=catalog, today=TODAY)
    ok = sol.within
    assert rec.chosen.total_usd == pytest.approx(sol.ev.total_usd[ok].min(), abs=1e-4)
    assert all(a.total_usd >= rec.chosen.total_usd - 1e-9 for a in rec.alternatives if a.fits)


def test_alternatives_are_distinct_clusters_in_cost_order(catalog):
    rec = recommend(request(constraints=Constraints(budget_usd=50)), catalog=catalog, today=TODAY)
    labels = [a.label for a in rec.alternatives]
    assert len(labels) == len(set(labels)) == 10
    assert rec.chosen.label not in labels
    costs = [a.total_usd for a in rec.alternatives]
    assert costs == sorted(costs)


def test_single_machine_and_two_level_are_always_evaluated(catalog):
    rec = recommend(request(constraints=Constraints(budget_usd=50)), catalog=catalog, today=TODAY)
    assert rec.single_machine.layout == "single-machine" and rec.single_machine.memory is None
    assert rec.two_level.layout == "two-level" and rec.two_level.memory.count >= 1
    assert rec.chosen.total_usd <= min(rec.single_machine.total_usd, rec.two_level.total_usd) + 1e-9


def test_frontier_is_pareto_optimal(catalog):
    # Two GPUs training: with every GPU (or one), one plan is both the fastest and the cheapest here.
    rec = recommend(request(workload={"gpus": 2}), catalog=catalog, today=TODAY)
    points = [(p.total_hours, p.total_usd) for p in rec.frontier]
    assert len(points) >= 2
    hours, usd = zip(*points)
    assert list(hours) == sorted(hours)
    assert all(b < a for a, b in zip(usd, usd[1:]))  # slower points must be cheaper


def test_filters_are_respected(catalog):
    rec = recommend(
        request(filters=Filters(arch="arm64", max_memory_gib=64, exclude=["r8g.2xlarge"])), catalog=catalog, today=TODAY
    )
    for plan in [rec.chosen, *rec.alternatives]:
        names = [plan.learner.instance_type] + ([plan.memory.instance_type] if plan.memory else [])
        for name in names:
            inst = catalog.instance(name)
            assert inst.arch == "arm64" and inst.memory_gib <= 64 and name != "r8g.2xlarge"


@pytest.mark.parametrize(
    "filters, error",
    [
        (Filters(gpu_families=["g4dm"]), NotFoundError),
        (Filters(memory_families=["g4dn"]), UsageError),
        (Filters(gpu_families=["r8g"]), UsageError),
        (Filters(exclude=["r8g.huge"]), NotFoundError),
        (Filters(gpu_families=["g4dn"], arch="arm64"), UsageError),  # no arm64 g4dn: nothing left
    ],
)
def test_bad_filters_are_usage_errors(catalog, filters, error):
    with pytest.raises(error) as info:
        recommend(request(filters=filters), catalog=catalog, today=TODAY)
    assert info.value.exit_code == 2


def test_unknown_dataset_suggests_the_close_name(catalog):
    with pytest.raises(NotFoundError, match="Did you mean papers100M"):
        recommend(PlanRequest(dataset="paper100m"), catalog=catalog, today=TODAY)


def test_spot_prices_are_used_when_asked(catalog):
    on_demand = recommend(request(), catalog=catalog, today=TODAY)
    spot = recommend(request(spot=True), catalog=catalog, today=TODAY)
    assert spot.chosen.learner.market == "spot"
    assert spot.chosen.total_usd < on_demand.chosen.total_usd
    assert any("spot" in w for w in spot.warnings)


def test_same_request_same_bytes(catalog):
    first = recommend(request(constraints=Constraints(budget_usd=20)), catalog=catalog, today=TODAY)
    second = recommend(request(constraints=Constraints(budget_usd=20)), catalog=catalog, today=TODAY)
    assert first.model_dump_json() == second.model_dump_json()
    other = recommend(request(constraints=Constraints(budget_usd=21)), catalog=catalog, today=TODAY)
    assert other.plan_id != first.plan_id


def test_plan_file_round_trip(catalog, tmp_path):
    rec = recommend(request(constraints=Constraints(budget_usd=50)), catalog=catalog, today=TODAY)
    path = write_plan(rec, tmp_path / "plans" / "plan.json")
    assert read_plan(path) == rec
    assert not list(path.parent.glob("*.tmp"))  # the atomic write left no temp file


def test_stale_snapshot_is_flagged(catalog):
    rec = recommend(request(), catalog=catalog, today=catalog.snapshot.meta.retrieved_on + dt.timedelta(days=31))
    assert rec.snapshot.stale and rec.snapshot.age_days == 31
    assert any("31 days old" in w for w in rec.warnings)
    fresh = recommend(request(), catalog=catalog, today=catalog.snapshot.meta.retrieved_on + dt.timedelta(days=30))
    assert not fresh.snapshot.stale


def test_paper_model_considers_one_memory_machine(catalog):
    rec = recommend(
        request(model="paper", filters=SMALL.model_copy(update={"max_memory_gib": 64})), catalog=catalog, today=TODAY
    )
    assert rec.chosen.layout == "two-level" and rec.chosen.memory.count == 1
    assert set(rec.chosen.stages) == {"storage"}


def test_paper_model_frontier_and_choice_name_the_same_zero_cost_cluster(catalog):
    rec = recommend(request(model="paper"), catalog=catalog, today=TODAY)
    assert rec.chosen.total_usd == 0.0
    zero = [p for p in rec.frontier if p.total_usd == 0.0]
    assert [p.label for p in zero] == [rec.chosen.label]


def test_both_solvers_pick_the_same_plan_among_plans_that_tie():
    """The paper model prices every cluster whose RAM holds arxiv at no cost: the MILP finds that
    least cost, and the stated ranking picks among the plans that have it, as enumeration does."""
    by_enum = recommend(PlanRequest(dataset="arxiv", model="paper"), today=TODAY)
    by_milp = recommend(PlanRequest(dataset="arxiv", model="paper", solver="milp"), today=TODAY)
    assert by_enum.chosen.total_usd == 0 and by_enum.alternatives[0].total_usd == 0  # a real tie
    assert by_milp.chosen == by_enum.chosen


def test_a_small_graphs_plans_are_ranked_by_their_own_unrounded_figures(catalog):
    rec = recommend(PlanRequest(dataset="arxiv", constraints=Constraints(budget_usd=5)), catalog=catalog, today=TODAY)
    plans = [rec.chosen, *rec.alternatives]
    keys = [(p.total_usd, p.total_hours, p.usd_per_hour) for p in plans]
    assert keys == sorted(keys)
    assert len({p.total_usd for p in plans}) == len(plans)  # fractions of a cent apart, none rounded together
    assert 0 < rec.chosen.total_usd < 0.01 and rec.chosen.total_usd != round(rec.chosen.total_usd, 4)
