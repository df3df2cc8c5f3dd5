"""A candidate cluster as the plan an answer shows: its machines, volumes, stage times and
figures (the data path, the full-graph exchanges, the spot risk), from its priced evaluation."""

from __future__ import annotations

import numpy as np

from contracts.datavolume import DataVolume, data_volume
from contracts.plan import (
    BatchFigures,
    ClusterPlan,
    DataPath,
    FullGraphPath,
    MethodFigures,
    NodeGroup,
    SpotRisk,
    VolumeSpec,
)
from contracts.workload import FULL_GRAPH_METHODS, PARTITIONED_METHODS, SLICEGCN_GNN, FullGraphJob
from planner.costmodel import fullgraph
from planner.costmodel.pipeline import wire_dtype_name
from planner.solver.explain import explain
from planner.solver.solution import Solution


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
        startup_read_seconds=round(d["startup_read_s"], 1),
        startup_fixed_seconds=round(d["startup_fixed_s"], 1),
        staged_gb_per_machine=round(d["staged_gb"], 3),
        ena_express=bool(d["ena_express"]),
        wire_gb_per_epoch=round(d["epoch_wire_gb"], 3),
        wire_feature_gb_per_epoch=round(d["epoch_wire_feature_gb"], 3),
        wire_id_gb_per_epoch=round(d["epoch_wire_id_gb"], 3),
        gpu_cache_gib=round(d["gpu_cache_gib"], 3),
        gpu_cache_free_gib=round(d["gpu_cache_free_gib"], 3),
        served_by_gpu=round(d["device_hit_rate"], 4),
    )
