"""The CLI's words: an infeasible answer's advice named by command-line option, and figures at a
precision that tells a small graph's plans apart."""

from __future__ import annotations

import datetime as dt
import itertools

import pytest
from rich.console import Console

from contracts.plan import RANKING_RULE, Constraints, Filters, PlanRequest, Recommendation
from foundation.units import SECONDS_PER_HOUR, duration, usd
from planner.cli.render import data_path_lines, plans_table
from planner.solver.recommend import recommend
from planner.wording import infeasible_text, option_for

TODAY = dt.date(2026, 11, 20)
SMALL = Filters(gpu_families=["g4dn", "g5", "g6"], memory_families=["r8g", "r7i", "x2gd", "r6in"])
REQUEST_FIELDS = ("constraints.", "workload.", "filters.")


def infeasible(catalog, **kw) -> Recommendation:
    rec = recommend(PlanRequest(**{"dataset": "papers100M", "filters": SMALL, **kw}), catalog=catalog, today=TODAY)
    assert not rec.feasible
    return rec


@pytest.mark.parametrize(
    ("path", "option"),
    [
        ("constraints.budget_usd", "--budget"),
        ("constraints.deadline_hours", "--deadline"),
        ("constraints.max_hourly_usd", "--max-hourly"),
        ("workload.epochs", "--epochs"),
        ("filters.max_memory_gib", "--max-memory-gib"),
        ("workload.batch_size", "--batch-size"),
        ("workload.learner_cache", "--learner-cache"),
        ("workload.wire_dtype", "--wire-dtype"),
        ("filters.volume_mbps", "--volume-mbps"),
        ("filters.volume_iops", "--volume-iops"),
    ],
)
def test_each_request_field_has_its_option(path, option):
    assert option_for(path) == option


def test_budget_advice_names_the_options(catalog):
    cheapest = infeasible(catalog, constraints=Constraints(budget_usd=0.01)).cheapest_feasible_usd
    rec = infeasible(catalog, constraints=Constraints(budget_usd=round(cheapest * 0.6, 2)))
    budget, epochs = rec.infeasibility.advice
    text = infeasible_text(rec)
    assert text.startswith(rec.reason + ". ")
    assert f"Raise --budget to at least {budget.value:g}, or lower --epochs to at most {epochs.value}" in text
    assert not any(field in text for field in REQUEST_FIELDS)


@pytest.mark.parametrize(
    ("kw", "options"),
    [
        ({"constraints": Constraints(budget_usd=1000, deadline_hours=0.001)}, ["Raise --deadline to at least"]),
        ({"constraints": Constraints(budget_usd=50, max_hourly_usd=0.3)}, ["Raise --max-hourly to at least"]),
        (
            {"constraints": Constraints(budget_usd=0.01, max_hourly_usd=0.01)},
            ["Relax more than one constraint", "--budget needs at least", "--max-hourly needs at least"],
        ),
        (
            {"dataset": "mag240m", "filters": Filters(max_memory_gib=16)},
            [
                "Relax the filters (--max-memory-gib, --memory-families, --arch) "
                "or shrink the job (--batch-size, --fanouts)"
            ],
        ),
    ],
)
def test_every_kind_of_advice_names_options_not_fields(catalog, kw, options):
    text = infeasible_text(infeasible(catalog, **kw))
    for words in options:
        assert words in text
    assert not any(field in text for field in REQUEST_FIELDS)


def test_a_plan_from_before_structured_advice_shows_its_reason(catalog):
    rec = infeasible(catalog, constraints=Constraints(budget_usd=0.01))
    document = rec.model_dump(mode="json")
    del document["infeasibility"]
    old = Recommendation.model_validate(document | {"reason": "no plan fits. Raise --budget to at least 0.46"})
    assert infeasible_text(old) == old.reason


def test_data_path_lines_say_which_cache_serves_what(catalog):
    rec = recommend(PlanRequest(dataset="papers100M", filters=Filters(max_memory_gib=64)), catalog=catalog, today=TODAY)
    two = data_path_lines(rec.chosen, "degree")
    assert two[0].startswith("Feature reads served (degree policy): learner cache")
    assert any(line.startswith("On the link per epoch:") for line in two)
    one = data_path_lines(rec.single_machine, "degree")
    assert one[0].startswith("Feature reads served (degree policy): RAM cache") and "learner" not in one[0]
    alone = rec.single_machine.data_path
    assert (
        f"Start-up reads {alone.startup_read_gb_per_machine:,.1f} GB from the volume in "
        f"{duration(alone.startup_read_seconds)}; staging copies it {alone.staged_gb_per_machine:,.1f} GB (every row)"
        in one
    )
    # the reading and the rest of start-up add up to the plan's start-up
    assert alone.startup_read_seconds + alone.startup_fixed_seconds == pytest.approx(
        rec.single_machine.startup_seconds, abs=0.1
    )
    # A plan file from before the start-up figures says nothing of them.
    before = rec.chosen.model_copy(
        update={
            "data_path": rec.chosen.data_path.model_copy(update={"staged_gb_per_machine": 0.0, "shard_layout": None})
        }
    )
    assert not any(line.startswith("Start-up") for line in data_path_lines(before, "degree"))
    assert any(line.startswith("Start-up: each memory machine reads") for line in two)
    old = rec.chosen.model_copy(update={"data_path": None})  # a plan file from before the data path
    assert data_path_lines(old, "degree") == [
        f"Cache: {old.cache_fraction:.0%} of feature rows in RAM serve {old.hit_rate:.0%} of reads (degree policy)"
    ]


@pytest.mark.parametrize(
    ("usd_value", "text"),
    [
        (0.0, "$0.00"),
        (0.003684, "$0.00368"),
        (0.0041, "$0.00410"),
        (0.4128, "$0.413"),
        (0.9996, "$1.00"),
        (4.213, "$4.21"),
        (1234.567, "$1,234.57"),
    ],
)
def test_costs_read_to_three_significant_digits_and_at_least_to_the_cent(usd_value, text):
    assert usd(usd_value) == text


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (0.0, "0 s"),
        (0.31, "310 ms"),
        (0.9996, "1.00 s"),  # the unit follows the rounded figure
        (4.213, "4.21 s"),
        (25.26, "25.3 s"),
        (750.0, "12.5 min"),
        (11_560.0, "3.21 h"),
        (3_600_000.0, "1,000 h"),
    ],
)
def test_durations_read_to_three_significant_digits_in_a_fitting_unit(seconds, text):
    assert duration(seconds) == text


def test_a_small_graphs_table_tells_its_plans_apart_and_states_its_ranking(catalog):
    rec = recommend(PlanRequest(dataset="arxiv", constraints=Constraints(budget_usd=5)), catalog=catalog, today=TODAY)
    plans = [rec.chosen, *rec.alternatives]
    console = Console(width=400, record=True)
    console.print(plans_table(rec, len(plans)))
    shown = console.export_text()
    costs = [usd(p.total_usd) for p in plans]
    times = [duration(p.total_hours * SECONDS_PER_HOUR) for p in plans]
    # A fraction of a cent apart still reads apart: plans whose costs differ by 1% show different
    # costs (two plans may still agree to the three digits shown).
    for a, b in itertools.combinations(plans, 2):
        if abs(a.total_usd - b.total_usd) >= 0.01 * min(a.total_usd, b.total_usd):
            assert usd(a.total_usd) != usd(b.total_usd), costs
    assert "$0.00" not in costs, costs
    assert "0 s" not in times, times
    assert all(cost in shown for cost in costs) and all(time in shown for time in times)
    assert f"ranked {RANKING_RULE}" in " ".join(shown.split())
