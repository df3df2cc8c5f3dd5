"""`testbed`: an emulated two-level cloud cluster on one machine (up, run, mpiexec, exec, status, down).

Each command prints a table, or its result as JSON with --json (a job's own output then goes to
stderr, so stdout is only the JSON); errors are one line (exit 2 for a wrong request, 1 for a
failure); Ctrl-C, SIGTERM or SIGHUP during a job stops every process on the testbed and exits
128 + the signal's number (130 for Ctrl-C), as a shell reports a command the signal ended.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Optional

import typer
from pydantic import ValidationError
from rich.table import Table

from contracts.testbed import PREFIX, PREFIX_PATTERN, TestbedSpec
from foundation import process
from foundation.cli import (
    SIGNAL_EXIT_BASE,
    emit_json,
    err,
    handle_errors,
    model_default,
    out,
    stopping_signal,
    usage_from_validation,
)
from remotegnn.cli.serve import BatchCreators, CacheGb, Policy, VectorLoaders, serve_flags
from testbed.state import STATE_DIR, STATE_DIR_ENV

app = typer.Typer(
    help="An emulated cloud cluster on this machine: memory and learner hosts in network namespaces joined by "
    "tbf-limited veth links, the memory hosts' dataset volume throttled with cgroup v1 blkio, MPI jobs across "
    "them. Needs root. See docs/testbed.md.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

JOB = {"allow_extra_args": True, "ignore_unknown_options": True}
StateDir = Annotated[
    Path, typer.Option(envvar=STATE_DIR_ENV, help="where testbeds' state files, MPI agent and job files live")
]
Name = Annotated[Optional[str], typer.Option(help="the testbed (default: the only one there is)")]
Json = Annotated[bool, typer.Option("--json", help="print the result as JSON")]


@app.command()
@handle_errors
def up(
    name: Annotated[
        Optional[str], typer.Option(help="the testbed's name, PREFIX-ID (default: PREFIX and a random ID)")
    ] = None,
    prefix: Annotated[str, typer.Option(help="start of every name the testbed gives a kernel object")] = PREFIX,
    memory_hosts: Annotated[int, typer.Option(help="memory hosts (namespaces m0, m1, ...)")] = model_default(
        TestbedSpec, "memory_hosts"
    ),
    learner_hosts: Annotated[
        int,
        typer.Option(
            help="learner hosts (namespaces l0, l1, ...), alike, for learners on several machines; jobs start on l0"
        ),
    ] = model_default(TestbedSpec, "learner_hosts"),
    link_gbit: Annotated[
        float,
        typer.Option(help="every host's bandwidth in Gbit/s, each direction: the instance's baseline network Gbps"),
    ] = model_default(TestbedSpec, "link_gbit"),
    learner_gbit: Annotated[
        Optional[float],
        typer.Option(help="each learner host's own bandwidth, if its instance's differs (default: --link-gbit)"),
    ] = None,
    flow_gbit: Annotated[
        Optional[float],
        typer.Option(
            help="the most one TCP flow carries, Gbit/s, as AWS caps each flow (10 in a cluster placement "
            "group; default: no per-flow cap)"
        ),
    ] = None,
    subnet: Annotated[str, typer.Option(help="private /24 the hosts are addressed in (l<i> .2+i, m<i> .10+i)")] = str(
        model_default(TestbedSpec, "subnet")
    ),
    dataset: Annotated[
        Optional[Path],
        typer.Option(
            help="dataset the memory hosts serve: its disk is throttled to "
            "the volume's limits (default: no volume throttle)"
        ),
    ] = None,
    volume_mbps: Annotated[
        float, typer.Option(help="each memory host's volume read MB/s, 10^6 bytes (gp3: 125)")
    ] = model_default(TestbedSpec, "volume_mbps"),
    volume_iops: Annotated[int, typer.Option(help="each memory host's volume read IOPS (gp3: 3000)")] = model_default(
        TestbedSpec, "volume_iops"
    ),
    learner_ram_gib: Annotated[
        Optional[float],
        typer.Option(
            help="each learner host's RAM in GiB, enforced by a memory cgroup, so a learner cache on auto "
            "fits it as on a machine of its own (default: the hosts share this machine's RAM)"
        ),
    ] = None,
    state_dir: StateDir = STATE_DIR,
    as_json: Json = False,
) -> None:
    """Create a testbed: namespaces, bridge, veth links limited by tbf, blkio groups for the volume,
    and a memory group for each learner's RAM if asked.

    Link delay is not emulated: this kernel has no netem, and a user-space relay would cap the
    link far below 1 Gbit/s on a 2-core machine (docs/testbed.md).

    If any step fails, or on Ctrl-C, everything already made is removed.
    """
    from foundation.errors import UsageError
    from testbed import lifecycle
    from testbed.state import new_name

    if name is None:
        if not re.fullmatch(PREFIX_PATTERN, prefix):
            raise UsageError(f"--prefix: {prefix!r} must be 1-8 lowercase letters or digits, starting with a letter")
        name = new_name(prefix)
    try:
        spec = TestbedSpec(
            name=name,
            memory_hosts=memory_hosts,
            learner_hosts=learner_hosts,
            link_gbit=link_gbit,
            learner_gbit=learner_gbit,
            flow_gbit=flow_gbit,
            subnet=subnet,
            dataset=dataset,
            volume_mbps=volume_mbps,
            volume_iops=volume_iops,
            learner_ram_gib=learner_ram_gib,
        )
    except ValidationError as exc:
        raise usage_from_validation(exc) from None
    bed = lifecycle.up(spec, state_dir)
    if as_json:
        emit_json(bed)
        return
    out.print(_hosts_table(bed))
    out.print(
        f"testbed {bed.name} is up; run a job with `testbed run --name {bed.name} -- python train.py ...`",
        highlight=False,
    )


@app.command(context_settings=JOB)
@handle_errors
def run(
    train: Annotated[list[str], typer.Argument(help="the training command, after `--`", show_default=False)],
    name: Name = None,
    learners: Annotated[int, typer.Option(help="learner ranks, spread evenly over the learner hosts l0, l1, ...")] = 1,
    cache_gb: CacheGb = None,
    policy: Policy = None,
    batch_creators: BatchCreators = None,
    vector_loaders: VectorLoaders = None,
    mpi_arg: Annotated[
        Optional[list[str]], typer.Option(help="extra mpiexec options, split like a shell (repeatable)")
    ] = None,
    flows: Annotated[
        int, typer.Option(min=1, help="TCP connections between each pair of ranks (remotegnn launch --flows)")
    ] = 1,
    runs: Annotated[Path, typer.Option(help="runs file the job's record is appended to")] = Path("runs.json"),
    state_dir: StateDir = STATE_DIR,
    as_json: Json = False,
) -> None:
    """Run a RemoteGNN training job on the testbed (`remotegnn launch` across its hosts).

    One memory rank per memory host runs `remotegnn serve DATASET` (the dataset given to `up`)
    inside the host's blkio group; the learners run TRAIN, spread over l0, l1, .... The dataset's
    pages are dropped from the page cache first.

    The record (testbed, commands, wall time, exit status, the learner's last JSON document) is appended to --runs.

    Example: testbed run --cache-gb 0.1 -- python examples/train_graphsage.py --dataset data/g --json
    """
    import shlex

    from testbed import job
    from testbed import state as st

    bed = st.find(state_dir, name)
    serve_args = serve_flags(cache_gb, policy, batch_creators, vector_loaders)
    with _job_output(as_json):
        record = job.run_training(
            state_dir,
            bed,
            train,
            runs,
            learners=learners,
            serve_args=serve_args,
            mpi_args=[p for a in mpi_arg or [] for p in shlex.split(a)],
            flows=flows,
        )
    if as_json:
        emit_json(record)
    else:
        out.print(
            f"exit status {record.exit_code} after {record.wall_s:.1f} s; recorded in {runs}"
            + ("" if record.output is not None else f" ({record.output_note})"),
            highlight=False,
        )
    raise typer.Exit(record.exit_code)


@app.command(context_settings=JOB)
@handle_errors
def mpiexec(
    args: Annotated[list[str], typer.Argument(help="mpiexec's app contexts, after `--`", show_default=False)],
    name: Name = None,
    state_dir: StateDir = STATE_DIR,
    as_json: Json = False,
) -> None:
    """Run any MPI job across the testbed's hosts: rank i on host i in the order m0, m1, ..., l0, l1, ...

    Example: testbed mpiexec -- -n 1 python server.py : -n 1 python client.py
    """
    from testbed import job
    from testbed import state as st

    bed = st.find(state_dir, name)
    with _job_output(as_json):
        code = job.run_mpiexec(state_dir, bed, args)
    if as_json:
        emit_json(job.JobResult(testbed=bed.name, exit_code=code))
    raise typer.Exit(code)


@app.command("exec", context_settings=JOB)
@handle_errors
def exec_(
    host: Annotated[str, typer.Argument(help="l0, m0, m1, ... (any host by name) or the host's address")],
    command: Annotated[list[str], typer.Argument(help="the command, after `--`", show_default=False)],
    name: Name = None,
    state_dir: StateDir = STATE_DIR,
    as_json: Json = False,
) -> None:
    """Run one command on one host, as MPI starts its processes there (namespace, blkio group).

    Example: testbed exec m0 -- python -c "print(open('/proc/self/cgroup').read())"
    """
    from testbed import job
    from testbed import state as st

    bed = st.find(state_dir, name)
    with _job_output(as_json):
        code = job.execute(state_dir, bed, host, command)
    if as_json:
        emit_json(job.JobResult(testbed=bed.name, exit_code=code))
    raise typer.Exit(code)


@app.command()
@handle_errors
def status(name: Name = None, state_dir: StateDir = STATE_DIR, as_json: Json = False) -> None:
    """Show testbeds and check each against the kernel: namespaces, tbf rates, blkio limits, processes."""
    from testbed import lifecycle, system
    from testbed import state as st

    directory = state_dir
    names = [name] if name else st.names(directory)
    report = lifecycle.StatusReport(support=system.detect(), testbeds=[lifecycle.status(directory, n) for n in names])
    if as_json:
        emit_json(report)
        return
    for kind in ("root", "network", "mpi"):
        cap = getattr(report.support, kind)
        out.print(f"{kind}: {'yes' if cap.available else 'NO'} ({cap.reason})", highlight=False)
    if not names:
        out.print(f"no testbeds in {directory}", highlight=False)
    for found in report.testbeds:
        out.print(_hosts_table(found.testbed))
        table = Table(
            title=f"{found.testbed.name}: {'healthy' if found.healthy else 'NOT HEALTHY'}, "
            f"{found.processes} processes running",
            show_header=False,
        )
        for check in found.checks:
            table.add_row(check.what, "ok" if check.ok else "FAIL", check.detail)
        out.print(table)


@app.command()
@handle_errors
def down(
    name: Name = None,
    all_: Annotated[
        bool,
        typer.Option(
            "--all",
            help="remove every testbed whose name starts with --prefix, also "
            "ones with no state file (left by a killed `up`)",
        ),
    ] = False,
    prefix: Annotated[str, typer.Option(help="with --all: which testbeds")] = PREFIX,
    state_dir: StateDir = STATE_DIR,
    as_json: Json = False,
) -> None:
    """Remove a testbed completely: its processes, namespaces and links, blkio groups and state.

    Safe to repeat, and after a failed `up` or a killed job.
    """
    from foundation.errors import UsageError
    from testbed import lifecycle
    from testbed import state as st

    directory = state_dir
    if all_ and name:
        raise UsageError("--all and --name: give one (--all takes --prefix)")
    if all_:
        removed = lifecycle.down_all(directory, prefix)
    elif name or st.names(directory):
        removed = [lifecycle.down(directory, name or st.find(directory, None).name)]
    else:
        removed = []  # nothing to remove is what down is for
    if as_json:
        emit_json(lifecycle.DownReport(removed=removed))
        return
    if not removed:
        out.print(f"no testbeds named {prefix}-*" if all_ else f"no testbeds in {directory}", highlight=False)
    for gone in removed:
        out.print(
            f"{gone.name}: removed {len(gone.namespaces)} namespaces, {len(gone.cgroups)} cgroups, "
            f"stopped {gone.processes_stopped} processes",
            highlight=False,
        )


def _hosts_table(bed) -> Table:
    table = Table(title=f"testbed {bed.name} ({bed.status})")
    for column in ("host", "role", "namespace", "address", "link Gbit/s", "volume", "RAM"):
        table.add_column(column)
    for host in bed.hosts:
        device = f"{host.loop} (a page cache of its own)" if host.loop is not None else bed.volume and bed.volume.device
        volume = f"{bed.volume.mb_per_s:g} MB/s, {bed.volume.iops} IOPS on {device}" if host.cgroup is not None else "-"
        ram = f"{bed.spec.learner_ram_gib:g} GiB" if host.memory_cgroup is not None else "shared"
        table.add_row(host.name, host.role, host.namespace, str(host.address), f"{host.gbit:g}", volume, ram)
    return table


@contextmanager
def _job_output(as_json: bool) -> Iterator[None]:
    """With --json, the job's own stdout goes to stderr (fd level, so its processes' too) and
    stdout is left for the result. Ctrl-C, SIGTERM or SIGHUP end the command, once the testbed is
    clean, with 128 + the signal's number, so a scheduler or script sees which signal stopped it."""
    saved = None
    if as_json:
        sys.stdout.flush()
        saved = os.dup(1)
        os.dup2(2, 1)
    try:
        yield
    except KeyboardInterrupt as exc:
        stopped = stopping_signal(exc)
        err.print(
            f"[bold red]interrupted[/] by {stopped.name}: the job's processes were stopped and nothing "
            "was recorded; the testbed is still up",
            highlight=False,
        )
        raise typer.Exit(SIGNAL_EXIT_BASE + stopped) from None
    finally:
        if saved is not None:
            sys.stdout.flush()
            os.dup2(saved, 1)
            os.close(saved)


def main() -> None:
    process.start()
    app()


if __name__ == "__main__":
    main()
