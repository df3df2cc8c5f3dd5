"""`provision run`: boot check, dataset, script, `remotegnn launch` on the learner, results home.

The order, and why:
1. host keys from the machines' consoles (so ssh can check them strictly; see ``remote``);
2. every machine's boot script finished, each given the cluster's MemoryBridge wheel when it waits
   for it (a failed one is reported with its log, nothing else copied);
3. the dataset on every data machine, verified (``stage``; from S3 each memory machine of several
   copies only its part, in the layout the job launches with);
4. the training script's directory and the hostfile to the learner, then ``remotegnn launch``
   there with the plan's memory-machine count, feature cache and volume limits; its output is
   streamed here and saved, and the progress events its loader appends (``--progress``, one JSON
   line an epoch, :mod:`contracts.progress`) come back on the same connection, apart from the
   output, as a progress line (epoch, batches/s, learner stall, cost so far);
5. with ``--recover``, while the job runs (and when it fails) EC2 is asked whether every machine
   still runs; a lost one (a reclaimed spot machine, a failure) stops the job, is replaced by
   `up` run again (``recovery``), and steps 2-4 run again in the same job directory, where the
   training script's checkpoints are (copied home every ``SYNC_S`` and back to a new learner), so
   a script that resumes from them (``remotegnn.checkpoint``) goes on where it was; each loss is
   in the record, and ``--max-restarts`` bounds them;
6. however it ends (success, failure, Ctrl-C, SIGTERM, SIGHUP, ``--max-hours``): the job is
   stopped on the learner, its directory (logs, anything the script wrote) fetched to
   ``STATE_DIR/NAME/runs/JOB/``, the record written beside it as ``JOB.json``, and with
   ``--down-after`` (always, at ``--max-hours``) the cluster torn down.

``--max-hours`` counts from the start of the command, so it bounds what the whole run can cost.
"""

from __future__ import annotations

import datetime as dt
import secrets
import shlex
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import ValidationError

from contracts.cluster import ClusterState
from contracts.progress import EVENT, TRAINING_LOADER, EpochEnded
from contracts.runs import ClusterSpec, JobProgress, JobRecord, Recovery, RecoveryCause
from contracts.shards import DEFAULT_LAYOUT, SHARD_LAYOUTS
from foundation.cli import signals_interrupt
from foundation.errors import UsageError, format_validation_error
from foundation.fileio import atomic_write_text, read_model, write_model
from foundation.jobtext import last_json
from foundation.units import GIB, SECONDS_PER_HOUR, hours
from planner.catalog.snapshot import Catalog
from provisioning import statefile, teardown
from provisioning.aws import Aws
from provisioning.errors import AwsError, ProvisioningError
from provisioning.job import boot, recovery, stage
from provisioning.job.models import MachineLayout
from provisioning.job.remote import Remote, RemoteError, learn_host_keys

PROGRESS_FILE = "progress.jsonl"  # the loader's progress events, in the job's directory on the learner
PYTHON_WORDS = frozenset({"python", "python3"})
DATASET_PLACEHOLDER = "{dataset}"
STOP_GRACE_S = 20.0  # after SIGINT, the job's ranks get this long to exit before SIGKILL
COPY_TIMEOUT_S = SECONDS_PER_HOUR  # the script's directory, or the job's, to or from the learner
CURRENT = "current.json"  # the running job's progress, for `provision status`
WATCH_S = 30.0  # how often EC2 is asked whether every machine still runs, while the job runs
SYNC_S = 300.0  # how often the job's directory (its checkpoints) is copied home, for a replaced learner
DEFAULT_MAX_RESTARTS = 3
STALL_S = 15 * 60.0  # no heartbeat for this long (they come every 30 s of training): the job is stuck
CHECKPOINT_WAIT_S = 60.0  # the most a notice's checkpoint is waited for (AWS gives about 120 s)
CHECKPOINT_POLL_S = 0.5
ENDED, UNANSWERED = "ended", "unanswered"  # what the wait for a checkpoint says when there is none
CHECKPOINT_REQUEST = "checkpoint-now"  # in the job's directory: its appearance asks for a checkpoint
DURING_RECOVERY: RecoveryCause = "lost-during-recovery"


class JobStopped(Exception):
    """The job was stopped before it finished: Ctrl-C, or --max-hours."""

    def __init__(self, why: str):
        super().__init__(why)
        self.why = why


class JobStalled(Exception):
    """The training loop has not beaten for the stall limit: stuck, though every machine runs."""


@dataclass
class JobOptions:
    cluster: str
    dataset: str
    command: list[str]
    state_dir: Path
    launch_args: list[str] = field(default_factory=list)
    down_after: bool = False
    max_hours: float | None = None
    ssh_command: str | None = None
    key_file: Path | None = None
    layout: MachineLayout = field(default_factory=MachineLayout)
    s3_credentials: stage.S3Credentials = "caller"
    recover: bool = False  # replace a lost machine and run the job again from its checkpoints
    max_restarts: int = DEFAULT_MAX_RESTARTS
    watch_s: float = WATCH_S
    sync_s: float = SYNC_S
    stall_s: float | None = STALL_S  # None: never judge the job stuck


@dataclass
class Deadline:
    """--max-hours, counted from the start of the command."""

    hours: float | None
    started: float = field(default_factory=time.monotonic)

    def left_s(self) -> float:
        return float("inf") if self.hours is None else self.hours * SECONDS_PER_HOUR - (time.monotonic() - self.started)

    def check(self) -> None:
        if self.left_s() <= 0:
            raise JobStopped("max-hours")


def runs_dir(state_dir: Path, cluster: str) -> Path:
    return state_dir.expanduser() / cluster / "runs"


def current_progress(state_dir: Path, cluster: str) -> JobProgress | None:
    """The running job's latest epoch (None when no job runs, or it has not finished an epoch)."""
    path = runs_dir(state_dir, cluster) / CURRENT
    return read_model(path, JobProgress, "job progress file") if path.exists() else None


def run_job(
    aws: Aws,
    catalog: Catalog,
    opts: JobOptions,
    report: Callable[[str], None],
    echo: Callable[[str], None],
    credentials: Callable[[], str] | None = None,
) -> JobRecord:
    """Run the job on the cluster and return its record (also written to the runs directory).

    ``credentials`` gives the JSON of the caller's AWS credentials for an S3 dataset. Ctrl-C,
    SIGTERM or SIGHUP end the job as any other ending does (stopped, fetched, recorded, torn down
    with ``--down-after``), then the interrupt is raised again as it came - an
    :class:`foundation.cli.Interrupted` naming its signal - so the command can exit with it.
    """
    deadline = Deadline(opts.max_hours)
    state = statefile.read(opts.state_dir, opts.cluster)
    if state is None:
        raise UsageError(
            f"no state file for cluster {opts.cluster} in {opts.state_dir}: create it with `provision up`, "
            "or point --state-dir where `up` wrote it"
        )
    if not opts.command:
        raise UsageError("give the training command after --, e.g. -- python train.py --dataset {dataset}")
    source = stage.DatasetSource.parse(opts.dataset)
    job_id = f"{dt.datetime.now(dt.UTC):%Y%m%dT%H%M%S}-{secrets.token_hex(2)}"
    home = runs_dir(opts.state_dir, state.name)
    home.mkdir(parents=True, exist_ok=True)
    known_hosts = home.parent / "known_hosts"
    remote = Remote.for_cluster(state, known_hosts, opts.key_file, opts.ssh_command)
    spec = with_launch_layout(cluster_spec(state, catalog), opts.launch_args)
    started_at, began = dt.datetime.now(dt.UTC), time.monotonic()
    job = Job(remote, opts.layout, state, job_id, home, report, echo)
    launch: list[str] = []
    ended, code, target = "failed", None, stage.destination(opts.layout, source)
    recoveries: list[Recovery] = []
    interrupt: KeyboardInterrupt | None = None
    try:
        with signals_interrupt():  # SIGTERM and SIGHUP stop the job as Ctrl-C does
            while True:
                if opts.ssh_command is None:
                    _learn_host_keys(aws, job.state, known_hosts)
                try:
                    code, launch, target = _attempt(
                        aws, opts, job, source, deadline, spec, report, credentials, recoveries
                    )
                    ended = "finished" if code == 0 else "failed"
                    break
                except (recovery.MachineLost, recovery.InterruptionNoticed, JobStalled) as loss:
                    noticed = time.monotonic()
                    cause, lost = _what_was_lost(aws, job, loss, report)
                    restarts = sum(r.replaced and r.cause != DURING_RECOVERY for r in recoveries)
                    again = opts.recover and restarts < opts.max_restarts
                    recoveries.append(Recovery(at=dt.datetime.now(dt.UTC), cause=cause, lost=lost, replaced=again))
                    if not again:
                        ended = "stalled" if cause == "stalled" else "lost"
                        break
                    what = "the stalled job" if cause == "stalled" else ", ".join(lost)
                    report(f"recovering {what} (restart {restarts + 1} of at most {opts.max_restarts})")
                    new_state = job.state
                    if cause != "stalled":
                        new_state, also = recovery.replace_lost(aws, opts.state_dir, job.state, set(lost), report)
                        if also:
                            report(f"also lost during the recovery, and replaced: {', '.join(also)}")
                            recoveries.append(
                                Recovery(at=dt.datetime.now(dt.UTC), cause=DURING_RECOVERY, lost=also, replaced=True)
                            )
                    remote = Remote.for_cluster(new_state, known_hosts, opts.key_file, opts.ssh_command)
                    job = job.moved(remote, new_state)
                    job.lost_since = noticed
    except JobStopped as stopped:
        ended = "max-hours" if stopped.why == "max-hours" else "interrupted"
    except KeyboardInterrupt as caught:
        ended, interrupt = "interrupted", caught
    finally:
        job.stop()
        job.fetch()
        record = JobRecord(
            job_id=job_id,
            cluster=spec,
            dataset=target,
            command=opts.command,
            launch=launch,
            started_at=started_at,
            wall_s=round(time.monotonic() - began, 3),
            exit_code=code,
            ended=ended,
            progress=job.progress,
            output=last_json(job.log_text()),
            log=str(job.log_path),
            recoveries=recoveries,
        )
        if opts.down_after or ended == "max-hours":
            record = _tear_down(aws, opts.state_dir, state, record, report)
        write_model(home / f"{job_id}.json", record)
        (home / CURRENT).unlink(missing_ok=True)
        report(f"job {job_id} {ended}; record in {home / f'{job_id}.json'}")
    if ended == "interrupted":
        raise interrupt or KeyboardInterrupt()
    return record


def _attempt(
    aws: Aws,
    opts: JobOptions,
    job: Job,
    source: stage.DatasetSource,
    deadline: Deadline,
    spec: ClusterSpec,
    report: Callable[[str], None],
    credentials: Callable[[], str] | None,
    recoveries: list[Recovery],
) -> tuple[int, list[str], str]:
    """Boot check, dataset, job, on the cluster as it is now: (exit status, launch command, dataset).
    Raises MachineLost when a machine is gone (while the job runs, or when it failed)."""
    boot.wait_booted(
        job.remote,
        opts.layout,
        aws.timing,
        report,
        deadline_s=min(boot.BOOT_DEADLINE_S, deadline.left_s()),
        wheels=statefile.wheel_dir(opts.state_dir, job.state.name),
    )
    deadline.check()
    secret = credentials() if source.is_s3 and opts.s3_credentials == "caller" and credentials else None
    target = stage.stage(
        job.remote,
        opts.layout,
        source,
        report,
        secret,
        learner_samples=spec.sampling == "learner",
        shard_layout=spec.shard_layout,
    )
    deadline.check()
    launch = launch_command(opts.layout.bin_dir, job.directory, spec, target, opts.launch_args)
    script = Job.script_dir(opts.command)
    if job.lost_since is not None:  # the job runs again: what the loss cost, from noticing it to now
        restart = max(i for i, r in enumerate(recoveries) if r.cause != DURING_RECOVERY)
        recoveries[restart] = recoveries[restart].model_copy(
            update={"seconds_lost": round(time.monotonic() - job.lost_since, 1)}
        )
    watch = (lambda: _watch(aws, job, opts)) if opts.recover else None
    code = job.run(launch, _translate(opts, target, script), script, deadline, spec, opts, watch)
    if code != 0 or opts.recover:  # a job that died with one of its machines; Open MPI's launcher may
        recovery.check(aws, job.state)  # exit 0 when a machine's daemon vanishes, so --recover always asks
    return code, launch, target


def _watch(aws: Aws, job: Job, opts: JobOptions) -> None:
    """While the job runs: raise when a machine is lost or noticed; at a notice, first ask the
    still-running job for a checkpoint, in the time AWS leaves."""
    try:
        recovery.watch(aws, job.remote, job.state, opts.layout.notice_file)
    except recovery.InterruptionNoticed as noticed:
        job.report(f"interruption notice: {noticed}")
        job.checkpoint_now(min(CHECKPOINT_WAIT_S, *(_seconds_until(n.time) for n in noticed.notices.values())))
        raise


def _what_was_lost(
    aws: Aws, job: Job, loss: Exception, report: Callable[[str], None]
) -> tuple[RecoveryCause, dict[str, str]]:
    """Stop the job (at a notice, also retire the machines AWS will take); return the cause and
    node -> why, for the record."""
    if isinstance(loss, recovery.InterruptionNoticed):  # the job was asked for a checkpoint (_watch)
        job.stop()
        job.fetch()  # the learner's directory, the fresh checkpoint in it, home before the learner may go
        recovery.retire(aws, job.state, list(loss.notices), report)
        return "interruption-notice", loss.lost()
    job.stop()
    if isinstance(loss, JobStalled):
        report(f"job stalled: {loss}")
        return "stalled", {job.learner.node: str(loss)}
    assert isinstance(loss, recovery.MachineLost)
    report(f"machine lost: {loss}")
    return "machine-lost", loss.lost


def _seconds_until(when: dt.datetime) -> float:
    """Seconds left to save a checkpoint before AWS acts at ``when``, less the time a stop takes."""
    return max(0.0, (when - dt.datetime.now(dt.UTC)).total_seconds() - STOP_GRACE_S)


def _tear_down(
    aws: Aws, state_dir: Path, state: ClusterState, record: JobRecord, report: Callable[[str], None]
) -> JobRecord:
    report(f"tearing down cluster {state.name}")
    try:
        teardown.down(aws, state.name, report)
    except ProvisioningError as exc:
        report(f"teardown failed ({exc}); run `provision down {state.name}`")
        return record
    statefile.remove(state_dir, state.name)
    return record.model_copy(update={"torn_down": True})


def _learn_host_keys(aws: Aws, state: ClusterState, known_hosts: Path) -> None:
    """Host keys from each machine's console, where EC2 shows them (else ssh records them at first contact)."""
    lines = []
    for node in state.nodes:
        try:
            console = aws.call("get_console_output", InstanceId=node.instance_id, Latest=True).get("Output", "")
        except AwsError:
            continue  # not permitted or not yet there: first contact decides
        lines += learn_host_keys(console or "", [a for a in (node.public_ip, node.private_ip) if a])
    if lines:
        existing = known_hosts.read_text().splitlines() if known_hosts.exists() else []
        atomic_write_text(known_hosts, "\n".join(dict.fromkeys(existing + lines)) + "\n")


def job_progress(event: EpochEnded, elapsed_s: float, spec: ClusterSpec) -> JobProgress:
    """A progress event as `provision status` shows it: with the time and money spent so far."""
    return JobProgress(
        epoch=event.epoch,
        seconds=event.seconds,
        batches_per_s=event.batches_per_s,
        stall_s=event.stall_s,
        elapsed_s=round(elapsed_s, 1),
        cost_usd=round(hours(elapsed_s) * spec.usd_per_hour, 4),
        predicted_epoch_s=spec.predicted_epoch_s,
    )


def cluster_spec(state: ClusterState, catalog: Catalog) -> ClusterSpec:
    """What calibration needs to know of the cluster, from its state file and the catalog."""
    learner = next(n for n in state.nodes if n.role == "learner")
    memory = [n for n in state.nodes if n.role == "memory"]
    plan = state.plan
    learner_type = catalog.instance(learner.instance_type)
    memory_type = catalog.instance(memory[0].instance_type) if memory else None
    return ClusterSpec(
        name=state.name,
        plan_id=state.plan_id,
        plan_label=state.plan_label,
        learner_type=learner.instance_type,
        learner_gpu=learner_type.gpu_model or "",
        learner_gbit=learner_type.network_baseline_gbps,
        memory_type=memory_type.name if memory_type else None,
        memory_gbit=memory_type.network_baseline_gbps if memory_type else None,
        memory_machines=len(memory),
        usd_per_hour=state.usd_per_hour,
        volume_mbps=plan.volume.throughput_mbps if plan else 0,
        volume_iops=plan.volume.iops if plan else 0,
        cache_gib=_cache_gib(state),
        flows=plan.data_path.flows if plan and plan.data_path else 1,
        learners=plan.learner_ranks if plan and plan.learner_ranks else 1,
        sampling=plan.data_path.sampling or "memory" if plan and plan.data_path else "memory",
        shard_layout=plan.data_path.shard_layout or DEFAULT_LAYOUT if plan and plan.data_path else DEFAULT_LAYOUT,
        predicted_epoch_s=plan.epoch_seconds if plan else None,
    )


def launch_command(bin_dir: str, directory: str, spec: ClusterSpec, dataset: str, launch_args: list[str]) -> list[str]:
    """`remotegnn launch` as run on the learner (in the job's ``directory``), with the plan's
    figures before the user's arguments, which may override them."""
    argv = [f"{bin_dir}/remotegnn", "launch", "--hostfile", f"{directory}/hostfile"]
    argv += ["--memory", str(max(1, spec.memory_machines)), "--dataset", dataset]
    if spec.cache_gib is not None:
        argv += ["--cache-gb", f"{spec.cache_gib:g}"]
    if spec.volume_mbps and spec.volume_iops:
        argv += ["--volume-mbps", str(spec.volume_mbps), "--volume-iops", str(spec.volume_iops)]
    if spec.flows > 1:
        argv += ["--flows", str(spec.flows)]
    if spec.learners > 1:
        argv += ["--learners", str(spec.learners)]
    if spec.sampling == "learner":
        argv += ["--sampling", "learner"]
    argv += ["--layout", spec.shard_layout]  # always named: the parts were staged in it
    argv += ["--progress", f"{directory}/{PROGRESS_FILE}"]
    argv += ["--checkpoint-request", f"{directory}/{CHECKPOINT_REQUEST}"]
    return [*argv, *launch_args]


def with_launch_layout(spec: ClusterSpec, launch_args: list[str]) -> ClusterSpec:
    """``spec`` with the row layout a ``--layout`` among the user's launch arguments asks for (the
    last one, as the launch reads them), so the memory machines are staged the parts they serve."""
    chosen = None
    for i, word in enumerate(launch_args):
        if word == "--layout" and i + 1 < len(launch_args):
            chosen = launch_args[i + 1]
        elif word.startswith("--layout="):
            chosen = word.partition("=")[2]
    if chosen is None:
        return spec
    if chosen not in SHARD_LAYOUTS:
        raise UsageError(f"--launch-arg: --layout {chosen!r} is not a layout; give one of {', '.join(SHARD_LAYOUTS)}")
    return spec.model_copy(update={"shard_layout": chosen})


def _cache_gib(state: ClusterState) -> float | None:
    """Feature-cache RAM per data machine that the plan priced (what `serve --cache-gb` gets)."""
    plan = state.plan
    if plan is None or plan.cache_fraction is None or state.feature_bytes is None:
        return None
    machines = plan.memory.count if plan.memory else 1
    return round(plan.cache_fraction * state.feature_bytes / machines / GIB, 3)


def _translate(opts: JobOptions, dataset: str, script: Path | None) -> list[str]:
    """The training command as it runs on the learner: files of the script's directory by their
    names (the directory is copied there), ``python`` the machine's, ``{dataset}`` the staged dataset."""
    command = [
        Path(word).name
        if script is not None and Path(word).is_file() and Path(word).resolve().parent == script
        else word.replace(DATASET_PLACEHOLDER, dataset)
        for word in opts.command
    ]
    if command[0] in PYTHON_WORDS:
        command[0] = f"{opts.layout.bin_dir}/python"
    return command


class Job:
    """One job on the learner: its directory there, its log here, and its progress."""

    def __init__(
        self,
        remote: Remote,
        layout: MachineLayout,
        state: ClusterState,
        job_id: str,
        home: Path,
        report: Callable[[str], None],
        echo: Callable[[str], None],
    ):
        self.remote, self.layout, self.state, self.job_id, self.home = remote, layout, state, job_id, home
        self.report, self.echo = report, echo
        self.learner = next(n for n in state.nodes if n.role == "learner")
        self.directory = f"{layout.jobs_dir}/{job_id}"
        self.log_path = home / f"{job_id}.log"
        self.progress: list[JobProgress] = []
        self.started = False
        self.lost_since: float | None = None  # when a machine loss this job recovers from was noticed
        self.beat_at: float | None = None  # the training loop's last heartbeat or epoch, as it reached here
        self.restarted = False  # its directory already holds the script and what the last run wrote

    def moved(self, remote: Remote, state: ClusterState) -> Job:
        """The same job (id, directory, log, progress) on the cluster after a machine was replaced. A
        new learner gets the job's directory as last copied home, checkpoints included."""
        job = Job(remote, self.layout, state, self.job_id, self.home, self.report, self.echo)
        job.progress, job.restarted = self.progress, True
        local = self.home / self.job_id
        if job.learner.instance_id != self.learner.instance_id and local.is_dir():
            job.remote.run(job.learner, f"mkdir -p {shlex.quote(job.directory)}")
            job.remote.rsync(f"{local}/", f"{job.remote.target(job.learner)}:{job.directory}/", COPY_TIMEOUT_S)
        return job

    @staticmethod
    def script_dir(command: list[str]) -> Path | None:
        """The directory of the first word of the command that is a local file (the script)."""
        for word in command[1:] if command and command[0] in PYTHON_WORDS else command:
            path = Path(word)
            if path.is_file():
                return path.resolve().parent
        return None

    def run(
        self,
        launch: list[str],
        train: list[str],
        script: Path | None,
        deadline: Deadline,
        spec: ClusterSpec,
        opts: JobOptions,
        watch: Callable[[], None] | None = None,
    ) -> int:
        """Copy the script's directory and the hostfile, run the job with its output streamed here;
        return its exit status. ``watch`` (every ``opts.watch_s``) raises to stop the job (a machine
        is lost); with it, the job's directory is copied home every ``opts.sync_s``, and a training
        loop that has beaten once and then not for ``opts.stall_s`` raises JobStalled."""
        self.remote.run(self.learner, f"mkdir -p {shlex.quote(self.directory)}")
        if script is not None and not self.restarted:  # a copy with --delete would take the checkpoints too
            self.remote.rsync(f"{script}/", f"{self.remote.target(self.learner)}:{self.directory}/", COPY_TIMEOUT_S)
        self.remote.rsync(self.state.hostfile, f"{self.remote.target(self.learner)}:{self.directory}/hostfile", 600.0)
        # The job's output (stdout and stderr) goes to ssh's stderr and job.log; ssh's stdout carries
        # only the progress events, which tail follows until the job's shell ($$) has exited.
        first_line = 0 if self.restarted else "+1"  # a restarted job's earlier events came home already
        inner = (
            f"cd {shlex.quote(self.directory)} && echo $$ > job.pid && touch {PROGRESS_FILE} && "
            f"{{ tail -n {first_line} --pid=$$ -F {PROGRESS_FILE} & }} && "
            f"{shlex.join([*launch, '--', *train])} 2>&1 | tee job.log >&2; exit ${{PIPESTATUS[0]}}"
        )
        command = f"setsid bash -c {shlex.quote(inner)}"
        self.report(f"running on {self.learner.node}: {shlex.join([*launch, '--', *train])}")
        process = subprocess.Popen(
            self.remote.argv(self.learner, command),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
            text=True,
            bufsize=1,
        )
        self.started = True
        readers = [
            threading.Thread(target=self._stream_output, args=(process,), daemon=True),
            threading.Thread(target=self._follow_progress, args=(process, spec), daemon=True),
        ]
        for reader in readers:
            reader.start()
        watched = synced = time.monotonic()
        try:
            while process.poll() is None:
                deadline.check()
                if watch is not None and time.monotonic() - watched >= opts.watch_s:
                    watch()
                    watched = time.monotonic()
                if watch is not None and time.monotonic() - synced >= opts.sync_s:
                    self.fetch()
                    synced = time.monotonic()
                self._check_beating(opts.stall_s)
                try:
                    process.wait(timeout=min(1.0, opts.watch_s, max(0.01, deadline.left_s())))
                except subprocess.TimeoutExpired:
                    pass  # the loop's bounded wait: checks the deadline once a second
        except BaseException:
            process.terminate()
            process.wait()
            self.stop()  # the job's processes on the learner hold its output open until they end
            raise
        finally:
            for reader in readers:
                reader.join(timeout=10)
        return process.returncode

    def _stream_output(self, process: subprocess.Popen) -> None:
        """Copy the job's output to its log and the screen."""
        assert process.stderr is not None
        with self.log_path.open("a") as log:
            for line in process.stderr:
                log.write(line)
                log.flush()
                self.echo(line.rstrip("\n"))

    def _follow_progress(self, process: subprocess.Popen, spec: ClusterSpec) -> None:
        """Each progress event of the training loader (the script's first), as it comes: recorded,
        saved for `provision status`, and reported beside the plan's prediction. A line that is not
        an event is reported once and skipped (it is data from another machine: validated, never
        trusted); other loaders' epochs (validation, test) are not the job's."""
        assert process.stdout is not None
        began = time.monotonic()
        warned = False
        for line in process.stdout:
            try:
                event = EVENT.validate_json(line)
            except ValidationError as exc:
                if not warned:
                    self.report(f"skipping a progress line that is not an event: {format_validation_error(exc)}")
                    warned = True
                continue
            if event.loader != TRAINING_LOADER:
                continue
            self.beat_at = time.monotonic()
            if not isinstance(event, EpochEnded):
                continue
            progress = job_progress(event, time.monotonic() - began, spec)
            self.progress.append(progress)
            write_model(self.home / CURRENT, progress)
            self.report(
                f"epoch {progress.epoch}: {progress.seconds:.1f} s"
                + (f" (predicted {spec.predicted_epoch_s:.1f} s)" if spec.predicted_epoch_s else "")
                + f", {progress.batches_per_s:.1f} batches/s, stall {progress.stall_s:.2f} s, "
                f"${progress.cost_usd:.2f} so far"
            )

    def _check_beating(self, stall_s: float | None) -> None:
        """Raise JobStalled when the training loop, having beaten, has been silent for ``stall_s``.
        (Before its first beat the job may still be loading: that is not judged.)"""
        if stall_s is None or self.beat_at is None:
            return
        silent = time.monotonic() - self.beat_at
        if silent > stall_s:
            raise JobStalled(f"no heartbeat from the training loop for {silent:.0f} s (the limit is {stall_s:.0f} s)")

    def checkpoint_now(self, wait_s: float) -> bool:
        """Ask the training script for a checkpoint (``remotegnn.checkpoint`` saves at its next step
        and removes the request) and wait up to ``wait_s`` for it; whether it was saved."""
        request = shlex.quote(f"{self.directory}/{CHECKPOINT_REQUEST}")
        pid_file = shlex.quote(f"{self.directory}/job.pid")
        polls = max(1, int(wait_s / CHECKPOINT_POLL_S))
        command = (
            f"touch {request} && for _ in $(seq {polls}); do [ -e {request} ] || exit 0; "
            f"kill -0 $(cat {pid_file}) 2>/dev/null || {{ rm -f {request}; echo {ENDED}; exit 0; }}; "
            f"sleep {CHECKPOINT_POLL_S}; done; rm -f {request}; echo {UNANSWERED}"
        )
        try:
            answer = self.remote.run(self.learner, command, timeout_s=wait_s + 30).strip()
        except RemoteError as exc:
            self.report(f"could not ask the job for a checkpoint: {exc}")
            return False
        if answer == ENDED:
            self.report("the job ended before it saved a checkpoint")
        elif answer:
            self.report(f"no checkpoint within {wait_s:.0f} s (does the script save with remotegnn.checkpoint?)")
        else:
            self.report("the job saved a checkpoint")
        return not answer

    def stop(self) -> None:
        """Stop the job's process group on the learner: SIGINT, then SIGKILL after a grace period."""
        if not self.started:
            return
        pid_file = shlex.quote(f"{self.directory}/job.pid")
        command = (
            f"pid=$(cat {pid_file} 2>/dev/null) || exit 0; kill -INT -- -$pid 2>/dev/null || exit 0; "
            f"for _ in $(seq {int(STOP_GRACE_S * 10)}); do kill -0 -- -$pid 2>/dev/null || exit 0; sleep 0.1; done; "
            "kill -KILL -- -$pid 2>/dev/null; exit 0"
        )
        try:
            self.remote.run(self.learner, command, timeout_s=STOP_GRACE_S + 30)
        except RemoteError as exc:
            self.report(f"could not stop the job on {self.learner.node}: {exc}")

    def fetch(self) -> None:
        """The job's directory on the learner (logs, what the script wrote) to ``runs/JOB/``."""
        if not self.started:
            return
        local = self.home / self.job_id
        try:
            self.remote.rsync(f"{self.remote.target(self.learner)}:{self.directory}/", f"{local}/", COPY_TIMEOUT_S)
        except RemoteError as exc:
            self.report(f"could not fetch the job's files from {self.learner.node}: {exc}")

    def log_text(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""
