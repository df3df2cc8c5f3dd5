"""The warnings a recommendation carries: what its figures rest on (stale prices, derived
prices, estimated coefficients, a model's blind spots) and where a looser request may do better."""

from __future__ import annotations

from contracts.plan import MAX_MEMORY_NODES
from planner.solver.solution import Solution


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
