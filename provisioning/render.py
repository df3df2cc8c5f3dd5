"""Rich text for the `provision` CLI: pure functions of the models, like planner.cli.render."""

from __future__ import annotations

from pathlib import Path

from rich import box
from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from contracts.plan import ClusterPlan
from contracts.runs import JobRecord
from foundation.units import SECONDS_PER_HOUR, duration, hours
from provisioning.encryption import key_label
from provisioning.models import ClusterStatus, DownResult, DryRun, UpResult

# AWS says these only when `up` launches, so no dry run can check them.
AT_LAUNCH_ONLY = "quotas and capacity, which EC2 reports only when up launches"


RECOVERY_CAUSES = {
    "machine-lost": "machine lost",
    "interruption-notice": "interruption notice",
    "lost-during-recovery": "machine lost during recovery",
    "stalled": "job stalled",
}


def confirmation(cluster: str, region: str, chosen: ClusterPlan, fallbacks: list[ClusterPlan]) -> str:
    text = (
        f"Create cluster {cluster} in {region}: {chosen.label}, ${chosen.usd_per_hour:.3f}/h, predicted total "
        f"${chosen.total_usd:,.2f} ({duration(chosen.total_hours * SECONDS_PER_HOUR)})."
    )
    if fallbacks:
        worst = max(fallbacks, key=lambda p: p.usd_per_hour)
        text += (
            f" If capacity is short, up to {len(fallbacks)} alternative plan(s) within your constraints may be "
            f"used instead (at most ${worst.usd_per_hour:.3f}/h)."
        )
    return text


def ssh_command(user: str, host: str | None, public_key_file: Path | None) -> str:
    if host is None:
        return "(the learner has no public IP: reach it through the VPC)"
    private = public_key_file.with_suffix("") if public_key_file and public_key_file.suffix == ".pub" else None
    identity = f" -i {private}" if private and private.exists() else ""
    return f"ssh -A{identity} {user}@{host}"


def up_result(result: UpResult, public_key_file: Path | None) -> Group:
    s = result.state
    table = Table(
        title=f"cluster {s.name}: {s.plan_label} in {s.availability_zone} (plan {s.plan_id}, rank {s.plan_rank})",
        title_justify="left",
        box=box.SIMPLE_HEAD,
    )
    for column in ("node", "instance", "type", "market", "private IP", "public IP", "slots", "volume", "$/h"):
        table.add_column(column, justify="right" if column in ("slots", "$/h") else "left", no_wrap=True)
    for n in s.nodes:
        table.add_row(
            n.node,
            n.instance_id,
            n.instance_type,
            n.market,
            n.private_ip,
            n.public_ip or "-",
            str(n.slots),
            n.volume_id or "-",
            f"{n.usd_per_hour:.4f}",
        )
    learner = s.nodes[0]
    lines: list[RenderableType] = [
        table,
        Text(f"${s.usd_per_hour:.3f}/h with volumes; predicted total ${s.predicted_total_usd:,.2f}"),
        Text(f"ssh: {ssh_command(s.ssh_user, learner.public_ip, public_key_file)}"),
        Text(f"state: {result.state_file}   hostfile: {s.hostfile}"),
    ]
    failed = [a for a in result.attempts if a.outcome != "launched"]
    if failed:
        lines.append(
            Text(
                f"failed over {len(failed)} time(s): "
                + "; ".join(f"plan {a.rank}{' in ' + a.zone if a.zone else ''}: {a.outcome}" for a in failed),
                style="yellow",
            )
        )
    if not result.created:
        lines.append(Text("the cluster already existed; nothing was created", style="yellow"))
    return Group(*lines)


def dry_run(report: DryRun) -> Group:
    exists = " (exists: up would only add what is missing)" if report.existing else ""
    plan = report.creates
    lines: list = [
        Text(
            f"dry run: nothing created. Cluster {report.cluster} in {report.region}{exists}"
            + ("; AWS was not asked (no AWS credentials found)" if report.not_checked else ""),
            style="bold",
        ),
        Text(
            f"up would create, for plan {plan.rank} ({plan.label}, ${plan.usd_per_hour:.3f}/h, predicted total "
            f"${plan.total_usd:,.2f}):"
        ),
    ]
    for r in plan.resources:
        price = f", ${r.usd_per_hour_each:.4f}/h each" if r.usd_per_hour_each else ""
        lines.append(Text(f"  {r.kind} {r.name}" + (f" (x{r.count})" if r.count > 1 else "") + f": {r.detail}{price}"))
    for option in report.options:
        keys = sorted({key_label(n.kms_key_id) for n in option.nodes})
        table = Table(
            title=f"plan {option.rank}: {option.plan.label} (${option.plan.usd_per_hour:.3f}/h), zones in "
            f"order: {', '.join(option.zones)}",
            title_justify="left",
            caption=f"every volume, root and data, encrypted with {', '.join(keys)}",
            caption_justify="left",
            box=box.SIMPLE_HEAD,
        )
        for column in ("node", "type", "arch", "market", "image", "root volume", "data volume"):
            table.add_column(column, no_wrap=True)
        for n in option.nodes:
            root = f"{n.root_volume.device_name} {n.root_volume.volume_type} {n.root_volume.size_gb} GB"
            volume = (
                f"gp3 {n.volume.size_gb} GB, {n.volume.iops} IOPS, {n.volume.throughput_mbps} MB/s" if n.volume else "-"
            )
            table.add_row(n.node, n.instance_type, n.arch, n.market, n.ami, root, volume)
        lines.append(table)
    lines += [Text(f"plan {s.rank} ({s.label}) skipped: {s.reason}", style="yellow") for s in report.skipped]
    if report.not_checked:
        lines.append(
            Text(
                "not checked, as it needs AWS credentials: "
                + "; ".join(report.not_checked)
                + f". Not checked by any dry run: {AT_LAUNCH_ONLY}.",
                style="yellow",
            )
        )
    return Group(*lines)


def status(report: ClusterStatus) -> Group:
    if not report.exists:
        return Group(Text(f"cluster {report.name}: nothing tagged for it in {report.region}"))
    table = Table(title=f"cluster {report.name} in {report.region}", title_justify="left", box=box.SIMPLE_HEAD)
    for column in ("resource", "id", "role", "state", "type", "zone", "public IP", "version", "$/h", "cost so far"):
        table.add_column(column, justify="right" if column in ("$/h", "cost so far") else "left", no_wrap=True)
    for r in report.resources:
        role = r.node if r.kind == "instance" else (f"{r.role} of {r.node}" if r.node else r.role)
        table.add_row(
            r.kind,
            r.id,
            role,
            r.state,
            r.instance_type or "-",
            r.zone or "-",
            r.public_ip or "-",
            r.version or "-",
            f"{r.usd_per_hour:.4f}",
            f"${r.cost_usd:,.4f}",
        )
    lines: list[RenderableType] = [
        table,
        Text(
            f"now ${report.usd_per_hour:.3f}/h; cost so far ${report.cost_so_far_usd:,.2f} "
            "(at the prices recorded at launch)"
        ),
    ]
    lines += [Text(f"drift: {d}", style="yellow") for d in report.drift]
    if report.job:
        j = report.job
        predicted = f" against {j.predicted_epoch_s:.1f} s predicted" if j.predicted_epoch_s else ""
        lines.append(
            Text(
                f"running job: epoch {j.epoch} took {j.seconds:.1f} s{predicted}, {j.batches_per_s:.1f} batches/s, "
                f"learner stall {j.stall_s:.2f} s; ${j.cost_usd:.2f} since it started"
            )
        )
    return Group(*lines)


def down_result(result: DownResult) -> Text:
    if not result.deleted:
        return Text(f"cluster {result.name}: nothing to delete in {result.region}")
    return Text(f"cluster {result.name}: deleted {len(result.deleted)} resource(s): {', '.join(result.deleted)}")


JOB_ENDINGS = {
    "finished": "finished",
    "failed": "failed",
    "interrupted": "was interrupted",
    "max-hours": "was stopped at --max-hours",
    "lost": "lost a machine for good (without --recover, or past --max-restarts)",
}


def job_result(record: JobRecord) -> Group:
    """How a `provision run` job ended, its epochs against the plan's prediction, and where its files are."""
    code = f" (exit status {record.exit_code})" if record.exit_code not in (None, 0) else ""
    lines: list = [
        Text(
            f"job {record.job_id} on {record.cluster.name} {JOB_ENDINGS[record.ended]}{code} after "
            f"{duration(record.wall_s)}, about ${hours(record.wall_s) * record.cluster.usd_per_hour:,.2f} "
            "at launch prices"
        )
    ]
    if record.progress:
        table = Table(box=box.SIMPLE_HEAD, title="epochs", title_justify="left")
        for column in ("epoch", "seconds", "predicted", "batches/s", "stall s", "cost so far"):
            table.add_column(column, justify="right")
        for p in record.progress:
            predicted = f"{p.predicted_epoch_s:.1f}" if p.predicted_epoch_s else "-"
            figures = (
                f"{p.seconds:.1f}",
                predicted,
                f"{p.batches_per_s:.1f}",
                f"{p.stall_s:.2f}",
                f"${p.cost_usd:.2f}",
            )
            table.add_row(str(p.epoch), *figures)
        lines.append(table)
    for r in record.recoveries:
        what = "; ".join(f"{node}: {why}" for node, why in r.lost.items())
        if r.cause == "lost-during-recovery":
            done = "replaced in the same restart"
        elif r.replaced:
            done = f"{'restarted' if r.cause == 'stalled' else 'replaced'}, {duration(r.seconds_lost)} lost"
        else:
            done = "not recovered"
        lines.append(Text(f"{RECOVERY_CAUSES[r.cause]} at {r.at:%H:%M:%S}: {what}; {done}"))
    lines.append(Text(f"log: {record.log}"))
    if record.torn_down:
        lines.append(Text(f"cluster {record.cluster.name} torn down"))
    return Group(*lines)
