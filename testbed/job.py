"""Jobs on a testbed: `exec` on one host, `mpiexec` across them, and `run` (a RemoteGNN training job).

Every MPI job runs exclusively (``exclusive_job``): one at a time per testbed, on a cold page cache for the
dataset, and with every process on the hosts stopped when it ends - normally, on an error, or
on Ctrl-C, SIGTERM or SIGHUP - so the next job starts on an idle cluster.
"""

from __future__ import annotations

import fcntl
import os
import secrets
import shlex
import subprocess
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from pydantic import BaseModel

from contracts.runs import RunRecord
from contracts.testbed import TestbedState
from foundation.cli import Interrupted, signals_interrupt, stopping_signal
from remotegnn import mpmd
from remotegnn.mpmd import LaunchOptions, aborting, mpiexec_command
from testbed import mpi, system
from testbed import state as st
from testbed.errors import TestbedError
from testbed.processes import Scope, stop
from testbed.runs import append, learner_capture, learner_output
from testbed.volume import evict


def agent(state_dir: Path, bed: TestbedState) -> Path:
    path = st.directory(state_dir, bed.name) / mpi.AGENT
    if bed.status != "ready" or not path.exists():
        raise TestbedError(
            f"testbed {bed.name} is not ready (its `up` did not finish); "
            f"remove it with `testbed down --name {bed.name}` and run up again"
        )
    return path


def host_command(state_dir: Path, bed: TestbedState, host: str, command: list[str]) -> list[str]:
    """The argv that runs ``command`` on one host, exactly as MPI's daemons are started there."""
    return [str(agent(state_dir, bed)), bed.host(host).name, shlex.join(command)]


def execute(state_dir: Path, bed: TestbedState, host: str, command: list[str]) -> int:
    return subprocess.run(host_command(state_dir, bed, host, command)).returncode


class JobResult(BaseModel):
    """`exec` and `mpiexec` with --json."""

    testbed: str
    exit_code: int


@dataclass
class Job:
    """One job's files, and what it left running (filled in when the job ends)."""

    directory: Path
    agent: Path
    mpiexec: Path
    tmpdir: Path
    evicted_bytes: int
    started_at: datetime
    leftover_processes: int = 0
    interrupted: str | None = None  # the signal that stopped the job


@contextmanager
def exclusive_job(state_dir: Path, bed: TestbedState) -> Iterator[Job]:
    system.require(root=system.root(), mpi=system.mpi())
    agent_path = agent(state_dir, bed)
    base = st.directory(state_dir, bed.name)
    lock = os.open(base, os.O_RDONLY)
    try:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise TestbedError(
                f"testbed {bed.name} is running another job; wait for it, or stop it with "
                f"`testbed down --name {bed.name}`"
            ) from None
        started = datetime.now(UTC)
        directory = base / "runs" / f"{started:%Y%m%dT%H%M%S}-{secrets.token_hex(2)}"
        tmpdir = directory / "tmp"
        tmpdir.mkdir(parents=True)
        launcher = system.mpiexec()
        assert launcher is not None  # system.require(mpi=...) above found it
        mpiexec = mpi.write_mpiexec(bed, agent_path, launcher, directory)
        evicted = evict(bed.volume.dataset) if bed.volume else 0
        job = Job(
            directory=directory,
            agent=agent_path,
            mpiexec=mpiexec,
            tmpdir=tmpdir,
            evicted_bytes=evicted,
            started_at=started,
        )
        try:
            with signals_interrupt():  # SIGTERM and SIGHUP unwind as Ctrl-C does, so the cleanup runs for each
                try:
                    yield job
                finally:
                    job.leftover_processes = stop(Scope(bed.namespaces, bed.groups))
        except KeyboardInterrupt as interrupt:
            stopped = stopping_signal(interrupt)
            job.interrupted = stopped.name
            raise Interrupted(stopped) from None
    finally:
        os.close(lock)  # releases the flock


def mpiexec_argv(bed: TestbedState, job: Job, args: list[str]) -> list[str]:
    """The mpiexec command line for ``args`` (app contexts) on the testbed: one slot per host."""
    hostfile = mpi.write_hostfile(bed, len(bed.learners), job.directory)
    root = ["--allow-run-as-root"] if os.geteuid() == 0 else []
    return [str(job.mpiexec), *root, *mpi.mpi_args(bed, job.agent, job.tmpdir), "--hostfile", str(hostfile), *args]


def run_mpiexec(state_dir: Path, bed: TestbedState, args: list[str]) -> int:
    """Run an MPI job given as mpiexec's app contexts (``-n 1 python a.py : -n 1 python b.py``);
    rank i runs on host i in the order m0, m1, ..., l0, l1, ...."""
    with exclusive_job(state_dir, bed) as job:
        process = subprocess.Popen(mpiexec_argv(bed, job, args))
        try:
            return process.wait()
        finally:
            if process.poll() is None:  # interrupted: exclusive_job's cleanup stops mpiexec, then we reap it
                stop(Scope([bed.learner.namespace]))
                process.wait()


def launch_options(
    bed: TestbedState, job: Job, learners: int, serve_args: list[str], mpi_args: list[str], flows: int = 1
) -> LaunchOptions:
    """The glue between the testbed and `remotegnn launch`: one memory rank per memory host
    (launch puts the memory ranks first, so the hostfile's order puts rank i on m<i>), the
    learners spread over l0, l1, ..., mpiexec started on l0, and the testbed's MPI options before
    the user's."""
    return LaunchOptions(
        memory=len(bed.memory),
        learners=learners,
        hostfile=mpi.write_hostfile(bed, learners, job.directory),
        dataset=bed.volume.dataset if bed.volume else None,
        serve_args=serve_args,
        mpi_args=[*mpi.mpi_args(bed, job.agent, job.tmpdir), *mpi_args],
        mpiexec=str(job.mpiexec),
        flows=flows,
    )


def run_training(
    state_dir: Path,
    bed: TestbedState,
    train: list[str],
    runs_file: Path,
    learners: int = 1,
    serve_args: Sequence[str] = (),
    mpi_args: Sequence[str] = (),
    flows: int = 1,
) -> RunRecord:
    """Run a RemoteGNN training job (`remotegnn launch`) on the testbed and append its record to
    ``runs_file``. An interrupted job (Ctrl-C) is stopped and not recorded: KeyboardInterrupt."""
    with exclusive_job(state_dir, bed) as job:
        options = launch_options(bed, job, learners, list(serve_args), list(mpi_args), flows)
        captured = learner_capture(aborting(train), job.directory)
        command = mpiexec_command(options, captured)
        start = time.perf_counter()
        code = mpmd.run(options, captured)
        wall = time.perf_counter() - start
    output, note = learner_output(job.directory)
    record = RunRecord(
        testbed=bed,
        command=train,
        mpiexec=command,
        learners=learners,
        serve_args=list(serve_args),
        started_at=job.started_at,
        wall_s=round(wall, 3),
        exit_code=code,
        evicted_bytes=job.evicted_bytes,
        leftover_processes=job.leftover_processes,
        output=output,
        output_note=note,
    )
    append(runs_file, record)
    return record
