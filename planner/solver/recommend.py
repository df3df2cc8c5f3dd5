"""From a PlanRequest to a Recommendation: evaluate every candidate, pick, rank and explain."""

from __future__ import annotations

import datetime as dt
import hashlib
import json
from collections.abc import Callable

import numpy as np

from planner.catalog.snapshot import Catalog, load_catalog
from planner.costmodel import paper, pipeline
from planner.costmodel.coefficients import DEFAULT_COEFFICIENTS, Coefficients
from planner.costmodel.evaluation import INFEASIBLE_REASONS, Clusters, Evaluation, ModelInputs
from planner.datasets.builtin import builtin_profile
from planner.datasets.profile import DatasetProfile
from planner.plan import ClusterPlan, Constraints, FrontierPoint, NodeGroup, PlanRequest, Recommendation, VolumeSpec
from planner.solver import milp
from planner.solver.candidates import CandidateGrid, build_grid, grid_clusters
from planner.solver.explain import explain

MODELS: dict[str, Callable[[ModelInputs, Clusters], Evaluation]] = {"pipeline": pipeline.evaluate, "paper": paper.evaluate}
FRONTIER_POINTS = 40
FAILOVER_ALTERNATIVES = 10


def resolve_profile(request: PlanRequest) -> DatasetProfile:
    return request.profile if request.profile is not None else builtin_profile(request.dataset or "")


def model_inputs(request: PlanRequest, catalog: Catalog, coefficients: Coefficients) -> ModelInputs:
    return ModelInputs(
        columns=catalog.columns, volume=catalog.volumes["gp3"], profile=resolve_profile(request),
        workload=request.workload, coefficients=coefficients, spot=request.spot,
    )


class Solution:
    """The evaluated candidate set of one request, with the masks the answer is built from."""

    def __init__(self, request: PlanRequest, catalog: Catalog, coefficients: Coefficients,
                 clusters: Clusters | None = None):
        """Evaluate ``clusters``, or the whole candidate grid the request's filters allow."""
        self.request, self.catalog = request, catalog
        self.inputs = model_inputs(request, catalog, coefficients)
        if clusters is None:
            max_count = 1 if request.model == "paper" else request.filters.max_memory_nodes
            self.grid: CandidateGrid | None = build_grid(catalog, request.filters, request.spot, max_count)
            clusters = grid_clusters(self.grid)
        else:
            self.grid = None
        self.clusters = clusters
        self.ev = MODELS[request.model](self.inputs, self.clusters)
        self.within = within(self.ev, request.constraints)

    def order(self, mask: np.ndarray) -> np.ndarray:
        """Indices under ``mask``: cheapest first, then fastest, then lowest USD/h, then grid order.

        The USD/h tie-break matters for the paper model, which gives every cluster whose memory
        machine holds the whole dataset a time (and so a cost) of zero.
        """
        idx = np.flatnonzero(mask)
        ev = self.ev
        return idx[np.lexsort((idx, ev.hourly_usd[idx], ev.total_hours[idx], ev.total_usd[idx]))]

    def best(self) -> int | None:
        if self.request.solver == "milp" and self.grid is not None:
            return milp.solve(self.ev, self.grid, self.request.constraints)
        ranked = self.order(self.within)
        return int(ranked[0]) if len(ranked) else None

    def distinct(self, ranked: np.ndarray, limit: int, exclude: int | None = None) -> list[int]:
        """The best entry per (learner, memory type, k), in rank order."""
        seen, out = set(), []
        c = self.clusters
        if exclude is not None:
            seen.add((c.learner[exclude], c.memory[exclude], c.count[exclude]))
        for i in ranked:
            key = (c.learner[i], c.memory[i], c.count[i])
            if key not in seen:
                seen.add(key)
                out.append(int(i))
                if len(out) == limit:
                    break
        return out


def within(ev: Evaluation, constraints: Constraints) -> np.ndarray:
    ok = ev.feasible.copy()
    if constraints.budget_usd is not None:
        ok &= ev.total_usd <= constraints.budget_usd
    if constraints.deadline_hours is not None:
        ok &= ev.total_hours <= constraints.deadline_hours
    if constraints.max_hourly_usd is not None:
        ok &= ev.hourly_usd <= constraints.max_hourly_usd
    return ok


def recommend(
    request: PlanRequest,
    *,
    catalog: Catalog | None = None,
    coefficients: Coefficients = DEFAULT_COEFFICIENTS,
    today: dt.date | None = None,
) -> Recommendation:
    catalog = catalog or load_catalog()
    sol = Solution(request, catalog, coefficients)
    ev = sol.ev
    best = sol.best()
    single = sol.order(ev.feasible & (sol.clusters.count == 0))
    two_level = sol.order(ev.feasible & (sol.clusters.count > 0))
    feasible_any = bool(ev.feasible.any())
    info = catalog.info(today)
    plans = lambda idx: [describe(sol, i) for i in idx]  # noqa: E731
    return Recommendation(
        plan_id=plan_id(request, catalog, coefficients),
        snapshot=info,
        request=request,
        profile=sol.inputs.profile,
        coefficients_source=coefficients.source if request.model == "pipeline" else "paper model (no coefficients)",
        feasible=best is not None,
        reason=None if best is not None else infeasible_reason(sol),
        cheapest_feasible_usd=float(ev.total_usd[sol.order(ev.feasible)[0]]) if feasible_any else None,
        chosen=describe(sol, best) if best is not None else None,
        alternatives=plans(sol.distinct(sol.order(ev.feasible), FAILOVER_ALTERNATIVES, exclude=best)),
        single_machine=describe(sol, int(single[0])) if len(single) else None,
        two_level=describe(sol, int(two_level[0])) if len(two_level) else None,
        frontier=frontier(sol),
        warnings=warnings(sol, best, info.stale, info.age_days),
    )


def describe(sol: Solution, i: int) -> ClusterPlan:
    ev, c, cols = sol.ev, sol.clusters, sol.catalog.columns
    market = "spot" if sol.request.spot else "on-demand"

    def group(index: int, count: int) -> NodeGroup:
        inst = cols.instances[index]
        return NodeGroup(instance_type=inst.name, count=count, market=market,
                         usd_per_hour_each=round(float(inst.price(sol.request.spot)), 6), vcpus=inst.vcpus,
                         memory_gib=inst.memory_gib, gpu=inst.gpu_model)

    k = int(c.count[i])
    size = float(ev.volume_gb[i])
    volume = VolumeSpec(
        count=max(k, 1), size_gb=int(size), iops=int(c.volume_iops[i]), throughput_mbps=int(c.volume_mbps[i]),
        usd_per_hour_each=round(float(sol.inputs.volume.hourly_usd(size, c.volume_iops[i], c.volume_mbps[i])), 6),
    )
    details = ev.details
    return ClusterPlan(
        layout="two-level" if k else "single-machine",
        learner=group(int(c.learner[i]), 1),
        memory=group(int(c.memory[i]), k) if k else None,
        volume=volume,
        usd_per_hour=round(float(ev.hourly_usd[i]), 6),
        epoch_seconds=round(float(ev.epoch_s[i]), 3),
        startup_seconds=round(float(ev.startup_s[i]), 3),
        total_hours=round(float(ev.total_hours[i]), 6),
        total_usd=round(float(ev.total_usd[i]), 4),
        stages={name: round(float(t[i]), 3) for name, t in ev.stages.items()},
        bottleneck=ev.stage_names[int(ev.bottleneck[i])],
        explanation=explain(ev, c, cols, i),
        cache_fraction=round(float(details["cache_fraction"][i]), 4) if "cache_fraction" in details else None,
        hit_rate=round(float(details["hit_rate"][i]), 4) if "hit_rate" in details else None,
        fits=bool(sol.within[i]),
    )


def frontier(sol: Solution) -> list[FrontierPoint]:
    """Clusters no other cluster beats on both total cost and total time."""
    ev = sol.ev
    idx = np.flatnonzero(ev.feasible)
    idx = idx[np.lexsort((ev.total_usd[idx], ev.total_hours[idx]))]
    cost = ev.total_usd[idx]
    running = np.minimum.accumulate(cost)
    keep = np.concatenate([[True], cost[1:] < running[:-1]]) if len(idx) else np.array([], dtype=bool)
    points = idx[keep]
    if len(points) > FRONTIER_POINTS:
        points = points[np.unique(np.linspace(0, len(points) - 1, FRONTIER_POINTS).round().astype(int))]
    return [
        FrontierPoint(total_hours=round(float(ev.total_hours[i]), 6), total_usd=round(float(ev.total_usd[i]), 4),
                      label=label(sol, int(i)))
        for i in points
    ]


def label(sol: Solution, i: int) -> str:
    c, names = sol.clusters, sol.catalog.columns.instances
    learner = names[int(c.learner[i])].name
    if c.count[i] == 0:
        return f"{learner} alone"
    return f"{learner} + {int(c.count[i])}x {names[int(c.memory[i])].name}"


def infeasible_reason(sol: Solution) -> str:
    ev, cons, epochs = sol.ev, sol.request.constraints, sol.request.workload.epochs
    if not ev.feasible.any():
        codes, counts = np.unique(ev.infeasible[ev.infeasible > 0], return_counts=True)
        common = INFEASIBLE_REASONS[int(codes[np.argmax(counts)])] if len(codes) else "no candidate"
        return (f"no candidate cluster can run this job ({common}). Relax the filters (--max-memory-gib, "
                "--memory-families, --arch) or shrink the job (--batch-size, --fanouts)")
    others = ev.feasible.copy()
    if cons.deadline_hours is not None:
        others &= ev.total_hours <= cons.deadline_hours
    if cons.max_hourly_usd is not None:
        others &= ev.hourly_usd <= cons.max_hourly_usd
    if others.any() and cons.budget_usd is not None:
        cheapest = int(sol.order(others)[0])
        cost = np.ceil(float(ev.total_usd[cheapest]) * 100) / 100
        per_epoch = ev.hourly_usd[others] * ev.epoch_s[others] / 3600
        fixed = ev.hourly_usd[others] * ev.startup_s[others] / 3600
        with np.errstate(divide="ignore", invalid="ignore"):
            max_epochs = int(np.nanmax(np.floor((cons.budget_usd - fixed) / per_epoch)))
        epochs_hint = f", or train fewer epochs (--epochs {max_epochs} fits)" if max_epochs >= 1 else ""
        return (f"no plan fits the ${cons.budget_usd:,.2f} budget for {epochs} epochs: the cheapest plan that meets "
                f"the other constraints costs ${cost:,.2f} ({label(sol, cheapest)}). Raise --budget to at least "
                f"{cost:.2f}{epochs_hint}")
    affordable = ev.feasible.copy()
    if cons.budget_usd is not None:
        affordable &= ev.total_usd <= cons.budget_usd
    if cons.max_hourly_usd is not None:
        affordable &= ev.hourly_usd <= cons.max_hourly_usd
    if cons.deadline_hours is not None and affordable.any():
        fastest = float(ev.total_hours[affordable].min())
        return (f"no plan finishes {epochs} epochs within {cons.deadline_hours:g} h: the fastest plan within the other "
                f"constraints takes {fastest:.2f} h. Raise --deadline to at least {np.ceil(fastest * 100) / 100:.2f}")
    lowest = float(ev.hourly_usd[ev.feasible].min())
    return (f"no cluster meets all constraints together; the cheapest cluster runs at ${lowest:.3f}/h "
            f"(raise --max-hourly above that) and the cheapest job costs ${float(ev.total_usd[ev.feasible].min()):,.2f}")


def warnings(sol: Solution, best: int | None, stale: bool, age_days: int) -> list[str]:
    out = []
    if stale:
        out.append(f"the price snapshot is {age_days} days old: prices may have moved; "
                   "run `planner pricing refresh` with AWS credentials")
    if best is not None:
        cols, c = sol.catalog.columns, sol.clusters
        used = [cols.instances[int(c.learner[best])]]
        if c.count[best]:
            used.append(cols.instances[int(c.memory[best])])
        derived = [i.name for i in used if i.price_provenance == "derived"]
        if derived:
            out.append(f"{', '.join(derived)}: price derived linearly from its family, not listed; check it")
    if sol.request.model == "paper":
        out.append("the paper model ignores IOPS, network, sampling CPU and GPU time; use it to compare, not to budget")
    if sol.request.spot:
        out.append("spot prices are the lowest over the region's zones today; spot machines can be reclaimed")
    if sol.request.model == "pipeline" and "uncalibrated" in sol.inputs.coefficients.source:
        out.append("pipeline-model coefficients are uncalibrated estimates; `planner recommend --calibration FILE` "
                   "uses measured ones")
    return out


def plan_id(request: PlanRequest, catalog: Catalog, coefficients: Coefficients) -> str:
    payload = json.dumps(
        [request.model_dump(mode="json"), catalog.sha256, coefficients.model_dump(mode="json")], sort_keys=True
    )
    return hashlib.sha256(payload.encode()).hexdigest()[:16]
