"""Which `planner` option sets each request field, so messages name what the user types."""

from __future__ import annotations

from foundation.cli import option_name

# The options whose names differ from their field's (others are the field name as --kebab-case).
FLAG_FOR_FIELD = {
    "budget_usd": "--budget",
    "deadline_hours": "--deadline",
    "max_hourly_usd": "--max-hourly",
}


def option_for(path: str) -> str:
    """The option that sets the request field at ``path``: 'constraints.budget_usd' -> '--budget'."""
    return option_name(path.rsplit(".", 1)[-1], FLAG_FOR_FIELD)
