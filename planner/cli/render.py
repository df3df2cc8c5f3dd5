"""Rich tables and text for the CLI (pure functions of the models, so they are easy to test)."""

from __future__ import annotations

from rich import box
from rich.console import Group
from rich.table import Table
from rich.text import Text

from contracts.plan import RANKING_RULE, ClusterPlan, DataPath, FullGraphPath, Recommendation, SnapshotInfo, SpotRisk
from contracts.profile import DatasetProfile
from foundation.units import SECONDS_PER_HOUR, duration, usd
from planner.catalog.models import DataTransferPrices, InstanceType, PriceSnapshot
from planner.wording import infeasible_text


def snapshot_line(info: SnapshotInfo) -> Text:
    text = Text(f"Prices: {info.region} snapshot of {info.retrieved_on} ({info.age_days} days old)")
    if info.stale:
        text.append("  STALE: older than 30 days", style="bold yellow")
    return text


def _volume(plan: ClusterPlan) -> str:
    v = plan.volume
    return f"{v.count}x {v.size_gb}GB {v.throughput_mbps}MB/s {v.iops / 1000:g}k"


def _title(rec: Recommendation) -> str:
    request = rec.request
    if not request.full_graph_method:
        return f"{rec.profile.name}: {request.workload.epochs} epochs, {request.model} model"
    job = request.full_graph
    per_layer = " per layer" if request.method == "retexo" else ""
    fusion = ", feature fusion" if job.feature_fusion else ""
    return (
        f"{rec.profile.name}: {request.method}, {job.gnn} {job.layers} layers, {job.rounds} rounds{per_layer}{fusion}, "
        f"workers in {WORKERS_IN_WORDS[job.workers_in]}"
    )


WORKERS_IN_WORDS = {"zone": "one AZ", "zones": "an AZ each", "regions": "a region each", "internet": "the internet"}


def plans_table(rec: Recommendation, top: int) -> Table:
    full_graph = rec.request.full_graph_method
    table = Table(
        title=_title(rec),
        title_justify="left",
        box=box.SIMPLE_HEAD,
        caption="* recommended; volume: gp3 per "
        + ("worker" if full_graph else "data machine")
        + " (size, throughput, IOPS)"
        + ("; round: mean over all rounds; transfer: data transfer charges, in the cost" if full_graph else "")
        + f"\nranked {RANKING_RULE}",
        caption_justify="left",
    )
    columns = (
        ("cluster", "volume", "$/h", "round", "total", "transfer", "cost", "bottleneck")
        if full_graph
        else ("cluster", "volume", "$/h", "epoch", "total", "cost", "bottleneck")
    )
    for column in columns:
        numeric = column in ("$/h", "epoch", "round", "total", "transfer", "cost")
        table.add_column(column, justify="right" if numeric else "left", no_wrap=True)
    rows: list[tuple[str, ClusterPlan]] = []
    if rec.chosen:
        rows.append(("* ", rec.chosen))
    rows += [("", p) for p in rec.alternatives if p.fits][: top - len(rows)]
    for other in (rec.single_machine, rec.two_level):
        if other and all(other.label != p.label for _, p in rows):
            rows.append((f"(best {other.layout}) ", other))
    for mark, p in rows:
        style = "bold green" if mark == "* " else ("dim" if not p.fits else None)
        transfer = [usd(p.full_graph.transfer_usd)] if p.full_graph else []
        table.add_row(
            mark + p.label,
            _volume(p),
            f"{p.usd_per_hour:.3f}",
            duration(p.epoch_seconds),
            duration(p.total_hours * SECONDS_PER_HOUR),
            *transfer,
            usd(p.total_usd),
            p.bottleneck,
            style=style,
        )
    return table


def methods_table(path: FullGraphPath) -> Table:
    """The full-graph procedures on the chosen cluster: the bytes, their bill and the whole job.

    A procedure that does not fit the cluster's RAM is shown dimmed, so its figures are not read as a choice."""
    per_round = (
        f", {path.transfer_gb_per_round:,.2f} GB moved per round" if path.transfer_gb_per_round is not None else ""
    )
    table = Table(
        title=f"on this cluster: gamma = {path.gamma:,.1f} (Eq. 2: standard's data volume over RETEXO's), "
        f"{path.boundary_rows:,} boundary rows ({'measured' if path.boundary_measured else 'random placement'}), "
        f"${path.usd_per_gb:g}/GB moved{per_round}",
        title_justify="left",
        box=box.SIMPLE_HEAD,
    )
    for column in ("method", "rounds", "Eq. 2 GB", "moved GB", "transfer", "total", "cost"):
        table.add_column(column, justify="left" if column == "method" else "right", no_wrap=True)
    for m in path.methods:
        chosen = m.method == path.method
        table.add_row(
            ("* " if chosen else "") + m.method + ("" if m.runnable else " (does not fit)"),
            f"{m.rounds:,}",
            f"{m.data_volume_gb:,.1f}",
            f"{m.transfer_gb:,.1f}",
            usd(m.transfer_usd),
            duration(m.total_hours * SECONDS_PER_HOUR),
            usd(m.total_usd),
            style="bold" if chosen else None if m.runnable else "dim",
        )
    return table


def recommendation(rec: Recommendation, top: int) -> Group:
    parts: list = [plans_table(rec, top)]
    if rec.chosen:
        c = rec.chosen
        parts.append(
            Text.assemble(
                ("Recommended: ", "bold"),
                c.label,
                f"  {usd(c.total_usd)} in {duration(c.total_hours * SECONDS_PER_HOUR)} (${c.usd_per_hour:.3f}/h)",
            )
        )
        parts.append(Text(f"Bottleneck: {c.bottleneck}: {c.explanation}"))
        if c.learner is not None and c.learner_ranks is not None:
            parts.append(Text(f"Learner: {learner_gpus(c.learner_ranks, c.learner.gpu, c.learner.count)}"))
        if c.data_path is not None and c.layout == "two-level":
            parts.append(Text(f"Data path: {data_path_summary(c.data_path)}"))
        if c.spot is not None:
            parts.append(Text(f"Spot: {spot_summary(c.spot)}"))
        if c.full_graph is not None:
            parts.append(methods_table(c.full_graph))
    else:
        parts.append(Text(f"No plan fits: {infeasible_text(rec)}", style="bold red"))
    parts.append(snapshot_line(rec.snapshot))
    parts += [Text(f"warning: {w}", style="yellow") for w in rec.warnings]
    return Group(*parts)


def learner_gpus(ranks: int, gpu: str | None, machines: int = 1) -> str:
    """How many of the learners' GPUs train (`remotegnn launch --learners`)."""
    if ranks == 1:
        return f"one {gpu} GPU trains (remotegnn launch --learners 1)"
    where = f" over {machines} learner machines" if machines > 1 else ""
    return f"{ranks} {gpu} GPUs train{where}, one data-parallel rank each (remotegnn launch --learners {ranks})"


def spot_summary(risk: SpotRisk) -> str:
    """One line: the interruptions expected, what they add, and which market won."""
    bands = ", ".join(f"{name} {band}" for name, band in risk.bands.items())
    added = duration(risk.added_hours * SECONDS_PER_HOUR)
    verdict = (
        f"spot {usd(risk.spot_usd)} against {usd(risk.on_demand_usd)} on demand"
        if risk.runs_spot
        else f"runs on demand: spot would cost {usd(risk.spot_usd)} with them, on demand {usd(risk.on_demand_usd)}"
    )
    recovery = (
        f"each starts the job over (full-graph training keeps no checkpoints) after {duration(risk.recovery_seconds)}"
        if risk.starts_over
        else f"{duration(risk.recovery_seconds)} to recover from each"
    )
    return (
        f"{risk.interruptions:.2g} interruptions expected (reclaimed a month: {bands}), {recovery}, +{added}; {verdict}"
    )


def data_path_summary(path: DataPath) -> str:
    """One line: the learner cache and what crosses the link per epoch."""
    cache = (
        f"learner cache {path.learner_cache_gib:.1f} GiB serves {path.served_by_learner:.0%} of feature reads"
        if path.learner_cache_gib > 0
        else f"no learner cache ({path.learner_free_gib:.1f} GiB of learner RAM free)"
    )
    return (
        f"{cache}; {path.wire_gb_per_epoch:,.1f} GB per epoch on the link, rows as {path.wire_dtype}; "
        f"{SAMPLED_BY.get(path.sampling or '', 'sampled where the graph is')}"
    )


SAMPLED_BY = {
    "memory": "the memory machines sample (compact frames)",
    "learner": "the learner samples (it asks for the rows it lacks by id)",
}
"""Who samples a two-level plan's batches, in words (plans from before the choice say neither)."""
ID_BYTES_WORDS = {
    "memory": "ids, edges and labels",
    "learner": "row requests",
}
"""What crosses the link besides feature rows, in each sampling mode."""
SHARD_LAYOUT_WORDS = {
    "striped": "64 MiB runs of the file dealt in turn",
    "range": "one run of the file each",
    "modulo": "row v on machine v % k",
}
"""How each shard layout deals feature rows to the memory machines, in words."""


def startup_lines(plan: ClusterPlan) -> list[str]:
    """`planner explain`: what each data machine reads from its volume at start-up, how long that
    and the rest of start-up take, and what staging copies it (plans from before these figures say
    none of them)."""
    path = plan.data_path
    if path is None or path.staged_gb_per_machine <= 0:
        return []
    read, staged = path.startup_read_gb_per_machine, path.staged_gb_per_machine
    taking = f" in {duration(path.startup_read_seconds)}" if path.startup_read_seconds > 0 else ""
    if plan.layout != "two-level":
        lines = [
            f"Start-up reads {read:,.1f} GB from the volume{taking}; staging copies it {staged:,.1f} GB (every row)"
        ]
    else:
        layout = path.shard_layout or "modulo"
        lines = [
            f"Start-up: each memory machine reads {read:,.1f} GB from its volume{taking}; staging copies each "
            f"{staged:,.1f} GB ({layout} shards: {SHARD_LAYOUT_WORDS[layout]})"
        ]
    if path.startup_fixed_seconds > 0:
        lines.append(
            f"Launching the job and choosing the caches take {duration(path.startup_fixed_seconds)} before that"
        )
    return lines


def data_path_lines(plan: ClusterPlan, policy: str) -> list[str]:
    """`planner explain`: bytes per epoch on the link and which cache serves which feature reads.

    Plans of the paper model and plan files from before the data path was priced have only the
    RAM cache's figures.
    """
    path = plan.data_path
    if path is None:
        if plan.hit_rate is None or plan.cache_fraction is None:
            return []
        return [
            f"Cache: {plan.cache_fraction:.0%} of feature rows in RAM serve {plan.hit_rate:.0%} of reads "
            f"({policy} policy)"
        ]
    two_level = plan.layout == "two-level"
    gpu = f"GPU cache {path.served_by_gpu:.1%}, " if path.served_by_gpu > 0 else ""
    in_ram = path.served_by_learner - path.served_by_gpu
    served = f"{gpu}learner cache {in_ram:.1%}, memory machines' RAM" if two_level else f"{gpu}RAM cache"
    lines = [
        f"Feature reads served ({policy} policy): {served} {path.served_by_memory:.1%}, "
        f"volume {path.served_by_volume:.1%}",
    ]
    if two_level:
        ids = path.wire_gb_per_epoch - path.wire_feature_gb_per_epoch
        sampled = SAMPLED_BY.get(path.sampling or "", "sampled on the memory machines")
        lines += [
            f"Sampling: {sampled}",
            f"Learner cache: {path.learner_cache_gib:.1f} GiB of {path.learner_free_gib:.1f} GiB free "
            f"({path.learner_cache_fraction:.1%} of rows, never sent)"
            + (f"; its CSC takes {path.learner_csc_gib:.1f} GiB more" if path.learner_csc_gib > 0 else ""),
            f"Memory machines' caches: {plan.cache_fraction or 0:.1%} of rows; hit rate among the rows sent "
            f"{path.memory_hit_rate:.1%}",
            f"On the link per epoch: {path.wire_gb_per_epoch:,.1f} GB = feature rows "
            f"{path.wire_feature_gb_per_epoch:,.1f} GB as {path.wire_dtype} + "
            f"{ID_BYTES_WORDS.get(path.sampling or '', 'ids and edges')} {ids:,.1f} GB",
            f"Link: {path.link_gbit_per_s:,.1f} Gbit/s priced, {path.flows} TCP flow(s) per memory machine"
            + (", ENA Express" if path.ena_express else ""),
        ]
    else:
        lines.append(f"RAM cache: {plan.cache_fraction or 0:.1%} of rows; nothing crosses a link (one machine)")
    return lines + startup_lines(plan) + batch_lines(plan)


def batch_lines(plan: ClusterPlan) -> list[str]:
    """`planner explain`: the batch priced, the GPU cache and what is copied to the GPUs per epoch."""
    batch, path = plan.batch, plan.data_path
    if batch is None:
        return []
    lines = [
        f"Batch: {batch.input_nodes:,.0f} distinct nodes (every hop), {batch.edges:,.0f} sampled edges; "
        f"{batch.batches_per_epoch:,} batches per epoch"
    ]
    if path is not None and path.gpu_cache_gib > 0:
        lines.append(
            f"GPU cache: {path.gpu_cache_gib:.1f} GiB per GPU of {path.gpu_cache_free_gib:.1f} GiB free serves "
            f"{path.served_by_gpu:.1%} of feature reads (neither sent nor copied)"
        )
    elif path is not None:
        lines.append(f"GPU cache: none ({path.gpu_cache_free_gib:.1f} GiB per GPU free for one: --gpu-cache-gib)")
    lines.append(
        f"Host to GPU per epoch: {batch.host_to_device_gb_per_epoch:,.1f} GB, copied ahead while the step runs"
    )
    return lines


def stage_bars(plan: ClusterPlan, width: int = 40) -> Table:
    title = (
        "per-round time by stage (they run one after another)"
        if plan.layout == "partitioned"
        else "per-epoch time by stage (the slowest one sets the pace)"
    )
    table = Table(show_header=True, title=title, title_justify="left")
    table.add_column("stage")
    table.add_column("time", justify="right")
    table.add_column("")
    longest = max(plan.stages.values()) or 1.0
    for stage, seconds in plan.stages.items():
        bar = "#" * max(0, round(width * seconds / longest))
        table.add_row(stage, duration(seconds), Text(bar, style="red" if stage == plan.bottleneck else "cyan"))
    return table


def _money(usd: float | None) -> str:
    return f"{usd:.4f}" if usd else "-"


def instances_table(instances: list[InstanceType]) -> Table:
    table = Table()
    for column in ("type", "vCPU", "GiB", "GPU", "EBS MB/s", "EBS IOPS", "net Gbps", "$/h", "spot $/h", "price"):
        table.add_column(column, justify="left" if column in ("type", "GPU", "price") else "right")
    for i in instances:
        gpu = f"{i.gpu_count} x {i.gpu_model}" if i.gpu_count else "-"
        table.add_row(
            i.name,
            str(i.vcpus),
            f"{i.memory_gib:g}",
            gpu,
            f"{i.ebs_baseline_mbps:g}",
            f"{i.ebs_baseline_iops:g}",
            f"{i.network_baseline_gbps:g}",
            _money(i.ondemand_usd_per_hour),
            _money(i.spot_usd_per_hour),
            i.price_provenance or "none",
        )
    return table


def datasets_table(profiles: list[DatasetProfile]) -> Table:
    table = Table()
    for column in ("dataset", "nodes", "edges", "features", "feature GB", "structure GB", "train", "cache curves"):
        table.add_column(column, justify="left" if column in ("dataset", "features", "cache curves") else "right")
    for p in profiles:
        table.add_row(
            p.name,
            f"{p.num_nodes:,}",
            f"{p.num_edges:,}",
            f"{p.feature_dim} x {p.feature_dtype}",
            f"{p.feature_bytes / 1e9:.2f}",
            f"{p.structure_bytes / 1e9:.2f}",
            f"{p.num_train:,}",
            ", ".join(sorted(p.cache_curves)),
        )
    return table


def snapshot_summary(snapshot: PriceSnapshot, info: SnapshotInfo) -> Group:
    meta = snapshot.meta
    counts: dict[str, int] = {}
    for i in snapshot.instances:
        key = i.price_provenance or "none"
        counts[key] = counts.get(key, 0) + 1
    lines = [
        snapshot_line(info),
        Text(f"Specs: {meta.spec_source}"),
        Text(f"Prices: {meta.price_source}"),
        Text(f"Instance types: {len(snapshot.instances)} ({', '.join(f'{v} {k}' for k, v in sorted(counts.items()))})"),
        Text(f"Volumes: {', '.join(v.name for v in snapshot.volumes)}"),
        Text(f"Data transfer: {transfer_summary(snapshot.transfer)}"),
        Text(f"Spot interruption bands: {interruptions_summary(snapshot)}"),
        Text(f"sha256: {info.sha256}"),
    ]
    lines += [Text(f"note: {n}") for n in meta.notes]
    return Group(*lines)


def interruptions_summary(snapshot: PriceSnapshot) -> str:
    source = snapshot.spot_interruptions
    if source is None:
        return (
            "none in this snapshot (spot plans price every type at the planner's assumed rate; `planner pricing "
            "refresh` or `pricing build --spot-advisor` adds AWS's)"
        )
    banded = sum(1 for i in snapshot.instances if i.spot_interruption_band is not None)
    labels = ", ".join(b.label for b in source.bands)
    return f"{banded} types in {labels}; {source.source}, retrieved {source.retrieved_on}"


def transfer_summary(prices: DataTransferPrices | None) -> str:
    if prices is None:
        return "none in this snapshot (the planner uses us-east-1's; rebuild it with `planner pricing build`)"
    return (
        f"same AZ ${prices.same_az_usd_per_gb:g}/GB, across AZs ${prices.cross_az_usd_per_gb:g}/GB each way, "
        f"to another region ${prices.cross_region_usd_per_gb:g}/GB, to the internet "
        f"${prices.internet_egress_usd_per_gb:g}/GB"
    )
