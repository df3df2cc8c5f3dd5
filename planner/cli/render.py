"""Rich tables and text for the CLI (pure functions of the models, so they are easy to test)."""

from __future__ import annotations

from rich import box
from rich.console import Group
from rich.table import Table
from rich.text import Text

from planner.catalog.models import InstanceType, PriceSnapshot, SnapshotInfo
from planner.cli.flags import option_for
from planner.datasets.profile import DatasetProfile
from planner.plan import ClusterPlan, Recommendation

NOTHING_FITS = "no plan fits"


def duration(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 2 * 3600:
        return f"{seconds / 60:.1f} min"
    return f"{seconds / 3600:.1f} h"


def snapshot_line(info: SnapshotInfo) -> Text:
    text = Text(f"Prices: {info.region} snapshot of {info.retrieved_on} ({info.age_days} days old)")
    if info.stale:
        text.append("  STALE: older than 30 days", style="bold yellow")
    return text


def _volume(plan: ClusterPlan) -> str:
    v = plan.volume
    return f"{v.count}x {v.size_gb}GB {v.throughput_mbps}MB/s {v.iops / 1000:g}k"


def plans_table(rec: Recommendation, top: int) -> Table:
    table = Table(
        title=f"{rec.profile.name}: {rec.request.workload.epochs} epochs, {rec.request.model} model",
        title_justify="left",
        box=box.SIMPLE_HEAD,
        caption="* recommended; volume: gp3 per data machine (size, throughput, IOPS)",
        caption_justify="left",
    )
    for column in ("cluster", "volume", "$/h", "epoch", "total", "cost", "bottleneck"):
        numeric = column in ("$/h", "epoch", "total", "cost")
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
        table.add_row(
            mark + p.label,
            _volume(p),
            f"{p.usd_per_hour:.3f}",
            duration(p.epoch_seconds),
            duration(p.total_hours * 3600),
            f"${p.total_usd:,.2f}",
            p.bottleneck,
            style=style,
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
                f"  ${c.total_usd:,.2f} in {duration(c.total_hours * 3600)} (${c.usd_per_hour:.3f}/h)",
            )
        )
        parts.append(Text(f"Bottleneck: {c.bottleneck}: {c.explanation}"))
    else:
        parts.append(Text(f"No plan fits: {infeasible_text(rec)}", style="bold red"))
    parts.append(snapshot_line(rec.snapshot))
    parts += [Text(f"warning: {w}", style="yellow") for w in rec.warnings]
    return Group(*parts)


def infeasible_text(rec: Recommendation) -> str:
    """Why no plan fits and what would, naming the command-line options that would change it.

    A plan file from before ``infeasibility`` existed has only its ``reason``.
    """
    why = rec.reason or NOTHING_FITS
    if rec.infeasibility is None:
        return why
    return f"{why}. {rec.infeasibility.advice_text(option_for)}"


def stage_bars(plan: ClusterPlan, width: int = 40) -> Table:
    table = Table(
        show_header=True, title="per-epoch time by stage (the slowest one sets the pace)", title_justify="left"
    )
    table.add_column("stage")
    table.add_column("seconds", justify="right")
    table.add_column("")
    longest = max(plan.stages.values()) or 1.0
    for stage, seconds in plan.stages.items():
        bar = "#" * max(0, round(width * seconds / longest))
        table.add_row(stage, f"{seconds:,.1f}", Text(bar, style="red" if stage == plan.bottleneck else "cyan"))
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
        Text(f"sha256: {info.sha256}"),
    ]
    lines += [Text(f"note: {n}") for n in meta.notes]
    return Group(*lines)
