"""From a PlanRequest to a Recommendation: evaluate every candidate, pick, rank and explain."""

from __future__ import annotations

import datetime as dt
import hashlib
import json
from collections.abc import Callable

import numpy as np

from contracts.calibration import DEFAULT_COEFFICIENTS, Coefficients
from contracts.datavolume import DataVolume, data_volume
from contracts.plan import (
    MAX_MEMORY_NODES,
    Advice,
    BatchFigures,
    Change,
    ClusterPlan,
    DataPath,
    FullGraphPath,
    Infeasibility,
    InfeasibleCode,
    MethodFigures,
    NodeGroup,
    PlanRequest,
    Recommendation,
    SpotRisk,
    Unrunnable,
    UnrunnableReason,
    VolumeSpec,
)
from contracts.workload import FULL_GRAPH_METHODS, PARTITIONED_METHODS, SLICEGCN_GNN, FullGraphJob
from foundation.units import hours, significant, usd
from planner.catalog.snapshot import Catalog, load_catalog
from planner.costmodel import fullgraph
from planner.costmodel.evaluation import FEASIBLE, Clusters, Evaluation
from planner.costmodel.pipeline import wire_dtype_name
from planner.solver import milp
from planner.solver.constraints import ConstraintSpec, constraint_masks, runnable_within, within
from planner.solver.explain import explain
from planner.solver.pricing import Priced, price

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


def recommend(
    request: PlanRequest,
    *,
    catalog: Catalog | None = None,
    coefficients: Coefficients = DEFAULT_COEFFICIENTS,
    today: dt.date | None = None,
) -> Recommendation:
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


def describe(sol: Solution, i: int) -> ClusterPlan:
    """Candidate ``i`` as a plan. Its figures depend only on the pricing, so each candidate is
    described once per priced set; whether it meets this request's constraints is set here."""
    plan = sol.priced.described.get(i)
    if plan is None:
        plan = sol.priced.described[i] = _describe(sol, i)
    fits = bool(sol.within[i])
    return plan if plan.fits == fits else plan.model_copy(update={"fits": fits})


def _describe(sol: Solution, i: int) -> ClusterPlan:
    ev, c, cols = sol.ev, sol.clusters, sol.catalog.columns
    details = ev.detail_at(i)
    spot = bool(details["spot"]) if "spot" in details else sol.request.spot  # pipeline: spot where it pays
    market = "spot" if spot else "on-demand"

    def group(index: int, count: int) -> NodeGroup:
        inst = cols.instances[index]
        price = inst.price(spot)
        assert price is not None  # the grid holds priced types only (build_grid drops the others)
        return NodeGroup(
            instance_type=inst.name,
            count=count,
            market=market,
            usd_per_hour_each=round(price, 6),
            vcpus=inst.vcpus,
            memory_gib=inst.memory_gib,
            gpu=inst.gpu_model,
        )

    k = int(c.count[i])
    size = float(ev.volume_gb[i])
    volume = VolumeSpec(
        count=max(k, 1),
        size_gb=int(size),
        iops=int(c.volume_iops[i]),
        throughput_mbps=int(c.volume_mbps[i]),
        usd_per_hour_each=round(float(sol.inputs.volume.hourly_usd(size, c.volume_iops[i], c.volume_mbps[i])), 6),
    )
    data_path = _data_path(sol, i, details) if "learner_hit_rate" in details else None
    partitioned = sol.request.full_graph_method
    return ClusterPlan(
        layout="partitioned" if partitioned else "two-level" if k else "single-machine",
        learner=None if partitioned else group(int(c.learner[i]), sol.request.workload.learner_machines),
        memory=group(int(c.memory[i]), k) if k else None,
        volume=volume,
        # Unrounded: the ranking compares exactly these figures, so equal figures are real ties
        # and a small graph's plans, a fraction of a cent apart, keep what tells them apart.
        usd_per_hour=float(ev.hourly_usd[i]),
        epoch_seconds=float(ev.epoch_s[i]),
        startup_seconds=float(ev.startup_s[i]),
        total_hours=float(ev.total_hours[i]),
        total_usd=float(ev.total_usd[i]),
        stages={name: float(t[i]) for name, t in ev.stages.items()},
        bottleneck=ev.stage_names[int(ev.bottleneck[i])],
        explanation=explain(ev, c, cols, i, wire_dtype=data_path.wire_dtype if data_path else None),
        cache_fraction=round(details["cache_fraction"], 4) if "cache_fraction" in details else None,
        hit_rate=round(details["hit_rate"], 4) if "hit_rate" in details else None,
        data_path=data_path,
        full_graph=_full_graph_path(sol, i, details) if partitioned else None,
        spot=_spot_risk(sol, i, details) if "spot" in details else None,
        learner_ranks=int(details["learner_ranks"]) if "learner_ranks" in details else None,
        batch=None if partitioned else _batch(sol, details),
        fits=bool(sol.within[i]),
    )


def _batch(sol: Solution, d: dict[str, float]) -> BatchFigures:
    """The mini-batch priced; a model that prices no GPU cache copies every row of every batch."""
    batch = sol.inputs.batch
    every_row = batch.batches_per_epoch * batch.feature_bytes / 1e9
    return BatchFigures(
        input_nodes=round(batch.nodes, 1),
        edges=round(batch.edges, 1),
        batches_per_epoch=batch.batches_per_epoch,
        host_to_device_gb_per_epoch=round(d.get("h2d_gb_per_epoch", every_row), 3),
    )


def _spot_risk(sol: Solution, i: int, d: dict[str, float]) -> SpotRisk:
    """Cluster ``i``'s interruptions on spot, priced (whichever market it runs on)."""
    c, cols = sol.clusters, sol.catalog.columns
    bands = sol.catalog.snapshot.spot_interruptions
    labels = {b.index: b.label for b in bands.bands} if bands else {}
    unknown = f"no band (priced at {sol.inputs.coefficients.spot_unknown_monthly_share:.1%})"
    types = [cols.instances[int(c.learner[i])]] + ([cols.instances[int(c.memory[i])]] if c.count[i] else [])
    return SpotRisk(
        runs_spot=bool(d["spot"]),
        interruptions=round(d["interruptions"], 6),
        recovery_seconds=d["recovery_s"],
        starts_over=bool(d["starts_over"]),
        added_hours=d["interruption_hours"],
        spot_usd=d["spot_usd"],
        on_demand_usd=d["on_demand_usd"],
        bands={
            t.name: unknown if t.spot_interruption_band is None else labels[t.spot_interruption_band] for t in types
        },
    )


def compared_methods(job: FullGraphJob) -> tuple[str, ...]:
    """The full-graph procedures that train the job's model, priced side by side: all of them for
    a GCN, the partitioned ones otherwise (SliceGCN's workers train GCNs only)."""
    return FULL_GRAPH_METHODS if job.gnn == SLICEGCN_GNN else PARTITIONED_METHODS


def _full_graph_path(sol: Solution, i: int, d: dict[str, float]) -> FullGraphPath:
    """Cluster ``i``'s transfer bill, and every procedure that trains the job's model priced on it
    side by side. The boundary rows and gamma are the partitioned procedures' (slicegcn has none)."""
    request = sol.request
    job = request.full_graph
    workers = int(sol.clusters.count[i])
    boundary = round(float(fullgraph.boundary_rows(sol.inputs.profile, job, np.array([workers]))[0]))
    volume = data_volume(fullgraph.volume_inputs(sol.inputs, workers, boundary))
    methods = [_method_figures(sol, i, method, volume) for method in compared_methods(job)]
    this = next(m for m in methods if m.method == request.method)
    return FullGraphPath(
        method=this.method,
        workers=workers,
        workers_in=job.workers_in,
        boundary_rows=boundary,
        boundary_measured=job.boundary_rows is not None,
        rounds=this.rounds,
        usd_per_gb=d["usd_per_gb"],
        transfer_gb=this.transfer_gb,
        transfer_usd=this.transfer_usd,
        transfer_gb_per_round=round(d["transfer_gb_per_round"], 3),
        gamma=round(volume.gamma, 3),
        methods=methods,
    )


def _method_figures(sol: Solution, i: int, method: str, volume: DataVolume) -> MethodFigures:
    """``method`` on cluster ``i`` alone: the same request with that procedure."""
    if method == sol.request.method:
        other, j = sol, i
    else:
        request = sol.request.model_copy(update={"method": method})
        other, j = Solution(request, sol.catalog, sol.inputs.coefficients, sol.clusters.take([i])), 0
    ev, d = other.ev, other.ev.detail_at(j)
    if method == "slicegcn":
        volume_gb = d["data_volume_gb"]
    else:
        volume_gb = (volume.standard if method == "standard" else volume.lazy).total / 1e9
    return MethodFigures(
        method=method,
        rounds=round(d["rounds"]),
        data_volume_gb=round(volume_gb, 3),
        transfer_gb=round(d["transfer_gb"], 3),
        transfer_usd=d["transfer_gb"] * d["usd_per_gb"],
        total_hours=float(ev.total_hours[j]),
        total_usd=float(ev.total_usd[j]),
        runnable=bool(ev.feasible[j]),
    )


def _data_path(sol: Solution, i: int, d: dict[str, float]) -> DataPath:
    """Which cache serves what on cluster ``i`` (whose figures are ``d``), and the bytes on its link."""
    two = bool(sol.clusters.count[i])
    profile = sol.inputs.profile
    return DataPath(
        learner_cache_gib=round(d["learner_cache_gib"], 3),
        learner_free_gib=round(d["learner_free_gib"], 3),
        learner_csc_gib=round(d["learner_csc_gib"], 3),
        learner_cache_fraction=round(d["learner_cache_fraction"], 4),
        served_by_learner=round(d["learner_hit_rate"], 4),
        served_by_memory=round(d["hit_rate"], 4),
        served_by_volume=round(d["volume_share"], 4),
        memory_hit_rate=round(d["memory_hit_rate"], 4),
        wire_dtype=wire_dtype_name(sol.request.workload, profile.feature_dtype, d["wire_value_bytes"]) if two else None,
        link_gbit_per_s=round(d["link_gbps"], 3),
        flows=sol.request.workload.flows,
        sampling=("learner" if d["learner_samples"] else "memory") if two else None,
        shard_layout=sol.request.workload.shard_layout if two else None,
        startup_read_gb_per_machine=round(d["startup_read_gb"], 3),
        staged_gb_per_machine=round(d["staged_gb"], 3),
        ena_express=bool(d["ena_express"]),
        wire_gb_per_epoch=round(d["epoch_wire_gb"], 3),
        wire_feature_gb_per_epoch=round(d["epoch_wire_feature_gb"], 3),
        wire_id_gb_per_epoch=round(d["epoch_wire_id_gb"], 3),
        gpu_cache_gib=round(d["gpu_cache_gib"], 3),
        gpu_cache_free_gib=round(d["gpu_cache_free_gib"], 3),
        served_by_gpu=round(d["device_hit_rate"], 4),
    )


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
    return reason, Infeasibility.of(InfeasibleCode.NO_CANDIDATE, advice, common_reason=common)


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
    return reason, Infeasibility.of(spec.code, advice, binding=spec.field)


def _all_constraints(sol: Solution, masks: dict[ConstraintSpec, np.ndarray]) -> tuple[str, Infeasibility]:
    """No single constraint binds: for each, what it needs even with the others dropped."""
    ev = sol.ev
    advice = [_least_bound(sol, spec, ev.feasible) for spec in masks]
    reason = ALL_CONSTRAINTS_REASON.format(
        hourly=_per_hour(float(ev.hourly_usd[ev.feasible].min())), cost=usd(float(ev.total_usd[ev.feasible].min()))
    )
    return reason, Infeasibility.of(InfeasibleCode.ALL_CONSTRAINTS, advice)


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


def warnings(sol: Solution, best: int | None, stale: bool, age_days: int) -> list[str]:
    out = []
    if stale:
        out.append(
            f"the price snapshot is {age_days} days old: prices may have moved; "
            "run `planner pricing refresh` with AWS credentials"
        )
    if best is not None:
        cols, c = sol.catalog.columns, sol.clusters
        used = [cols.instances[int(c.learner[best])]]
        if c.count[best]:
            used.append(cols.instances[int(c.memory[best])])
        derived = [i.name for i in used if i.price_provenance == "derived"]
        if derived:
            out.append(f"{', '.join(derived)}: price derived linearly from its family, not listed; check it")
        most = sol.request.filters.max_memory_nodes
        machines = "workers" if sol.request.full_graph_method else "memory machines"
        pinned = sol.request.full_graph.workers is not None and sol.request.full_graph_method
        if sol.request.model == "pipeline" and not pinned and c.count[best] == most < MAX_MEMORY_NODES:
            out.append(
                f"the plan uses the most {machines} allowed ({most}); allowing up to {MAX_MEMORY_NODES} "
                "may find a cheaper or faster plan"
            )
        if sol.request.full_graph_method and sol.request.full_graph.boundary_rows is None:
            out.append(
                "boundary rows are estimated for nodes placed at random; a partition that keeps neighbours "
                "together (METIS) exchanges fewer: measure yours with `fullgraph partition` and give them"
            )
    if sol.request.method == "slicegcn":
        profile = sol.inputs.profile
        out.append(
            f"SliceGCN's evaluation rows are priced for all {profile.num_nodes - profile.num_train:,} "
            "nodes outside the training set (a profile has no validation or test sizes): fewer cross the network "
            "if only some of them are labelled"
        )
    if sol.request.model == "paper":
        out.append("the paper model ignores IOPS, network, sampling CPU and GPU time; use it to compare, not to budget")
    if sol.request.spot:
        out.append("spot prices are the lowest over the region's zones today; spot machines can be reclaimed")
    if sol.request.full_graph_method and not sol.inputs.coefficients.calibrated:
        out.append(
            "full-graph CPU rates (cpu_dense_gflops_per_vcpu, cpu_sparse_gflops_per_vcpu) are engineering estimates, "
            "not measurements; give measured ones in a --calibration file"
        )
    elif sol.request.model == "pipeline" and not sol.inputs.coefficients.calibrated:
        out.append(
            "pipeline-model coefficients are engineering estimates, not measurements; coefficients that "
            "`planner calibrate` fits from measured runs replace them"
        )
    return out


def plan_id(request: PlanRequest, catalog: Catalog, coefficients: Coefficients) -> str:
    payload = json.dumps(
        [request.model_dump(mode="json"), catalog.sha256, coefficients.model_dump(mode="json")], sort_keys=True
    )
    return hashlib.sha256(payload.encode()).hexdigest()[:16]
