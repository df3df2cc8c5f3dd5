"""How the planner's answers name what the user typed: the command-line option of each request
field, and why no plan fits. Every command that takes a plan request (`planner recommend`,
`provision up --dataset`) words its messages with these."""

from __future__ import annotations

from contracts.plan import Recommendation
from foundation.cli import option_name
from planner.advice import advice_text

NOTHING_FITS = "no plan fits"

# The options whose names differ from their field's (others are the field name as --kebab-case).
FLAG_FOR_FIELD = {
    "budget_usd": "--budget",
    "deadline_hours": "--deadline",
    "max_hourly_usd": "--max-hourly",
}


def option_for(path: str) -> str:
    """The option that sets the request field at ``path``: 'constraints.budget_usd' -> '--budget'."""
    return option_name(path.rsplit(".", 1)[-1], FLAG_FOR_FIELD)


def infeasible_text(rec: Recommendation) -> str:
    """Why no plan fits and what would, naming the command-line options that would change it.

    A plan file from before ``infeasibility`` existed has only its ``reason``.
    """
    why = rec.reason or NOTHING_FITS
    if rec.infeasibility is None:
        return why
    return f"{why}. {advice_text(rec.infeasibility.code, rec.infeasibility.advice, option_for)}"
