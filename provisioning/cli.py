"""`provision`: turn a planner plan into an EC2 cluster (up), watch it (status), delete it (down).

Same conventions as `planner`: --json on every command that prints a result (progress goes to
stderr), one-line errors without a traceback (exit 2 for a wrong request, 1 for a failure).
AWS credentials come from boto3's standard chain and are never printed or stored.
"""

from __future__ import annotations

import signal
import tempfile
from pathlib import Path
from typing import Annotated, Optional

import typer
from pydantic import ValidationError
from rich.console import Console, RenderableType
from rich.text import Text

from contracts.cluster import ClusterState, Role
from contracts.plan import ClusterPlan, Recommendation
from contracts.runs import JobRecord
from foundation import process
from foundation.cli import SIGNAL_EXIT_BASE, Interrupted, emit_json, err, handle_errors, out, usage_from_validation
from foundation.errors import InputFileError, UsageError
from foundation.fileio import read_model
from planner.errors import InfeasibleError
from planner.wording import FLAG_FOR_FIELD, infeasible_text
from provisioning import bringup, failover, render, statefile, teardown
from provisioning.aws import Aws, Timing, credentials_found, require_credentials
from provisioning.encryption import parse_kms_key
from provisioning.inventory import cluster_names, discover
from provisioning.job.runner import DEFAULT_MAX_RESTARTS, STALL_S, JobOptions, current_progress, run_job
from provisioning.keypair import read_public_key
from provisioning.models import DownResult, UpResult
from provisioning.network import WORLD, parse_cidr
from provisioning.status import status as cluster_status
from provisioning.tags import check_cluster_name
from provisioning.wheel import ship as ship_wheel

app = typer.Typer(
    help="Provision the cluster a planner plan describes on EC2 (up), see it and its cost (status), delete it (down).",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

RegionOption = Annotated[
    Optional[str],
    typer.Option(
        help="AWS region (default: up uses the plan's price region; status/down the state file's, then boto3's)"
    ),
]
StateDirOption = Annotated[
    Path,
    typer.Option(
        envvar=statefile.STATE_DIR_ENV, help="where NAME.json (state) and NAME.hostfile (Open MPI hostfile) live"
    ),
]
JsonOption = Annotated[bool, typer.Option("--json", help="print the result as JSON (progress goes to stderr)")]
YesOption = Annotated[bool, typer.Option("--yes", "-y", help="do not ask for confirmation")]


def _say(console: Console, message: RenderableType) -> None:
    """Print ``message`` on ``console``; once that output is gone, mute the console and go on.

    A closed terminal or ssh session (SIGHUP) fails every later write with EIO, and a reader that
    went away (``| tee``) with EPIPE, which rich answers by muting the console and ending the
    program. `run` reports as it stops the job, fetches its log, tears the cluster down and writes
    the record, and copies the job's output as it comes: a message nobody can read must not cut
    that short and leave a rented cluster running. Muted, the console drops what follows rather
    than retrying the dead output with every message."""
    try:
        console.print(message, soft_wrap=True, highlight=False)
    except OSError:
        console.quiet = True
    except SystemExit:
        if not console.quiet:  # rich mutes the console before it exits over EPIPE; any other exit is real
            raise


def _progress(message: str) -> None:
    _say(err, Text(message, style="dim"))


def _on_retry(code: str, delay: float) -> None:
    _progress(f"AWS answered {code}; retrying in {delay:.1f} s")


def _connect(region: Optional[str]) -> Aws:
    return Aws.connect(region, Timing.from_env(), on_retry=_on_retry)


def _state_or_none(state_dir: Path, name: str) -> ClusterState | None:
    """The state file if it is readable; a broken one is reported, never a reason to stop."""
    try:
        return statefile.read(state_dir, name)
    except InputFileError as exc:
        err.print(Text(f"warning: ignoring the state file: {exc}", style="yellow"), soft_wrap=True)
        return None


def _recommendation(
    plan: Optional[Path],
    dataset: Optional[str],
    budget: Optional[float],
    epochs: int,
    spot: bool,
    snapshot: Optional[Path],
) -> Recommendation:
    """The plan file, or a fresh recommendation from the planner (same request model and solver)."""
    from contracts.plan import Constraints, PlanRequest, read_plan
    from planner.catalog.snapshot import load_catalog
    from planner.solver.recommend import recommend

    if (plan is None) == (dataset is None):
        raise UsageError("give --plan PLAN.json (from `planner recommend -o`) or --dataset NAME --budget USD")
    if plan is not None:
        rec = read_plan(plan)
        if rec.request.full_graph_method:
            raise UsageError(
                f"{plan} is a {rec.request.method} plan (full-graph training on partitioned workers); `provision up` "
                "builds clusters for sampled training (a GPU learner and memory machines): plan one with "
                "`planner recommend --method sampled -o PLAN.json`"
            )
        return rec
    if budget is None:
        raise UsageError("--dataset needs --budget USD (the planner picks the cheapest cluster within it)")
    try:
        request = PlanRequest(
            dataset=dataset, constraints=Constraints(budget_usd=budget), workload={"epochs": epochs}, spot=spot
        )
    except ValidationError as exc:
        raise usage_from_validation(exc, FLAG_FOR_FIELD) from None
    rec = recommend(request, catalog=load_catalog(snapshot))
    if not rec.feasible:
        raise InfeasibleError(infeasible_text(rec))
    return rec


def _warn_before_up(rec: Recommendation, region: str, cidrs: list[str]) -> None:
    """What `up` tells before it creates anything: prices from another region, SSH open to the
    world, or SSH closed."""
    if region != rec.snapshot.region:
        err.print(
            Text(
                f"warning: the plan's prices are for {rec.snapshot.region}; tags and costs will use them in "
                f"{region} too",
                style="yellow",
            ),
            soft_wrap=True,
        )
    if WORLD & set(cidrs):
        err.print(
            Text("warning: SSH will be open to the whole internet (--ssh-cidr 0.0.0.0/0 or ::/0)", style="yellow")
        )
    if not cidrs:
        err.print(
            Text(
                "note: no --ssh-cidr: SSH stays closed; re-run up with --ssh-cidr YOUR.IP/32 to open it", style="yellow"
            ),
            soft_wrap=True,
        )


def _dry_run(
    rec: Recommendation, request: bringup.Request, region: str, ssh_key: Optional[Path], as_json: bool
) -> None:
    """`up --dry-run`: what would be created, asked of EC2 where there are credentials, else from
    the plan file alone."""
    report = (
        bringup.dry_run(_connect(region), rec, request, ssh_key)
        if credentials_found()
        else bringup.offline_dry_run(region, rec, request, ssh_key)
    )
    if as_json:
        emit_json(report)
    else:
        out.print(render.dry_run(report))


def _confirm_up(cluster: str, region: str, ranked: list[tuple[int, ClusterPlan]]) -> None:
    """Show the cluster `up` would create, then its alternatives in failover order, and stop unless
    the user agrees."""
    err.print(
        render.confirmation(cluster, region, ranked[0][1], [p for _, p in ranked[1:]]),
        soft_wrap=True,
        highlight=False,
    )
    if not typer.confirm("Create it?", default=False, err=True):
        err.print("aborted; nothing was created")
        raise typer.Exit(1)


def _create(
    aws: Aws, rec: Recommendation, request: bringup.Request, wheel: Optional[Path], key_file: Path, public_key: str
) -> UpResult:
    """Create the cluster, its machines installing ``wheel`` (or one built from this checkout).

    The wheel waits outside the state directory until the cluster runs: a failed up leaves none there."""
    with tempfile.TemporaryDirectory(prefix="memorybridge-wheel-") as scratch:
        shipped, built, requires = ship_wheel(wheel, Path(scratch))
        err.print(f"machines will install {shipped.file} (sha256 {shipped.sha256[:12]}...)", highlight=False)
        opts = bringup.UpOptions.of(
            request,
            public_key=public_key,
            public_key_file=key_file,
            wheel=shipped,
            wheel_file=built,
            requires=requires,
        )
        return bringup.up(aws, rec, opts, report=_progress)


@app.command()
@handle_errors
def up(
    plan: Annotated[Optional[Path], typer.Option(help="plan JSON written by `planner recommend -o`")] = None,
    dataset: Annotated[
        Optional[str],
        typer.Option("--dataset", "-d", help="instead of --plan: ask the planner for this built-in dataset"),
    ] = None,
    budget: Annotated[Optional[float], typer.Option(help="with --dataset: total budget, USD")] = None,
    epochs: Annotated[int, typer.Option(help="with --dataset: training epochs")] = 10,
    spot: Annotated[bool, typer.Option("--spot", help="with --dataset: plan (and launch) spot instances")] = False,
    snapshot: Annotated[
        Optional[Path], typer.Option(envvar="MEMORYBRIDGE_SNAPSHOT", help="with --dataset: price snapshot")
    ] = None,
    name: Annotated[
        Optional[str], typer.Option(help="cluster name (default: mb- and the plan id's first 8 characters)")
    ] = None,
    region: RegionOption = None,
    ssh_key: Annotated[
        Optional[Path], typer.Option(help="SSH public key to import (default: ~/.ssh/id_ed25519.pub, then id_rsa.pub)")
    ] = None,
    ssh_cidr: Annotated[
        Optional[list[str]], typer.Option(help="allow SSH from this network (repeatable); none: SSH stays closed")
    ] = None,
    ami_learner: Annotated[
        Optional[str], typer.Option(help="image for the learner (default: AWS Deep Learning Base GPU AMI, AL2023)")
    ] = None,
    ami_memory: Annotated[
        Optional[str], typer.Option(help="image for the memory machines (default: Amazon Linux 2023)")
    ] = None,
    wheel: Annotated[
        Optional[Path],
        typer.Option(
            help="the MemoryBridge wheel the machines install, checked by its sha256 at boot (default: built "
            "from the checkout this command runs from)"
        ),
    ] = None,
    ssh_user: Annotated[str, typer.Option(help="login user of the images (ec2-user on Amazon Linux)")] = "ec2-user",
    kms_key: Annotated[
        Optional[str],
        typer.Option(
            help="customer KMS key (id, ARN, alias/NAME) encrypting every volume, root and data "
            "(default: the account's default EBS key)"
        ),
    ] = None,
    state_dir: StateDirOption = statefile.DEFAULT_STATE_DIR,
    dry_run: Annotated[
        bool,
        typer.Option(
            "--dry-run",
            help="print what would be created, in failover order; create nothing (without AWS credentials: "
            "from the plan file alone, no SSH key needed)",
        ),
    ] = False,
    yes: YesOption = False,
    as_json: JsonOption = False,
) -> None:
    """Create the plan's cluster in one zone: security group, placement group, key pair, instances, volumes.

    Every volume, root and data, is encrypted (--kms-key, or the account's default EBS key).

    Waits until the machines run and pass status checks, then writes the state file and an Open MPI
    hostfile. Capacity errors move the whole cluster to the next zone, then to the plan file's next
    alternative that fits your constraints; any other failure deletes everything this run created.
    Re-running with the same name converges to the one cluster.
    """
    rec = _recommendation(plan, dataset, budget, epochs, spot, snapshot)
    cluster = check_cluster_name(name or f"mb-{rec.plan_id[:8]}")
    cidrs = [parse_cidr(c) for c in ssh_cidr or []]
    amis: dict[Role, str | None] = {"learner": ami_learner, "memory": ami_memory}
    request = bringup.Request(
        cluster=cluster,
        state_dir=state_dir,
        ssh_cidrs=cidrs,
        ami_overrides={role: ami for role, ami in amis.items() if ami},
        ssh_user=ssh_user,
        kms_key_id=parse_kms_key(kms_key) if kms_key is not None else None,
    )
    region = region or rec.snapshot.region
    _warn_before_up(rec, region, cidrs)
    if dry_run:
        _dry_run(rec, request, region, ssh_key, as_json)
        return
    key_file, public_key = read_public_key(ssh_key)
    require_credentials()
    aws = _connect(region)
    ranked = failover.candidates(rec)  # a plan file with no chosen plan stops here, even with --yes
    if not yes:
        _confirm_up(cluster, region, ranked)
    result = _create(aws, rec, request, wheel, key_file, public_key)
    if as_json:
        emit_json(result)
    else:
        out.print(render.up_result(result, key_file))


@app.command()
@handle_errors
def status(
    name: Annotated[Optional[str], typer.Argument(help="cluster name (default: every cluster in the region)")] = None,
    region: RegionOption = None,
    state_dir: StateDirOption = statefile.DEFAULT_STATE_DIR,
    as_json: JsonOption = False,
) -> None:
    """Show a cluster as EC2 reports it (found by tags) and its cost so far at the prices recorded at launch."""
    if name is not None:
        check_cluster_name(name)
        state = _state_or_none(state_dir, name)
        aws = _connect(region or (state.region if state else None))
        names = [name]
    else:
        aws = _connect(region)
        names = cluster_names(aws)
    reports = []
    for cluster in names:
        state = _state_or_none(state_dir, cluster)
        state = state if state and state.region == aws.region else None
        path = str(statefile.state_path(state_dir, cluster)) if state else None
        report = cluster_status(aws, cluster, state, path)
        reports.append(report.model_copy(update={"job": current_progress(state_dir, cluster)}))
    if as_json:
        emit_json(reports[0] if name is not None else reports)
        return
    if not reports:
        out.print(f"no memorybridge clusters in {aws.region}")
    for report in reports:
        out.print(render.status(report))


@app.command()
@handle_errors
def down(
    name: Annotated[str, typer.Argument(help="cluster name")],
    region: RegionOption = None,
    state_dir: StateDirOption = statefile.DEFAULT_STATE_DIR,
    yes: YesOption = False,
    as_json: JsonOption = False,
) -> None:
    """Delete every resource tagged for the cluster and wait until it is gone; safe to re-run.

    Works without the state file: the resources are found by their tags (pass --region if the
    cluster is not in your default region).
    """
    check_cluster_name(name)
    state = _state_or_none(state_dir, name)
    aws = _connect(region or (state.region if state else None))
    found = discover(aws, name).ids()
    if not found.is_empty() and not yes:
        err.print(
            f"Delete cluster {name} in {aws.region}: {', '.join(found.labels())}", soft_wrap=True, highlight=False
        )
        if not typer.confirm("Delete them?", default=False, err=True):
            err.print("aborted; nothing was deleted")
            raise typer.Exit(1)
    deleted = teardown.down(aws, name, report=_progress) if not found.is_empty() else found
    result = DownResult(
        name=name, region=aws.region, deleted=deleted.labels(), state_file_removed=statefile.remove(state_dir, name)
    )
    if as_json:
        emit_json(result)
    else:
        out.print(render.down_result(result))


def _run_job(aws: Aws, opts: JobOptions, as_json: bool) -> JobRecord:
    """Run the job, its output on stdout (stderr with --json); a signal that stops it ends the
    command with 128 + the signal's number, once the job is stopped and its log fetched."""
    from planner.catalog.snapshot import load_catalog
    from provisioning.job.stage import caller_credentials

    try:
        return run_job(
            aws,
            load_catalog(),
            opts,
            report=_progress,
            echo=lambda line: _say(err if as_json else out, Text(line)),
            credentials=lambda: caller_credentials(aws.region),
        )
    except Interrupted as interrupt:  # the first signal, and the cleanup it started ran to its end
        _say(err, f"[bold red]interrupted[/] by {interrupt.signal.name}: the job was stopped and its log fetched")
        raise typer.Exit(SIGNAL_EXIT_BASE + interrupt.signal) from None
    except KeyboardInterrupt:  # Ctrl-C before the job began, or again (Python's own handler) during its cleanup
        _say(
            err,
            f"[bold red]interrupted[/] by SIGINT before the job's cleanup ran to its end: `provision status "
            f"{opts.cluster}` shows what still runs",
        )
        raise typer.Exit(SIGNAL_EXIT_BASE + signal.SIGINT) from None


@app.command(context_settings={"allow_extra_args": True, "ignore_unknown_options": True})
@handle_errors
def run(
    name: Annotated[str, typer.Argument(help="cluster name (from `provision up`)")],
    train: Annotated[
        list[str], typer.Argument(help="the training command, after `--`; {dataset} is the staged dataset's path")
    ],
    dataset: Annotated[
        str, typer.Option("--dataset", "-d", help="s3://BUCKET/PREFIX or a local dataset directory (with meta.json)")
    ],
    launch_arg: Annotated[
        Optional[list[str]],
        typer.Option(
            help="more `remotegnn launch` options, split like a shell (repeatable): --launch-arg='--learners 2'"
        ),
    ] = None,
    down_after: Annotated[
        bool, typer.Option("--down-after", help="tear the cluster down when the job ends, however it ends")
    ] = False,
    max_hours: Annotated[
        Optional[float],
        typer.Option(min=0.0, help="hard stop: after this many hours the job is stopped and the cluster torn down"),
    ] = None,
    ssh_command: Annotated[
        Optional[str],
        typer.Option(help="command used instead of ssh, called as `CMD USER@HOST COMMAND` (also rsync's -e)"),
    ] = None,
    ssh_key_file: Annotated[
        Optional[Path], typer.Option(help="private key for ssh (default: ssh's own: the agent, ~/.ssh/id_*)")
    ] = None,
    layout: Annotated[
        Optional[Path], typer.Option(help="JSON of the machines' paths, for images that differ from up's")
    ] = None,
    s3_credentials: Annotated[
        str, typer.Option(help="S3 datasets: caller (your credentials, over ssh) or instance (the machines' role)")
    ] = "caller",
    recover: Annotated[
        Optional[bool],
        typer.Option(
            "--recover/--no-recover",
            help="replace a machine EC2 reclaims or loses and run the job again, which resumes from its "
            "checkpoints (default: on for spot clusters)",
        ),
    ] = None,
    max_restarts: Annotated[
        int, typer.Option(min=0, help="with --recover: machine losses to recover from before giving up")
    ] = DEFAULT_MAX_RESTARTS,
    stall_minutes: Annotated[
        float,
        typer.Option(
            min=0,
            help="stop the job (and with --recover run it again) when its training loop, having started, sends no "
            "heartbeat for this long (0: never)",
        ),
    ] = STALL_S / 60,
    region: RegionOption = None,
    state_dir: StateDirOption = statefile.DEFAULT_STATE_DIR,
    as_json: JsonOption = False,
) -> None:
    """Run a training job on a provisioned cluster: wait for boot, stage the dataset, launch, fetch the results.

    Example: provision run gnn1 --dataset s3://my-bucket/papers100M --down-after -- python train.py --dataset {dataset}

    The job's output streams here with a progress line (epoch, batches/s, learner stall, cost so
    far); its record, log and files land in STATE_DIR/NAME/runs/, which `planner calibrate --from`
    reads. With --recover a lost machine is replaced (`up` again) and the same command runs again in
    the same job directory: make it resume from its checkpoints (the example's --checkpoint-dir
    --resume). At a spot machine's two-minute warning the job is asked for a checkpoint first
    (remotegnn.checkpoint saves at its next step). Ctrl-C, SIGTERM or SIGHUP (a closed terminal or
    ssh session) stop the job, fetch its log and record it, and with --down-after tear the cluster
    down, as any other ending does. Exit status: 0 when the job succeeded, 1 when it failed, lost a
    machine for good, stalled or hit --max-hours, 128 + the signal's number when stopped by one
    (130 for Ctrl-C, 143 for SIGTERM, 129 for SIGHUP).\f

    Long because typer declares every option in the signature and takes the help above from this
    docstring; the body checks the options and hands them to the job runner.
    """
    import shlex

    from provisioning.job.models import MachineLayout

    check_cluster_name(name)
    if s3_credentials not in ("caller", "instance"):
        raise UsageError(f"--s3-credentials {s3_credentials}: choose caller or instance")
    if max_hours == 0:
        raise UsageError("--max-hours must be more than 0 (leave it out for no limit)")
    machine_layout = read_model(layout, MachineLayout, "layout file") if layout else MachineLayout()
    state = _state_or_none(state_dir, name)
    aws = _connect(region or (state.region if state else None))
    opts = JobOptions(
        cluster=name,
        dataset=dataset,
        command=train,
        state_dir=state_dir,
        launch_args=[part for arg in launch_arg or [] for part in shlex.split(arg)],
        down_after=down_after,
        max_hours=max_hours,
        ssh_command=ssh_command,
        key_file=ssh_key_file,
        layout=machine_layout,
        s3_credentials=s3_credentials,  # type: ignore[arg-type]  # checked above
        recover=recover if recover is not None else bool(state and any(n.market == "spot" for n in state.nodes)),
        max_restarts=max_restarts,
        stall_s=stall_minutes * 60 if stall_minutes > 0 else None,
    )
    record = _run_job(aws, opts, as_json)
    if as_json:
        emit_json(record)
    else:
        out.print(render.job_result(record))
    if record.ended != "finished":
        raise typer.Exit(1)


def main() -> None:
    process.start()
    app()


if __name__ == "__main__":
    main()
