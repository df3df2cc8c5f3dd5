"""The request's constraints as one table: the field, the evaluated figure it bounds, its rounding.

The solvers, the masks of which candidates fit, and the advice on what would fit all read this
table, so a constraint is described once.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from contracts.plan import Constraints, InfeasibleCode
from foundation.units import SIGNIFICANT_DIGITS
from planner.costmodel.evaluation import Evaluation

CONSTRAINTS_FIELD = "constraints"  # where the constraints sit in a PlanRequest


@dataclass(frozen=True)
class ConstraintSpec:
    code: InfeasibleCode  # the answer's code when this constraint alone keeps every plan out
    name: str  # its field in Constraints
    metric: str  # the Evaluation figure it bounds (from above)
    decimals: int  # advice rounds a needed bound up to this many decimals at least (see round_up)

    @property
    def field(self) -> str:
        """The field's path in the request: what the API and the JSON documents call it."""
        return f"{CONSTRAINTS_FIELD}.{self.name}"

    def bound(self, constraints: Constraints) -> float | None:
        return getattr(constraints, self.name)

    def values(self, ev: Evaluation) -> np.ndarray:
        return getattr(ev, self.metric)

    def round_up(self, value: float) -> float:
        """``value`` rounded up to the precision advice quotes, so the bound it names still fits.

        That is ``decimals``, or the significant digits figures are shown with where those are
        finer: a small graph's cheapest plan at $0.00368 needs a budget of $0.00369, not $0.01.
        """
        decimals = self.decimals
        if value > 0:
            decimals = max(decimals, SIGNIFICANT_DIGITS - 1 - math.floor(math.log10(value)))
        scale = 10**decimals
        return float(np.ceil(value * scale) / scale)


# In the order an infeasible answer names the binding one: the budget first, as users set it most.
CONSTRAINTS = (
    ConstraintSpec(InfeasibleCode.BUDGET, "budget_usd", "total_usd", decimals=2),
    ConstraintSpec(InfeasibleCode.DEADLINE, "deadline_hours", "total_hours", decimals=2),
    ConstraintSpec(InfeasibleCode.MAX_HOURLY, "max_hourly_usd", "hourly_usd", decimals=3),
)


def constraint_masks(ev: Evaluation, constraints: Constraints) -> dict[ConstraintSpec, np.ndarray]:
    """For each constraint the request sets (in CONSTRAINTS order), which candidates meet it."""
    return {spec: spec.values(ev) <= bound for spec in CONSTRAINTS if (bound := spec.bound(constraints)) is not None}


def runnable_within(
    ev: Evaluation, masks: dict[ConstraintSpec, np.ndarray], skip: ConstraintSpec | None = None
) -> np.ndarray:
    """Candidates that can run and meet every constraint of ``masks`` (all of them but ``skip``)."""
    ok = ev.feasible.copy()
    for spec, mask in masks.items():
        if spec is not skip:
            ok &= mask
    return ok


def within(ev: Evaluation, constraints: Constraints) -> np.ndarray:
    """Candidates that can run and meet every constraint of the request: the ones a plan may use."""
    return runnable_within(ev, constraint_masks(ev, constraints))
