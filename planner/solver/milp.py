"""An exact MILP over whole-cluster columns, solved with CBC through pulp.

Every column is one cluster (learner, memory type, integer k, gp3 option, or a single machine)
with its precomputed total cost, total hours and USD/h. Binary x_c picks exactly one column;
the budget, deadline and hourly cap are linear constraints; the objective is total cost.

Before the solve, columns that another column beats or ties on all of cost, time and USD/h are
dropped along each grid axis. That is exact: a dominated column is never better than the one
that dominates it under any of these constraints, and dominance is transitive.
"""

from __future__ import annotations

import numpy as np
import pulp

from contracts.plan import Constraints
from planner.costmodel.evaluation import Evaluation
from planner.solver.candidates import CandidateGrid
from planner.solver.constraints import CONSTRAINTS


def _undominated(attrs: np.ndarray, axis: int) -> np.ndarray:
    """Mask of entries not dominated by another entry along ``axis`` of ``attrs`` (shape (A, *grid)).

    Entry j dominates i when it is <= in every attribute and < in one, or equal in all with j < i.
    """
    axis += 1  # attrs carries the attribute axis first
    a_i = np.expand_dims(attrs, axis + 1)  # i along axis, j along axis + 1
    a_j = np.expand_dims(attrs, axis)
    le = np.all(a_j <= a_i, axis=0)
    lt = np.any(a_j < a_i, axis=0)
    n = attrs.shape[axis]
    shape = [1] * attrs.ndim  # the grid plus the j axis
    shape[axis - 1], shape[axis] = n, n
    earlier = (np.arange(n)[None, :] < np.arange(n)[:, None]).reshape(shape)
    dominated = np.any(le & (lt | earlier), axis=axis)
    return ~dominated


def _prune(attrs: np.ndarray) -> np.ndarray:
    keep = np.ones(attrs.shape[1:], dtype=bool)
    for axis in range(keep.ndim):
        masked = np.where(keep, attrs, np.inf)
        if axis == 0 or keep.ndim < 3:
            keep &= _undominated(masked, axis)
        else:  # chunk over the first axis to bound memory
            for first in range(len(keep)):
                keep[first] &= _undominated(masked[:, first], axis - 1)
    return keep


def candidate_columns(evaluation: Evaluation, grid: CandidateGrid) -> np.ndarray:
    """Indices of feasible, undominated clusters: the MILP's columns."""
    attrs = np.stack([spec.values(evaluation) for spec in CONSTRAINTS])  # what the constraints bound
    attrs = np.where(evaluation.feasible, attrs, np.inf)
    split = int(np.prod(grid.two_level_shape))
    keep_two = _prune(attrs[:, :split].reshape(len(CONSTRAINTS), *grid.two_level_shape)).ravel()
    keep_one = _prune(attrs[:, split:].reshape(len(CONSTRAINTS), *grid.single_shape)).ravel()
    keep = np.concatenate([keep_two, keep_one]) & evaluation.feasible
    return np.flatnonzero(keep)


def solve(evaluation: Evaluation, grid: CandidateGrid, constraints: Constraints) -> int | None:
    """Index of the cheapest cluster meeting the constraints, or None when none does."""
    columns = candidate_columns(evaluation, grid)
    if len(columns) == 0:
        return None
    problem = pulp.LpProblem("cluster_choice", pulp.LpMinimize)
    x = [problem.add_variable(f"x{c}", cat=pulp.LpBinary) for c in range(len(columns))]
    problem += pulp.lpDot(evaluation.total_usd[columns].tolist(), x)
    problem += pulp.lpSum(x) == 1
    for spec in CONSTRAINTS:
        bound = spec.bound(constraints)
        if bound is not None:
            problem += pulp.lpDot(spec.values(evaluation)[columns].tolist(), x) <= bound
    # PuLP 3 bundles a CBC binary behind PULP_CBC_CMD (deprecated for 4.0, hence the pin < 4).
    status = problem.solve(pulp.PULP_CBC_CMD(msg=False))
    if pulp.LpStatus[status] != "Optimal":
        return None
    chosen = [c for c, var in zip(columns, x) if (var.value() or 0) > 0.5]
    return int(chosen[0]) if chosen else None
