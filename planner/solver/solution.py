"""The solving step of a recommendation: a request's priced candidates, which of them meet its
constraints, and the plan among them (by the ranking, or by the MILP)."""

from __future__ import annotations

import numpy as np

from contracts.calibration import Coefficients
from contracts.plan import PlanRequest
from planner.catalog.snapshot import Catalog
from planner.costmodel.evaluation import Clusters
from planner.solver import milp
from planner.solver.constraints import within
from planner.solver.pricing import Priced, price


class Solution:
    """One request's answer in the making: its priced candidates and which of them meet its
    constraints (the only part computed per request when the pricing is cached)."""

    def __init__(
        self, request: PlanRequest, catalog: Catalog, coefficients: Coefficients, clusters: Clusters | None = None
    ):
        """Price ``clusters`` for this request, or take the request's whole grid priced (cached)."""
        self.request, self.catalog = request, catalog
        self.priced = (
            price(request, catalog, coefficients)
            if clusters is None
            else Priced(request, catalog, coefficients, clusters)
        )
        self.inputs, self.grid, self.clusters, self.ev = (
            self.priced.inputs,
            self.priced.grid,
            self.priced.clusters,
            self.priced.ev,
        )
        self.within = within(self.ev, request.constraints)

    def order(self, mask: np.ndarray, head: int | None = None) -> np.ndarray:
        return self.priced.order(mask, head)

    def first(self, mask: np.ndarray) -> int | None:
        return self.priced.first(mask)

    def best(self) -> int | None:
        """The plan: the first in the ranking among those that fit. The MILP finds the least cost
        on its own, and among the plans of that cost the ranking picks, as without it (CBC would
        return any of them)."""
        if self.request.solver == "milp" and self.grid is not None:
            cheapest = milp.solve(self.ev, self.grid, self.request.constraints)
            if cheapest is None:
                return None
            return self.first(self.within & (self.ev.total_usd == self.ev.total_usd[cheapest]))
        return self.first(self.within)
