"""`provision run` end to end: a cluster made by `provision up` against moto, whose machines are the
testbed's network namespaces (reached through --ssh-command, as the testbed's own MPI agent reaches
them), a dataset staged from a local directory, a real `remotegnn launch` job over the namespaces,
its record and files fetched home, and --down-after leaving nothing tagged in moto."""

from __future__ import annotations

import _thread
import datetime as dt
import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from contracts.interruption import InterruptionNotice
from contracts.runs import ClusterSpec, JobRecord
from foundation.cli import Interrupted
from foundation.errors import UsageError
from foundation.fileio import write_model
from planner.catalog.snapshot import load_catalog
from provisioning import bringup, statefile, teardown, userdata
from provisioning.job import stage
from provisioning.job.models import MachineLayout
from provisioning.job.runner import (
    JobOptions,
    cluster_spec,
    launch_command,
    run_job,
    runs_dir,
    with_launch_layout,
)
from testbed import mpi as testbed_mpi
from testbed import state as testbed_state
from testbed.netns import NETNS_DIR
from tests.conftest import TORCH_THREADS
from tests.provisioning.conftest import live_instances, signal_this_process
from tests.provisioning.job.conftest import cluster_state, write_script
from tests.testbed import conftest as testbed

pytestmark = pytest.mark.slow

# The testbed's fixtures (root, namespaces, Open MPI), used here as they are.
root_support, mpi, prefix, make_testbed = testbed.root_support, testbed.mpi, testbed.prefix, testbed.make_testbed

REPO = Path(__file__).resolve().parents[3]
FIDELITY_JOB = REPO / "benchmarks" / "fidelity_job.py"
EXAMPLE = REPO / "examples" / "train_graphsage.py"

WHERE = """import json, os, sys
print(json.dumps({"netns": os.stat("/proc/self/ns/net").st_ino}), flush=True)
os.execv(sys.executable, [sys.executable, *sys.argv[1:]])
"""

# Maps `[-l USER] [USER@]ADDRESS COMMAND...` (how ssh and rsync call it) to the testbed's agent.
TESTBED_SSH = """#!/bin/bash
if [ "$1" = "-l" ]; then shift 2; fi
host="${{1#*@}}"
shift
exec {agent} "$host" "$*"
"""


@pytest.fixture
def state_dir(tmp_path) -> Path:  # the testbed fixtures' state directory
    return tmp_path / "testbeds"


def up_on_testbed(aws, moto, make_options, plan, bed, state_dir, tmp_path) -> tuple:
    """`provision up` of ``plan`` in moto, its machines' addresses the testbed's hosts (learner-i
    on l<i>, memory-i on m<i>), and the ssh command that reaches those hosts."""
    if shutil.which("rsync") is None:
        pytest.skip("needs rsync, which copies datasets and job files (apt-get install rsync)")
    result = bringup.up(aws, plan, make_options())
    addresses = {f"learner-{i}": str(host.address) for i, host in enumerate(bed.learners)} | {
        f"memory-{i}": str(host.address) for i, host in enumerate(bed.memory)
    }
    nodes = [n.model_copy(update={"private_ip": addresses[n.node], "public_ip": None}) for n in result.state.nodes]
    statefile.write(moto.state_dir, result.state.model_copy(update={"nodes": nodes}))
    agent = testbed_state.directory(state_dir, bed.name) / testbed_mpi.AGENT
    ssh = write_script(tmp_path / "testbed-ssh", TESTBED_SSH.format(agent=shlex.quote(str(agent))))
    mpi_args = testbed_mpi.mpi_args(bed, agent, tmp_path)
    return bed, str(ssh), shlex.join(mpi_args)


@pytest.fixture
def cluster(aws, moto, make_options, two_level_plan, make_testbed, state_dir, tmp_path):
    """A learner and two memory machines: `up_on_testbed`."""
    bed = make_testbed(memory_hosts=2, link_gbit=2.0)
    yield up_on_testbed(aws, moto, make_options, two_level_plan, bed, state_dir, tmp_path)
    teardown.down(aws, "c1")  # what a failed test's job left (a no-op after --down-after)


@pytest.fixture
def machine(tmp_path) -> MachineLayout:
    root = tmp_path / "machine"
    (root / "var").mkdir(parents=True)
    (root / "var" / "boot-status").write_text(userdata.BOOT_OK)
    return MachineLayout(
        bin_dir=str(Path(sys.executable).parent),
        boot_status=str(root / "var" / "boot-status"),
        init_log=str(root / "var" / "init.log"),
        datasets_dir=str(root / "data"),
        jobs_dir=str(root / "jobs"),
        notice_file=str(root / "var" / "interruption.json"),
    )


@pytest.fixture(scope="module")
def dataset(tmp_path_factory) -> tuple[Path, Path]:
    """A learnable 8,192-node R-MAT dataset and its profile (what the calibration job reads)."""
    from remotegnn.profile import profile_dataset
    from remotegnn.store import GraphDataset
    from remotegnn.synth import SynthSpec, synth

    base = tmp_path_factory.mktemp("job-data")
    path = base / "rmat13"
    synth(SynthSpec(nodes=8192, edges=60_000, dim=32, classes=4, seed=5), path, progress=False)
    profile = base / "rmat13.json"
    profile.write_text(profile_dataset(GraphDataset.open(path), fanouts=(5, 5)).profile.model_dump_json())
    return path, profile


JOB_BOUND_S = 300
"""Every run here ends by --max-hours at the latest: each takes well under a minute, and a job Open
MPI failed to end (seen once: a learner that exited at once left its memory ranks running, under a
heavily loaded machine) then fails its test with the record instead of stopping the suite."""


def options(moto, cluster, machine, dataset_path, command, **extra) -> JobOptions:
    _, ssh, mpi_args = cluster
    extra.setdefault("max_hours", JOB_BOUND_S / 3600)
    return JobOptions(
        cluster="c1",
        dataset=str(dataset_path),
        command=command,
        state_dir=moto.state_dir,
        launch_args=[f"--mpi-arg={mpi_args}", "--batch-creators", "1", "--vector-loaders", "1"],
        ssh_command=ssh,
        layout=machine,
        **extra,
    )


def test_a_job_trains_over_the_cluster_its_record_comes_home_and_calibrates(
    aws,
    moto,
    mpi,
    cluster,
    machine,
    dataset,
    tmp_path,
):
    path, profile = dataset
    command = [
        "python", str(FIDELITY_JOB), "--dataset", "{dataset}", "--profile", str(profile),
        "--fanouts", "5,5", "--batch-size", "512", "--epochs", "2", "--cache-bytes", str(2**20),
    ]  # fmt: skip
    said: list[str] = []
    record = run_job(
        aws, load_catalog(), options(moto, cluster, machine, path, command, down_after=True), said.append, print
    )
    assert record.ended == "finished" and record.exit_code == 0, Path(record.log).read_text()[-3000:]
    assert record.dataset == f"{machine.datasets_dir}/rmat13"
    assert record.output is not None and record.output["kind"] == "memorybridge.calibration-run"
    assert record.launch[1:3] == ["launch", "--hostfile"] and "--memory" in record.launch
    assert record.launch[record.launch.index("--memory") + 1] == "2"
    # progress came as the loader's events, not from what the script printed (it prints no epoch lines)
    assert [p.epoch for p in record.progress] == [0, 1] and all(p.batches_per_s > 0 for p in record.progress)
    assert [line for line in said if line.startswith("epoch 1:") and "predicted" in line]
    assert record.cluster.memory_machines == 2 and record.cluster.predicted_epoch_s
    assert record.torn_down and live_instances(moto) == []
    assert statefile.read(moto.state_dir, "c1") is None

    home = runs_dir(moto.state_dir, "c1")
    saved = JobRecord.model_validate_json((home / f"{record.job_id}.json").read_text())
    assert saved == record
    assert (home / record.job_id / "job.log").read_text() == Path(record.log).read_text()
    assert (home / record.job_id / FIDELITY_JOB.name).exists()  # the script's directory went there and back

    calibration = tmp_path / "calibration.json"
    done = subprocess.run(
        [sys.executable, "-m", "planner.cli.main", "calibrate", "--from", str(home / f"{record.job_id}.json"),
         "-o", str(calibration), "--json"],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    fitted = {f["name"] for f in json.loads(done.stdout)["fitted"]}
    assert f"gpu_tflops.{record.cluster.learner_gpu}" in fitted


def test_a_plan_of_two_learner_machines_trains_one_model_across_them(
    aws, moto, mpi, make_options, two_level_plan, make_testbed, state_dir, machine, dataset, tmp_path
):
    """`provision up` of two one-GPU learner machines, `provision run` of the example: a learner
    rank on each machine (testbed hosts l0 and l1), meeting over the network, one model."""
    chosen = two_level_plan.chosen
    two = chosen.model_copy(update={"learner": chosen.learner.model_copy(update={"count": 2}), "learner_ranks": 2})
    bed = make_testbed(memory_hosts=2, learner_hosts=2, link_gbit=2.0)
    plan = two_level_plan.model_copy(update={"chosen": two})
    try:
        cluster = up_on_testbed(aws, moto, make_options, plan, bed, state_dir, tmp_path)
        hostfile = statefile.hostfile_path(moto.state_dir, "c1").read_text().splitlines()
        where = write_script(tmp_path / "job" / "where.py", WHERE)  # says its host, then runs the example
        command = ["python", str(where), str(EXAMPLE), "--dataset", "{dataset}", "--epochs", "1", "--json"]
        command += ["--batch-size", "256"]
        record = run_job(
            aws, load_catalog(), options(moto, cluster, machine, dataset[0], command, down_after=True), print, print
        )
    finally:
        teardown.down(aws, "c1")
    log = Path(record.log).read_text()
    assert record.ended == "finished" and record.exit_code == 0, log[-3000:]
    assert record.launch[record.launch.index("--learners") + 1] == "2"
    documents = [json.loads(line) for line in log.splitlines() if line.startswith("{")]
    assert sorted(d["netns"] for d in documents if "netns" in d) == sorted(
        os.stat(NETNS_DIR / host.namespace).st_ino for host in bed.learners
    )  # a learner rank on each learner host
    assert [line for line in hostfile if line[0] != "#"][2:] == [f"{host.address} slots=1" for host in bed.learners]
    reports = sorted((d for d in documents if "rank" in d), key=lambda r: r["rank"])
    assert [(r["rank"], r["world_size"]) for r in reports] == [(0, 2), (1, 2)]
    assert reports[0]["parameters_sha256"] == reports[1]["parameters_sha256"]
    assert record.torn_down and live_instances(moto) == []


def test_a_job_that_dies_still_has_its_log_fetched_and_the_cluster_torn_down(
    aws, moto, cluster, machine, dataset, tmp_path
):
    # The script also writes a line that is no progress event where the loader's events go (the
    # job's directory is its working directory): it is skipped with a warning, never trusted.
    lines = [
        "import sys",
        "open('progress.jsonl', 'a').write('{\"epoch\": -1}\\n')",
        "print('about to fail')",
        "sys.exit(3)",
    ]
    script = write_script(tmp_path / "job" / "die.py", "\n".join(lines) + "\n")
    said: list[str] = []
    record = run_job(
        aws,
        load_catalog(),
        options(moto, cluster, machine, dataset[0], ["python", str(script)], down_after=True),
        said.append,
        lambda _: None,
    )
    assert record.ended == "failed" and record.exit_code == 3
    assert "about to fail" in Path(record.log).read_text()
    assert record.progress == [] and len([line for line in said if "not an event" in line]) == 1
    assert record.torn_down and live_instances(moto) == []


def test_max_hours_stops_the_job_and_tears_down_even_without_down_after(aws, moto, cluster, machine, dataset, tmp_path):
    script = write_script(
        tmp_path / "job" / "forever.py", "import time\nprint('started', flush=True)\ntime.sleep(600)\n"
    )
    record = run_job(
        aws,
        load_catalog(),
        options(moto, cluster, machine, dataset[0], ["python", str(script)], max_hours=20 / 3600),
        lambda _: None,
        lambda _: None,
    )
    assert record.ended == "max-hours" and record.wall_s < 120
    assert record.torn_down and live_instances(moto) == []


@pytest.mark.parametrize("stop", ["Ctrl-C", "SIGTERM"])
def test_a_stopped_run_stops_the_job_fetches_its_log_and_tears_down(stop, aws, moto, mpi, cluster, machine, dataset):
    """Ctrl-C as the terminal sends it (KeyboardInterrupt in the main thread), or SIGTERM as
    `timeout`, systemd or a scheduler sends it (Python's default ended the run on the spot and left
    the job running on the cluster), once an epoch has run."""
    unhandled: list[str] = []

    def report(line: str) -> None:  # the progress line of the loader's first epoch event, on a reader thread
        if line.startswith("epoch 0:") and stop == "Ctrl-C":
            _thread.interrupt_main()
        elif line.startswith("epoch 0:"):
            try:
                signal_this_process(signal.SIGTERM)
            except pytest.fail.Exception as failed:  # it would end this thread alone: stop the run, fail below
                unhandled.append(str(failed))
                _thread.interrupt_main()

    command = ["python", str(EXAMPLE), "--dataset", "{dataset}", "--epochs", "50", "--batch-size", "256"]
    with pytest.raises(KeyboardInterrupt) as stopped:
        run_job(
            aws, load_catalog(), options(moto, cluster, machine, dataset[0], command, down_after=True), report, print
        )
    assert not unhandled, unhandled
    sent = signal.SIGINT if stop == "Ctrl-C" else signal.SIGTERM  # raised again as it came, for the exit status
    assert isinstance(stopped.value, Interrupted) and stopped.value.signal == sent
    (record_file,) = runs_dir(moto.state_dir, "c1").glob("*.json")
    record = JobRecord.model_validate_json(record_file.read_text())
    assert record.ended == "interrupted" and record.exit_code is None and record.torn_down
    assert "epoch 0:" in Path(record.log).read_text() and record.progress[0].epoch == 0
    assert live_instances(moto) == []


S3_PORT = 5555
S3_SERVER = "import sys; from moto.server import main; main(['-H', sys.argv[1], '-p', sys.argv[2]])"
UPLOAD = """
import boto3, pathlib, sys
s3 = boto3.client("s3", endpoint_url=sys.argv[1], region_name="us-east-1",
                  aws_access_key_id="testing", aws_secret_access_key="testing")
s3.create_bucket(Bucket="data")
root = pathlib.Path(sys.argv[2])
for path in root.rglob("*"):
    if path.is_file():
        s3.upload_file(str(path), "data", "graphs/" + root.name + "/" + path.relative_to(root).as_posix())
"""


def test_an_s3_dataset_is_fetched_by_the_memory_machines_themselves(
    aws, moto, cluster, machine, dataset, tmp_path, monkeypatch
):
    """moto's S3 runs on the learner host, so the memory hosts reach it over the testbed's links."""
    bed, ssh, _ = cluster
    endpoint = f"http://{bed.learner.address}:{S3_PORT}"
    server = subprocess.Popen([ssh, f"ec2-user@{bed.learner.address}", shlex.join(
        [sys.executable, "-c", S3_SERVER, str(bed.learner.address), str(S3_PORT)])])  # fmt: skip
    try:
        for _ in range(300):  # bounded readiness poll of the server in its namespace
            up = subprocess.run([ssh, f"ec2-user@{bed.learner.address}", f"curl -s -o /dev/null {endpoint}"])
            if up.returncode == 0:
                break
            time.sleep(0.1)
        upload = shlex.join([sys.executable, "-c", UPLOAD, endpoint, str(dataset[0])])
        uploaded = subprocess.run(
            [ssh, f"ec2-user@{bed.learner.address}", upload], capture_output=True, text=True, timeout=120
        )
        assert uploaded.returncode == 0, uploaded.stderr
        monkeypatch.setenv("AWS_ENDPOINT_URL_S3", endpoint)  # what the machines are told to use
        command = ["python", str(EXAMPLE), "--dataset", "{dataset}", "--epochs", "1", "--batch-size", "1024"]
        said: list[str] = []
        record = run_job(
            aws,
            load_catalog(),
            options(moto, cluster, machine, "s3://data/graphs/rmat13", command, down_after=True),
            said.append,
            lambda _: None,
            credentials=lambda: stage.caller_credentials("us-east-1"),
        )
    finally:
        server.terminate()
        server.wait(timeout=30)
    assert record.ended == "finished", Path(record.log).read_text()
    assert [line for line in said if "rmat13:" in line and "copied from s3://data/graphs/rmat13" in line], said
    staged = Path(machine.datasets_dir) / "rmat13"
    assert json.loads((staged / "meta.json").read_text()) == json.loads((dataset[0] / "meta.json").read_text())
    assert record.torn_down


@pytest.mark.parametrize("flows", [1, 3])
def test_the_launch_carries_the_plans_figures_before_the_users_arguments(flows):
    spec = ClusterSpec(
        name="c1", plan_id="p", plan_label="g4dn.xlarge + 2x r6in.8xlarge", learner_type="g4dn.xlarge",
        learner_gpu="T4", learner_gbit=5.0, memory_type="r6in.8xlarge", memory_gbit=50.0, memory_machines=2,
        usd_per_hour=6.0, volume_mbps=250, volume_iops=4000, cache_gib=100.0, flows=flows, predicted_epoch_s=60.0,
    )  # fmt: skip
    argv = launch_command("/opt/mb/bin", "/jobs/j1", spec, "/data/papers100M", ["--learners", "2"])
    assert argv[:2] == ["/opt/mb/bin/remotegnn", "launch"] and argv[-2:] == ["--learners", "2"]
    assert argv[argv.index("--memory") + 1] == "2" and argv[argv.index("--cache-gb") + 1] == "100"
    assert ("--flows" in argv) == (flows > 1)
    if flows > 1:
        assert argv[argv.index("--flows") + 1] == "3"
    assert argv.count("--learners") == 1  # the plan's one rank is launch's default; the user asked for 2


def test_a_plan_that_samples_on_the_learner_launches_so():
    spec = ClusterSpec(
        name="c1", plan_id="p", plan_label="g6.8xlarge + 1x r6in.2xlarge", learner_type="g6.8xlarge",
        learner_gpu="L4", learner_gbit=25.0, memory_type="r6in.2xlarge", memory_gbit=12.5, memory_machines=1,
        usd_per_hour=2.6, volume_mbps=125, volume_iops=3000, cache_gib=10.0, sampling="learner", predicted_epoch_s=28.0,
    )  # fmt: skip
    argv = launch_command("/opt/mb/bin", "/jobs/j1", spec, "/data/papers100M", [])
    assert argv[argv.index("--sampling") + 1] == "learner"
    assert "--sampling" not in launch_command(
        "/opt/mb/bin", "/jobs/j1", spec.model_copy(update={"sampling": "memory"}), "/d", []
    )


def test_the_launch_and_the_staging_share_one_row_layout():
    spec = ClusterSpec(
        name="c1", plan_id="p", plan_label="g6.8xlarge + 4x r6in.2xlarge", learner_type="g6.8xlarge",
        learner_gpu="L4", learner_gbit=25.0, memory_type="r6in.2xlarge", memory_gbit=12.5, memory_machines=4,
        usd_per_hour=2.6, volume_mbps=125, volume_iops=3000, cache_gib=10.0, predicted_epoch_s=28.0,
    )  # fmt: skip
    assert spec.shard_layout == "striped"
    argv = launch_command("/opt/mb/bin", "/jobs/j1", spec, "/d", [])
    assert argv[argv.index("--layout") + 1] == "striped"  # named even as the default: the parts were staged in it
    assert with_launch_layout(spec, ["--flows", "2"]) == spec
    ranged = with_launch_layout(spec, ["--layout", "modulo", "--layout=range"])  # the last, as the launch reads it
    assert ranged.shard_layout == "range"
    argv = launch_command("/opt/mb/bin", "/jobs/j1", ranged, "/d", [])
    assert argv[argv.index("--layout") + 1] == "range"
    with pytest.raises(UsageError, match="--launch-arg: --layout 'rows' is not a layout"):
        with_launch_layout(spec, ["--layout", "rows"])


def test_the_plans_row_layout_is_the_jobs(two_level_plan, tmp_path):
    plan = two_level_plan.chosen
    assert plan.data_path.shard_layout == "striped"
    ranged = plan.model_copy(update={"data_path": plan.data_path.model_copy(update={"shard_layout": "range"})})
    state = cluster_state(tmp_path / "hosts", memory=2)
    assert cluster_spec(state.model_copy(update={"plan": ranged}), load_catalog()).shard_layout == "range"
    assert cluster_spec(state, load_catalog()).shard_layout == "striped"  # no plan recorded: the default


def test_the_launch_starts_a_learner_rank_for_each_gpu_the_plan_trains_on():
    spec = ClusterSpec(
        name="c1", plan_id="p", plan_label="g5.12xlarge alone", learner_type="g5.12xlarge", learner_gpu="A10G",
        learner_gbit=40.0, memory_type=None, memory_gbit=None, memory_machines=0, usd_per_hour=5.75,
        volume_mbps=1000, volume_iops=6000, cache_gib=None, learners=4, predicted_epoch_s=36.0,
    )  # fmt: skip
    argv = launch_command("/opt/mb/bin", "/jobs/j1", spec, "/data/papers100M", [])
    assert argv[argv.index("--learners") + 1] == "4" and argv.index("--learners") < argv.index("--progress")


# Maps a machine's address in moto to its testbed host, then calls the testbed's agent, as ssh
# would. A replacement's address, which no test knows before `up` makes it, is looked up in the
# cluster's state file (`up` rewrites it) by node: each node keeps its host.
MAPPED_SSH = """#!/bin/bash
if [ "$1" = "-l" ]; then shift 2; fi
host="${{1#*@}}"
shift
mapped=$(awk -v h="$host" '$1 == h {{ print $2 }}' {mapping})
if [ -z "$mapped" ]; then
  node=$({python} -c {lookup} {state} "$host")
  mapped=$(awk -v n="$node" '$1 == n {{ print $2 }}' {hosts})
fi
exec {agent} "$mapped" "$*"
"""
NODE_BY_ADDRESS = (
    "import json, sys; nodes = json.load(open(sys.argv[1]))['nodes']; "
    "print(next((n['node'] for n in nodes if sys.argv[2] in (n['private_ip'], n['public_ip'])), ''))"
)
# The example, resumable: six epochs, so that five are left when the first one's end takes a machine.
RESUMABLE = ["--dataset", "{dataset}", "--epochs", "6", "--batch-size", "64", "--json"]
CHECKPOINTS = ["--checkpoint-dir", "ckpt", "--checkpoint-every", "2", "--resume"]
ONE_THREAD = ["-x", f"OMP_NUM_THREADS={TORCH_THREADS}"]
"""The job's ranks on the suite's torch threads (Open MPI's ``-x``), as the uninterrupted run in this
process's environment (tests/conftest.py): where the CPU's kernels split a sum by thread count
(AVX-512 machines), one and two threads end in parameters that differ in the last bits, and the
digests are compared bit for bit."""


class Reclaimable:
    """A cluster `up` made in moto whose machines are the testbed's hosts, reached by their moto
    addresses (a replacement's too), and a way to take one away as AWS would: its instance
    terminated through the EC2 API and every process of its host killed."""

    def __init__(self, aws, moto, bed, state, agent: Path, tmp_path: Path):
        self.aws, self.moto, self.bed, self.state = aws, moto, bed, state
        self.hosts = {"learner-0": bed.learner} | {f"memory-{i}": host for i, host in enumerate(bed.memory)}
        mapping = tmp_path / "addresses"
        mapping.write_text(
            "".join(
                f"{a} {self.hosts[n.node].address}\n" for n in state.nodes for a in (n.private_ip, n.public_ip) if a
            )
        )
        hosts = tmp_path / "hosts"
        hosts.write_text("".join(f"{node} {host.address}\n" for node, host in self.hosts.items()))
        self.ssh = write_script(
            tmp_path / "mapped-ssh",
            MAPPED_SSH.format(
                mapping=shlex.quote(str(mapping)),
                python=shlex.quote(sys.executable),
                lookup=shlex.quote(NODE_BY_ADDRESS),
                state=shlex.quote(str(statefile.state_path(moto.state_dir, state.name))),
                hosts=shlex.quote(str(hosts)),
                agent=agent,
            ),
        )
        self.mpi_args = shlex.join([*testbed_mpi.mpi_args(bed, agent, tmp_path), *ONE_THREAD])
        self.hostfile = testbed_mpi.write_hostfile(bed, 1, tmp_path)  # MPI between the testbed's own addresses
        self.taken: list[str] = []

    def options(self, machine: MachineLayout, dataset_path: Path, **extra) -> JobOptions:
        extra.setdefault("max_hours", JOB_BOUND_S / 3600)
        return JobOptions(
            cluster="c1",
            dataset=str(dataset_path),
            command=["python", str(EXAMPLE), *RESUMABLE, *CHECKPOINTS],
            state_dir=self.moto.state_dir,
            launch_args=[
                f"--mpi-arg={self.mpi_args}",
                "--batch-creators",
                "1",
                "--vector-loaders",
                "1",
                f"--hostfile={self.hostfile}",
            ],  # fmt: skip
            ssh_command=str(self.ssh),
            layout=machine,
            down_after=True,
            recover=True,
            watch_s=1.0,
            **extra,
        )

    def take(self, node_name: str) -> None:
        """AWS reclaims ``node_name`` without notice (a replacement answers at its host's address)."""
        node = next(n for n in self.state.nodes if n.node == node_name)
        host = self.hosts[node_name]
        self.moto.ec2.terminate_instances(InstanceIds=[node.instance_id])
        pids = subprocess.run(["ip", "netns", "pids", host.namespace], capture_output=True, text=True)
        if pids.stdout.split():
            subprocess.run(["kill", "-KILL", *pids.stdout.split()], check=False)
        self.taken.append(node.instance_id)


@pytest.fixture
def reclaimable(aws, moto, mpi, make_testbed, state_dir, two_level_plan, make_options, tmp_path) -> Reclaimable:
    if shutil.which("rsync") is None:
        pytest.skip("needs rsync, which copies datasets and job files (apt-get install rsync)")
    bed = make_testbed(memory_hosts=2, link_gbit=2.0)
    chosen = two_level_plan.chosen
    on_spot = {role: getattr(chosen, role).model_copy(update={"market": "spot"}) for role in ("learner", "memory")}
    plan = two_level_plan.model_copy(update={"chosen": chosen.model_copy(update=on_spot)})
    state = bringup.up(aws, plan, make_options()).state  # spot machines at moto's addresses, not the testbed's
    agent = testbed_state.directory(state_dir, bed.name) / testbed_mpi.AGENT
    yield Reclaimable(aws, moto, bed, state, agent, tmp_path)
    teardown.down(aws, "c1")  # what a failed test's job left (a no-op after --down-after)


@pytest.fixture(scope="module")
def uninterrupted(dataset) -> str:
    """The parameters' digest of the same training run whole, on this machine (once per module:
    the example is deterministic for its seed, and every recovery test compares with it)."""
    dataset_path, _ = dataset
    done = subprocess.run(
        [sys.executable, str(EXAMPLE), *[str(dataset_path) if w == "{dataset}" else w for w in RESUMABLE]],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)["parameters_sha256"]


def test_at_a_notice_the_job_checkpoints_and_a_machine_lost_during_the_recovery_is_replaced_too(
    aws, moto, reclaimable, machine, dataset, uninterrupted
):
    """As the job starts, memory-1's notice agent writes AWS's two-minute warning: `provision
    run --recover` asks the job for a checkpoint, which the script saves, stops the job, retires
    memory-1 and replaces it. While it does, AWS takes memory-0 without notice (terminated through
    the EC2 API, its host's processes killed): the same `up` replaces it too, the job resumes from the
    notice's checkpoint and ends with the parameters of the same training never interrupted."""
    path, _ = dataset
    noticed = next(n for n in reclaimable.state.nodes if n.node == "memory-1")
    said: list[str] = []

    def report(line: str) -> None:
        said.append(line)
        if line.startswith("running on") and not Path(machine.notice_file).exists():
            warning = dt.datetime.now(dt.UTC) + dt.timedelta(minutes=2)
            write_model(
                machine.notice_file,
                InterruptionNotice(instance_id=noticed.instance_id, action="terminate", time=warning),
            )
        if line.startswith("recovering memory-1") and not reclaimable.taken:
            reclaimable.take("memory-0")

    options = reclaimable.options(machine, path, sync_s=1.0)
    record = run_job(aws, load_catalog(), options, report, lambda _: None)
    log = Path(record.log).read_text()[-3000:]
    assert record.ended == "finished", log
    assert [(r.cause, list(r.lost), r.replaced) for r in record.recoveries] == [
        ("interruption-notice", ["memory-1"], True), ("lost-during-recovery", ["memory-0"], True)
    ], log  # fmt: skip
    assert noticed.instance_id in record.recoveries[0].lost["memory-1"] and record.recoveries[0].seconds_lost > 0
    assert reclaimable.taken[0] in record.recoveries[1].lost["memory-0"]
    assert "the job saved a checkpoint" in said, "\n".join(said)
    assert "retiring memory-1 before AWS takes it" in said
    assert record.output is not None and record.output["parameters_sha256"] == uninterrupted
    assert record.output["resumed_at_step"] > 0
    assert record.progress[-1].epoch == 5
    assert record.torn_down and live_instances(moto) == []


@pytest.mark.parametrize("node", ["learner-0"])
def test_a_reclaimed_machine_is_replaced_and_the_job_resumes_to_the_uninterrupted_parameters(
    aws, moto, reclaimable, machine, dataset, uninterrupted, node
):
    """Once the first epoch is done, AWS takes a machine back: `provision run --recover` notices,
    replaces it with `up` (a new instance; a memory machine's data volume re-attached; a learner
    given the job's directory as last copied home), runs the job again, which resumes from its
    checkpoints, and it ends with the parameters of the same training never interrupted. (A learner
    taken before a copy home held a checkpoint starts afresh, as the copy is made every sync_s.)"""
    path, _ = dataset
    said: list[str] = []

    def report(line: str) -> None:
        said.append(line)
        if line.startswith("epoch 0:") and not reclaimable.taken:
            reclaimable.take(node)

    record = run_job(aws, load_catalog(), reclaimable.options(machine, path, sync_s=1.0), report, lambda _: None)
    assert record.ended == "finished", Path(record.log).read_text()[-3000:]
    assert len(record.recoveries) == 1, Path(record.log).read_text()[-3000:]
    (event,) = record.recoveries
    assert list(event.lost) == [node] and reclaimable.taken[0] in event.lost[node]
    assert event.replaced and event.seconds_lost > 0
    assert record.output is not None and record.output["parameters_sha256"] == uninterrupted
    if node.startswith("memory"):  # the learner's own directory: from its newest checkpoint, not afresh
        assert record.output["resumed_at_step"] > 0
    restarted = said.index(next(line for line in said if line.startswith(f"recovering {node}")))
    epochs = [int(line.split()[1].rstrip(":")) for line in said[restarted:] if line.startswith("epoch ")]
    assert epochs == sorted(set(epochs))  # the restarted job's epochs only, none replayed
    assert record.progress[-1].epoch == 5
    assert record.torn_down and live_instances(moto) == []


def test_past_max_restarts_the_job_ends_lost_with_its_record_and_nothing_left(aws, moto, reclaimable, machine, dataset):
    def report(line: str) -> None:
        if line.startswith("epoch 0:") and not reclaimable.taken:
            reclaimable.take("memory-0")

    record = run_job(aws, load_catalog(), reclaimable.options(machine, dataset[0], max_restarts=0), report, print)
    assert record.ended == "lost"
    (event,) = record.recoveries
    assert list(event.lost) == ["memory-0"] and not event.replaced
    assert record.torn_down and live_instances(moto) == []
    assert statefile.read(moto.state_dir, "c1") is None
