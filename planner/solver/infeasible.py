"""Why no plan fits a request and what would: a plain sentence that names no option or field,
and the same answer as data (Infeasibility), whose advice each interface words itself."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from contracts.plan import (
    Advice,
    Change,
    Infeasibility,
    InfeasibleCode,
    PlanRequest,
    Unrunnable,
    UnrunnableReason,
)
from foundation.units import hours, significant, usd
from planner.advice import advice_text
from planner.costmodel.evaluation import FEASIBLE, Evaluation
from planner.solver.constraints import ConstraintSpec, constraint_masks, runnable_within
from planner.solver.solution import Solution

# When no candidate can run at all: what to loosen, since no constraint is at fault.
NO_CANDIDATE_ADVICE = (
    Advice(field="filters.max_memory_gib", change=Change.RELAX),
    Advice(field="filters.memory_families", change=Change.RELAX),
    Advice(field="filters.arch", change=Change.RELAX),
    Advice(field="workload.batch_size", change=Change.SHRINK),
    Advice(field="workload.fanouts", change=Change.SHRINK),
)

# Full-graph layouts cannot shrink a batch: fewer, larger partitions are what they can change.
FULL_GRAPH_NO_CANDIDATE_ADVICE = (
    Advice(field="filters.max_memory_gib", change=Change.RELAX),
    Advice(field="filters.memory_families", change=Change.RELAX),
    Advice(field="filters.arch", change=Change.RELAX),
    Advice(field="filters.max_memory_nodes", change=Change.RELAX),
)

PINNED_WORKERS_ADVICE = (*FULL_GRAPH_NO_CANDIDATE_ADVICE[:-1], Advice(field="full_graph.workers", change=Change.RELAX))

EPOCHS_FIELD = "workload.epochs"

ROUNDS_FIELD = "full_graph.rounds"

# Why nothing fits (Recommendation.reason): plain words that name no option or field, so the
# sentence reads right in every interface; what would fit is in the advice.
BINDING_REASONS = {
    InfeasibleCode.BUDGET: "no plan fits the {bound} budget for {work}: the cheapest plan that meets "
    "the other constraints costs {best} ({plan})",
    InfeasibleCode.DEADLINE: "no plan finishes {work} within {bound}: the fastest plan within the other "
    "constraints takes {best} ({plan})",
    InfeasibleCode.MAX_HOURLY: "no plan within the other constraints runs at {bound} or less: the cheapest "
    "cluster among them runs at {best} ({plan})",
}


def _per_hour(usd_per_hour: float) -> str:
    return f"${usd_per_hour:,.3f}/h"


# How each constraint's figures read in those sentences: to the precision that tells a small
# graph's plans apart (a budget of a fraction of a cent is not '$0.00').
BOUND_WORDS: dict[InfeasibleCode, Callable[[float], str]] = {
    InfeasibleCode.BUDGET: usd,
    InfeasibleCode.DEADLINE: lambda total_hours: f"{significant(total_hours)} h",
    InfeasibleCode.MAX_HOURLY: _per_hour,
}

ALL_CONSTRAINTS_REASON = (
    "no cluster meets all constraints together, and relaxing any one of them is not enough: "
    "the cheapest cluster runs at {hourly} and the cheapest job costs {cost}"
)


def job_size(request: PlanRequest) -> str:
    """The job's length in its own unit, for sentences: '10 epochs', '100 rounds per layer'."""
    if request.method == "retexo":
        return f"{request.full_graph.rounds} rounds per layer"
    if request.full_graph_method:
        return f"{request.full_graph.rounds} rounds"
    return f"{request.workload.epochs} epochs"


def infeasibility(sol: Solution) -> tuple[str, Infeasibility]:
    """Why no plan fits (a plain sentence) and what would (as data), for a request with no plan.

    The first constraint, in CONSTRAINTS order, without which some plan fits is the binding one;
    when relaxing any single constraint is not enough, they bind together.
    """
    ev = sol.ev
    if not ev.feasible.any():
        return _no_candidate(ev, no_candidate_advice(sol.request))
    masks = constraint_masks(ev, sol.request.constraints)
    for spec in masks:
        others = runnable_within(ev, masks, skip=spec)
        if others.any():
            return _binding(sol, spec, others)
    return _all_constraints(sol, masks)


def infeasible(
    code: InfeasibleCode,
    advice: Sequence[Advice],
    *,
    binding: str | None = None,
    common_reason: UnrunnableReason | None = None,
) -> Infeasibility:
    """The answer as data, with its ``detail``: the advice in words that name request fields by
    their paths (the REST API's vocabulary)."""
    return Infeasibility(
        code=code, binding=binding, advice=list(advice), common_reason=common_reason, detail=advice_text(code, advice)
    )


def no_candidate_advice(request: PlanRequest) -> tuple[Advice, ...]:
    """What to loosen when nothing can run: sampled jobs can shrink their batches; full-graph jobs
    can use more, smaller partitions (more workers, or the workers the request pinned)."""
    if not request.full_graph_method:
        return NO_CANDIDATE_ADVICE
    return PINNED_WORKERS_ADVICE if request.full_graph.workers is not None else FULL_GRAPH_NO_CANDIDATE_ADVICE


def _no_candidate(ev: Evaluation, advice: tuple[Advice, ...]) -> tuple[str, Infeasibility]:
    """No cluster can run the job: name the most common reason, and advise looser filters or a smaller job."""
    codes, counts = np.unique(ev.infeasible[ev.infeasible != FEASIBLE], return_counts=True)
    common = UnrunnableReason.of(Unrunnable(int(codes[np.argmax(counts)]))) if len(codes) else None
    reason = "no candidate cluster can run this job" + (f" ({common.description})" if common else "")
    return reason, infeasible(InfeasibleCode.NO_CANDIDATE, advice, common_reason=common)


def _binding(sol: Solution, spec: ConstraintSpec, others: np.ndarray) -> tuple[str, Infeasibility]:
    """``spec`` alone keeps plans out (``others`` meet the rest): the least value of it that fits one."""
    request = sol.request
    bound = spec.bound(request.constraints)
    assert bound is not None  # constraint_masks holds only the constraints the request sets
    advice = [_least_bound(sol, spec, others)]
    if spec.code is InfeasibleCode.BUDGET:
        advice += _fewer_epochs(sol, others, bound)
    best = float(spec.values(sol.ev)[others].min())
    words = BOUND_WORDS[spec.code]
    reason = BINDING_REASONS[spec.code].format(
        bound=words(bound), work=job_size(request), best=words(best), plan=advice[0].plan
    )
    return reason, infeasible(spec.code, advice, binding=spec.field)


def _all_constraints(sol: Solution, masks: dict[ConstraintSpec, np.ndarray]) -> tuple[str, Infeasibility]:
    """No single constraint binds: for each, what it needs even with the others dropped."""
    ev = sol.ev
    advice = [_least_bound(sol, spec, ev.feasible) for spec in masks]
    reason = ALL_CONSTRAINTS_REASON.format(
        hourly=_per_hour(float(ev.hourly_usd[ev.feasible].min())), cost=usd(float(ev.total_usd[ev.feasible].min()))
    )
    return reason, infeasible(InfeasibleCode.ALL_CONSTRAINTS, advice)


def _least_bound(sol: Solution, spec: ConstraintSpec, mask: np.ndarray) -> Advice:
    """Raise ``spec`` to the lowest value of its figure under ``mask``, naming the plan with it.

    Among plans tied on that figure, the plan is the one Solution.order ranks first.
    """
    values = spec.values(sol.ev)
    best = int(sol.order(mask & (values == values[mask].min()), head=1)[0])
    return Advice(
        field=spec.field, change=Change.AT_LEAST, value=spec.round_up(float(values[best])), plan=sol.priced.label(best)
    )


def _fewer_epochs(sol: Solution, others: np.ndarray, budget: float) -> list[Advice]:
    """Lower the epochs (full-graph: the rounds) to the most that some plan under ``others`` trains
    within the budget (none if < 1). RETEXO runs its rounds once per layer, so a budget for E of
    its rounds allows E / K rounds per layer."""
    ev = sol.ev
    per_epoch = ev.hourly_usd[others] * hours(ev.epoch_s[others]) + _at(ev.usd_per_epoch_extra, others)
    fixed = ev.hourly_usd[others] * hours(ev.startup_s[others]) + _at(ev.usd_fixed_extra, others)
    per_unit = sol.request.full_graph.layers if sol.request.method == "retexo" else 1
    with np.errstate(divide="ignore", invalid="ignore"):
        most = int(np.nanmax(np.floor((budget - fixed) / per_epoch / per_unit)))
    field = ROUNDS_FIELD if sol.request.full_graph_method else EPOCHS_FIELD
    return [Advice(field=field, change=Change.AT_MOST, value=most)] if most >= 1 else []


def _at(value: np.ndarray | float, index: np.ndarray) -> np.ndarray | float:
    """An Evaluation charge at ``index``: per cluster, or one figure for all."""
    return value[index] if isinstance(value, np.ndarray) else value
