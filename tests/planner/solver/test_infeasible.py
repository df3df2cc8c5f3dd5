"""Why no plan fits and what would (planner.solver.infeasible): the binding constraint, the least
value of it that fits (exact: the advice, applied, gives a plan), and a reason in plain words."""

from __future__ import annotations

import numpy as np

from contracts.plan import Change, Constraints, Filters, InfeasibleCode, Unrunnable, read_plan, write_plan
from foundation.units import usd
from planner.solver.recommend import recommend
from tests.planner.solver.test_solver import TODAY, request


def infeasible(catalog, **kw):
    """An infeasible recommendation, checked for what every one of them says."""
    rec = recommend(request(**kw), catalog=catalog, today=TODAY)
    assert not rec.feasible and rec.chosen is None and rec.infeasibility is not None
    assert_neutral(rec.reason)
    assert "--" not in rec.infeasibility.detail  # the JSON's words name request fields, never CLI options
    return rec


def assert_neutral(reason: str) -> None:
    """``reason`` names no CLI option and no request field: it reads right in any interface."""
    assert "--" not in reason and not any(part in reason for part in ("constraints.", "workload.", "filters.", "_usd"))


def assert_least_quoted(bound: float, needed: float) -> None:
    """``bound`` is ``needed`` rounded up as figures are shown: to the cent, or to three
    significant digits below a dollar (one step of the third digit at most above it)."""
    step = min(0.01, 10 ** (np.floor(np.log10(needed)) - 2))
    assert needed <= bound < needed + step
    assert float(f"{bound:.3g}") == bound or round(bound, 2) == bound


def refit(rec, field: str, value):
    """The same request with one field (a path such as constraints.budget_usd) set to ``value``."""
    section, name = field.split(".")
    changed = getattr(rec.request, section).model_copy(update={name: value})
    return rec.request.model_copy(update={section: changed})


def test_infeasible_budget_names_the_cheapest_plan_and_the_least_budget_that_fits(catalog):
    rec = infeasible(catalog, constraints=Constraints(budget_usd=0.01))
    assert rec.cheapest_feasible_usd > 0.01
    inf = rec.infeasibility
    assert inf.code is InfeasibleCode.BUDGET and inf.binding == "constraints.budget_usd"
    (budget,) = inf.advice  # not even one epoch fits 1 cent: no advice on epochs
    assert budget.field == "constraints.budget_usd" and budget.change is Change.AT_LEAST
    assert_least_quoted(budget.value, rec.cheapest_feasible_usd)
    assert budget.plan in rec.reason and usd(rec.cheapest_feasible_usd) in rec.reason
    assert "constraints.budget_usd" in inf.detail
    assert recommend(refit(rec, budget.field, budget.value), catalog=catalog, today=TODAY).feasible


def test_infeasible_budget_also_advises_the_most_epochs_that_fit(catalog):
    cheapest = infeasible(catalog, constraints=Constraints(budget_usd=0.01)).cheapest_feasible_usd
    rec = infeasible(catalog, constraints=Constraints(budget_usd=round(cheapest * 0.6, 2)))
    budget, epochs = rec.infeasibility.advice
    assert budget.field == "constraints.budget_usd"
    assert epochs.field == "workload.epochs" and epochs.change is Change.AT_MOST
    assert isinstance(epochs.value, int) and 1 <= epochs.value < rec.request.workload.epochs
    assert recommend(refit(rec, epochs.field, epochs.value), catalog=catalog, today=TODAY).feasible
    assert not recommend(refit(rec, epochs.field, epochs.value + 1), catalog=catalog, today=TODAY).feasible


def test_infeasible_deadline_names_the_fastest_plan_and_the_least_deadline(catalog):
    rec = infeasible(catalog, constraints=Constraints(budget_usd=1000, deadline_hours=0.001))
    inf = rec.infeasibility
    assert inf.code is InfeasibleCode.DEADLINE and inf.binding == "constraints.deadline_hours"
    (deadline,) = inf.advice
    assert deadline.change is Change.AT_LEAST and deadline.value > 0.001 and deadline.plan in rec.reason
    assert recommend(refit(rec, deadline.field, deadline.value), catalog=catalog, today=TODAY).feasible


def test_infeasible_hourly_cap_names_the_least_cap_within_the_other_constraints(catalog):
    rec = infeasible(catalog, constraints=Constraints(budget_usd=50, max_hourly_usd=0.3))
    inf = rec.infeasibility
    assert inf.code is InfeasibleCode.MAX_HOURLY and inf.binding == "constraints.max_hourly_usd"
    (cap,) = inf.advice
    assert cap.field == "constraints.max_hourly_usd" and cap.value > 0.3
    fits = recommend(refit(rec, cap.field, cap.value), catalog=catalog, today=TODAY)
    assert fits.feasible and fits.chosen.total_usd <= 50


def test_constraints_that_bind_only_together(catalog):
    rec = infeasible(catalog, constraints=Constraints(budget_usd=0.01, max_hourly_usd=0.01))
    inf = rec.infeasibility
    assert inf.code is InfeasibleCode.ALL_CONSTRAINTS and inf.binding is None
    assert [a.field for a in inf.advice] == ["constraints.budget_usd", "constraints.max_hourly_usd"]
    assert_least_quoted(inf.advice[0].value, rec.cheapest_feasible_usd)
    for advice in inf.advice:  # each bound alone is not enough
        assert not recommend(refit(rec, advice.field, advice.value), catalog=catalog, today=TODAY).feasible


def test_graph_too_big_for_every_memory_machine(catalog):
    rec = infeasible(catalog, dataset="mag240m", filters=Filters(max_memory_gib=16))
    assert rec.cheapest_feasible_usd is None
    inf = rec.infeasibility
    assert inf.code is InfeasibleCode.NO_CANDIDATE and inf.binding is None
    assert inf.common_reason.code is Unrunnable.STRUCTURE_EXCEEDS_RAM
    assert "structure does not fit" in inf.common_reason.description and inf.common_reason.description in rec.reason
    relax = [a.field for a in inf.advice if a.change is Change.RELAX]
    assert "filters.max_memory_gib" in relax and all(a.value is None for a in inf.advice)


def test_an_infeasible_plan_survives_the_plan_file(catalog, tmp_path):
    rec = infeasible(catalog, constraints=Constraints(budget_usd=0.01))
    assert read_plan(write_plan(rec, tmp_path / "plan.json")) == rec
