"""One sentence per cluster saying why its slowest stage takes as long as it does."""

from __future__ import annotations

from planner.catalog.snapshot import InstanceColumns
from planner.costmodel.evaluation import Clusters, Evaluation


def explain(
    evaluation: Evaluation, clusters: Clusters, columns: InstanceColumns, i: int, *, wire_dtype: str | None = None
) -> str:
    """Why cluster ``i``'s slowest stage takes as long as it does; ``wire_dtype`` names the rows' precision."""
    stage = evaluation.stage_names[int(evaluation.bottleneck[i])]
    d = evaluation.detail_at(i)
    seconds = float(evaluation.stages[stage][i])
    data = columns.instances[int(clusters.data_machine[i])]
    learner = columns.instances[int(clusters.learner[i])]
    shards = int(clusters.data_machines[i])
    if stage == "storage":  # paper model
        rate = f"{d['effective_mbps']:.0f} MB/s (the slower of {data.name}'s EBS baseline and the volume)"
        if clusters.count[i] == 0:
            return f"reads the whole {d['dataset_gb']:.1f} GB dataset from the volume each epoch at {rate}"
        if seconds == 0:
            return (
                f"{data.name}'s RAM holds the whole {d['dataset_gb']:.1f} GB dataset, so the paper model "
                "charges no time at all (it ignores network, CPU and GPU)"
            )
        unread = seconds * d["effective_mbps"] / 1000
        return f"reads the {unread:.1f} GB of the dataset that {data.name}'s RAM does not hold each epoch at {rate}"
    if "halo_rows" in d:
        return _full_graph(stage, d, data.name, data.vcpus, shards)
    if "slice_columns" in d:
        return _slicegcn(stage, d, data.name, data.vcpus, shards)
    learner_share = d.get("learner_hit_rate", 0.0)
    if stage == "volume":
        iops_bound = d["misses_per_machine"] / d["volume_iops_effective"] >= seconds * 0.999
        limit = f"{d['volume_iops_effective']:.0f} IOPS" if iops_bound else f"{d['volume_mbps_effective']:.0f} MB/s"
        hits = f"{d['hit_rate']:.0%} of feature reads hit the RAM cache ({d['cache_fraction']:.0%} of rows cached)"
        if learner_share > 0:
            hits = (
                f"{learner_share:.0%} of feature reads hit the learner's cache and {d['hit_rate']:.0%} the memory "
                f"machines' RAM ({d['cache_fraction']:.0%} of rows cached there)"
            )
        return (
            f"{hits}; "
            f"the {d['misses_per_machine'] / 1e6:.1f} M misses per data machine each epoch are bound by {limit} "
            f"(the smaller of {data.name}'s EBS baseline and the volume)"
        )
    if stage == "network":
        sent = f"rows sent as {wire_dtype}" if wire_dtype else "rows sent"
        served = (
            f"the learner's {d['learner_cache_gib']:.1f} GiB cache serves {learner_share:.0%} of feature reads, "
            if learner_share > 0
            else "no learner cache, "
        )
        each = f"{data.name}'s"
        if d.get("flow_cap_binds"):
            flows = int(d["flows"])
            worth = "" if flows == 1 else f" (worth {d['effective_flows']:g}: the first carries two shares)"
            cap = "ENA Express's" if d.get("ena_express") else "AWS's"
            raise_it = "--flows raises it"
            if learner.ena_express and data.ena_express and not d.get("ena_express"):
                raise_it += ", and so does --ena-express (both types support it)"
            each = (
                f"{data.name}'s {flows} TCP flow{'s' if flows > 1 else ''}{worth} at {cap} "
                f"{d['flow_cap_gbps']:g} Gbit/s per flow, below its baseline: {raise_it}"
            )
        return (
            f"{d['epoch_wire_gb']:.0f} GB of batches per epoch cross a {d['link_gbps']:.1f} Gbit/s link "
            f"(the smaller of {learner.name}'s baseline and {shards} x {each}; {served}{sent})"
        )
    if stage == "cpu":
        if not d.get("learner_samples"):
            return f"sampling and gathering batches on {shards} x {data.vcpus} vCPUs of {data.name}"
        if d["learner_sampling_s"] >= seconds * 0.999:
            return f"sampling batches on {learner.name}'s vCPUs, less one per training GPU (the learner samples)"
        return f"gathering the rows sent on {shards} x {data.vcpus} vCPUs of {data.name} (the learner samples)"
    ranks = int(d.get("learner_ranks", 1))
    if ranks == 1:
        return f"GraphSAGE training steps on one {learner.gpu_model} GPU of {learner.name}"
    machines = int(d.get("learner_machines", 1))
    where = f"{machines} x {learner.name}" if machines > 1 else learner.name
    return (
        f"GraphSAGE training steps shared by {ranks} {learner.gpu_model} GPUs of {where}, one data-parallel "
        "rank each (each at data_parallel_efficiency of one GPU alone)"
    )


def _full_graph(stage: str, d: dict[str, float], worker: str, vcpus: int, workers: int) -> str:
    """A full-graph round's largest stage: its work, bytes or messages, and the rate that bounds it."""
    link = f"a {d['link_gbps']:.1f} Gbit/s link ({worker}'s, where the workers are)"
    if stage == "compute":
        return (
            f"full-batch passes over {d['inner_nodes'] / 1e6:,.1f} M nodes and {d['worker_edges'] / 1e6:,.0f} M edges "
            f"per worker (forward, backward, validation) on {vcpus} vCPUs of {worker}"
        )
    if stage == "exchange":
        return (
            f"each worker sends and receives {d['exchange_gb_per_round']:,.2f} GB of boundary rows per round "
            f"({d['halo_rows'] / 1e6:,.1f} M halo rows of {workers} workers) over {link}"
        )
    if stage == "aggregation":
        return (
            f"worker 0 (the master) takes {workers - 1} x {d['aggregated_mb_per_round']:,.1f} MB of gradients in and "
            f"sends the weights back out each round over {link}"
        )
    return f"{d['messages_per_round']:.0f} messages per round, each {d['latency_ms']:g} ms away"


def _slicegcn(stage: str, d: dict[str, float], worker: str, vcpus: int, workers: int) -> str:
    """A SliceGCN epoch's largest stage: each worker's passes, or the master's link, or its messages."""
    if stage == "compute":
        return (
            f"each worker's GCN, {d['slice_width']:.0f} wide, runs full-batch passes over the whole graph on its "
            f"{d['slice_columns']:.0f} feature columns (forward, backward) on {vcpus} vCPUs of {worker}"
        )
    if stage == "network":
        return (
            f"the master on worker 0 exchanges {d['worker_gb_per_round']:,.2f} GB per epoch with each of the "
            f"{workers - 1} other workers (output rows in, their gradients out, one after another) over a "
            f"{d['link_gbps']:.1f} Gbit/s link ({worker}'s, where the workers are)"
        )
    return f"{d['messages_per_round']:.0f} messages per epoch, each {d['latency_ms']:g} ms away"
