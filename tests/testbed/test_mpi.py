"""MPI on the testbed: ranks land on the right hosts, talk across the links, and a job stopped
with Ctrl-C or SIGTERM leaves no process and no shared memory behind."""

from __future__ import annotations

import json
import os
import secrets
import shlex
import shutil
import signal
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest

from contracts import testbed as tb  # its Test* models are no test classes
from contracts.runs import RunRecord, RunsFile
from foundation.cli import SIGNAL_EXIT_BASE
from remotegnn import mpmd
from testbed import job, lifecycle, processes
from testbed import mpi as testbed_mpi  # `mpi` is the fixture that needs Open MPI
from testbed import state as st
from testbed.netns import NETNS_DIR
from testbed.runs import learner_capture
from tests.testbed.conftest import PROBES, TESTBED, cli, json_lines

pytestmark = pytest.mark.slow  # whole training runs or MPI jobs, seconds each

PYTHON = sys.executable
EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "train_graphsage.py"


def netns_inode(namespace: str) -> int:
    return os.stat(NETNS_DIR / namespace).st_ino


def test_an_mpi_job_spans_the_hosts_in_hostfile_order(make_testbed, state_dir, volume, mpi):
    bed = make_testbed(memory_hosts=2, dataset=volume)
    hello = [PYTHON, str(PROBES), "mpi-hello"]
    done = cli("mpiexec", "--state-dir", state_dir, "--", "-n", "2", *hello, ":", "-n", "1", *hello)
    assert done.returncode == 0, done.stderr
    ranks = {r["rank"]: r for r in json_lines(done.stdout)}
    assert sorted(ranks) == [0, 1, 2] and all(r["allgather"] == 3 for r in ranks.values())
    for rank, host in enumerate(bed.hosts[1:] + bed.hosts[:1]):  # m0, m1, then l0
        assert ranks[rank]["netns"] == netns_inode(host.namespace)
        assert ranks[rank]["blkio"] == (f"/{host.cgroup.name}" if host.cgroup else "/")
    assert ranks[2]["received_ok"]  # 8 MB from m0 to l0 over the link
    assert processes.Scope(bed.namespaces).pids() == set()


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["Ctrl-C", "SIGTERM"])
def test_a_stopped_job_leaves_no_process_and_no_shared_memory(make_testbed, state_dir, mpi, sig):
    """Ctrl-C reaches the whole foreground process group (the CLI and mpiexec); SIGTERM only the
    CLI. Either way the command exits 128 + the signal's number, naming it, as remotegnn launch does."""
    bed = make_testbed()
    segment = f"testbed-{secrets.token_hex(4)}-"
    hang = [PYTHON, str(PROBES), "mpi-hang", segment]
    running = subprocess.Popen(
        [
            str(TESTBED),
            "mpiexec",
            "--state-dir",
            str(state_dir),
            "--",
            "-n",
            "1",
            *hang,
            ":",
            "-n",
            "1",
            *hang,
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        ready = {json.loads(running.stdout.readline())["ready"] for _ in range(2)}
        assert ready == {0, 1}
        if sig == signal.SIGINT:
            os.killpg(running.pid, sig)
        else:
            running.send_signal(sig)
        assert running.wait(timeout=30) == SIGNAL_EXIT_BASE + sig
        assert f"interrupted by {sig.name}" in running.stderr.read()
    finally:
        if running.poll() is None:
            os.killpg(running.pid, signal.SIGKILL)
            running.wait()
    assert processes.Scope(bed.namespaces).pids() == set()
    assert not list(Path("/dev/shm").glob(f"{segment}*"))  # the segments lived in the job's private /dev/shm
    assert lifecycle.status(state_dir, bed.name).healthy  # the testbed itself is still up, and usable:
    again = cli("mpiexec", "--state-dir", state_dir, "--", "-n", "2", PYTHON, str(PROBES), "mpi-hello")
    assert again.returncode == 0, again.stderr


def test_launch_glue_puts_the_memory_ranks_on_the_memory_hosts(tmp_path):
    """The argv `testbed run` hands `remotegnn launch` (no root needed: nothing is started).
    launch puts the memory ranks' app context first, and Open MPI maps ranks onto hostfile slots
    in order, so memory hosts come first in the hostfile with one slot each."""
    volume = tb.Volume(dataset=tmp_path / "g", device="254:0", mb_per_s=125, iops=3000)
    bed = st.plan(
        tb.TestbedSpec(name="tglue-abc123", memory_hosts=2, subnet="10.211.0.0/24"),
        Path("/sys/fs/cgroup/blkio"),
        volume,
    )
    running = job.Job(
        directory=tmp_path,
        agent=tmp_path / "agent",
        mpiexec=tmp_path / "mpiexec",
        tmpdir=tmp_path / "tmp",
        evicted_bytes=0,
        started_at=datetime.now(UTC),
    )
    options = job.launch_options(
        bed, running, learners=2, serve_args=["--cache-gb", "0.5"], mpi_args=["--mca", "btl_tcp_sndbuf", "0"]
    )
    argv = mpmd.mpiexec_command(options, learner_capture(["python", "train.py"], tmp_path))

    assert argv[0] == str(tmp_path / "mpiexec")  # the wrapper that starts mpiexec on l0
    hostfile = Path(argv[argv.index("--hostfile") + 1]).read_text()
    assert hostfile == "10.211.0.10 slots=1\n10.211.0.11 slots=1\n10.211.0.2 slots=2\n"
    pairs = {argv[i + 1]: argv[i + 2] for i, a in enumerate(argv) if a in ("--prtemca", "--mca")}
    assert pairs["plm_ssh_agent"] == str(tmp_path / "agent")
    assert pairs["oob_tcp_if_include"] == pairs["btl_tcp_if_include"] == "10.211.0.0/24"
    assert (
        pairs["btl"] == "tcp,self" and pairs["coll"] == "^han,sm" and pairs["prte_tmpdir_base"] == str(tmp_path / "tmp")
    )
    assert argv.index("plm_ssh_agent") < argv.index("btl_tcp_sndbuf")  # the user's options come after the testbed's
    memory, learners = " ".join(argv).split(" : ")
    assert memory.endswith(
        f"-n 2 {sys.executable} -m mpi4py -m remotegnn.cli.main serve {tmp_path / 'g'} --cache-gb 0.5"
    )
    assert learners.startswith("-n 2 /bin/bash -c") and learners.endswith("python train.py")


def test_learner_ranks_spread_over_the_learner_hosts_after_the_memory_hosts(tmp_path):
    bed = st.plan(tb.TestbedSpec(name="tglue-abc123", memory_hosts=1, learner_hosts=2), None, None)
    assert [(h.name, str(h.address)) for h in bed.hosts] == [
        ("l0", "10.210.0.2"),
        ("l1", "10.210.0.3"),
        ("m0", "10.210.0.10"),
    ]
    learner_lines = {}
    for learners in (1, 3, 4):
        (tmp_path / str(learners)).mkdir()
        hostfile = testbed_mpi.write_hostfile(bed, learners, tmp_path / str(learners))
        learner_lines[learners] = hostfile.read_text().splitlines()[1:]  # after m0's
    assert learner_lines == {
        1: ["10.210.0.2 slots=1"],  # l1 has no rank, so it is left out
        3: ["10.210.0.2 slots=2", "10.210.0.3 slots=1"],
        4: ["10.210.0.2 slots=2", "10.210.0.3 slots=2"],
    }


def test_run_trains_across_the_hosts_and_records_the_run(make_testbed, state_dir, rmat, tmp_path, mpi):
    """Two memory hosts, two learner hosts: a memory rank runs on each memory host and reads
    features through the hosts' groups, a learner runs on each learner host, the two train as
    one (data-parallel, meeting over the links) and end with the same parameters, and the run is
    recorded."""
    pytest.importorskip("torch_geometric")
    # The volume throttle sees only reads that reach the disk, so `run` drops the dataset's pages
    # from the page cache first; it cannot drop pages another process has mapped, as this test
    # process maps the shared `rmat` fixture. So the job gets a copy that nothing has mapped.
    dataset = tmp_path / "rmat"
    shutil.copytree(rmat.path, dataset)
    bed = make_testbed(memory_hosts=2, learner_hosts=2, dataset=dataset)
    runs_file = tmp_path / "runs.json"
    example = [PYTHON, str(EXAMPLE), "--dataset", str(dataset), "--epochs", "1", "--batch-size", "128", "--json"]
    example += ["--learner-cache", "none"]  # every row is sent, so each memory rank reads its shard per batch
    train = ["sh", "-c", f"{shlex.join([PYTHON, str(PROBES), 'where'])} && exec {shlex.join(example)}"]
    done = cli(
        "run", "--learners", "2", "--state-dir", state_dir, "--runs", runs_file, "--json", "--", *train, timeout=300
    )
    assert done.returncode == 0, done.stderr
    record = RunRecord.model_validate_json(done.stdout)  # --json: stdout is the record alone
    assert record.exit_code == 0 and record.command == train and record.testbed.name == bed.name
    assert record.output["epochs"][0]["batches"] > 0 and record.evicted_bytes >= rmat.features.nbytes
    assert RunsFile.model_validate_json(runs_file.read_text()).runs == [record]
    # The memory ranks read features through their hosts' groups. Both hosts map the same file, and
    # a page holds rows of both shards, so which group is charged for a page is a race: the first
    # reader's page-cache fill serves the other. Together they must have read from the volume.
    reads = 0
    for host in bed.memory:
        serviced = (host.cgroup / "blkio.throttle.io_service_bytes").read_text().split("\n")
        reads += sum(int(line.split()[2]) for line in serviced if line.split()[1:2] == ["Read"])
    assert reads > 0
    directory = Path(record.mpiexec[record.mpiexec.index("--hostfile") + 1]).parent
    outputs = {p.name: [json.loads(line) for line in p.read_text().splitlines()] for p in directory.glob("learner.*")}
    assert {name: lines[0] for name, lines in outputs.items()} == {
        f"learner.{2 + i}": {"netns": netns_inode(host.namespace), "blkio": "/"} for i, host in enumerate(bed.learners)
    }
    reports = [outputs[f"learner.{rank}"][-1] for rank in (2, 3)]
    assert [(r["rank"], r["world_size"]) for r in reports] == [(0, 2), (1, 2)]
    assert reports[0]["parameters_sha256"] == reports[1]["parameters_sha256"]
    assert processes.Scope(bed.namespaces).pids() == set()
