"""The priced candidates: a request that changes only its constraints reuses the pricing, and its
answer is exactly the answer priced from scratch; ties rank by the rule every answer states."""

from __future__ import annotations

import datetime as dt

import numpy as np
import pytest

from contracts.calibration import DEFAULT_COEFFICIENTS
from contracts.plan import Constraints, Filters, PlanRequest
from planner.costmodel.evaluation import Evaluation
from planner.solver.pricing import PRICED_ENTRIES, Priced, forget_priced, price
from planner.solver.recommend import recommend
from tests.planner.conftest import make_clusters

TODAY = dt.date(2026, 11, 20)
SMALL = Filters(gpu_families=["g4dn", "g5", "g6"], memory_families=["r8g", "r7i", "x2gd", "r6in"])


def request(**kw) -> PlanRequest:
    return PlanRequest(**{"dataset": "papers100M", "filters": SMALL, **kw})


@pytest.fixture(autouse=True)
def empty_cache():
    forget_priced()
    yield
    forget_priced()


@pytest.mark.parametrize(
    "constraints",
    [
        Constraints(budget_usd=50),
        Constraints(budget_usd=0.01),  # infeasible: the reason and advice come from the cached pricing
        Constraints(budget_usd=50, deadline_hours=0.5),
        Constraints(max_hourly_usd=1.2),
        Constraints(budget_usd=3.0, deadline_hours=2.0, max_hourly_usd=3.0),
        Constraints(),
    ],
)
@pytest.mark.parametrize("model", ["pipeline", "paper"])
def test_an_answer_from_the_cached_pricing_is_the_answer_priced_anew(catalog, constraints, model):
    recommend(request(model=model, constraints=Constraints(budget_usd=7.5)), catalog=catalog, today=TODAY)
    cached = recommend(request(model=model, constraints=constraints), catalog=catalog, today=TODAY)
    forget_priced()
    fresh = recommend(request(model=model, constraints=constraints), catalog=catalog, today=TODAY)
    assert cached.model_dump_json() == fresh.model_dump_json()


def test_each_plan_says_whether_it_fits_this_request(catalog):
    loose = recommend(request(constraints=Constraints(budget_usd=1000)), catalog=catalog, today=TODAY)
    assert all(plan.fits for plan in loose.alternatives)
    tight_budget = loose.alternatives[0].total_usd * 0.999
    tight = recommend(request(constraints=Constraints(budget_usd=tight_budget)), catalog=catalog, today=TODAY)
    by_label = {(p.learner.instance_type if p.learner else None, p.total_usd): p.fits for p in tight.alternatives}
    assert not by_label[(loose.alternatives[0].learner.instance_type, loose.alternatives[0].total_usd)]
    assert loose.alternatives[0].fits  # the first answer's plans were not changed by the second


def test_only_the_constraints_top_and_solver_reuse_a_pricing(catalog):
    base = price(request(), catalog, DEFAULT_COEFFICIENTS)
    same = [
        request(constraints=Constraints(budget_usd=12.0, deadline_hours=3)),
        request(top=20),
        request(solver="milp"),
    ]
    assert all(price(r, catalog, DEFAULT_COEFFICIENTS) is base for r in same)
    other = [
        request(spot=True),
        request(model="paper"),
        request(workload={"epochs": 11}),
        request(filters=SMALL.model_copy(update={"max_memory_gib": 64})),
        request(dataset="products"),
    ]
    assert all(price(r, catalog, DEFAULT_COEFFICIENTS) is not base for r in other)
    coefficients = DEFAULT_COEFFICIENTS.model_copy(update={"source": "measured elsewhere"})
    assert price(request(), catalog, coefficients) is not base


def test_the_cache_is_bounded(catalog):
    first = price(request(workload={"epochs": 1}), catalog, DEFAULT_COEFFICIENTS)
    for epochs in range(2, PRICED_ENTRIES + 2):
        price(request(workload={"epochs": epochs}), catalog, DEFAULT_COEFFICIENTS)
    assert price(request(workload={"epochs": 1}), catalog, DEFAULT_COEFFICIENTS) is not first  # evicted


def test_shared_figures_cannot_be_changed_by_a_request(catalog):
    ev = price(request(), catalog, DEFAULT_COEFFICIENTS).ev
    for figure in (ev.total_usd, ev.total_hours, ev.feasible, ev.epoch_s):
        with pytest.raises(ValueError, match="read-only"):
            figure[0] = np.nan


# Clusters that tie on cost, time and USD/h: (learner, memory, k, MB/s, IOPS), in no particular order.
TIED = [
    ("g5.xlarge", "r8g.large", 2, 125, 3000),
    ("g4dn.xlarge", None, 0, 250, 3000),
    ("g4dn.xlarge", None, 0, 125, 6000),
    ("g4dn.xlarge", None, 0, 125, 3000),
    ("g4dn.xlarge", "r8g.large", 1, 125, 3000),
    ("g4dn.xlarge", "r7i.large", 1, 125, 3000),
    ("g5.xlarge", None, 0, 125, 3000),
]
# RANKING_RULE applied by hand: fewer machines, then the learner's name, the memory type's, MB/s, IOPS.
TIED_RANKED = [3, 2, 1, 6, 5, 4, 0]


def tied(catalog, index, *, seconds: float, hourly: list[float]) -> Priced:
    """TIED priced, then given one time per cluster and the hourly prices ``hourly``."""
    priced = Priced(request(), catalog, DEFAULT_COEFFICIENTS, make_clusters(index, TIED))
    n = len(TIED)
    priced.ev = Evaluation(
        model="pipeline",
        stages={"gpu": np.full(n, seconds)},
        startup_s=np.zeros(n),
        hourly_usd=np.array(hourly),
        volume_gb=np.ones(n),
        infeasible=np.zeros(n, dtype=int),
        epochs=10,
    )
    return priced


def test_plans_that_tie_on_cost_and_time_rank_by_machines_then_names_then_volume(catalog, index):
    priced = tied(catalog, index, seconds=60.0, hourly=[1.0] * len(TIED))
    everything = np.ones(len(TIED), dtype=bool)
    assert priced.order(everything).tolist() == TIED_RANKED
    assert priced.first(everything) == TIED_RANKED[0]
    assert [p.label for p in priced.frontier] == [priced.label(TIED_RANKED[0])]  # the same pick


def test_free_plans_rank_the_cheaper_per_hour_first(catalog, index):
    """The paper model prices clusters whose RAM holds the dataset at no time and no cost."""
    hourly = [1.0] * len(TIED)
    hourly[0] = 0.5
    priced = tied(catalog, index, seconds=0.0, hourly=hourly)
    assert priced.order(np.ones(len(TIED), dtype=bool)).tolist() == [0, *TIED_RANKED[:-1]]
