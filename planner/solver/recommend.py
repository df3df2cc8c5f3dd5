"""From a PlanRequest to a Recommendation: solve (solution.py), describe the plans (describe.py),
say why nothing fits when nothing does (infeasible.py) and what the answer rests on (caveats.py)."""

from __future__ import annotations

import datetime as dt
import hashlib
import json

from contracts.calibration import DEFAULT_COEFFICIENTS, Coefficients
from contracts.plan import PlanRequest, Recommendation
from planner.catalog.snapshot import Catalog, load_catalog
from planner.solver.caveats import warnings
from planner.solver.describe import describe
from planner.solver.infeasible import infeasibility
from planner.solver.solution import Solution


def recommend(
    request: PlanRequest,
    *,
    catalog: Catalog | None = None,
    coefficients: Coefficients = DEFAULT_COEFFICIENTS,
    today: dt.date | None = None,
) -> Recommendation:
    """The cheapest cluster that meets the request's budget and deadline, its alternatives, and
    why nothing fits when nothing does: what `planner recommend` and the API's POST /v1/recommendations answer.

    Args:
        request: The dataset, the job, the constraints and filters, and the cost model.
        catalog: The price snapshot to price with; None loads the shipped one.
        coefficients: The pipeline model's coefficients; by default the shipped ones.
        today: The date the snapshot's age (and staleness) is counted to; None for today.
    """
    catalog = catalog or load_catalog()
    sol = Solution(request, catalog, coefficients)
    priced, ev = sol.priced, sol.ev
    best = sol.best()
    info = catalog.info(today)
    reason, infeasible = (None, None) if best is not None else infeasibility(sol)
    return Recommendation(
        plan_id=plan_id(request, catalog, coefficients),
        snapshot=info,
        request=request,
        profile=sol.inputs.profile,
        coefficients_source=coefficients.source if request.model == "pipeline" else "paper model (no coefficients)",
        feasible=best is not None,
        reason=reason,
        infeasibility=infeasible,
        cheapest_feasible_usd=float(ev.total_usd[priced.cheapest]) if priced.cheapest is not None else None,
        chosen=describe(sol, best) if best is not None else None,
        alternatives=[describe(sol, i) for i in priced.alternatives(best)],
        single_machine=describe(sol, priced.single_machine) if priced.single_machine is not None else None,
        two_level=describe(sol, priced.two_level) if priced.two_level is not None else None,
        frontier=priced.frontier,
        warnings=warnings(sol, best, info.stale, info.age_days),
    )


def plan_id(request: PlanRequest, catalog: Catalog, coefficients: Coefficients) -> str:
    payload = json.dumps(
        [request.model_dump(mode="json"), catalog.sha256, coefficients.model_dump(mode="json")], sort_keys=True
    )
    return hashlib.sha256(payload.encode()).hexdigest()[:16]
