"""`remotegnn launch` builds one MPMD mpiexec job; bad requests fail before anything starts."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from foundation.errors import UsageError
from remotegnn.mpmd import (
    SESSION_PREFIX,
    LaunchOptions,
    aborting,
    find_mpiexec,
    hostfile_slots,
    mpiexec_command,
    own_session_directory,
)


def remotegnn(*args: str, env=None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "remotegnn.cli.main", *args], capture_output=True, text=True, timeout=60, env=env
    )


def test_memory_ranks_come_first_and_learn_their_count(tmp_path):
    hostfile = tmp_path / "hosts"
    hostfile.write_text("10.0.0.1 slots=1\n10.0.0.2 slots=1\n10.0.0.3 slots=3\n")
    command = mpiexec_command(
        LaunchOptions(
            memory=2,
            learners=3,
            hostfile=hostfile,
            dataset=tmp_path / "d",
            serve_args=["--cache-gb", "2"],
            mpi_args=["--mca", "btl", "tcp,self"],
            mpiexec="/opt/mpiexec",
        ),
        ["python", "train.py", "--epochs", "1"],
    )
    assert command[0] == "/opt/mpiexec"
    assert ("--allow-run-as-root" in command) == (os.geteuid() == 0)
    assert command[command.index("--hostfile") + 1] == str(hostfile)
    assert command[command.index("-x") + 1] == "REMOTEGNN_MEMORY_RANKS=2"
    assert command[command.index("--bind-to") + 1] == "none"
    assert "--oversubscribe" not in command  # the slots place the ranks; Open MPI would otherwise map by core
    memory, learners = command[command.index("-n") : command.index(":")], command[command.index(":") + 1 :]
    assert memory == [
        "-n",
        "2",
        sys.executable,
        "-m",
        "mpi4py",
        "-m",
        "remotegnn.cli.main",
        "serve",
        str(tmp_path / "d"),
        "--cache-gb",
        "2",
    ]
    assert learners == ["-n", "3", "python", "-m", "mpi4py", "train.py", "--epochs", "1"]
    assert command.index("--mca") < command.index("-n")
    assert not [word for word in command if word.startswith("MEMORYBRIDGE_PROGRESS=")]


@pytest.mark.parametrize(
    "program, run",
    [
        (["python", "train.py", "--lr", "1"], ["python", "-m", "mpi4py", "train.py", "--lr", "1"]),
        (
            ["/v/bin/python3.11", "-u", "-X", "dev", "t.py"],
            ["/v/bin/python3.11", "-u", "-X", "dev", "-m", "mpi4py", "t.py"],
        ),
        (["python3", "-m", "pkg.train"], ["python3", "-m", "mpi4py", "-m", "pkg.train"]),
        (["python", "-m", "mpi4py", "t.py"], ["python", "-m", "mpi4py", "t.py"]),  # once
        (["bash", "train.sh"], ["bash", "train.sh"]),  # not Python: Open MPI ends the job on its error exit itself
        (["python"], ["python"]),
    ],
)
def test_python_programs_run_under_mpi4py_so_an_error_exit_aborts_the_job(program, run):
    assert aborting(program) == run


def test_one_machine_may_run_more_ranks_than_it_has_cores():
    command = mpiexec_command(LaunchOptions(memory=2, learners=4), ["python", "train.py"])
    assert "--oversubscribe" in command and "--hostfile" not in command


def test_hostfile_slots_add_up_and_a_host_without_a_count_leaves_them_to_open_mpi(tmp_path):
    counted, uncounted = tmp_path / "counted", tmp_path / "uncounted"
    counted.write_text("# learners last\n10.0.0.1 slots=1  # memory-0\n\n10.0.0.2 slots = 4 max_slots=8\nl1 count=2\n")
    uncounted.write_text("10.0.0.1 slots=1\n10.0.0.2\n")
    assert hostfile_slots(counted) == 7 and hostfile_slots(uncounted) is None
    assert "--hostfile" in mpiexec_command(LaunchOptions(learners=2, hostfile=uncounted), ["python", "t.py"])


def test_a_progress_file_is_named_to_every_rank_by_its_absolute_path(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    command = mpiexec_command(LaunchOptions(progress="progress.jsonl"), ["python", "train.py"])
    assert f"MEMORYBRIDGE_PROGRESS={tmp_path / 'progress.jsonl'}" in command
    assert command.index(f"MEMORYBRIDGE_PROGRESS={tmp_path / 'progress.jsonl'}") < command.index(":")


def test_a_checkpoint_request_file_is_named_to_every_rank_by_its_absolute_path(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    command = mpiexec_command(LaunchOptions(checkpoint_request="checkpoint-now"), ["python", "train.py"])
    named = f"MEMORYBRIDGE_CHECKPOINT_REQUEST={tmp_path / 'checkpoint-now'}"
    assert named in command and command[command.index(named) - 1] == "-x" and command.index(named) < command.index(":")


@pytest.mark.parametrize(
    "options, train, message",
    [
        (LaunchOptions(), [], "nothing to launch"),
        (LaunchOptions(hostfile="/nonexistent/hosts"), ["python", "t.py"], "--hostfile /nonexistent/hosts"),
    ],
)
def test_bad_requests_name_the_problem(options, train, message):
    with pytest.raises(UsageError, match=message):
        mpiexec_command(options, train)


def test_more_ranks_than_the_hostfile_has_slots_is_refused_before_mpiexec_starts(tmp_path):
    hostfile = tmp_path / "hosts"
    hostfile.write_text("10.0.0.1 slots=1\n10.0.0.2 slots=2\n")
    with pytest.raises(UsageError, match="gives 3 slots and the job starts 5 ranks"):
        mpiexec_command(LaunchOptions(memory=1, learners=4, hostfile=hostfile), ["python", "t.py"])
    asked = LaunchOptions(memory=1, learners=4, hostfile=hostfile, mpi_args=["--oversubscribe"])
    assert mpiexec_command(asked, ["python", "t.py"]).count("--oversubscribe") == 1  # the user's own, kept


def test_dry_run_prints_the_command_as_json(tmp_path):
    result = remotegnn(
        "launch",
        "--memory",
        "2",
        "--cache-gb",
        "1.5",
        "--policy",
        "presample",
        "--dry-run",
        "--json",
        "--mpi-arg=--mca btl tcp,self",
        "--",
        "python",
        "train.py",
        "--lr",
        "0.01",
    )
    assert result.returncode == 0, result.stderr
    command = json.loads(result.stdout)
    assert command[-7:] == ["-n", "1", "python", "-m", "mpi4py", "train.py", "--lr", "0.01"][-7:]
    assert command[command.index("serve") + 1 : command.index(":")] == ["--cache-gb", "1.5", "--policy", "presample"]
    assert command[command.index("--mca") : command.index("--mca") + 3] == ["--mca", "btl", "tcp,self"]


def test_the_layout_reaches_every_memory_rank():
    result = remotegnn("launch", "--memory", "2", "--layout", "range", "--dry-run", "--json", "--", "python", "t.py")
    assert result.returncode == 0, result.stderr
    command = json.loads(result.stdout)
    assert command[command.index("serve") + 1 : command.index(":")] == ["--layout", "range"]


def test_flows_become_tcp_links_between_every_pair_of_ranks():
    assert "btl_tcp_links" not in mpiexec_command(LaunchOptions(), ["python", "t.py"])  # Open MPI's default: one
    command = mpiexec_command(LaunchOptions(flows=4), ["python", "t.py"])
    at = command.index("btl_tcp_links")
    assert command[at - 1 : at + 4] == ["--mca", "btl_tcp_links", "4", "--mca", "pml_ob1_use_all_rdma"]
    assert command[at + 4] == "1" and at < command.index(":")


@pytest.mark.parametrize(
    "args, flag",
    [
        (["--flows", "0"], "--flows"),
        (["--flows", "17"], "--flows"),
        (["--cache-gb", "-1"], "--cache-gb"),
        (["--policy", "lru"], "--policy"),
        (["--volume-mbps", "0"], "--volume-mbps"),
        (["--memory", "0"], "--memory"),
        (["--layout", "hashed"], "--layout"),
    ],
)
def test_bad_server_options_fail_before_launching(args, flag):
    result = remotegnn("launch", *args, "--dry-run", "--", "python", "t.py")
    assert result.returncode == 2
    assert flag in result.stderr


def test_serve_outside_launch_says_how_to_start_it(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "REMOTEGNN_MEMORY_RANKS"}
    result = remotegnn("serve", str(tmp_path), env=env)
    assert result.returncode == 2
    assert "remotegnn launch" in result.stderr


def test_serve_listen_needs_host_and_port(tmp_path):
    result = remotegnn("serve", str(tmp_path), "--listen", "7070")
    assert result.returncode == 2
    assert "HOST:PORT" in result.stderr


PIDS_AHEAD = 3000
"""How many of the pids Linux hands out next get a stale session directory: more than this
machine's other processes and threads take in the moment before mpiexec starts."""
FIRST_PID_AFTER_WRAP = 300  # Linux starts again here once it reaches pid_max


def next_pids(count: int) -> list[int]:
    """The ``count`` pids Linux hands out after the newest one, wrapping at ``pid_max``."""
    newest = int(Path("/proc/loadavg").read_text().split()[-1])
    top = int(Path("/proc/sys/kernel/pid_max").read_text())
    pids = range(newest + 1, newest + 1 + count)
    return [p if p < top else FIRST_PID_AFTER_WRAP + p - top for p in pids]


def test_a_session_directory_a_killed_job_left_under_a_reused_pid_stops_no_job(mpi, tmp_path, monkeypatch):
    """Open MPI keeps a job's PMIx rendezvous files in $TMPDIR/ompi.<mpiexec's pid>, and a job killed
    outright leaves them there. Planted for every pid the job's mpiexec can get, they stop an mpiexec
    that shares that TMPDIR before any rank starts (exit 213, "The PMIx server's listener thread
    failed to start"); in its own directory the job runs, and the directory is gone after it."""
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setattr(tempfile, "tempdir", None)  # tempfile reads TMPDIR again
    for pid in next_pids(PIDS_AHEAD):
        stale = tmp_path / f"ompi.{pid}"
        stale.mkdir(exist_ok=True)
        (stale / "pmix.vm.tool").write_text("left by a job killed outright\n")
    root = ["--allow-run-as-root"] if os.geteuid() == 0 else []
    with own_session_directory() as environment:
        own = Path(environment["TMPDIR"])
        assert own.parent == tmp_path and own.name.startswith(SESSION_PREFIX)
        program = [sys.executable, "-c", "import os; print(os.environ['TMPDIR'])"]
        job = [find_mpiexec(None), *root, "--oversubscribe", "-n", "1", *program]
        done = subprocess.run(job, env=environment, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        assert done.stdout.strip() == str(own)  # the ranks' temporary files go there too
    assert not own.exists()
