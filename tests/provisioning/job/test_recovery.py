"""Replacing a lost machine against moto in server mode: EC2 says which machine is gone and why,
and `up`, run again from what it kept, puts a machine of the same type in its place in the same
zone and placement group, re-attaches its data volume and rewrites the state file and hostfile."""

from __future__ import annotations

import datetime as dt
import os
import shlex
import subprocess
import threading
import time
from pathlib import Path

import pytest

from contracts.interruption import InterruptionNotice
from contracts.progress import Heartbeat
from foundation.fileio import write_model
from planner.catalog.snapshot import load_catalog
from provisioning import bringup, statefile, teardown
from provisioning.errors import ProvisioningError
from provisioning.job import recovery
from tests.provisioning.conftest import live_instances
from tests.provisioning.ec2fakes import ec2_error
from tests.provisioning.test_bringup import CAPACITY


def test_a_terminated_memory_machine_is_named_and_replaced_with_its_volume(aws, moto, two_level_plan, make_options):
    first = bringup.up(aws, two_level_plan, make_options()).state
    assert recovery.lost_nodes(aws, first) == {}
    lost = next(n for n in first.nodes if n.node == "memory-1")
    moto.ec2.terminate_instances(InstanceIds=[lost.instance_id])
    found = recovery.lost_nodes(aws, first)
    assert list(found) == ["memory-1"] and lost.instance_id in found["memory-1"]
    with pytest.raises(recovery.MachineLost, match="memory-1"):
        recovery.check(aws, first)

    said: list[str] = []
    second, also = recovery.replace_lost(aws, moto.state_dir, first, {"memory-1"}, said.append)
    assert also == {}
    replaced = next(n for n in second.nodes if n.node == "memory-1")
    assert replaced.instance_id != lost.instance_id and replaced.instance_type == lost.instance_type
    assert replaced.volume_id == lost.volume_id  # the data volume outlived its machine
    assert {n.node: n.instance_id for n in second.nodes if n.node != "memory-1"} == {
        n.node: n.instance_id for n in first.nodes if n.node != "memory-1"
    }
    assert second.availability_zone == first.availability_zone and second.placement_group == first.placement_group
    assert moto.placement_groups.launches[-1] == (first.placement_group, first.availability_zone)
    assert statefile.read(moto.state_dir, "c1") == second
    assert f"{replaced.private_ip} slots=1" in statefile.hostfile_path(moto.state_dir, "c1").read_text()
    assert recovery.lost_nodes(aws, second) == {} and len(live_instances(moto)) == 3
    teardown.down(aws, "c1")
    assert statefile.remove(moto.state_dir, "c1")
    assert not statefile.launch_inputs_path(moto.state_dir, "c1").exists()


def test_a_lost_learner_is_replaced_too(aws, moto, two_level_plan, make_options):
    first = bringup.up(aws, two_level_plan, make_options()).state
    learner = next(n for n in first.nodes if n.role == "learner")
    moto.ec2.terminate_instances(InstanceIds=[learner.instance_id])
    second, _ = recovery.replace_lost(aws, moto.state_dir, first, {learner.node}, lambda _: None)
    new = next(n for n in second.nodes if n.role == "learner")
    assert new.instance_id != learner.instance_id and new.instance_type == learner.instance_type
    assert second.wheel == first.wheel  # the replacement boots the same wheel, by its sha256
    teardown.down(aws, "c1")


def test_a_machine_lost_while_the_first_is_replaced_is_named_and_replaced_in_the_same_up(
    aws, moto, two_level_plan, make_options
):
    first = bringup.up(aws, two_level_plan, make_options()).state
    ids = {n.node: n.instance_id for n in first.nodes}
    moto.ec2.terminate_instances(InstanceIds=[ids["memory-1"]])
    moto.ec2.terminate_instances(InstanceIds=[ids["memory-0"]])  # after memory-1's loss was noticed
    second, also = recovery.replace_lost(aws, moto.state_dir, first, {"memory-1"}, lambda _: None)
    assert list(also) == ["memory-0"] and ids["memory-0"] in also["memory-0"]
    assert {n.node for n in second.nodes if n.instance_id != ids[n.node]} == {"memory-0", "memory-1"}
    assert recovery.lost_nodes(aws, second) == {}
    teardown.down(aws, "c1")


def test_without_capacity_in_its_zone_the_whole_cluster_moves_where_failover_finds_some(
    aws, moto, two_level_plan, make_options
):
    first = bringup.up(aws, two_level_plan, make_options()).state
    assert first.availability_zone == "us-east-1a"
    lost = next(n for n in first.nodes if n.node == "memory-1")
    moto.ec2.terminate_instances(InstanceIds=[lost.instance_id])
    memory_type = lost.instance_type
    moto.faults.on(
        "RunInstances",
        lambda p: (
            ec2_error(CAPACITY)
            if (p["Placement.AvailabilityZone"], p["InstanceType"]) == ("us-east-1a", memory_type)
            else None
        ),
    )
    said: list[str] = []
    second, also = recovery.replace_lost(aws, moto.state_dir, first, {"memory-1"}, said.append)
    assert also == {} and any(line.startswith("no capacity to replace memory-1 in us-east-1a") for line in said)
    assert second.availability_zone == "us-east-1b" and second.plan_id == first.plan_id
    assert {i["Placement"]["AvailabilityZone"] for i in live_instances(moto)} == {"us-east-1b"}
    assert len(live_instances(moto)) == 3 and not {n.instance_id for n in second.nodes} & {
        n.instance_id for n in first.nodes
    }
    assert statefile.read(moto.state_dir, "c1") == second
    teardown.down(aws, "c1")


def test_a_noticed_machine_is_retired_before_aws_takes_it(aws, moto, two_level_plan, make_options):
    state = bringup.up(aws, two_level_plan, make_options()).state
    said: list[str] = []
    recovery.retire(aws, state, ["memory-0"], said.append)
    assert list(recovery.lost_nodes(aws, state)) == ["memory-0"] and said == ["retiring memory-0 before AWS takes it"]
    teardown.down(aws, "c1")


def test_without_what_up_kept_the_replacement_is_refused_with_the_way_out(aws, moto, two_level_plan, make_options):
    state = bringup.up(aws, two_level_plan, make_options()).state
    statefile.launch_inputs_path(moto.state_dir, "c1").unlink()
    with pytest.raises(ProvisioningError, match="`provision up` again with its plan file"):
        recovery.replace_lost(aws, moto.state_dir, state, set(), lambda _: None)
    teardown.down(aws, "c1")


def test_a_new_learner_gets_the_jobs_directory_as_last_copied_home_and_a_kept_one_keeps_its_own(
    tmp_path, remote, layout
):
    """Through the ssh stand-in: the copy home (checkpoints included) goes to a replaced learner's
    job directory; a learner that was not replaced keeps its directory, newer than the copy home."""
    from provisioning.job.runner import Job

    state = remote.state
    job = Job(remote, layout, state, "job1", tmp_path / "home", lambda _: None, lambda _: None)
    home_copy = tmp_path / "home" / "job1" / "ckpt"
    home_copy.mkdir(parents=True)
    (home_copy / "checkpoint-000000004.pt").write_bytes(b"saved")
    on_learner = Path(job.directory)

    kept = job.moved(remote, state)  # a memory machine was replaced: the learner's files stay its own
    assert kept.restarted and not on_learner.exists()

    new_learner = state.nodes[0].model_copy(update={"instance_id": "i-replacement"})
    new_state = state.model_copy(update={"nodes": [new_learner, *state.nodes[1:]]})
    moved = job.moved(remote, new_state)
    assert moved.restarted and moved.directory == job.directory
    assert (on_learner / "ckpt" / "checkpoint-000000004.pt").read_bytes() == b"saved"


def spot(state):
    return state.model_copy(update={"nodes": [n.model_copy(update={"market": "spot"}) for n in state.nodes]})


def notice(instance_id: str, action: str = "terminate") -> InterruptionNotice:
    return InterruptionNotice(instance_id=instance_id, action=action, time=dt.datetime.now(dt.UTC))


def test_a_spot_machines_notice_is_read_and_anothers_or_a_garbled_one_ignored(remote, layout):
    """Through the ssh stand-in every machine reads the same file: only the node whose instance the
    notice names is noticed. On-demand machines are not asked."""
    notice_file = Path(layout.jobs_dir).parent / "interruption.json"
    state = spot(remote.state)
    assert recovery.notices(remote, state, str(notice_file)) == {}  # no file: nothing scheduled
    notice_file.write_text("{half a notice")
    assert recovery.notices(remote, state, str(notice_file)) == {}
    write_model(notice_file, notice("i-memory-0"))
    found = recovery.notices(remote, state, str(notice_file))
    assert list(found) == ["memory-0"] and found["memory-0"].action == "terminate"
    assert recovery.notices(remote, remote.state, str(notice_file)) == {}  # on demand: no notice to read
    with pytest.raises(recovery.InterruptionNoticed, match="memory-0: AWS will terminate it") as raised:
        raise recovery.InterruptionNoticed(found)
    assert "spot interruption notice (terminate at" in raised.value.lost()["memory-0"]


def test_asking_the_job_for_a_checkpoint_waits_for_the_request_to_be_answered(tmp_path, remote, layout):
    """The script's Checkpointer answers by removing the request (here a thread does, as it would);
    unanswered, the wait ends and the request is taken back."""
    from provisioning.job.runner import CHECKPOINT_REQUEST, Job

    said: list[str] = []
    job = Job(remote, layout, remote.state, "job1", tmp_path / "home", said.append, lambda _: None)
    request = Path(job.directory) / CHECKPOINT_REQUEST
    request.parent.mkdir(parents=True)
    pid_file = Path(job.directory) / "job.pid"
    pid_file.write_text(str(os.getpid()))  # the job runs (this process stands in for it)
    answered = threading.Event()

    def checkpointer() -> None:
        while not request.exists():
            answered.wait(0.05)
        request.unlink()
        answered.set()

    thread = threading.Thread(target=checkpointer, daemon=True)
    thread.start()
    assert job.checkpoint_now(wait_s=30.0) and answered.is_set() and said == ["the job saved a checkpoint"]
    thread.join()
    assert not job.checkpoint_now(wait_s=1.0) and not request.exists()
    assert "no checkpoint within 1 s" in said[-1]
    gone = subprocess.Popen(["true"])  # a process that has exited: the job ended meanwhile
    gone.wait()
    pid_file.write_text(str(gone.pid))
    assert not job.checkpoint_now(wait_s=30.0) and said[-1] == "the job ended before it saved a checkpoint"
    assert not request.exists()


def test_a_training_loop_that_stops_beating_is_judged_stalled(tmp_path, remote, layout):
    """A job that beat once and then hangs (here: one heartbeat, then sleep) is stopped as stalled;
    one that has not beaten yet is still loading and is not judged."""
    from provisioning.job.runner import Deadline, Job, JobOptions, JobStalled, cluster_spec

    job = Job(remote, layout, remote.state, "job1", tmp_path / "home", lambda _: None, lambda _: None)
    (tmp_path / "home").mkdir()
    Path(remote.state.hostfile).write_text("10.0.0.2 slots=1\n")
    beat = Heartbeat(epoch=0, batches=3).model_dump_json()
    hang = ["bash", "-c", f"echo {shlex.quote(beat)} >>progress.jsonl; sleep 60"]
    opts = JobOptions(cluster="c1", dataset="d", command=["true"], state_dir=tmp_path, stall_s=1.0, watch_s=0.2)
    spec = cluster_spec(remote.state, load_catalog())
    began = time.monotonic()
    with pytest.raises(JobStalled, match=r"no heartbeat from the training loop for \d+ s \(the limit is 1 s\)"):
        job.run(hang, ["true"], None, Deadline(None), spec, opts)
    assert time.monotonic() - began < 30  # stopped long before the hang's 60 s
    job.stop()
