"""An Infeasibility's advice in words (planner.advice): one sentence, each field in the caller's
vocabulary, each bound as a user would type it."""

from __future__ import annotations

from contracts.plan import Advice, Change, InfeasibleCode
from planner.advice import advice_text
from planner.wording import option_for

BUDGET = Advice(field="constraints.budget_usd", change=Change.AT_LEAST, value=7.3200)
EPOCHS = Advice(field="workload.epochs", change=Change.AT_MOST, value=6)


def test_bounds_read_as_one_sentence_in_field_paths_or_options():
    assert advice_text(InfeasibleCode.BUDGET, [BUDGET, EPOCHS]) == (
        "Raise constraints.budget_usd to at least 7.32, or lower workload.epochs to at most 6"
    )
    assert advice_text(InfeasibleCode.BUDGET, [BUDGET, EPOCHS], option_for) == (
        "Raise --budget to at least 7.32, or lower --epochs to at most 6"
    )


def test_no_candidate_and_all_constraints_name_what_to_loosen():
    loosen = [
        Advice(field="filters.arch", change=Change.RELAX),
        Advice(field="workload.fanouts", change=Change.SHRINK),
    ]
    assert advice_text(InfeasibleCode.NO_CANDIDATE, loosen, option_for) == (
        "Relax the filters (--arch) or shrink the job (--fanouts)"
    )
    assert advice_text(InfeasibleCode.NO_CANDIDATE, loosen[:1]) == "Relax the filters (filters.arch)"
    tiny = Advice(field="constraints.budget_usd", change=Change.AT_LEAST, value=0.000561)
    assert advice_text(InfeasibleCode.ALL_CONSTRAINTS, [tiny]) == (
        "Relax more than one constraint (even alone, constraints.budget_usd needs at least 0.000561)"
    )
