"""`provision` as users run it: typer's CliRunner in-process (so the test's moto hooks apply), output,
exit codes, files; and one real process for the console entry point."""

from __future__ import annotations

import contextlib
import importlib.metadata
import json
import os
import pty
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TextIO

import boto3
import pytest
from typer.testing import CliRunner

from contracts.plan import write_plan
from contracts.runs import JobRecord
from foundation.cli import SIGNAL_EXIT_BASE, err, out
from provisioning import bringup, statefile, teardown
from provisioning.bringup import AWS_CHECKS
from provisioning.cli import app
from provisioning.job.runner import runs_dir
from provisioning.models import ClusterStatus, DownResult, DryRun, UpResult
from provisioning.wheel import sha256_of
from tests.provisioning.conftest import AWS_ENV, live_instances, make_wheel, signal_this_process, unused_endpoint
from tests.provisioning.ec2fakes import ec2_error, html_page
from tests.provisioning.job.conftest import cluster_state

runner = CliRunner()


@pytest.fixture
def plan_file(tmp_path, two_level_plan):
    return write_plan(two_level_plan, tmp_path / "plan.json")


@pytest.fixture
def up_args(plan_file, public_key, memory_ami):
    return [
        "up",
        "--plan",
        str(plan_file),
        "--name",
        "cli1",
        "--ssh-key",
        str(public_key),
        "--ssh-cidr",
        "203.0.113.7/32",
        "--ami-learner",
        memory_ami["x86_64"],
    ]


def invoke(*args: str, input: str | None = None):
    return runner.invoke(app, list(args), input=input)


def test_up_status_down_with_json(moto, up_args, two_level_plan):
    up = invoke(*up_args, "--yes", "--json")
    assert up.exit_code == 0, up.output
    result = UpResult.model_validate_json(up.stdout)
    assert result.state.plan_id == two_level_plan.plan_id and len(result.state.nodes) == 3
    assert (moto.state_dir / "cli1.json").exists()
    hosts = [line for line in (moto.state_dir / "cli1.hostfile").read_text().splitlines() if not line.startswith("#")]
    memory_first = sorted(result.state.nodes, key=lambda n: n.role == "learner")
    assert hosts == [f"{n.private_ip} slots={n.slots}" for n in memory_first]
    assert hosts[-1].startswith(next(n.private_ip for n in result.state.nodes if n.role == "learner"))
    # The machines install this checkout's wheel, kept beside the state file until `down`.
    wheel = result.state.wheel
    assert wheel is not None and wheel.version == importlib.metadata.version("memorybridge")
    assert sha256_of(moto.state_dir / "cli1" / "wheel" / wheel.file) == wheel.sha256

    status = invoke("status", "cli1", "--json")
    assert status.exit_code == 0, status.output
    report = ClusterStatus.model_validate_json(status.stdout)
    assert report.exists and report.state_file == str(moto.state_dir / "cli1.json") and report.drift == []
    assert {r.version for r in report.resources if r.kind == "instance"} == {wheel.version}
    listing = invoke("status", "--json")
    assert [ClusterStatus.model_validate(c).name for c in json.loads(listing.stdout)] == ["cli1"]

    (moto.state_dir / "cli1.json").unlink()  # the tags are the truth
    down = invoke("down", "cli1", "--yes", "--json")
    assert down.exit_code == 0, down.output
    deleted = DownResult.model_validate_json(down.stdout)
    assert {label.split()[0] for label in deleted.deleted} == {
        "instance",
        "volume",
        "security-group",
        "placement-group",
        "key-pair",
    }
    assert not (moto.state_dir / "cli1.hostfile").exists()
    assert not (moto.state_dir / "cli1" / "wheel").exists()
    again = invoke("down", "cli1", "--yes")
    assert again.exit_code == 0 and "nothing to delete" in again.stdout

    everything = up.output + status.output + listing.output + down.output + again.output
    files = "".join(p.read_text() for p in moto.state_dir.rglob("*") if p.is_file())
    for secret in (AWS_ENV["AWS_SECRET_ACCESS_KEY"], AWS_ENV["AWS_SESSION_TOKEN"], AWS_ENV["AWS_ACCESS_KEY_ID"]):
        assert secret not in everything and secret not in files


def test_human_output_names_hosts_price_and_ssh(moto, up_args, public_key, two_level_plan):
    up = invoke(*up_args, "--yes")
    assert up.exit_code == 0, up.output
    learner = live_instances(moto, "cli1")
    assert f"predicted total ${two_level_plan.chosen.total_usd:,.2f}" in up.stdout and "learner-0" in up.stdout
    assert f"ssh -A -i {public_key.with_suffix('')} ec2-user@" in up.stdout
    status = invoke("status", "cli1")
    assert "cost so far $" in status.stdout and learner[0]["InstanceId"] in status.stdout
    down = invoke("down", "cli1", input="y\n")
    assert down.exit_code == 0 and "Delete cluster cli1" in down.stderr and "deleted" in down.stdout


def test_confirmation_shows_price_and_no_creates_nothing(moto, up_args, two_level_plan):
    answer = invoke(*up_args, input="n\n")
    chosen = two_level_plan.chosen
    assert answer.exit_code == 1
    assert (
        f"${chosen.usd_per_hour:.3f}/h" in answer.stderr
        and f"predicted total ${chosen.total_usd:,.2f}" in answer.stderr
    )
    assert "nothing was created" in answer.stderr
    assert live_instances(moto, "cli1") == [] and not (moto.state_dir / "cli1.json").exists()


def test_dry_run_creates_nothing(moto, up_args):
    dry = invoke(*up_args, "--dry-run", "--json")
    assert dry.exit_code == 0, dry.output
    report = DryRun.model_validate_json(dry.stdout)
    assert report.options[0].rank == 0 and report.existing is False and report.not_checked == []
    text = invoke(*up_args, "--dry-run")
    assert "dry run: nothing created" in text.stdout and "zones in order: us-east-1a" in text.stdout
    assert "placement-group memorybridge-cli1-us-east-1a" in text.stdout and "not checked" not in text.stdout
    assert live_instances(moto, "cli1") == [] and moto.ec2.describe_key_pairs()["KeyPairs"] == []


def test_dry_run_shows_each_nodes_root_volume_and_kms_key(moto, up_args):
    key = "arn:aws:kms:us-east-1:123456789012:alias/gnn"
    dry = invoke(*up_args, "--kms-key", key, "--dry-run", "--json")
    assert dry.exit_code == 0, dry.output
    nodes = DryRun.model_validate_json(dry.stdout).options[0].nodes
    assert {(n.kms_key_id, n.root_volume.device_name) for n in nodes} == {(key, "/dev/xvda")}
    text = invoke(*up_args, "--kms-key", key, "--dry-run").stdout
    learner = next(line for line in text.splitlines() if line.lstrip().startswith("learner-0"))  # its table row
    assert "/dev/xvda gp3" in learner and f"every volume, root and data, encrypted with KMS key {key}" in text
    assert "encrypted with the account's default EBS key" in invoke(*up_args, "--dry-run").stdout


def test_up_from_a_dataset_and_budget_asks_the_planner(moto, public_key, memory_ami):
    dry = invoke(
        "up",
        "--dataset",
        "papers100M",
        "--budget",
        "50",
        "--ssh-key",
        str(public_key),
        "--ami-learner",
        memory_ami["x86_64"],
        "--dry-run",
        "--json",
    )
    assert dry.exit_code == 0, dry.output
    report = DryRun.model_validate_json(dry.stdout)
    assert report.cluster.startswith("mb-") and report.options[0].plan.fits
    group = next(r for r in report.creates.resources if r.kind == "security-group")
    assert (
        "SSH stays closed" in dry.stderr and group.detail == f"in the default VPC; all TCP from members of {group.name}"
    )
    poor = invoke("up", "--dataset", "papers100M", "--budget", "0.05", "--ssh-key", str(public_key), "--yes")
    assert poor.exit_code == 1 and "Raise --budget" in poor.stderr and "Traceback" not in poor.output
    assert "constraints.budget_usd" not in poor.output  # the CLI's advice names its options


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["up", "--ssh-cidr", "10.0.0.1/8"], "--ssh-cidr"),
        (["up"], "give --plan"),
        (["up", "--dataset", "papers100M"], "--budget"),
        (["up", "--dataset", "papers100M", "--budget", "-3"], "--budget"),
        (["status", "Bad_Name"], "cluster name"),
        (["up", "--kms-key", ""], "--kms-key"),
        (["up", "--kms-key", "  "], "--kms-key"),
        (["up", "--kms-key", "alias/my key"], "--kms-key"),
    ],
)
def test_usage_errors_are_one_line_exit_2(moto, plan_file, public_key, args, message):
    if args[:1] == ["up"] and "--dataset" not in args and len(args) > 1:
        args = [*args, "--plan", str(plan_file), "--ssh-key", str(public_key)]
    result = invoke(*args)
    assert result.exit_code == 2, result.output
    assert (
        message in result.stderr and "Traceback" not in result.output and len(result.stderr.strip().splitlines()) == 1
    )


def test_console_entry_point_runs():
    helped = subprocess.run(
        [sys.executable, "-m", "provisioning.cli", "up", "--help"], capture_output=True, text=True, timeout=120
    )
    assert helped.returncode == 0 and "--ssh-cidr" in helped.stdout and "--dry-run" in helped.stdout


def test_a_full_graph_plan_is_refused_before_any_aws_call(tmp_path, public_key):
    """A partitioned plan has no learner to launch: a clear exit 2, not a crash half-way through up."""
    from contracts.plan import PlanRequest
    from planner.solver.recommend import recommend

    rec = recommend(PlanRequest(dataset="arxiv", method="retexo", full_graph={"workers": 2}))
    plan = write_plan(rec, tmp_path / "retexo.json")
    result = invoke("up", "--plan", str(plan), "--ssh-key", str(public_key))
    assert result.exit_code == 2, result.output
    assert "retexo plan" in result.stderr and "--method sampled" in result.stderr and "Traceback" not in result.output


def without_aws(monkeypatch, home: Path) -> None:
    """A new user's machine: no AWS variables, credentials or configuration, and no SSH key."""
    for key in [k for k in os.environ if k.startswith("AWS_")]:
        monkeypatch.delenv(key)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")  # not on EC2: do not wait for its metadata service
    monkeypatch.setattr(boto3, "DEFAULT_SESSION", None)


def test_a_dry_run_without_credentials_or_a_key_lists_what_up_would_create_and_what_it_could_not_check(
    plan_file, two_level_plan, monkeypatch, tmp_path
):
    home = tmp_path / "home"
    without_aws(monkeypatch, home)
    dry = invoke("up", "--plan", str(plan_file), "--name", "try1", "--dry-run", "--json")
    assert dry.exit_code == 0, dry.output
    report = DryRun.model_validate_json(dry.stdout)
    chosen = two_level_plan.chosen
    assert (report.existing, report.options, report.not_checked) == (None, [], list(AWS_CHECKS))
    assert report.region == two_level_plan.snapshot.region and report.creates.rank == 0
    made = {(r.kind, r.name): r for r in report.creates.resources}
    assert set(made) == {
        ("security-group", "memorybridge-try1"),
        ("key-pair", "memorybridge-try1"),
        ("placement-group", "memorybridge-try1-ZONE"),
        ("instance", "learner-0"),
        ("instance", "memory-0 ... memory-1"),
        ("volume", "root volumes"),
        ("volume", "data volumes of memory-0 ... memory-1"),
    }
    memory = made[("instance", "memory-0 ... memory-1")]
    assert (memory.count, memory.usd_per_hour_each) == (2, chosen.memory.usd_per_hour_each)
    assert memory.detail.startswith(chosen.memory.instance_type)
    assert made[("instance", "learner-0")].detail.startswith(chosen.learner.instance_type)
    assert (
        made[("volume", "root volumes")].count,
        made[("volume", "data volumes of memory-0 ... memory-1")].count,
    ) == (
        3,
        2,
    )
    assert "ssh-keygen" in made[("key-pair", "memorybridge-try1")].detail

    text = invoke("up", "--plan", str(plan_file), "--name", "try1", "--dry-run")
    assert text.exit_code == 0, text.output
    assert "AWS was not asked (no AWS credentials found)" in text.stdout
    assert f"memory-0 ... memory-1 (x2): {chosen.memory.instance_type}" in text.stdout
    assert "not checked, as it needs AWS credentials: " in text.stdout and "machine images" in text.stdout
    assert "quotas and capacity" in text.stdout
    assert not (home / ".memorybridge").exists()


def one_error_line(result, exit_code: int, start: str) -> str:
    """The command failed with ``exit_code`` and said why in one line beginning ``start``, no traceback."""
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert result.exit_code == exit_code and len(errors) == 1, result.output
    assert errors[0].startswith(f"error: {start}") and "Traceback" not in result.output, result.output
    return errors[0]


def html_everywhere(moto, monkeypatch) -> None:
    """Every EC2 call answered with an error page, as by a web server that is not EC2."""
    boto3.setup_default_session()
    page = html_page(500, b"<html><body><h1>Internal Server Error</h1></body></html>")
    boto3.DEFAULT_SESSION.events.register("before-send.ec2", lambda **_: page)


def nobody_listening(moto, monkeypatch) -> None:
    monkeypatch.setenv("AWS_ENDPOINT_URL", unused_endpoint())
    boto3.setup_default_session()


@pytest.mark.parametrize("endpoint", [html_everywhere, nobody_listening], ids=["html pages", "nobody listening"])
def test_an_endpoint_that_does_not_answer_as_aws_stops_up_status_down_and_run_with_one_line_naming_the_call(
    moto, monkeypatch, plan_file, public_key, wheel_file, endpoint
):
    statefile.write(moto.state_dir, cluster_state(moto.state_dir / "c1.hostfile"))  # a cluster to `run` on
    endpoint(moto, monkeypatch)
    up = ["up", "--plan", str(plan_file), "--name", "fresh", "--ssh-key", str(public_key), "--wheel", str(wheel_file)]
    for args, call in (
        ([*up, "--yes"], "DescribeVpcs"),
        (["status", "fresh"], "DescribeInstances"),
        (["down", "fresh", "--yes"], "DescribeInstances"),
        (["run", "c1", "--dataset", "s3://my-bucket/papers100M", "--", "python", "train.py"], "GetConsoleOutput"),
    ):
        line = one_error_line(invoke(*args), 1, f"{call}: ")
        assert "AWS_ENDPOINT_URL" in line
    assert not list(moto.state_dir.glob("fresh*"))


def no_credentials(moto, monkeypatch) -> None:
    for key in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"):
        monkeypatch.delenv(key)
    boto3.setup_default_session()


def moto_as_users_run_it(moto, monkeypatch) -> None:
    """moto's own server, whose placement-group calls answer an error page (the tests' stand-in left out)."""
    boto3.setup_default_session()


def launch_refused(moto, monkeypatch) -> None:
    """EC2 refuses the launch, after the security group, key pair and placement group were made."""
    moto.faults.on("RunInstances", lambda p: ec2_error("UnauthorizedOperation", "You are not authorized.", 403))


@pytest.mark.parametrize(
    ("failure", "private_key", "exit_code", "said"),
    [
        (no_credentials, False, 1, "no AWS credentials found"),
        (None, True, 2, "--ssh-key: "),
        pytest.param(moto_as_users_run_it, False, 1, "DescribePlacementGroups: ", marks=pytest.mark.slow),
        pytest.param(launch_refused, False, 1, "RunInstances: UnauthorizedOperation", marks=pytest.mark.slow),
    ],
    ids=["no credentials", "a private key", "moto without placement groups", "a launch refused"],
)
def test_a_failed_up_leaves_nothing_of_the_cluster_in_the_state_directory(
    moto, monkeypatch, up_args, public_key, failure, private_key, exit_code, said
):
    if failure:
        failure(moto, monkeypatch)
    key = ["--ssh-key", str(public_key.with_suffix(""))] if private_key else []
    one_error_line(invoke(*up_args, *key, "--yes"), exit_code, said)  # the wheel built, where it gets that far
    assert not moto.state_dir.exists() or list(moto.state_dir.iterdir()) == []
    assert live_instances(moto, "cli1") == []  # nor anything in moto: the fixture checks every kind


@pytest.mark.slow
def test_a_failed_up_of_a_running_cluster_keeps_its_state_files(moto, up_args, wheel_file):
    assert invoke(*up_args, "--wheel", str(wheel_file), "--yes").exit_code == 0
    kept = {p: p.read_bytes() for p in moto.state_dir.rglob("*") if p.is_file()}
    assert {p.name for p in kept} == {"cli1.json", "cli1.hostfile", "launch.json", wheel_file.name}
    moto.faults.on("DescribeVpcs", lambda p: ec2_error("UnauthorizedOperation", "You are not authorized.", 403))
    again = invoke(*up_args, "--wheel", str(make_wheel(wheel_file.parent.parent / "newer", "0.2.0")), "--yes")
    one_error_line(again, 1, "DescribeVpcs: UnauthorizedOperation")
    assert {p: p.read_bytes() for p in moto.state_dir.rglob("*") if p.is_file()} == kept
    moto.faults.clear()
    assert invoke("down", "cli1", "--yes").exit_code == 0


RUN_TO_TEAR_DOWN = ["run", "c1", "--dataset", "s3://my-bucket/papers100M", "--down-after", "--", "python", "train.py"]
OUTPUT_GONE = ("terminal closed", "reader gone")


@contextlib.contextmanager
def gone_output(how: str) -> Iterator[TextIO]:
    """An output nobody reads any more: a terminal whose other end has closed, as a closed terminal
    window or ssh session leaves it (every write fails with EIO), or a pipe whose reader has exited,
    as a `| tee` that the same hang-up ended (EPIPE)."""
    if how == "terminal closed":
        other_end, written = pty.openpty()
    else:
        other_end, written = os.pipe()
    os.close(other_end)
    stream = open(written, "w")
    try:
        yield stream
    finally:
        with contextlib.suppress(OSError):  # what it could not write is still waiting to be flushed
            stream.close()


def assert_torn_down_and_recorded(moto) -> None:
    (record_file,) = runs_dir(moto.state_dir, "c1").glob("*.json")
    record = JobRecord.model_validate_json(record_file.read_text())
    assert record.ended == "interrupted" and record.torn_down
    assert live_instances(moto) == [] and not (moto.state_dir / "c1.json").exists()


@pytest.mark.usefixtures("sighup_default")
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP], ids=lambda sig: sig.name)
def test_a_signal_stops_run_which_tears_down_records_and_exits_128_plus_its_number_naming_it(
    moto, aws, make_options, two_level_plan, sig
):
    """The signal comes as `run` asks EC2 for the first machine's host keys."""
    bringup.up(aws, two_level_plan, make_options())
    moto.faults.on("GetConsoleOutput", lambda params: signal_this_process(sig))
    done = invoke(*RUN_TO_TEAR_DOWN)
    assert done.exit_code == SIGNAL_EXIT_BASE + sig, (done.output, done.exception)
    assert f"interrupted by {sig.name}: the job was stopped and its log fetched" in done.stderr
    assert "tearing down cluster c1" in done.stderr and "Traceback" not in done.output
    assert_torn_down_and_recorded(moto)


@pytest.mark.usefixtures("sighup_default")
@pytest.mark.parametrize("how", OUTPUT_GONE)
def test_a_run_hung_up_with_its_output_gone_still_tears_down_and_records(moto, aws, make_options, two_level_plan, how):
    """SIGHUP comes because the terminal or ssh session closed, so from then on every write to the
    output fails; the cleanup reports as it goes, and must tear the cluster down and write the
    record all the same. Run as the console script runs it (CliRunner writes to the output itself)."""
    bringup.up(aws, two_level_plan, make_options())
    with gone_output(how) as gone, pytest.MonkeyPatch.context() as mp:
        for console in (err, out):  # the command mutes them once their output is gone; the next gets them back
            mp.setattr(console, "quiet", False)

        def hang_up(params: dict[str, str]) -> None:
            mp.setattr(sys, "stdout", gone)
            mp.setattr(sys, "stderr", gone)
            signal_this_process(signal.SIGHUP)

        moto.faults.on("GetConsoleOutput", hang_up)
        with pytest.raises(SystemExit) as ended:
            app(RUN_TO_TEAR_DOWN, prog_name="provision")
    assert ended.value.code == SIGNAL_EXIT_BASE + signal.SIGHUP
    assert_torn_down_and_recorded(moto)


def test_ctrl_c_again_during_the_cleanup_ends_run_saying_it_did_not_finish(moto, aws, make_options, two_level_plan):
    """The first Ctrl-C starts the cleanup and puts Python's own handler back; a second one, as the
    cluster is being torn down, ends the command there and then."""
    bringup.up(aws, two_level_plan, make_options())
    moto.faults.on("GetConsoleOutput", lambda params: signal_this_process(signal.SIGINT))
    moto.faults.on("TerminateInstances", lambda params: signal_this_process(signal.SIGINT))
    done = invoke(*RUN_TO_TEAR_DOWN)
    assert done.exit_code == SIGNAL_EXIT_BASE + signal.SIGINT, (done.output, done.exception)
    assert "interrupted by SIGINT before the job's cleanup ran to its end: `provision status c1`" in done.stderr
    assert live_instances(moto) != []
    moto.faults.clear()
    teardown.down(aws, "c1")
